"""DALI's nvidia.dali.backend names on godali.

The output types (godali.tensors holds them); the operator registry and schemas
(RegisteredCPUOps, GetSchema, OpSchema), answered from the loaded library's schemas under
DALI's schema names (readers__File, Resize, random__CoinFlip); the version and device
queries; and DALI's memory-tuning calls, which godali accepts and has no use for (its
pools size themselves: docs/pipeline.md). What godali cannot do (loading DALI operator
plugins) raises with the reason.
"""

import ctypes
import enum
import os
import warnings

from . import types
from . import tfrecord
from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["GetNvjpegVersion", "TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU",
           "OpSchema", "GetSchema", "TryGetSchema", "RegisteredCPUOps", "RegisteredGPUOps",
           "RegisteredMixedOps", "GetCUDADeviceCount", "GetCudaVersion", "Init",
           "LoadLibrary", "LoadDirectory", "LoadDefaultPlugins", "DLDeviceType", "Stream"]

# The libraries the CUDA flavour loads nvJPEG from, in its order (nvjpeg/nvjpeg_cuda.go).
_NVJPEG_CANDIDATES = ("libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11")

# DALI sets these when its backend module is imported; godali's library loads on first use.
initialized = True
cuda_checked = True


def GetNvjpegVersion():
    """The version of the nvJPEG library godali's CUDA flavour would load, as DALI gives
    it (major * 1000 + minor * 10 + patch, e.g. 12040 for 12.4.0), or -1 when none can be
    loaded (always the case on a host without the CUDA toolkit's nvJPEG)."""
    explicit = os.environ.get("GODALI_NVJPEG_LIBRARY")
    for path in ([explicit] if explicit else _NVJPEG_CANDIDATES):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = getattr(lib, "nvjpegGetProperty", None)
        if get is None:
            continue
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int(0)
            if get(prop, ctypes.byref(v)) != 0:
                break
            parts.append(v.value)
        if len(parts) == 3:
            return parts[0] * 1000 + parts[1] * 10 + parts[2]
    return -1


# --- devices and versions ---------------------------------------------------------------

def _libcuda():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def GetCUDADeviceCount():
    """The number of CUDA devices the driver reports; 0 without a driver or device."""
    from . import _lib
    ok, _, names = _lib.probe_cuda()
    return len(names) if ok else 0


def GetCudaVersion():
    """The CUDA driver's version (cuDriverGetVersion: 1000 * major + 10 * minor), or -1
    without a driver. godali links no CUDA runtime: this is the driver's, where DALI
    reports the runtime it was built with."""
    cuda = _libcuda()
    if cuda is None:
        return -1
    v = ctypes.c_int(0)
    try:
        if cuda.cuDriverGetVersion(ctypes.byref(v)) != 0:
            return -1
    except AttributeError:
        return -1
    return v.value


def IsDriverInitialized():
    """Whether this process loaded godali's CUDA flavour (which initialises the driver)."""
    from . import _lib
    lib = _lib._lib
    return bool(lib is not None and lib.flavour == "cuda")


def _not_linked(what):
    def version():
        return -1
    version.__name__ = "Get%sVersion" % what
    version.__doc__ = "-1: godali does not use %s." % what
    return version


GetCufftVersion = _not_linked("Cufft")
GetNppVersion = _not_linked("Npp")
GetNvimgcodecVersion = _not_linked("Nvimgcodec")


def GetOpenCVVersion():
    """"": godali does not use OpenCV."""
    return ""


def GetCxx11AbiFlag():
    """1: godali's C code uses the C++11 ABI where it has any (DALI reports the same)."""
    return 1


def GetCUDACurrentDevice():
    """The device godali's CUDA flavour uses by default (0); -1 without a CUDA device."""
    return 0 if GetCUDADeviceCount() > 0 else -1


def SetCUDACurrentDevice(device_id):
    """Pipelines choose their device with device_id; checks the ordinal only."""
    n = GetCUDADeviceCount()
    if not 0 <= int(device_id) < n:
        raise RuntimeError("godali: no CUDA device %d (%d visible)" % (int(device_id), n))


def GetCUDAStreamDevice(stream):
    """The device of a CUDA stream: godali uses one device per pipeline, device 0 here."""
    return GetCUDACurrentDevice()


def CUDAStreamSynchronize(stream):
    """Waits for a CUDA stream (cuStreamSynchronize); a no-op without a driver."""
    cuda = _libcuda()
    if cuda is None:
        return
    handle = getattr(stream, "cuda_stream", getattr(stream, "handle", stream)) or 0
    cuda.cuStreamSynchronize(ctypes.c_void_p(int(handle)))


def check_cuda_runtime():
    """DALI checks its CUDA runtime here; godali links none."""
    return None


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (dlpack.h)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class Stream:
    """A CUDA stream handle with its device, as DALI's backend.Stream."""

    def __init__(self, device_id=0, handle=0):
        self.device_id = int(device_id)
        self.handle = int(handle)


def CheckDLPackCapsule(capsule):
    """(is a DLPack capsule, is an unconsumed one) for a PyCapsule."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    if type(capsule).__name__ != "PyCapsule":
        return False, False
    name = get_name(capsule)
    return name in (b"dltensor", b"dltensor_versioned", b"used_dltensor",
                    b"used_dltensor_versioned"), name in (b"dltensor", b"dltensor_versioned")


# --- memory tuning: accepted, nothing to tune ---------------------------------------------

_growth = {"host": 1.1, "device": 1.1, "shrink": 0.5}


def _accepted(name, doc):
    def call(*args, **kwargs):
        return None
    call.__name__ = name
    call.__doc__ = doc + " godali's pools grow and trim themselves; accepted, does nothing."
    return call


PreallocateDeviceMemory = _accepted("PreallocateDeviceMemory", "DALI: reserves device memory.")
PreallocatePinnedMemory = _accepted("PreallocatePinnedMemory", "DALI: reserves pinned memory.")
ReleaseUnusedMemory = _accepted("ReleaseUnusedMemory", "DALI: frees cached memory.")
RestrictPinnedMemUsage = _accepted("RestrictPinnedMemUsage", "DALI: caps pinned memory.")


def SetHostBufferGrowthFactor(factor):
    """Recorded for GetHostBufferGrowthFactor; godali's pools size buffers themselves."""
    _growth["host"] = float(factor)


def SetDeviceBufferGrowthFactor(factor):
    """Recorded for GetDeviceBufferGrowthFactor; godali's pools size buffers themselves."""
    _growth["device"] = float(factor)


def SetBufferGrowthFactor(factor):
    """Both growth factors (recorded only)."""
    SetHostBufferGrowthFactor(factor)
    SetDeviceBufferGrowthFactor(factor)


def SetHostBufferShrinkThreshold(threshold):
    """Recorded for GetHostBufferShrinkThreshold (0 to 1); godali trims on its own."""
    t = float(threshold)
    if not 0 <= t <= 1:
        raise ValueError("godali: the shrink threshold must be in [0, 1], got %r" % (threshold,))
    _growth["shrink"] = t


def GetHostBufferGrowthFactor():
    return _growth["host"]


def GetDeviceBufferGrowthFactor():
    return _growth["device"]


def GetHostBufferShrinkThreshold():
    return _growth["shrink"]


def deprecation_warning(what):
    """Issues a DeprecationWarning, as DALI's helper does."""
    warnings.warn(what, DeprecationWarning, stacklevel=2)


# --- plugins ------------------------------------------------------------------------------

def Init(*args, **kwargs):
    """DALI initialises its backend here; godali's library loads on first use."""
    return None


def LoadDefaultPlugins():
    """godali has no operator plugins to load."""
    return None


def LoadLibrary(lib_path, global_symbols=False):
    """DALI loads an operator plugin (a C++ library) here; godali cannot run DALI's
    plugins (plugin_manager.load_library says why, naming the file)."""
    from . import plugin_manager
    plugin_manager.load_library(lib_path, global_symbols)


def LoadDirectory(dir_path, global_symbols=False):
    """As LoadLibrary, for a directory of plugins."""
    from . import plugin_manager
    plugin_manager.load_directory(dir_path, global_symbols)


# --- the operator registry ----------------------------------------------------------------

# godali's argument types -> DALI's (OpSchema.GetArgumentType).
_ARG_TYPES = {
    "bool": types.DALIDataType.BOOL, "int": types.DALIDataType.INT64,
    "float": types.DALIDataType.FLOAT, "string": types.DALIDataType.STRING,
    "float_list": types.DALIDataType._FLOAT_VEC, "int_list": types.DALIDataType._INT64_VEC,
    "string_list": types.DALIDataType._STRING_VEC, "dtype": types.DALIDataType.DATA_TYPE,
    "dtype_list": types.DALIDataType._DATA_TYPE_VEC,
    "interp_type": types.DALIDataType.INTERP_TYPE,
    "image_type": types.DALIDataType.IMAGE_TYPE,
}


_ENUMS = {"dtype": types.DALIDataType, "image_type": types.DALIImageType,
          "interp_type": types.DALIInterpType}


def _default_string(kind, d):
    """A default value in DALI's OpSchema.GetArgumentDefaultValueString form."""
    if isinstance(d, bool):
        return "True" if d else "False"
    if kind in _ENUMS and isinstance(d, str):
        enum_type = _ENUMS[kind]
        member = getattr(enum_type, d, None)
        if member is None:
            member = getattr(enum_type, "INTERP_" + d, None)
        return str(int(member)) if member is not None else d
    if kind == "float" and isinstance(d, (int, float)):
        return "%f" % d
    if kind == "float_list" and isinstance(d, (list, tuple)):
        return "[" + "".join("%f, " % x for x in d) + "]"
    if kind == "int_list" and isinstance(d, (list, tuple)):
        return "[" + "".join("%d, " % x for x in d) + "]"
    if kind in ("string_list",) and isinstance(d, (list, tuple)):
        return repr(list(d))
    if kind == "string" and isinstance(d, str):
        return repr(d)
    return str(d)


def _schema_name(op_name):
    """readers.file -> readers__File; crop_mirror_normalize -> CropMirrorNormalize."""
    from .ops import camel_case
    parts = op_name.split(".")
    return "__".join(parts[:-1] + [camel_case(parts[-1])])


def _registry():
    from . import _graph
    from .ops import LEGACY_OPS_NAMES
    ops = _graph.schemas().ops
    names = {}
    for name, op in ops.items():
        if name.startswith("_"):
            continue
        names[_schema_name(name)] = (op, None)
    for legacy, target in LEGACY_OPS_NAMES.items():
        if target in ops and legacy not in names:
            names[legacy] = (ops[target], _schema_name(target))
    return names


class OpSchema:
    """One operator's schema under DALI's schema name (DALI's backend.OpSchema), read from
    godali's library."""

    def __init__(self, name, op, alias_for=None):
        self._name = name
        self._op = op
        self._alias_for = alias_for

    def Name(self):
        return self._name

    def OperatorName(self):
        return self._name.rsplit("__", 1)[-1]

    def ModulePath(self):
        return self._name.split("__")[:-1]

    def Dox(self):
        return self._op.doc

    def MinNumInput(self):
        return self._op.min_inputs

    def MaxNumInput(self):
        return self._op.max_inputs

    def GetSupportedBackends(self):
        return list(self._op.devices)

    def GetArgumentNames(self):
        return sorted(self._op.args)

    def HasArgument(self, name, local_only=False):
        return name in self._op.args

    def _arg(self, name):
        a = self._op.args.get(name)
        if a is None:
            raise RuntimeError("Argument \"%s\" is not defined for operator \"%s\"."
                               % (name, self._name))
        return a

    def IsArgumentOptional(self, name):
        return not self._arg(name).required

    def HasArgumentDefaultValue(self, name):
        a = self._arg(name)
        return not a.required and a.default is not None

    def GetArgumentDefaultValueString(self, name):
        """The default as DALI prints it: floats with six decimals, lists as
        "[a, b, ]" (strings: Python's list repr), enums by their numbers, strings
        quoted."""
        a = self._arg(name)
        if a.required or a.default is None:
            raise RuntimeError("Argument \"%s\" of operator \"%s\" has no default value."
                               % (name, self._name))
        return _default_string(a.type, a.default)

    def GetArgumentType(self, name):
        return _ARG_TYPES.get(self._arg(name).type, types.DALIDataType.PYTHON_OBJECT)

    def GetArgumentDox(self, name):
        return self._arg(name).doc

    def IsTensorArgument(self, name):
        return self._arg(name).tensor_input

    def AllowsSequences(self):
        """Whether the operator takes sequences ("F" layouts) frame by frame (the engine's
        Schema.Sequences)."""
        return self._op.allows_sequences

    def SupportsVolumetric(self):
        """Whether the operator takes volumes (a D axis: DHWC, CDHW)."""
        return self._op.volumetric

    def ArgSupportsPerFrameInput(self, name):
        """Whether fn.per_frame values may be given for the argument: a tensor argument
        of an operator that takes sequences."""
        return self._op.allows_sequences and self._arg(name).tensor_input

    def GetSupportedLayouts(self, index, backend=None):
        """The layouts input index may have: the schema's declared ones (input 0; the
        backend's own where backend, e.g. "gpu", declares narrower ones), with their
        sequence forms ("F" first) when the operator takes sequences. Empty: any."""
        if index < 0 or index >= max(self._op.max_inputs, 1):
            raise IndexError("Input index %d out of range for operator \"%s\" (%d inputs)"
                             % (index, self._name, self._op.max_inputs))
        if index != 0:
            return []
        layouts = list(self._op.input_layouts)
        facts = self._op.backends.get(backend) if backend else None
        if facts and facts.get("input_layouts"):
            return list(facts["input_layouts"])  # the gpu backends take no sequences
        if self._op.allows_sequences:
            layouts += ["F" + l for l in layouts if not l.startswith("F") and "F" + l not in layouts]
        return layouts

    def GetSupportedInputTypes(self, index=0, backend=None):
        """godali's: the element types (DALIDataType names) input 0 may have; empty: any."""
        facts = self._op.backends.get(backend) if backend else None
        if facts and facts.get("input_dtypes"):
            return list(facts["input_dtypes"])
        return list(self._op.input_dtypes) if index == 0 else []

    def IsDeprecated(self):
        return self._alias_for is not None

    def DeprecatedInFavorOf(self):
        return self._alias_for or ""

    def IsDeprecatedArg(self, name):
        return False

    def IsInternal(self):
        return False

    def IsDocHidden(self):
        return False

    def HasRandomSeedArg(self):
        return "seed" in self._op.args

    def __repr__(self):
        return "OpSchema(%r)" % self._name


def TryGetSchema(name):
    """The schema of DALI's schema name (readers__File, Resize), or None."""
    entry = _registry().get(name)
    if entry is None:
        return None
    return OpSchema(name, entry[0], entry[1])


def GetSchema(name):
    """The schema of DALI's schema name; RuntimeError naming it when godali lacks it."""
    s = TryGetSchema(name)
    if s is None:
        raise RuntimeError("godali: operator schema \"%s\" not registered" % (name,))
    return s


def GetSchemaAndTarget(name):
    """(schema, DALI's target name) for a name that may be a deprecated alias."""
    s = GetSchema(name)
    return s, (s.DeprecatedInFavorOf() or name)


def _registered(device, internal_ops=False):
    return sorted(n for n, (op, _) in _registry().items() if device in op.devices)


def RegisteredCPUOps(internal_ops=False):
    """DALI's schema names of godali's CPU operators (deprecated aliases included, as DALI
    lists them)."""
    return _registered("cpu", internal_ops)


def RegisteredGPUOps(internal_ops=False):
    """... of the operators with a GPU backend in the loaded flavour."""
    return _registered("gpu", internal_ops)


def RegisteredMixedOps(internal_ops=False):
    """... of the operators with a mixed (CPU in, GPU out) backend in the loaded flavour."""
    return _registered("mixed", internal_ops)
