"""DALI's nvidia.dali.auto_aug.core.decorator: Augmentation and augmentation."""

from .._core import _Augmentation as Augmentation, augmentation  # noqa: F401

__all__ = ["Augmentation", "augmentation"]
