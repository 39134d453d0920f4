"""DALI's enum constants (nvidia.dali.types), as godali's pipeline JSON writes them.

Each enum member serialises to its name: types.FLOAT -> "FLOAT", types.RGB -> "RGB",
types.INTERP_TRIANGULAR -> "INTERP_TRIANGULAR". Numeric values follow DALI's.
"""

import enum


class _Named(enum.IntEnum):
    def __str__(self):
        return self.name

    @property
    def json(self):
        """The string the pipeline JSON uses for this value."""
        return self.name


class DALIDataType(_Named):
    """Element types (DALI's DALIDataType)."""

    def __call__(self):
        # DALI's Tensor.dtype was a method; calling the value still works, with DALI's
        # warning.
        import warnings
        warnings.warn("Calling '.dtype()' is deprecated, please use '.dtype' instead",
                      DeprecationWarning, stacklevel=2)
        return self

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    # Argument types of operator schemas (backend.OpSchema.GetArgumentType), not element
    # types of tensors godali makes.
    STRING = 12
    _BOOL_VEC = 13
    _INT32_VEC = 14
    _STRING_VEC = 15
    _FLOAT_VEC = 16
    FEATURE = 17
    _FEATURE_VEC = 18
    _FEATURE_DICT = 19
    IMAGE_TYPE = 20
    DATA_TYPE = 21
    INTERP_TYPE = 22
    TENSOR_LAYOUT = 23
    PYTHON_OBJECT = 24
    _TENSOR_LAYOUT_VEC = 25
    _DATA_TYPE_VEC = 26
    _INT64_VEC = 27


class DALIImageType(_Named):
    """Colour spaces of decoded images (DALI's DALIImageType)."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4


class DALIInterpType(_Named):
    """Interpolation methods (DALI's DALIInterpType)."""

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5


NO_TYPE = DALIDataType.NO_TYPE
UINT8 = DALIDataType.UINT8
UINT16 = DALIDataType.UINT16
UINT32 = DALIDataType.UINT32
UINT64 = DALIDataType.UINT64
INT8 = DALIDataType.INT8
INT16 = DALIDataType.INT16
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT64 = DALIDataType.FLOAT64
BOOL = DALIDataType.BOOL
STRING = DALIDataType.STRING
FEATURE = DALIDataType.FEATURE
IMAGE_TYPE = DALIDataType.IMAGE_TYPE
DATA_TYPE = DALIDataType.DATA_TYPE
INTERP_TYPE = DALIDataType.INTERP_TYPE
TENSOR_LAYOUT = DALIDataType.TENSOR_LAYOUT
PYTHON_OBJECT = DALIDataType.PYTHON_OBJECT

RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr
ANY_DATA = DALIImageType.ANY_DATA

INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN

class PipelineAPIType(_Named):
    """DALI's PipelineAPIType (which API drives a pipeline)."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


class TensorLayout(str):
    """A layout string ("HWC", "CHW", ...), as DALI's types.TensorLayout."""

    __slots__ = ()

    def ndim(self):
        return len(self)


class ScalarConstant:
    """A scalar constant (DALI's types.ScalarConstant); operator arguments accept it
    wherever they accept the plain number."""

    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype=None):
        if isinstance(value, enum.Enum):
            # DALI's enums (DALIDataType, DALIInterpType, ...) are not numbers here
            t = type(value)
            raise TypeError("godali: ScalarConstant: Expected scalar value of type 'bool', "
                            "'int' or 'float', got %s.%s." % (t.__module__, t.__qualname__))
        if isinstance(value, bool):
            self.dtype = BOOL if dtype is None else dtype
        elif isinstance(value, int):
            self.dtype = INT32 if dtype is None else dtype
        elif isinstance(value, float):
            self.dtype = FLOAT if dtype is None else dtype
        else:
            raise TypeError("godali: ScalarConstant takes a bool, int or float, not %s"
                            % type(value).__name__)
        # The value takes the type's form, as DALI converts it (7 as BOOL is True).
        name = getattr(self.dtype, "name", "")
        if name == "BOOL":
            value = bool(value)
        elif name.startswith(("INT", "UINT")):
            value = int(value)
        elif name.startswith("FLOAT"):
            value = float(value)
        self.value = value

    def bool(self):
        return ScalarConstant(bool(self.value), BOOL)

    def int32(self):
        return ScalarConstant(int(self.value), INT32)

    def float32(self):
        return ScalarConstant(float(self.value), FLOAT)

    # The other conversions DALI's ScalarConstant offers (the value itself stays a
    # Python int or float; the operator reading it converts to the dtype).
    def int8(self): return ScalarConstant(int(self.value), INT8)
    def int16(self): return ScalarConstant(int(self.value), INT16)
    def int64(self): return ScalarConstant(int(self.value), INT64)
    def uint8(self): return ScalarConstant(int(self.value), UINT8)
    def uint16(self): return ScalarConstant(int(self.value), UINT16)
    def uint32(self): return ScalarConstant(int(self.value), UINT32)
    def uint64(self): return ScalarConstant(int(self.value), UINT64)
    def float16(self): return ScalarConstant(float(self.value), FLOAT16)
    def float64(self): return ScalarConstant(float(self.value), FLOAT64)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        if isinstance(self.value, (bool, int)):
            return int(self.value)
        raise TypeError("godali: a float ScalarConstant is not an index")

    def __eq__(self, other):
        if isinstance(other, ScalarConstant):
            other = other.value
        elif not isinstance(other, (bool, int, float)):
            return NotImplemented  # e.g. a DataNode: its reflected comparison builds a node
        return self.value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return "godali.types.ScalarConstant(%r, dtype=%s)" % (self.value, self.dtype.name)

    def __str__(self):
        # DALI's form, which its expression notebooks print: "10:DALIDataType.INT32".
        return "%s:DALIDataType.%s" % (self.value, self.dtype.name)


def Constant(value, dtype=None, shape=None, layout=None, device=None, **kwargs):
    """DALI's types.Constant. A Python scalar without shape or layout gives a
    ScalarConstant, usable as an operator argument and in expressions. A list, a numpy
    array, or a value with a shape gives a DataNode of the current pipeline: a `constant`
    node producing that tensor for every sample (a single value fills the shape). Made
    outside a pipeline, as DALI allows, the node waits until a pipeline uses it; one
    such node may feed several pipelines (each gets its own copy, see _graph.bind)."""
    if shape is None and layout is None and isinstance(value, (bool, int, float)):
        return ScalarConstant(value, dtype)
    if device not in (None, "cpu", "gpu"):
        raise ValueError("godali: types.Constant: device must be 'cpu' or 'gpu', got %r"
                         % (device,))
    from . import _graph
    pipe = _graph.current_pipeline()
    node = _graph.constant_node(value, pipe, dtype=dtype, shape=shape, layout=layout)
    # device="gpu": made on the host and copied to the GPU (the CUDA flavour; a CPU-only
    # pipeline refuses it at build, as DALI does).
    return node.gpu() if device == "gpu" else node


def from_numpy_dtype(dt):
    """Returns the DALIDataType of a numpy dtype, or NO_TYPE."""
    import numpy as np
    dt = np.dtype(dt)
    return {"b": {1: BOOL}, "u": {1: UINT8, 2: UINT16, 4: UINT32, 8: UINT64},
            "i": {1: INT8, 2: INT16, 4: INT32, 8: INT64},
            "f": {2: FLOAT16, 4: FLOAT, 8: FLOAT64}}.get(dt.kind, {}).get(dt.itemsize, NO_TYPE)




def to_numpy_dtype(t):
    """The numpy dtype of a DALIDataType (TypeError for NO_TYPE)."""
    import numpy as np
    t = DALIDataType(t) if not isinstance(t, DALIDataType) else t
    names = {BOOL: np.bool_, UINT8: np.uint8, UINT16: np.uint16, UINT32: np.uint32,
             UINT64: np.uint64, INT8: np.int8, INT16: np.int16, INT32: np.int32,
             INT64: np.int64, FLOAT16: np.float16, FLOAT: np.float32, FLOAT64: np.float64}
    if t not in names:
        raise TypeError("godali: %s has no numpy dtype" % t.name)
    return np.dtype(names[t])


def to_numpy_type(t):
    """DALI's types.to_numpy_type: the numpy scalar type (np.float32, ...) of a
    DALIDataType (TypeError for one without)."""
    return to_numpy_dtype(t).type



# Type names of numpy, torch and C that to_dali_type understands.
_DALI_TYPE_OF_NAME = {
    "bool": BOOL, "bool_": BOOL,
    "int8": INT8, "char": INT8, "uint8": UINT8, "byte": UINT8, "ubyte": UINT8,
    "int16": INT16, "short": INT16, "uint16": UINT16, "ushort": UINT16,
    "int32": INT32, "int": INT32, "uint32": UINT32, "uint": UINT32,
    "int64": INT64, "long": INT64, "uint64": UINT64, "ulong": UINT64,
    "float16": FLOAT16, "half": FLOAT16, "float32": FLOAT, "float": FLOAT,
    "float64": FLOAT64, "double": FLOAT64,
}


def to_dali_type(framework_type):
    """DALI's types.to_dali_type: the DALIDataType of a type name ("uint8", "float",
    "double", ...), a numpy dtype or scalar type, or a torch dtype (torch.int32).
    TypeError names a type it cannot map."""
    t = framework_type
    if isinstance(t, type) and t.__module__ == "numpy":
        t = t.__name__
    name = str(t)
    if name.startswith("torch."):
        name = name[len("torch."):]
    dt = _DALI_TYPE_OF_NAME.get(name)
    if dt is None:
        raise TypeError("godali: types.to_dali_type: %r is not a type DALI knows "
                        "(a name such as 'uint8' or 'float32', a numpy or torch dtype)"
                        % (framework_type,))
    return dt

# Layout constants: in DALI these are plain layout strings.
NCHW = "CHW"
NHWC = "HWC"
NFCHW = "FCHW"
NFHWC = "FHWC"
SAME = ""

# Schema argument type -> the enum class whose members it accepts.
ENUM_OF_SCHEMA_TYPE = {
    "dtype": DALIDataType,
    "image_type": DALIImageType,
    "interp_type": DALIInterpType,
}

# DLPack (code, bits) -> DALIDataType, for TensorList.dtype.
_FROM_DL = {
    (1, 8): UINT8, (1, 16): UINT16, (1, 32): UINT32, (1, 64): UINT64,
    (0, 8): INT8, (0, 16): INT16, (0, 32): INT32, (0, 64): INT64,
    (2, 16): FLOAT16, (2, 32): FLOAT, (2, 64): FLOAT64, (6, 8): BOOL,
}


def from_dlpack_dtype(code, bits):
    """Returns the DALIDataType of a DLPack (code, bits) pair, or NO_TYPE."""
    return _FROM_DL.get((code, bits), NO_TYPE)


class SampleInfo:
    """What an external_source callback gets in per-sample mode (batch=False), as DALI's
    types.SampleInfo: idx_in_epoch, idx_in_batch, iteration (batch in the epoch) and
    epoch_idx."""

    __slots__ = ("idx_in_epoch", "idx_in_batch", "iteration", "epoch_idx")

    def __init__(self, idx_in_epoch, idx_in_batch, iteration, epoch_idx):
        self.idx_in_epoch = idx_in_epoch
        self.idx_in_batch = idx_in_batch
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self):
        return "SampleInfo(idx_in_epoch=%d, idx_in_batch=%d, iteration=%d, epoch_idx=%d)" % (
            self.idx_in_epoch, self.idx_in_batch, self.iteration, self.epoch_idx)


class BatchInfo:
    """What an external_source callback gets with batch_info=True, as DALI's
    types.BatchInfo: iteration (batch in the epoch) and epoch_idx."""

    __slots__ = ("iteration", "epoch_idx")

    def __init__(self, iteration, epoch_idx):
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self):
        return "BatchInfo(iteration=%d, epoch_idx=%d)" % (self.iteration, self.epoch_idx)


# DALI's device_id for a pipeline without a GPU (Pipeline(device_id=CPU_ONLY_DEVICE_ID));
# godali spells it device_id=None.
CPU_ONLY_DEVICE_ID = None


# DALI's backend_impl.types._DALIDataType (the pybind enum DALIDataType wraps) and
# types._all_types (the element types a tensor can have).
_DALIDataType = DALIDataType
_all_types = [DALIDataType.BOOL, DALIDataType.INT8, DALIDataType.INT16, DALIDataType.INT32,
              DALIDataType.INT64, DALIDataType.UINT8, DALIDataType.UINT16, DALIDataType.UINT32,
              DALIDataType.UINT64, DALIDataType.FLOAT16, DALIDataType.FLOAT,
              DALIDataType.FLOAT64]
_DALI_TYPE_NAMES = {"FLOAT": "float", "FLOAT64": "double", "FLOAT16": "float16"}


def _dali_type_name(t):
    """DALI's name of an element type in its messages: float, double, uint8, ..."""
    name = getattr(t, "name", str(t))
    return _DALI_TYPE_NAMES.get(name, name.lower())
