"""DALI's nvidia.dali.plugin.pytorch.experimental."""

from . import proxy  # noqa: F401
