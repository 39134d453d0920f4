"""DALI's nvidia.dali.plugin.numba.fn.experimental: numba_function."""

from .._function import numba_function  # noqa: F401

__all__ = ["numba_function"]
