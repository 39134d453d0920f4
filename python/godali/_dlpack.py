"""DLPack in pure ctypes: the C structs of include/dlpack/dlpack.h and PyCapsule producers.

godali never hands an engine-owned DLManagedTensor to a consumer directly. Each export is a
small DLManagedTensor allocated here that points into the engine's buffer and keeps a Python
owner object alive; its deleter (a ctypes callback) drops that owner. The owner in turn
returns the engine's tensor from Python, where the fork check lives. This lets one batch be
exported any number of times (as_tensor() twice, per-sample views of a dense batch) and
guarantees that no Go code is entered from a forked child when a consumer frees a tensor.
"""

import ctypes
import threading
from ctypes import (POINTER, Structure, c_int, c_int32, c_int64, c_uint8, c_uint16,
                    c_uint32, c_uint64, c_void_p)

kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLCUDAManaged = 13

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4
kDLBool = 6


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


# The deleter is declared as a plain pointer: it is called through _DELETER_T, and storing
# a CFUNCTYPE in a struct field would tie its lifetime to the struct.
class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", c_void_p),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


_DELETER_T = ctypes.CFUNCTYPE(None, c_void_p)


def call_deleter(managed_ptr, versioned=False, _unversioned=DLManagedTensor,
                 _versioned=DLManagedTensorVersioned, _deleter_t=_DELETER_T):
    """Runs the deleter of the DLManagedTensor(Versioned) at address managed_ptr."""
    # Defaults bind the types: this also runs while the interpreter tears modules down.
    m = (_versioned if versioned else _unversioned).from_address(managed_ptr)
    if m.deleter:
        _deleter_t(m.deleter)(managed_ptr)


# --- dtype names -----------------------------------------------------------------------

_NUMPY_NAMES = {
    (kDLInt, 8): "int8", (kDLInt, 16): "int16", (kDLInt, 32): "int32", (kDLInt, 64): "int64",
    (kDLUInt, 8): "uint8", (kDLUInt, 16): "uint16", (kDLUInt, 32): "uint32",
    (kDLUInt, 64): "uint64", (kDLFloat, 16): "float16", (kDLFloat, 32): "float32",
    (kDLFloat, 64): "float64", (kDLBool, 8): "bool", (kDLBfloat, 16): "bfloat16",
}

# __array_interface__ type strings (little endian; godali only runs on little-endian hosts).
_TYPESTR = {
    "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "|u1",
    "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "float16": "<f2", "float32": "<f4",
    "float64": "<f8", "bool": "|b1",
}


def dtype_name(code, bits, lanes=1):
    """Returns the numpy-style name of a DLDataType ("float32", "uint8", ...)."""
    name = _NUMPY_NAMES.get((code, bits))
    if name is None or lanes != 1:
        return "dl(code=%d,bits=%d,lanes=%d)" % (code, bits, lanes)
    return name


def typestr(name):
    """Returns the __array_interface__ typestr of a dtype name, or None."""
    return _TYPESTR.get(name)


# --- capsules --------------------------------------------------------------------------

# Capsule names must outlive every capsule, including ones freed during interpreter
# teardown: they live in buffers that are deliberately never released.
_NAME_BUF = ctypes.create_string_buffer(b"dltensor")
_NAME_V_BUF = ctypes.create_string_buffer(b"dltensor_versioned")
_NAME = ctypes.addressof(_NAME_BUF)
_NAME_V = ctypes.addressof(_NAME_V_BUF)

_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_void_p, c_void_p)(
    ("PyCapsule_New", _api))
# The destructor receives a dying object: it must not be touched as a py_object.
_PyCapsule_IsValid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_void_p)(("PyCapsule_IsValid", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_void_p)(
    ("PyCapsule_GetPointer", _api))

# Exports whose deleter has not run yet: address of the struct -> (struct, shape, strides,
# owner). Held here so the memory the consumer reads stays valid.
_exports = {}
_exports_lock = threading.Lock()


def _view_deleter(ptr, _exports=_exports, _lock=_exports_lock):
    # Default arguments instead of globals: this may run while the module is being torn
    # down, when its globals are already None.
    with _lock:
        entry = _exports.pop(ptr, None)
    del entry  # drops the owner, outside the lock


def _capsule_destructor(capsule, _is_valid=_PyCapsule_IsValid, _get=_PyCapsule_GetPointer,
                        _name=_NAME, _name_v=_NAME_V, _deleter_t=_DELETER_T):
    # A consumer that took the tensor renamed the capsule ("used_dltensor"); only an
    # unconsumed capsule still owns it.
    if _is_valid(capsule, _name):
        ptr = _get(capsule, _name)
        m = DLManagedTensor.from_address(ptr)
    elif _is_valid(capsule, _name_v):
        ptr = _get(capsule, _name_v)
        m = DLManagedTensorVersioned.from_address(ptr)
    else:
        return
    if m.deleter:
        _deleter_t(m.deleter)(ptr)


_DESTRUCTOR_T = ctypes.CFUNCTYPE(None, c_void_p)
_view_deleter_c = _DELETER_T(_view_deleter)
_capsule_destructor_c = _DESTRUCTOR_T(_capsule_destructor)
_VIEW_DELETER_ADDR = ctypes.cast(_view_deleter_c, c_void_p).value
_DESTRUCTOR_ADDR = ctypes.cast(_capsule_destructor_c, c_void_p).value

# A tensor may be freed after this module's globals are gone (a consumer holding it until
# interpreter exit). The callbacks and names are leaked on purpose so their code pointers
# never dangle.
for _o in (_view_deleter_c, _capsule_destructor_c, _NAME_BUF, _NAME_V_BUF, _exports,
           _exports_lock):
    _api.Py_IncRef(ctypes.py_object(_o))
del _o


# The most dimensions a tensor godali hands out may have, a batch's leading dimension
# included (the engine's MaxNDim): numpy 1.x's NPY_MAXDIMS. numpy crashes (stack overflow)
# or fails without a message on an __array_interface__ or DLPack tensor with more.
MAX_NDIM = 32


def check_ndim(shape):
    """Raises ValueError naming the rank when `shape` has more than MAX_NDIM dimensions,
    before anything describes such a tensor to a consumer."""
    if len(shape) > MAX_NDIM:
        raise ValueError("godali: a tensor of %d dimensions cannot be exported; numpy and "
                         "godali take at most %d (%d per sample plus the batch's)"
                         % (len(shape), MAX_NDIM, MAX_NDIM - 1))


def compact_strides(shape):
    """Row-major strides in elements of a compact tensor of `shape`; a dimension of size 0
    strides as if it were 1, as torch and numpy lay out contiguous tensors."""
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


def to_capsule(owner, data, device_type, device_id, code, bits, lanes, shape, strides=None,
               versioned=False, read_only=False):
    """Returns a DLPack PyCapsule describing memory at `data` that `owner` keeps alive.

    shape and strides (in elements, or None for a compact row-major tensor) are sequences
    of ints. The tensor always carries strides when ndim > 0, as DLPack >= 1.2 requires
    of producers. The capsule is named "dltensor" (or "dltensor_versioned"); a consumer renames
    it when it takes ownership, after which the consumer's deleter call releases owner.
    """
    check_ndim(shape)
    ndim = len(shape)
    if strides is None:
        strides = compact_strides(shape)
    shape_arr = (c_int64 * ndim)(*shape) if ndim else None
    strides_arr = (c_int64 * ndim)(*strides) if ndim else None
    if versioned:
        m = DLManagedTensorVersioned()
        m.version.major = 1
        m.version.minor = 0
        m.flags = 1 if read_only else 0
    else:
        m = DLManagedTensor()
    t = m.dl_tensor
    t.data = data
    t.device.device_type = device_type
    t.device.device_id = device_id
    t.ndim = ndim
    t.dtype.code = code
    t.dtype.bits = bits
    t.dtype.lanes = lanes
    if shape_arr is not None:
        t.shape = ctypes.cast(shape_arr, POINTER(c_int64))
    if strides_arr is not None:
        t.strides = ctypes.cast(strides_arr, POINTER(c_int64))
    t.byte_offset = 0
    m.deleter = _VIEW_DELETER_ADDR
    addr = ctypes.addressof(m)
    with _exports_lock:
        _exports[addr] = (m, shape_arr, strides_arr, owner)
    try:
        return _PyCapsule_New(addr, _NAME_V if versioned else _NAME, _DESTRUCTOR_ADDR)
    except BaseException:
        with _exports_lock:
            _exports.pop(addr, None)
        raise


def live_exports():
    """Returns how many DLPack exports made here are still held by consumers."""
    with _exports_lock:
        return len(_exports)


def wants_versioned(max_version):
    """Tells whether a consumer's __dlpack__(max_version=...) accepts the versioned struct."""
    if max_version is None:
        return False
    try:
        return int(max_version[0]) >= 1
    except (TypeError, ValueError, IndexError):
        return False
