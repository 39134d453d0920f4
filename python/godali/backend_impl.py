"""DALI's nvidia.dali.backend_impl: the same tensor types as godali.backend (DALI's tests
and some user code import TensorCPU and friends from here)."""

from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]
