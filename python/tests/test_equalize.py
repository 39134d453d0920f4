"""fn.equalize / fn.experimental.equalize against OpenCV's equalizeHist applied to each
channel of each frame (the reference DALI's tests use): HW, HWC with any number of
channels, CHW and FHWC uint8 inputs; the outputs must be equal."""
import cv2
import numpy as np
import pytest

import godali
from godali import fn


def _ref(img, layout):
    if layout.startswith("F"):
        return np.stack([_ref(f, layout[1:]) for f in img])
    if layout == "HW":
        return cv2.equalizeHist(img)
    if layout == "CHW":
        return np.stack([cv2.equalizeHist(np.ascontiguousarray(c)) for c in img])
    return np.stack([cv2.equalizeHist(np.ascontiguousarray(img[..., c]))
                     for c in range(img.shape[-1])], axis=-1)


def _samples(layout, rng):
    shapes = {"HW": [(37, 51), (64, 8)], "HWC": [(40, 30, 1), (33, 17, 5), (20, 21, 13)],
              "CHW": [(3, 31, 29), (2, 16, 40)], "FHWC": [(3, 24, 18, 3), (2, 9, 30, 2)]}[layout]
    out = []
    for i, s in enumerate(shapes):
        # narrow ranges too, so that the first occupied level and the scale matter
        lo = int(rng.integers(0, 100)) if i % 2 else 0
        out.append(rng.integers(lo, lo + 100 + 50 * i, size=s).astype(np.uint8))
    return out


@pytest.mark.parametrize("op", ["equalize", "experimental.equalize"])
@pytest.mark.parametrize("layout", ["HW", "HWC", "CHW", "FHWC"])
def test_equalize_matches_opencv(op, layout):
    rng = np.random.default_rng(7)
    data = _samples(layout, rng)
    func = fn.equalize if op == "equalize" else fn.experimental.equalize
    pipe = godali.Pipeline(batch_size=len(data), num_threads=2)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        pipe.set_outputs(func(x))
    (out,) = pipe.run()
    assert out.layout() == layout
    for i, img in enumerate(data):
        np.testing.assert_array_equal(out[i].as_array(), _ref(img, layout), err_msg=f"sample {i}")
    pipe.close()


def test_equalize_without_layout_is_hw_or_hwc():
    rng = np.random.default_rng(3)
    data = [rng.integers(0, 256, size=(20, 30, 4)).astype(np.uint8)]
    gray = [rng.integers(10, 60, size=(25, 15)).astype(np.uint8)]
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.equalize(fn.external_source(source=lambda: data)),
                         fn.equalize(fn.external_source(source=lambda: gray)))
    a, b = pipe.run()
    np.testing.assert_array_equal(a[0].as_array(), _ref(data[0], "HWC"))
    np.testing.assert_array_equal(b[0].as_array(), _ref(gray[0], "HW"))
    pipe.close()


def test_equalize_refuses_float_and_other_layouts():
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.equalize(fn.external_source(
            source=lambda: [np.zeros((4, 4, 3), np.float32)], layout="HWC")))
    with pytest.raises(Exception, match="uint8"):
        pipe.build()
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.equalize(fn.external_source(
            source=lambda: [np.zeros((4, 4, 3), np.uint8)], layout="DHW")))
    with pytest.raises(Exception, match="HWC"):
        pipe.build()
