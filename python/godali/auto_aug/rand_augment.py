"""RandAugment (https://arxiv.org/abs/1909.13719), DALI's nvidia.dali.auto_aug.rand_augment:
each sample gets n augmentations drawn uniformly (with replacement) from the suite, all
at magnitude bin m."""

import warnings

from . import augmentations as a
from ._core import _apply, _translations, _on_engine, _missing_shape
from ._core import signed_bin
from .core._args import forbid_unused_kwargs
from .. import fn, types  # noqa: F401  (DALI's module exposes them)


def rand_augment(sample, n, m, num_magnitude_bins=31, shape=None, fill_value=128,
                 interp_type=None, max_translate_abs=None, max_translate_rel=None, seed=None,
                 monotonic_mag=True, excluded=None):
    """Applies RandAugment with DALI's suite (see DALI's documentation for the arguments)."""
    suite = (get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite)(
        shape is not None, max_translate_abs, max_translate_rel)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise Exception("The `%s` was specified in `excluded`, but the RandAugment suite "
                            "does not contain augmentation with this name. The augmentations in "
                            "the suite are: %s." % (name, ", ".join(names)))
    selected = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_rand_augment(selected, sample, n, m, num_magnitude_bins=num_magnitude_bins,
                              seed=seed, fill_value=fill_value, interp_type=interp_type,
                              shape=shape)


def apply_rand_augment(augmentations, sample, n, m, num_magnitude_bins=31, seed=None, **kwargs):
    if not isinstance(n, int) or n < 0:
        raise Exception("The number of operations to apply `n` must be a non-negative "
                        "integer, got %r." % (n,))
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception("The `num_magnitude_bins` must be a positive integer, got %r."
                        % (num_magnitude_bins,))
    if not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise Exception("The magnitude bin `m` must be an integer from `[0, %d]` range. Got %r."
                        % (num_magnitude_bins - 1, m))
    if n == 0:
        warnings.warn("The `apply_rand_augment` was called with `n=0`, no augmentation will "
                      "be applied.", Warning)
        return sample
    if len(augmentations) == 0:
        raise Exception("The `augmentations` list cannot be empty, unless n=0.")
    forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    _missing_shape(augmentations, kwargs, "apply_rand_augment", "get_rand_augment_suite")
    if not _on_engine(augmentations):
        return _rand_on_conditionals(augmentations, sample, n, m, num_magnitude_bins, seed,
                                     kwargs)
    policy = {"scheme": "rand", "bins": num_magnitude_bins, "n": n, "m": m,
              "augs": [aug._spec() for aug in augmentations]}
    return _apply(policy, sample, seed=seed, **kwargs)


def _rand_on_conditionals(augmentations, data, n, m, num_magnitude_bins, seed, kwargs):
    """DALI's RandAugment on conditionals, for Python (@augmentation) augmentations: n
    augmentations per sample drawn uniformly with replacement (select), each at bin m
    with its own random sign."""
    from .core._select import select
    rnd = {} if seed is None else {"seed": seed}
    shape = () if n == 1 else (n,)
    mag_bin = m
    signed = any(aug.randomly_negate for aug in augmentations)
    if signed:
        mag_bin = signed_bin(m, seed=seed, shape=shape)
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), dtype=types.INT32,
                               **rnd, **({"shape": shape} if shape else {}))
    for level in range(n):
        level_bin = mag_bin if not signed or n == 1 else mag_bin[level]
        level_idx = op_idx if n == 1 else op_idx[level]
        data = select(augmentations, level_idx, data, magnitude_bin=level_bin,
                      num_magnitude_bins=num_magnitude_bins, **kwargs)
    return data


def get_rand_augment_suite(use_shape=False, max_translate_abs=None, max_translate_rel=None):
    """DALI's RandAugment suite (magnitudes grow with the bin)."""
    return _translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel,
                         a.translate_x if use_shape else a.translate_x_no_shape,
                         a.translate_y if use_shape else a.translate_y_no_shape) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(use_shape=False, max_translate_abs=None,
                                         max_translate_rel=None):
    """DALI's RandAugment suite with AutoAugment's ranges for the color operations."""
    return _translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel,
                         a.translate_x if use_shape else a.translate_x_no_shape,
                         a.translate_y if use_shape else a.translate_y_no_shape) + [
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
