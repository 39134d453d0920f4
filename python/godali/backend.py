"""DALI's nvidia.dali.backend names: the output types (godali.tensors holds them) and
GetNvjpegVersion."""

import ctypes
import os

from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["GetNvjpegVersion", "TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]

# The libraries the CUDA flavour loads nvJPEG from, in its order (nvjpeg/nvjpeg_cuda.go).
_NVJPEG_CANDIDATES = ("libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11")


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
