"""DALI's nvidia.dali.auto_aug.core: Policy, the augmentation decorator, signed_bin
(godali.auto_aug._core holds them) and select, with DALI's submodules decorator and
policy."""

from .._decorator import Augmentation  # noqa: F401
from .._core import Policy, augmentation, signed_bin  # noqa: F401
from ._select import select  # noqa: F401
from . import decorator, policy  # noqa: F401

__all__ = ["augmentation", "Policy", "signed_bin", "select"]
