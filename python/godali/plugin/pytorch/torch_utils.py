"""DALI's nvidia.dali.plugin.pytorch.torch_utils: the tensor types and the conversions to
torch (godali.plugin.pytorch holds them)."""

from ... import types  # noqa: F401
from ...tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU  # noqa: F401
from . import feed_ndarray, to_torch_type  # noqa: F401

__all__ = ["feed_ndarray", "to_torch_type", "TensorCPU", "TensorGPU", "TensorListCPU",
           "TensorListGPU"]
