"""TrivialAugment Wide (https://arxiv.org/abs/2103.10158), DALI's
nvidia.dali.auto_aug.trivial_augment: one augmentation per sample, drawn uniformly from
the suite, at a magnitude bin drawn uniformly from [0, num_magnitude_bins - 1]."""

from . import augmentations as a
from ._core import _apply, _translations, _on_engine, _missing_shape
from ._core import signed_bin
from .core._args import forbid_unused_kwargs
from .. import fn, types  # noqa: F401  (DALI's module exposes them)


def trivial_augment_wide(sample, num_magnitude_bins=31, shape=None, fill_value=128,
                         interp_type=None, max_translate_abs=None, max_translate_rel=None,
                         seed=None, excluded=None):
    """Applies TrivialAugment Wide with DALI's suite (see DALI's documentation)."""
    suite = get_trivial_augment_wide_suite(shape is not None, max_translate_abs,
                                           max_translate_rel)
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise Exception("The `%s` was specified in `excluded`, but the TrivialAugmentWide "
                            "suite does not contain augmentation with this name. The "
                            "augmentations in the suite are: %s." % (name, ", ".join(names)))
    selected = [aug for aug in suite if aug.name not in (excluded or [])]
    return apply_trivial_augment(selected, sample, num_magnitude_bins=num_magnitude_bins,
                                 seed=seed, fill_value=fill_value, interp_type=interp_type,
                                 shape=shape)


def apply_trivial_augment(augmentations, sample, num_magnitude_bins=31, seed=None, **kwargs):
    if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
        raise Exception("The `num_magnitude_bins` must be a positive integer, got %r."
                        % (num_magnitude_bins,))
    if len(augmentations) == 0:
        raise Exception("The `augmentations` list cannot be empty.")
    forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    _missing_shape(augmentations, kwargs, "apply_trivial_augment",
                   "get_trivial_augment_wide_suite")
    if not _on_engine(augmentations):
        return _trivial_on_conditionals(augmentations, sample, num_magnitude_bins, seed,
                                        kwargs)
    policy = {"scheme": "trivial", "bins": num_magnitude_bins,
              "augs": [aug._spec() for aug in augmentations]}
    return _apply(policy, sample, seed=seed, **kwargs)


def _trivial_on_conditionals(augmentations, data, num_magnitude_bins, seed, kwargs):
    """DALI's TrivialAugment on conditionals, for Python (@augmentation) augmentations:
    per sample one augmentation (select) at one bin, both drawn uniformly, with a random
    sign."""
    from .core._select import select
    rnd = {} if seed is None else {"seed": seed}
    mag_bin = fn.random.uniform(values=list(range(num_magnitude_bins)), dtype=types.INT32,
                                **rnd)
    if any(aug.randomly_negate for aug in augmentations):
        mag_bin = signed_bin(mag_bin, seed=seed)
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), dtype=types.INT32,
                               **rnd)
    return select(augmentations, op_idx, data, magnitude_bin=mag_bin,
                  num_magnitude_bins=num_magnitude_bins, **kwargs)


def get_trivial_augment_wide_suite(use_shape=False, max_translate_abs=None,
                                   max_translate_rel=None):
    """DALI's 14 augmentations of the wide augmentation space."""
    return _translations(use_shape, 32, 1., max_translate_abs, max_translate_rel,
                         a.translate_x if use_shape else a.translate_x_no_shape,
                         a.translate_y if use_shape else a.translate_y_no_shape) + [
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
