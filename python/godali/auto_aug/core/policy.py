"""DALI's nvidia.dali.auto_aug.core.policy: Policy (and the Augmentation it holds)."""

from .._core import Policy, _Augmentation as Augmentation  # noqa: F401

__all__ = ["Augmentation", "Policy"]
