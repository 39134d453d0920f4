"""DALI's nvidia.dali.auto_aug.core.policy: Policy (and the Augmentation it holds)."""

from .._decorator import Augmentation  # noqa: F401
from .._core import Policy  # noqa: F401

__all__ = ["Augmentation", "Policy"]
