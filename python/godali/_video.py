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


STREAM_OPS = ("experimental.inputs.video",)


def feed_stream(pipe, name, data, no_copy):
    """pipe.feed_input for fn.experimental.inputs.video: one encoded video per call (a
    batch of one sample: [bytes_array] or an array of shape (1, n)), queued for the node
    named `name`. Returns False when no such node is in the pipeline."""
    nodes = pipe._reachable_nodes() if getattr(pipe, "_outputs", None) is not None else pipe._nodes
    if not any(n.op in STREAM_OPS and n.name == name for n in nodes):
        return False
    from . import external_source as _ext
    what = "feed_input(%r)" % name
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = [data]
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) == 3 and tuple(shape[:2]) == (1, 1):
        data = data.reshape(1, -1)  # DALI's tests feed np.array([[video_bytes]])
        shape = data.shape
    count = len(data) if isinstance(data, (list, tuple)) else (shape[0] if shape else None)
    if count is not None and count != 1:
        raise ValueError("godali: %s: fn.experimental.inputs.video takes one video per feed "
                         "(a batch of 1 sample), got %d samples" % (what, count))
    conv = _ext._Converted(data, 1, "UINT8", what)
    if conv.ndim != 1:
        raise ValueError("godali: %s: fn.experimental.inputs.video takes one encoded video "
                         "(1-D uint8 bytes) per feed, got a sample of %d dimensions"
                         % (what, conv.ndim))
    pipe._lib_or_build()
    conv.feed(pipe._lib, pipe._handle, name, None, not no_copy, what)
    return True
