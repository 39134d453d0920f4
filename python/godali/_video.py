"""fn.readers.video_resize: DALI's readers.video with resizing built in, composed here from
the engine's readers.video and resize (the resize runs on each frame; docs/pipeline.md#video)."""


def make_video_resize(sch, video_fn, resize_fn, cast_fn):
    video_args = set(sch.ops["readers.video"].args)
    resize_args = set(sch.ops["resize"].args) - video_args

    def video_resize(*, dtype=None, normalized=False, name=None, device=None, **kwargs):
        """DALI's fn.readers.video_resize: readers.video's arguments (sequences, labels,
        frame_num, timestamps) plus resize's (resize_x, resize_y, resize_shorter,
        resize_longer, size, mode, max_size, interp_type, antialias, ...); the frames are
        resized before the dtype conversion."""
        reader_kw = {k: v for k, v in kwargs.items() if k not in resize_args}
        rs_kw = {k: v for k, v in kwargs.items() if k in resize_args}
        if not rs_kw:
            raise ValueError("godali: fn.readers.video_resize needs a size: resize_x/resize_y, "
                             "resize_shorter, resize_longer or size")
        if device not in (None, "cpu"):
            raise ValueError("godali: fn.readers.video_resize: only device='cpu' is available")
        outs = video_fn(name=name, **reader_kw)
        seq = outs[0] if isinstance(outs, (tuple, list)) else outs
        seq = resize_fn(seq, **rs_kw)
        from . import types
        if dtype is not None and dtype not in (types.UINT8, "UINT8"):
            seq = cast_fn(seq, dtype=dtype)
            if normalized:
                seq = seq * (1.0 / 255)
        if isinstance(outs, (tuple, list)):
            return (seq,) + tuple(outs[1:])
        return seq
    return video_resize
