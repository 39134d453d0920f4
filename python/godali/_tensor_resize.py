"""fn.experimental.tensor_resize: DALI's resize of chosen axes of a tensor, composed here
from the engine's resize for the case it covers: the two spatial axes of images (HWC, or
FHWC sequences frame by frame), given as axes (0, 1) of a 3-D input, (1, 2) of a 4-D one,
or axis_names "HW". Other axes raise NotImplementedError naming what is supported."""

_PASSED = ("interp_type", "min_filter", "mag_filter", "antialias", "roi_start", "roi_end",
           "roi_relative", "max_size", "mode", "subpixel_scale", "size_rounding")
_IGNORED = ("alignment", "minibatch_size", "temp_buffer_hint", "bytes_per_sample_hint",
            "preserve", "seed")


def make_tensor_resize(resize_fn):
    def tensor_resize(data, *, sizes=None, scales=None, axes=None, axis_names=None,
                      dtype=None, device=None, name=None, **kwargs):
        """DALI's fn.experimental.tensor_resize (see the module docstring for the axes godali
        supports): sizes gives the new extent of each resized axis, in the order of axes;
        interp_type, antialias, roi_*, max_size, mode as in fn.resize."""
        for k in _IGNORED:
            kwargs.pop(k, None)
        unknown = sorted(set(kwargs) - set(_PASSED))
        if unknown:
            raise TypeError("godali: fn.experimental.tensor_resize got unknown arguments: %s"
                            % ", ".join(unknown))
        if scales is not None:
            raise NotImplementedError("godali: fn.experimental.tensor_resize: scales is not "
                                      "supported; give sizes")
        if sizes is None:
            raise TypeError("godali: fn.experimental.tensor_resize: give sizes")
        if axis_names is not None:
            if axis_names != "HW":
                raise NotImplementedError("godali: fn.experimental.tensor_resize resizes the "
                                          "spatial axes \"HW\" of images; got axis_names=%r"
                                          % (axis_names,))
        elif axes is not None and [int(a) for a in axes] not in ([0, 1], [1, 2]):
            raise NotImplementedError("godali: fn.experimental.tensor_resize resizes the two "
                                      "spatial axes of HWC images (axes (0, 1)) or FHWC "
                                      "sequences (axes (1, 2)); got axes=%r" % (list(axes),))
        sizes = list(sizes) if isinstance(sizes, (list, tuple)) else sizes
        kw = {k: v for k, v in kwargs.items() if k in _PASSED}
        if dtype is not None:
            kw["dtype"] = dtype
        return resize_fn(data, size=sizes, device=device, name=name, **kw)
    tensor_resize._schema_name = "experimental.tensor_resize"
    return tensor_resize
