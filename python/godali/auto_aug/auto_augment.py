"""AutoAugment (https://arxiv.org/abs/1805.09501), DALI's nvidia.dali.auto_aug.auto_augment.

For each sample a sub-policy is chosen uniformly, and each of its stages runs with its
probability, at its magnitude bin (with a random sign for the augmentations that are
randomly negated).
"""

import numpy as np

from . import augmentations as a
from ._core import Policy, _apply, _translations, _on_engine, _missing_shape
from ._core import _sub_policy_to_augmentation_matrix_map  # noqa: F401  (DALI's name)
from ._core import signed_bin  # noqa: F401  (DALI's module has it)
from .core._args import forbid_unused_kwargs
from .. import fn, types  # noqa: F401  (DALI's module exposes them)

_POLICIES = ("image_net", "reduced_image_net", "svhn", "reduced_cifar10")
# DALI's policies that godali has by name but does not build in (NotImplementedError;
# docs/not-supported.md lists them): none, every policy of the paper is built in.
UNSUPPORTED_POLICIES = ()


def auto_augment(sample, policy_name="image_net", shape=None, fill_value=128, interp_type=None,
                 max_translate_abs=None, max_translate_rel=None, seed=None):
    """Applies a predefined AutoAugment policy (image_net, reduced_image_net, svhn or
    reduced_cifar10: the paper's policies, as DALI defines them) to HWC uint8 images. See DALI's documentation for the arguments; `shape` only switches
    the translations to a fraction of each image's size (the engine knows the shapes)."""
    if not isinstance(policy_name, str) or policy_name not in _POLICIES:
        raise Exception("The `policy_name` must be a string that takes one of the values: %s"
                        % ", ".join("`%s`" % p for p in _POLICIES))
    if policy_name == "reduced_image_net":
        given = next((n for v, n in ((shape, "shape"), (max_translate_abs, "max_translate_abs"),
                                     (max_translate_rel, "max_translate_rel")) if v is not None),
                     None)
        if given is not None:
            raise Exception("The policy `reduced_image_net` does not contain any augmentations "
                            "that rely on the image shape. The `%s` argument must not be "
                            "specified in that case." % given)
        policy = get_reduced_image_net_policy()
    else:
        policy = _GETTERS[policy_name](use_shape=shape is not None,
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
    """Applies `policy` (a Policy) in AutoAugment fashion. kwargs (fill_value,
    interp_type, shape, or the extra arguments of Python augmentations) go to the
    augmentations that take them. A policy of the suites' augmentations runs in one engine
    operator; one with Python (@augmentation) ones runs as DALI's does, on conditionals
    (the pipeline needs enable_conditionals=True)."""
    if not isinstance(policy, Policy):
        raise Exception("Expected a Policy, got %r" % (policy,))
    if len(policy.sub_policies) == 0:
        raise Exception("Cannot run empty policy. Got %r in `apply_auto_augment` call." % policy)
    augs = list(policy.augmentations.values())
    forbid_unused_kwargs(augs, kwargs, "apply_auto_augment")
    _missing_shape(augs, kwargs, "apply_auto_augment", "get_image_net_policy")
    if _on_engine(augs):
        return _apply(policy._spec(), sample, seed=seed, **kwargs)
    return _apply_on_conditionals(policy, sample, seed, kwargs)


def _apply_on_conditionals(policy, data, seed, kwargs):
    """DALI's AutoAugment on conditionals: per sample a sub-policy drawn uniformly, each
    of its stages run (an `if`) when a uniform draw is below its probability, the stage's
    augmentation picked among the stage's ones by select."""
    from .. import _conditionals
    from .core._select import select
    subs = policy.sub_policies
    depth = max(len(sp) for sp in subs)
    probs = np.zeros((len(subs), depth), dtype=np.float32)
    bins = np.zeros((len(subs), depth), dtype=np.int32)
    for i, sp in enumerate(subs):
        for stage, (_, p, mbin) in enumerate(sp):
            probs[i, stage] = p
            bins[i, stage] = -999 if mbin is None else mbin  # ignored without a magnitude
    rnd = {} if seed is None else {"seed": seed}
    should_run = fn.random.uniform(range=[0, 1], shape=(depth,), dtype=types.FLOAT, **rnd)
    sub_id = fn.random.uniform(values=list(range(len(subs))), dtype=types.INT32, **rnd)
    run_prob = types.Constant(probs)[sub_id]
    mag_bins = types.Constant(bins)[sub_id]
    matrix, augments = _sub_policy_to_augmentation_matrix_map(policy)
    aug_ids = types.Constant(matrix)[sub_id]
    if any(aug.randomly_negate for aug in policy.augmentations.values()):
        mag_bins = signed_bin(mag_bins, seed=seed, shape=(depth,))
    for stage in range(depth):
        def run(stage=stage, data=data):
            return select(augments[stage], aug_ids[stage], data,
                          magnitude_bin=mag_bins[stage],
                          num_magnitude_bins=policy.num_magnitude_bins, **kwargs)
        data = _conditionals.choose(should_run[stage] < run_prob[stage], run,
                                    lambda data=data: data, name="data")
    return data


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


def _suite(use_shape, max_translate_abs, max_translate_rel):
    """The augmentations of the SVHN / CIFAR-10 / reduced ImageNet policies, with DALI's
    ranges (11 magnitude bins)."""
    tx, ty = _translations(use_shape, 250, 1., max_translate_abs, max_translate_rel,
                           a.translate_x if use_shape else a.translate_x_no_shape,
                           a.translate_y if use_shape else a.translate_y_no_shape)
    enhance = (0.1, 1.9)
    return {
        "shear_x": a.shear_x.augmentation((0, 0.3), True),
        "shear_y": a.shear_y.augmentation((0, 0.3), True),
        "translate_x": tx, "translate_y": ty,
        "rotate": a.rotate.augmentation((0, 30), True),
        "color": a.color.augmentation(enhance, False, None),
        "contrast": a.contrast.augmentation(enhance, False, None),
        "brightness": a.brightness.augmentation(enhance, False, None),
        "sharpness": a.sharpness.augmentation(enhance, False, a.sharpness_kernel_shifted),
        "posterize": a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        "solarize": a.solarize.augmentation((0, 256), False),
        "invert": a.invert, "equalize": a.equalize, "auto_contrast": a.auto_contrast,
    }


def _policy(name, table, augs):
    return Policy(name=name, num_magnitude_bins=11, sub_policies=[
        [(augs[aug], prob, mbin) for aug, prob, mbin in sub] for sub in table])


# The sub-policies of the AutoAugment paper's appendix (Cubuk et al. 2019, tables 7-9),
# as (augmentation, probability, magnitude bin); DALI 2.4 lists the same.
_REDUCED_IMAGE_NET = [
    [("posterize", 0.4, 8), ("rotate", 0.6, 9)],
    [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)],
    [("posterize", 0.6, 7), ("posterize", 0.6, 6)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)],
    [("equalize", 0.4, None), ("rotate", 0.8, 8)],
    [("solarize", 0.6, 3), ("equalize", 0.6, None)],
    [("posterize", 0.8, 5), ("equalize", 1.0, None)],
    [("rotate", 0.2, 3), ("solarize", 0.6, 8)],
    [("equalize", 0.6, None), ("posterize", 0.4, 6)],
    [("rotate", 0.8, 8), ("color", 0.4, 0)],
    [("rotate", 0.4, 9), ("equalize", 0.6, None)],
    [("equalize", 0.8, None)],
    [("invert", 0.6, None), ("equalize", 1.0, None)],
    [("color", 0.6, 4), ("contrast", 1.0, 8)],
    [("rotate", 0.8, 8), ("color", 1.0, 2)],
    [("color", 0.8, 8), ("solarize", 0.8, 7)],
    [("sharpness", 0.4, 7), ("invert", 0.6, None)],
    [("shear_x", 0.6, 5), ("equalize", 1.0, None)],
    [("color", 0.4, 0), ("equalize", 0.6, None)],
    [("equalize", 0.4, None), ("solarize", 0.2, 4)],
    [("solarize", 0.6, 5), ("auto_contrast", 0.6, None)],
    [("invert", 0.6, None), ("equalize", 1.0, None)],
    [("color", 0.6, 4), ("contrast", 1.0, 8)],
    [("equalize", 0.8, None), ("equalize", 0.6, None)],
]

_SVHN = [
    [("shear_x", 0.9, 4), ("invert", 0.2, None)],
    [("shear_y", 0.9, 8), ("invert", 0.7, None)],
    [("equalize", 0.6, None), ("solarize", 0.6, 6)],
    [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("equalize", 0.6, None), ("rotate", 0.9, 3)],
    [("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)],
    [("shear_y", 0.9, 8), ("invert", 0.4, None)],
    [("shear_y", 0.9, 5), ("solarize", 0.2, 6)],
    [("invert", 0.9, None), ("auto_contrast", 0.8, None)],
    [("equalize", 0.6, None), ("rotate", 0.9, 3)],
    [("shear_x", 0.9, 4), ("solarize", 0.3, 3)],
    [("shear_y", 0.8, 8), ("invert", 0.7, None)],
    [("equalize", 0.9, None), ("translate_y", 0.6, 6)],
    [("invert", 0.9, None), ("equalize", 0.6, None)],
    [("contrast", 0.3, 3), ("rotate", 0.8, 4)],
    [("invert", 0.8, None)],
    [("shear_y", 0.7, 6), ("solarize", 0.4, 8)],
    [("invert", 0.6, None), ("rotate", 0.8, 4)],
    [("shear_y", 0.3, 7), ("translate_x", 0.9, 3)],
    [("shear_x", 0.1, 6), ("invert", 0.6, None)],
    [("solarize", 0.7, 2), ("translate_y", 0.6, 7)],
    [("shear_y", 0.8, 4), ("invert", 0.8, None)],
    [("shear_x", 0.7, 9), ("translate_y", 0.8, 3)],
    [("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)],
    [("shear_x", 0.7, 2), ("invert", 0.1, None)],
]

_REDUCED_CIFAR10 = [
    [("invert", 0.1, None), ("contrast", 0.2, 6)],
    [("rotate", 0.7, 2), ("translate_x", 0.3, 9)],
    [("sharpness", 0.8, 1), ("sharpness", 0.9, 3)],
    [("shear_y", 0.5, 8), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.5, None), ("equalize", 0.9, None)],
    [("shear_y", 0.2, 7), ("posterize", 0.3, 7)],
    [("color", 0.4, 3), ("brightness", 0.6, 7)],
    [("sharpness", 0.3, 9), ("brightness", 0.7, 9)],
    [("equalize", 0.6, None), ("equalize", 0.5, None)],
    [("contrast", 0.6, 7), ("sharpness", 0.6, 5)],
    [("color", 0.7, 7), ("translate_x", 0.5, 8)],
    [("equalize", 0.3, None), ("auto_contrast", 0.4, None)],
    [("translate_y", 0.4, 3), ("sharpness", 0.2, 6)],
    [("brightness", 0.9, 6), ("color", 0.2, 8)],
    [("solarize", 0.5, 2)],
    [("equalize", 0.2, None), ("auto_contrast", 0.6, None)],
    [("equalize", 0.2, None), ("equalize", 0.6, None)],
    [("color", 0.9, 9), ("equalize", 0.6, None)],
    [("auto_contrast", 0.8, None), ("solarize", 0.2, 8)],
    [("brightness", 0.1, 3), ("color", 0.7, 0)],
    [("solarize", 0.4, 5), ("auto_contrast", 0.9, None)],
    [("translate_y", 0.9, 9), ("translate_y", 0.7, 9)],
    [("auto_contrast", 0.9, None), ("solarize", 0.8, 3)],
    [("equalize", 0.8, None), ("invert", 0.1, None)],
    [("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)],
]


def get_reduced_image_net_policy():
    """The paper's reduced ImageNet policy (25 sub-policies, 11 magnitude bins)."""
    return _policy("ReducedImageNetPolicy", _REDUCED_IMAGE_NET, _suite(False, None, None))


def get_svhn_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The paper's SVHN policy (25 sub-policies, 11 magnitude bins)."""
    return _policy("SvhnPolicy", _SVHN, _suite(use_shape, max_translate_abs, max_translate_rel))


def get_reduced_cifar10_policy(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """The paper's reduced CIFAR-10 policy (25 sub-policies, 11 magnitude bins)."""
    return _policy("ReducedCifar10Policy", _REDUCED_CIFAR10,
                   _suite(use_shape, max_translate_abs, max_translate_rel))


_GETTERS = {"image_net": get_image_net_policy, "svhn": get_svhn_policy,
            "reduced_cifar10": get_reduced_cifar10_policy}
