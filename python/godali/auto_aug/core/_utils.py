"""DALI's nvidia.dali.auto_aug.core._utils: get_translations, the translate_x /
translate_y pair of a suite."""

from .. import augmentations as _a
from .._core import _translations


def get_translations(use_shape, default_translate_abs, default_translate_rel,
                     max_translate_abs=None, max_translate_rel=None):
    """[translate_x, translate_y] with magnitude ranges (0, width limit) and (0, height
    limit), randomly negated: relative to the image's size (translate_x/translate_y)
    when use_shape, else in pixels (translate_x_no_shape/translate_y_no_shape). A limit
    is one number for both or (height, width); the defaults apply when neither
    max_translate_abs nor max_translate_rel is given."""
    if not isinstance(use_shape, bool):
        raise Exception("The `use_shape` is a flag that should be set to either True or "
                        "False, got %s." % (use_shape,))
    return _translations(use_shape, default_translate_abs, default_translate_rel,
                         max_translate_abs, max_translate_rel,
                         _a.translate_x if use_shape else _a.translate_x_no_shape,
                         _a.translate_y if use_shape else _a.translate_y_no_shape)
