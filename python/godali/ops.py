"""DALI's class API (nvidia.dali.ops): ops.readers.File(...), ops.decoders.Image(...).

An operator object is created with its arguments (usually in a Pipeline subclass's
__init__, outside any pipeline) and called on DataNodes inside define_graph() or a
pipeline definition; each call adds one node, as fn.* does. The classes are generated
from the same operator schemas as fn.*: names are the fn names in CamelCase
(crop_mirror_normalize -> CropMirrorNormalize, random.coin_flip -> random.CoinFlip),
and DALI's former flat names (FileReader, ImageDecoder, CoinFlip, Uniform, ...) are
kept as aliases.
"""

import threading

from . import _graph

_lock = threading.Lock()
_root = None

# DALI's former flat class names -> operator names.
LEGACY_OPS_NAMES = {
    "FileReader": "readers.file",
    "COCOReader": "readers.coco",
    "CaffeReader": "readers.caffe",
    "Caffe2Reader": "readers.caffe2",
    "MXNetReader": "readers.mxnet",
    "NumpyReader": "readers.numpy",
    "SequenceReader": "readers.sequence",
    "VideoReader": "readers.video",
    "ImageDecoder": "decoders.image",
    "HostDecoder": "decoders.image",
    "ImageDecoderRandomCrop": "decoders.image_random_crop",
    "ImageDecoderCrop": "decoders.image_crop",
    "ImageDecoderSlice": "decoders.image_slice",
    "ImageDecoderCrop": "decoders.image_crop",
    "CoinFlip": "random.coin_flip",
    "Uniform": "random.uniform",
    "NormalDistribution": "random.normal",
    "TFRecordReader": "readers.tfrecord",
    "TransformTranslation": "transforms.translation",
}

# Class names DALI spells other than camel_case would.
_CLASS_NAMES = {"tfrecord": "TFRecord", "coco": "COCO", "mxnet": "MXNet",
                "random_bbox_crop": "RandomBBoxCrop",
                "bbox_paste": "BBoxPaste", "bbox_rotate": "BBoxRotate",
                "ssd_random_crop": "SSDRandomCrop",
                "random_object_bbox": "RandomObjectBBox", "roi_random_crop": "ROIRandomCrop"}


def camel_case(name):
    """crop_mirror_normalize -> CropMirrorNormalize (DALI's ops class names)."""
    if name in _CLASS_NAMES:
        return _CLASS_NAMES[name]
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


class Operator:
    """Base of the generated operator classes: holds the construction arguments and
    adds a node to the current pipeline each time it is called."""

    schema = None

    def __init__(self, *, device=None, **kwargs):
        self._device = device
        # DALI: an argument given as None is not given
        self._spec = {k: v for k, v in kwargs.items() if v is not None}

    @property
    def device(self):
        return self._device

    @property
    def spec(self):
        """The construction arguments."""
        return dict(self._spec)

    def __call__(self, *inputs, **kwargs):
        args = dict(self._spec)
        for k, v in kwargs.items():
            if v is None:  # DALI: an argument given as None is not given
                continue
            if (self._spec.get(k) is not None and not isinstance(v, _graph.DataNode)
                    and k != "name"):
                raise TypeError("godali: ops.%s: argument %r was given when the operator "
                                "was created and again when it was called"
                                % (type(self).__name__, k))
            args[k] = v
        args.setdefault("device", self._device)
        return _graph._call_op(self.schema, inputs, args)

    def __repr__(self):
        return "godali.ops.%s(device=%r)" % (type(self).__name__, self._device)


def _make_class(schema, name):
    doc = ("DALI's ops class of fn.%s: create it with the operator's arguments, call it "
           "on the inputs.\n\n%s" % (schema.name, schema.docstring()))
    return type(name, (Operator,), {"schema": schema, "__doc__": doc,
                                    "__module__": "godali.ops"})


def _legacy_class(schema, legacy):
    """ops.<legacy>: the class under DALI's former name, warning as DALI does when made."""
    import warnings
    parts = schema.name.split(".")
    current = ".".join(parts[:-1] + [camel_case(parts[-1])])
    msg = _graph.deprecation_message("godali.ops." + legacy, "godali.ops." + current)
    cls = _make_class(schema, legacy)
    base_init = cls.__init__

    def __init__(self, *args, **kwargs):
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        base_init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def _build():
    sch = _graph.schemas()
    root = _graph.Namespace("godali.ops")
    for op_name in sorted(sch.ops):
        if op_name.startswith(_graph._INTERNAL_OPS_PREFIX):
            continue
        parts = op_name.split(".")
        ns = root
        path = "godali.ops"
        for p in parts[:-1]:
            path += "." + p
            nxt = ns._members.get(p)
            if not isinstance(nxt, _graph.Namespace):
                nxt = _graph.Namespace(path)
                ns._add(p, nxt)
            ns = nxt
        ns._add(camel_case(parts[-1]), _make_class(sch.ops[op_name], camel_case(parts[-1])))
    for legacy, target in LEGACY_OPS_NAMES.items():
        if target in sch.ops and legacy not in root._members:
            root._add(legacy, _legacy_class(sch.ops[target], legacy))
    if "external_source" in sch.ops:
        root._add("ExternalSource", _external_source_class(sch.ops["external_source"]))
    if "python_function" in sch.ops:
        from . import _pyfunc
        for fname, cname in (("python_function", "PythonFunction"),
                             ("dl_tensor_python_function", "DLTensorPythonFunction"),
                             ("torch_python_function", "TorchPythonFunction")):
            root._add(cname, _pyfunc.ops_class(fname, cname, Operator))
        root._add("_dlpack_to_array", _pyfunc._dlpack_to_array)
        root._add("_dlpack_from_array", _pyfunc._dlpack_from_array)
    root._add("_DataNode", _graph.DataNode)
    root._add("Compose", Compose)
    return root


class Compose:
    """DALI's ops.Compose: one operator made of several, applied in order; each takes the
    previous one's output (a tuple or list of outputs is passed as that many inputs).
    Keyword arguments of a call go to the first operator."""

    def __init__(self, op_list):
        ops = list(op_list)
        if not ops:
            raise ValueError("godali: ops.Compose needs at least one operator")
        for op in ops:
            if not callable(op):
                raise TypeError("godali: ops.Compose takes callable operators, got %r" % (op,))
        self._ops = ops

    def __call__(self, *inputs, **kwargs):
        out = self._ops[0](*inputs, **kwargs)
        for op in self._ops[1:]:
            out = op(*out) if isinstance(out, (tuple, list)) else op(out)
        return out


def _external_source_class(schema):
    """ops.ExternalSource: fn.external_source's arguments, given when created or called."""
    from .external_source import external_source

    def init(self, source=None, num_outputs=None, *, device=None, **kwargs):
        # DALI: ops.ExternalSource(source, num_outputs, ...) takes both positionally.
        Operator.__init__(self, device=device, **kwargs)
        if source is not None:
            self._spec["source"] = source
        if num_outputs is not None:
            self._spec["num_outputs"] = num_outputs

    def call(self, source=None, **kwargs):
        args = dict(self._spec)
        if source is not None:
            args["source"] = source
        args.update(kwargs)
        if self._device is not None:
            args.setdefault("device", self._device)
        return external_source(**args)

    cls = _make_class(schema, "ExternalSource")
    cls.__init__ = init
    cls.__call__ = call
    cls.__doc__ = "DALI's ops.ExternalSource: see fn.external_source.\n\n" + \
        (external_source.__doc__ or "")
    return cls


def _ensure():
    global _root
    if _root is None:
        with _lock:
            if _root is None:
                root = _build()
                globals().update(root._members)
                _root = root
    return _root


# Operator groups import as modules (`import godali.ops.transforms as T`, as in DALI).
__path__ = []
_graph.install_namespace_importer(__name__, lambda: _ensure())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    root = _ensure()
    if name in root._members:
        return root._members[name]
    return getattr(root, name)


def __dir__():
    return sorted(set(globals()) | set(_ensure()._members))
