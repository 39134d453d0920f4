"""AutoAugment (https://arxiv.org/abs/1805.09501), DALI's nvidia.dali.auto_aug.auto_augment.

For each sample a sub-policy is chosen uniformly, and each of its stages runs with its
probability, at its magnitude bin (with a random sign for the augmentations that are
randomly negated).
"""

from . import augmentations as a
from ._core import Policy, _apply, _translations
from ._core import signed_bin  # noqa: F401  (DALI's module has it)
from .. import fn, types  # noqa: F401  (DALI's module exposes them)

_POLICIES = ("image_net", "reduced_image_net", "svhn", "reduced_cifar10")
# DALI's policies that godali has by name but does not build in (NotImplementedError;
# docs/not-supported.md lists them).
UNSUPPORTED_POLICIES = ("reduced_image_net", "svhn", "reduced_cifar10")


def auto_augment(sample, policy_name="image_net", shape=None, fill_value=128, interp_type=None,
                 max_translate_abs=None, max_translate_rel=None, seed=None):
    """Applies a predefined AutoAugment policy (only `image_net` is built in godali) to
    HWC uint8 images. See DALI's documentation for the arguments; `shape` only switches
    the translations to a fraction of each image's size (the engine knows the shapes)."""
    if not isinstance(policy_name, str) or policy_name not in _POLICIES:
        raise Exception("The `policy_name` must be a string that takes one of the values: %s"
                        % ", ".join("`%s`" % p for p in _POLICIES))
    if policy_name in UNSUPPORTED_POLICIES:
        raise NotImplementedError("godali.auto_aug: policy %r is not built in yet; use "
                                  "'image_net' or apply_auto_augment with a Policy"
                                  % policy_name)
    policy = get_image_net_policy(use_shape=shape is not None,
                                  max_translate_abs=max_translate_abs,
                                  max_translate_rel=max_translate_rel)
    return apply_auto_augment(policy, sample, seed, fill_value=fill_value,
                              interp_type=interp_type, shape=shape)


def auto_augment_image_net(sample, shape=None, fill_value=128, interp_type=None,
                           max_translate_abs=None, max_translate_rel=None, seed=None):
    """auto_augment with policy_name='image_net'."""
    return auto_augment(sample, "image_net", shape, fill_value, interp_type, max_translate_abs,
                        max_translate_rel, seed)


def apply_auto_augment(policy, sample, seed=None, **kwargs):
    """Applies `policy` (a Policy) in AutoAugment fashion. kwargs: fill_value,
    interp_type, shape."""
    if not isinstance(policy, Policy):
        raise Exception("Expected a Policy, got %r" % (policy,))
    if len(policy.sub_policies) == 0:
        raise Exception("Cannot run empty policy. Got %r in `apply_auto_augment` call." % policy)
    unknown = set(kwargs) - {"fill_value", "interp_type", "shape"}
    if unknown:
        raise Exception("apply_auto_augment got unexpected arguments: %s" % ", ".join(sorted(unknown)))
    return _apply(policy._spec(), sample, seed=seed, **kwargs)


def get_image_net_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The AutoAugment paper's ImageNet policy, as DALI lists it (25 sub-policies,
    11 magnitude bins)."""
    _, translate_y = _translations(use_shape, 250, 1., max_translate_abs, max_translate_rel,
                                   a.translate_x if use_shape else a.translate_x_no_shape,
                                   a.translate_y if use_shape else a.translate_y_no_shape)
    shear_x = a.shear_x.augmentation((0, 0.3), True)
    shear_y = a.shear_y.augmentation((0, 0.3), True)
    rotate = a.rotate.augmentation((0, 30), True)
    color = a.color.augmentation((0.1, 1.9), False, None)
    posterize = a.posterize.augmentation((0, 4), False, a.poster_mask_uint8)
    solarize = a.solarize.augmentation((0, 256), False)
    solarize_add = a.solarize_add.augmentation((0, 110), False)
    invert, equalize, auto_contrast = a.invert, a.equalize, a.auto_contrast
    return Policy(name="ImageNetPolicy", num_magnitude_bins=11, sub_policies=[
        [(equalize, 0.8, None), (shear_y, 0.8, 4)],
        [(color, 0.4, 9), (equalize, 0.6, None)],
        [(color, 0.4, 1), (rotate, 0.6, 8)],
        [(solarize, 0.8, 3), (equalize, 0.4, None)],
        [(solarize, 0.4, 2), (solarize, 0.6, 2)],
        [(color, 0.2, 0), (equalize, 0.8, None)],
        [(equalize, 0.4, None), (solarize_add, 0.8, 3)],
        [(shear_x, 0.2, 9), (rotate, 0.6, 8)],
        [(color, 0.6, 1), (equalize, 1.0, None)],
        [(invert, 0.4, None), (rotate, 0.6, 0)],
        [(equalize, 1.0, None), (shear_y, 0.6, 3)],
        [(color, 0.4, 7), (equalize, 0.6, None)],
        [(posterize, 0.4, 6), (auto_contrast, 0.4, None)],
        [(solarize, 0.6, 8), (color, 0.6, 9)],
        [(solarize, 0.2, 4), (rotate, 0.8, 9)],
        [(rotate, 1.0, 7), (translate_y, 0.8, 9)],
        [(solarize, 0.8, 4)],
        [(shear_y, 0.8, 0), (color, 0.6, 4)],
        [(color, 1.0, 0), (rotate, 0.6, 2)],
        [(equalize, 0.8, None)],
        [(equalize, 1.0, None), (auto_contrast, 0.6, None)],
        [(shear_y, 0.4, 7), (solarize_add, 0.6, 7)],
        [(posterize, 0.8, 2), (solarize, 0.6, 10)],
        [(solarize, 0.6, 8), (equalize, 0.6, None)],
        [(color, 0.8, 6), (rotate, 0.4, 5)],
    ])
