"""The standard suite of augmentations (DALI's nvidia.dali.auto_aug.augmentations).

Each is a `_Augmentation` with DALI's default magnitude range; adjust one with
`.augmentation(mag_range=..., randomly_negate=..., mag_to_param=...)`. The parameter
mappings are DALI's functions of the same names (defined here for reference and for use
as `mag_to_param`).
"""

import numpy as np

from ._core import _Augmentation, augmentation  # noqa: F401
from .. import fn, types  # noqa: F401  (DALI's module exposes them)


def warp_x_param(magnitude):
    return [magnitude, 0]


def warp_y_param(magnitude):
    return [0, magnitude]


def shift_enhance_range(magnitude):
    """Enhance factors are 1 + magnitude (magnitudes in [0, 1], randomly negated)."""
    return 1 + magnitude


def sharpness_kernel(magnitude):
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13
    ident = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)
    return -magnitude * blur + (1 + magnitude) * ident


def sharpness_kernel_shifted(magnitude):
    return sharpness_kernel(magnitude - 1)


def poster_mask_uint8(magnitude):
    bits = int(np.round(magnitude))
    bits = min(max(bits, 1), 8)
    return np.uint8(255 ^ (2 ** (8 - bits) - 1))


def solarize_add_shift(shift):
    if shift >= 128:
        raise Exception("The solarize_add augmentation accepts shifts from 0 to 128")
    return np.uint8(shift)


shear_x = _Augmentation("shear_x", "shear_x", (0, 0.3), True, warp_x_param)
shear_y = _Augmentation("shear_y", "shear_y", (0, 0.3), True, warp_y_param)
translate_x = _Augmentation("translate_x", "translate_x", (0., 1.), True, warp_x_param, rel=True)
translate_x_no_shape = _Augmentation("translate_x", "translate_x", (0, 250), True, warp_x_param)
translate_y = _Augmentation("translate_y", "translate_y", (0., 1.), True, warp_y_param, rel=True)
translate_y_no_shape = _Augmentation("translate_y", "translate_y", (0, 250), True, warp_y_param)
rotate = _Augmentation("rotate", "rotate", (0, 30), True)
brightness = _Augmentation("brightness", "brightness", (0, 0.9), True, shift_enhance_range)
contrast = _Augmentation("contrast", "contrast", (0, 0.9), True, shift_enhance_range)
color = _Augmentation("color", "color", (0, 0.9), True, shift_enhance_range)
sharpness = _Augmentation("sharpness", "sharpness", (0, 0.9), True, sharpness_kernel)
posterize = _Augmentation("posterize", "posterize", (0, 4), False, poster_mask_uint8)
solarize = _Augmentation("solarize", "solarize", (256, 0), False)
solarize_add = _Augmentation("solarize_add", "solarize_add", (0, 110), False, solarize_add_shift)
invert = _Augmentation("invert", "invert")
equalize = _Augmentation("equalize", "equalize")
auto_contrast = _Augmentation("auto_contrast", "auto_contrast")
identity = _Augmentation("identity", "identity")
