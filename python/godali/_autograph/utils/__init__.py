"""DALI's nvidia.dali._autograph.utils (the part user code imports: ag_logging)."""

from . import ag_logging

__all__ = ["ag_logging"]
