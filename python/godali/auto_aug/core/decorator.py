"""DALI's nvidia.dali.auto_aug.core.decorator: Augmentation and augmentation."""

from .._decorator import Augmentation  # noqa: F401
from .._core import augmentation  # noqa: F401

__all__ = ["Augmentation", "augmentation"]
