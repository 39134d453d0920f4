"""DALI's nvidia.dali.backend_impl: the same names as godali.backend (DALI's tests and
some user code import TensorCPU, GetSchema and friends from here)."""

from .backend import *  # noqa: F401,F403
from .backend import (  # noqa: F401  (the names outside __all__ that DALI's module has)
    CUDAStreamSynchronize, CheckDLPackCapsule, GetCUDACurrentDevice, GetCUDAStreamDevice,
    GetCufftVersion, GetCxx11AbiFlag, GetDeviceBufferGrowthFactor, GetHostBufferGrowthFactor,
    GetHostBufferShrinkThreshold, GetNppVersion, GetNvimgcodecVersion, GetOpenCVVersion,
    GetSchemaAndTarget, IsDriverInitialized, PreallocateDeviceMemory, PreallocatePinnedMemory,
    ReleaseUnusedMemory, RestrictPinnedMemUsage, SetBufferGrowthFactor, SetCUDACurrentDevice,
    SetDeviceBufferGrowthFactor, SetHostBufferGrowthFactor, SetHostBufferShrinkThreshold,
    tfrecord, types)

import sys as _sys

# DALI's backend_impl registers these submodules (`from nvidia.dali.backend_impl.types
# import DALIDataType`); so does godali's.
_sys.modules[__name__ + ".types"] = types
_sys.modules[__name__ + ".tfrecord"] = tfrecord
