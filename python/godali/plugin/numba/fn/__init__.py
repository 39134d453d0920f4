"""DALI's nvidia.dali.plugin.numba.fn."""

from . import experimental  # noqa: F401
