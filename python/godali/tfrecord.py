"""Feature descriptions for fn.readers.tfrecord, as DALI's nvidia.dali.tfrecord.

    import godali.tfrecord as tfrec
    out = fn.readers.tfrecord(path=[...], index_path=[...], features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
        "image/object/bbox": tfrec.VarLenFeature(tfrec.float32, 0.0)})
    images, labels = out["image/encoded"], out["image/class/label"]

int64 features give INT64 tensors, float32 ones FLOAT, string ones the bytes (UINT8, 1-D).
"""

import json

int64 = "int64"
float32 = "float32"
string = "string"

_DTYPES = (int64, float32, string)


def _dtype(d):
    name = getattr(d, "name", d)  # accept enum-like values too
    if isinstance(name, str):
        name = name.lower()
    if name not in _DTYPES:
        raise TypeError("godali.tfrecord: dtype must be tfrecord.int64, tfrecord.float32 or "
                        "tfrecord.string, got %r" % (d,))
    return name


def _shape(shape, what):
    if isinstance(shape, int):
        shape = [shape]
    try:
        out = [int(x) for x in shape]
    except TypeError:
        raise TypeError("godali.tfrecord: %s must be a list of ints, got %r"
                        % (what, shape)) from None
    return out


def _default(dtype, v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):  # DALI accepts [x]
        if len(v) != 1:
            raise TypeError("godali.tfrecord: default_value must be one value, got %r" % (v,))
        v = v[0]
    if dtype == string:
        if isinstance(v, bytes):
            v = v.decode("latin-1")
        if not isinstance(v, str):
            raise TypeError("godali.tfrecord: a string feature's default must be a string, "
                            "got %r" % (v,))
        return v
    if dtype == int64:
        if isinstance(v, bool) or not isinstance(v, int) and not hasattr(v, "__index__"):
            raise TypeError("godali.tfrecord: an int64 feature's default must be an int, "
                            "got %r" % (v,))
        return int(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
        raise TypeError("godali.tfrecord: a float32 feature's default must be a number, "
                        "got %r" % (v,))
    return float(v)


class Feature:
    """Base of FixedLenFeature and VarLenFeature."""

    kind = None

    def to_json(self, name):
        d = {"name": name, "kind": self.kind, "dtype": self.dtype}
        if self.kind == "fixed":
            d["shape"] = self.shape
        elif self.partial_shape:
            d["partial_shape"] = self.partial_shape
        if self.default_value is not None:
            d["default"] = self.default_value
        return d

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, json.dumps(self.to_json("")))


class FixedLenFeature(Feature):
    """FixedLenFeature(shape, dtype, default_value): exactly prod(shape) values (one byte
    string for tfrecord.string); a record without the feature gets default_value."""

    kind = "fixed"

    def __init__(self, shape, dtype, default_value=None):
        self.shape = _shape(shape, "shape")
        self.dtype = _dtype(dtype)
        self.default_value = _default(self.dtype, default_value)
        self.partial_shape = None


class VarLenFeature(Feature):
    """VarLenFeature(dtype, default_value) or VarLenFeature(partial_shape, dtype,
    default_value): however many values the record holds, as [n] or [n, *partial_shape]."""

    kind = "var"

    def __init__(self, *args, **kwargs):
        partial = kwargs.pop("partial_shape", None)
        if args and not isinstance(args[0], str) and getattr(args[0], "name", None) is None:
            partial, args = args[0], args[1:]
        dtype = kwargs.pop("dtype", None)
        default = kwargs.pop("default_value", None)
        if kwargs:
            raise TypeError("godali.tfrecord.VarLenFeature: unknown arguments %s" % sorted(kwargs))
        if args:
            dtype, args = args[0], args[1:]
        if args:
            default, args = args[0], args[1:]
        if args or dtype is None:
            raise TypeError("godali.tfrecord.VarLenFeature takes (dtype, default_value) or "
                            "(partial_shape, dtype, default_value)")
        self.dtype = _dtype(dtype)
        self.partial_shape = _shape(partial, "partial_shape") if partial is not None else []
        self.default_value = _default(self.dtype, default)
        self.shape = None


def encode_features(features):
    """The JSON value of readers.tfrecord's features argument for a dict of features."""
    if not isinstance(features, dict) or not features:
        raise TypeError("godali.tfrecord: features must be a non-empty dict of name -> "
                        "FixedLenFeature/VarLenFeature")
    out = []
    for name, f in features.items():
        if not isinstance(name, str) or not isinstance(f, Feature):
            raise TypeError("godali.tfrecord: features[%r] must be a FixedLenFeature or "
                            "VarLenFeature, got %r" % (name, f))
        out.append(f.to_json(name))
    return json.dumps(out)
