"""DALI's nvidia.dali.backend names for the output types (godali.tensors holds them)."""

from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]
