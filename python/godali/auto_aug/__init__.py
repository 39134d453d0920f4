"""godali.auto_aug: DALI's automatic augmentations (AutoAugment, RandAugment,
TrivialAugment Wide) on godali's engine.

    from godali.auto_aug import auto_augment, rand_augment, trivial_augment
    images = auto_augment.auto_augment(images)            # ImageNet policy
    images = rand_augment.rand_augment(images, n=2, m=9)
    images = trivial_augment.trivial_augment_wide(images)

The per-sample random choices are made by one engine operator (`_auto_aug`) from the
pipeline's random stream, so no enable_conditionals is needed (it is accepted).
"""

from . import augmentations, auto_augment, core, rand_augment, trivial_augment  # noqa: F401
from .core import Policy, augmentation  # noqa: F401

__all__ = ["augmentations", "auto_augment", "core", "rand_augment", "trivial_augment",
           "Policy", "augmentation"]
