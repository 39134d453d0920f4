"""Disagreements with DALI 2.4 found by the property-based oracle (tests/compat/
propsweep.py) and fixed in godali: each test is the case, with what DALI 2.4 does."""

import numpy as np
import pytest

import godali
from godali import fn


def _run(build):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
    img = [np.zeros((6, 7, 3), np.uint8)] * 2
    with pipe:
        pipe.set_outputs(build(fn.external_source(source=lambda: img, layout="HWC",
                                                  batch=True)))
    pipe.build()
    return pipe.run()


@pytest.mark.parametrize("op", ["crop", "crop_mirror_normalize"])
@pytest.mark.parametrize("given", ["crop_h", "crop_w"])
def test_crop_h_and_crop_w_come_together(op, given):
    # DALI 2.4 (crop_attr.cc): "`crop_w` and `crop_h` arguments must be provided together"
    with pytest.raises(ValueError, match="crop_w and crop_h must be given together"):
        _run(lambda x: getattr(fn, op)(x, **{given: 4.0}))
    out = _run(lambda x: getattr(fn, op)(x, crop_h=4.0, crop_w=5.0))
    assert np.array(out[0][0]).shape in ((4, 5, 3), (3, 4, 5))


def test_erase_normalized_with_normalized_shape_is_refused():
    # DALI 2.4 (erase_utils.h): `normalized` is incompatible with a separate
    # `normalized_anchor` / `normalized_shape`
    for extra in ({"normalized_shape": True}, {"normalized_anchor": False}):
        with pytest.raises(ValueError, match="normalized"):
            _run(lambda x: fn.erase(x, anchor=[1.0, 1.0], shape=[2.0, 2.0], axis_names="HW",
                                    normalized=False, **extra))
    out = _run(lambda x: fn.erase(x, anchor=[1.0, 1.0], shape=[2.0, 2.0], axis_names="HW",
                                  normalized_shape=False, normalized_anchor=False))
    assert np.array(out[0][0]).shape == (6, 7, 3)
