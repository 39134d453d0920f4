"""permute_batch, experimental.filter, experimental.warp_perspective,
experimental.median_blur, experimental.dilate and experimental.erode against independent
references: numpy indexing, padding and sliding windows, SciPy (ndimage.correlate) and
OpenCV (cv2.filter2D and cv2.warpPerspective, which DALI's CPU variants call;
cv2.medianBlur, cv2.dilate and cv2.erode, which DALI's tests compare its GPU variants with).

Tolerances: permute_batch exactly; filter with dtype=FLOAT within 1e-4 relative + 1e-3
absolute (godali accumulates in float64, OpenCV in float32); uint8 output within 1 level
of cv2.filter2D (the rounding of the last bit); integer outputs of the numpy reference
(float64, rounded half to even, saturated) within 1 level. warp_perspective: uint8/int16/
uint16 within 1 level of cv2.warpPerspective for LINEAR and CUBIC, FLOAT within 1e-4; NN
exact but for at most 0.2% of pixels (source points within float rounding of a pixel
boundary). median_blur, dilate, erode: exactly.
"""

import numpy as np
import pytest

import godali
from godali import fn, types
from conftest import need

cv2 = need("cv2")
ndimage = need("scipy.ndimage")

RNG = np.random.default_rng(11)


def _run(graph, *sources, layouts=None, batch=None, iters=1):
    """Runs graph(*external_sources) iters times; returns [iteration][output][sample]."""
    batch = batch or len(sources[0])
    layouts = layouts or [""] * len(sources)
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=5)
    with pipe:
        nodes = [fn.external_source(source=(lambda s=s: s), layout=l) for s, l in zip(sources, layouts)]
        outs = graph(*nodes)
        pipe.set_outputs(*(outs if isinstance(outs, (list, tuple)) else [outs]))
    res = []
    for _ in range(iters):
        r = pipe.run()
        res.append([[np.array(o[i].as_array()) for i in range(batch)] for o in r])
    layouts_out = [o.layout() for o in r]
    pipe.close()
    return res, layouts_out


# --- permute_batch ---------------------------------------------------------------------

DATA = [RNG.integers(-100, 100, size=(2 + i, 3, 1 + i % 2)).astype(np.int16) for i in range(5)]


def test_permute_batch_constant_indices():
    idx = [4, 0, 0, 2, 3]  # repetitions and omissions are allowed
    (got,), lay = _run(lambda x: [fn.permute_batch(x, indices=idx), x], DATA, layouts=["ABC"])
    for i, j in enumerate(idx):
        assert got[0][i].dtype == np.int16
        np.testing.assert_array_equal(got[0][i], DATA[j])
        np.testing.assert_array_equal(got[1][i], DATA[i])  # the input is untouched
    assert lay[0] == "ABC"


def test_permute_batch_with_batch_permutation():
    res, _ = _run(lambda x: (lambda p: [fn.permute_batch(x, indices=p), p])(fn.batch_permutation()),
                  DATA, iters=3)
    perms = set()
    for out, p in res:
        p = [int(v) for v in p]
        assert sorted(p) == list(range(5))
        perms.add(tuple(p))
        for i, j in enumerate(p):
            np.testing.assert_array_equal(out[i], DATA[j])
    assert len(perms) > 1  # three draws of 5! permutations: not all the same


def test_permute_batch_per_sample_indices_and_gpu_refused():
    idx = [np.array(v, dtype=np.int32) for v in [1, 1, 3, 0, 2]]
    (got,), _ = _run(lambda x, i: fn.permute_batch(x, indices=i), DATA, idx)
    for i, j in enumerate([1, 1, 3, 0, 2]):
        np.testing.assert_array_equal(got[0][i], DATA[j])
    with pytest.raises(ValueError, match="CPU"):
        _run(lambda x: fn.permute_batch(x, indices=[0] * 5, device="gpu"), DATA)


def test_permute_batch_after_python_function():
    # python_function's output has its type only at run time: permute_batch takes it.
    (got,), _ = _run(lambda x: fn.permute_batch(fn.python_function(x, function=lambda a: a * 2),
                                                indices=[2, 2, 0, 1, 4]), DATA)
    for i, j in enumerate([2, 2, 0, 1, 4]):
        np.testing.assert_array_equal(got[0][i], DATA[j] * 2)


@pytest.mark.parametrize("idx, msg", [([0, 1, 2, 3, 5], "out of range"), ([0, 1, 2], "batch size"),
                                      ([0, -1, 2, 3, 4], "negative")])
def test_permute_batch_bad_indices(idx, msg):
    with pytest.raises(Exception) as e:
        _run(lambda x: fn.permute_batch(x, indices=idx), DATA)
    assert "indices" in str(e.value) and msg in str(e.value)


def test_permute_batch_per_sample_index_out_of_range():
    idx = [np.array(v, dtype=np.int32) for v in [0, 1, 7, 0, 2]]
    with pytest.raises(Exception) as e:
        _run(lambda x, i: fn.permute_batch(x, indices=i), DATA, idx)
    # DALI's wording, which its tests match, and the entry at fault
    assert "Sample index out of range. 7 is not a valid index for an input batch of 5 tensors." in str(e.value)
    assert "indices[2]" in str(e.value)


# --- experimental.filter ---------------------------------------------------------------

PAD_MODE = {"reflect_101": "reflect", "reflect_1001": "symmetric", "wrap": "wrap", "clamp": "edge",
            "constant": "constant"}


def np_filter(img, filt, anchor=None, border="reflect_101", fill=0.0, mode="same", channels=False):
    """Correlation by padding with numpy and summing shifted copies (float64)."""
    img = img.astype(np.float64)
    k = filt.ndim
    anchor = [s // 2 for s in filt.shape] if anchor is None else [s // 2 if a == -1 else a
                                                                   for a, s in zip(anchor, filt.shape)]
    if mode == "valid":
        pad = img
    else:
        widths = [(a, s - 1 - a) for a, s in zip(anchor, filt.shape)] + ([(0, 0)] if channels else [])
        kw = {"constant_values": fill} if border == "constant" else {}
        pad = np.pad(img, widths, mode=PAD_MODE[border], **kw)
    out_shape = [pad.shape[d] - filt.shape[d] + 1 for d in range(k)] + list(img.shape[k:])
    out = np.zeros(out_shape)
    for t in np.ndindex(*filt.shape):
        sl = tuple(slice(t[d], t[d] + out_shape[d]) for d in range(k))
        out += filt[t] * pad[sl]
    return out


def _sat(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(x), info.min, info.max).astype(dtype)


def test_filter_uint8_hwc_matches_opencv_filter2d():
    imgs = [RNG.integers(0, 256, size=s, dtype=np.uint8) for s in [(31, 40, 3), (17, 9, 3), (8, 8, 3)]]
    filts = [RNG.uniform(-0.5, 1, size=s).astype(np.float32) for s in [(3, 3), (5, 4), (1, 7)]]
    (got,), lay = _run(lambda x, f: [fn.experimental.filter(x, f),
                                     fn.experimental.filter(x, f, dtype=types.FLOAT)],
                       imgs, filts, layouts=["HWC", ""])
    assert lay == ["HWC", "HWC"]
    for img, f, u8, fl in zip(imgs, filts, got[0], got[1]):
        ref = cv2.filter2D(img, -1, f, borderType=cv2.BORDER_REFLECT_101)
        assert u8.dtype == np.uint8 and u8.shape == img.shape
        assert np.abs(u8.astype(int) - ref.astype(int)).max() <= 1
        ref_f = cv2.filter2D(img.astype(np.float32), -1, f, borderType=cv2.BORDER_REFLECT_101)
        assert fl.dtype == np.float32
        np.testing.assert_allclose(fl, ref_f, rtol=1e-4, atol=1e-3)
        # SciPy: the same correlation per channel (mode "mirror" is reflect-101).
        for c in range(3):
            np.testing.assert_allclose(fl[..., c], ndimage.correlate(img[..., c].astype(np.float64), f.astype(np.float64),
                                                                     mode="mirror"), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"])
@pytest.mark.parametrize("anchor", [-1, [0, 0], [2, 1]])
def test_filter_borders_and_anchor(border, anchor):
    imgs = [RNG.uniform(-10, 10, size=s).astype(np.float32) for s in [(12, 9), (6, 14)]]
    filt = RNG.uniform(-1, 1, size=(3, 4)).astype(np.float32)
    (got,), _ = _run(lambda x: fn.experimental.filter(x, filt, border=border, anchor=anchor, fill_value=2.5),
                     imgs, layouts=["HW"])
    a = [anchor, anchor] if anchor == -1 else anchor
    for img, g in zip(imgs, got[0]):
        ref = np_filter(img, filt.astype(np.float64), anchor=a, border=border, fill=2.5)
        np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-4)


def test_filter_valid_mode_and_fill_input():
    imgs = [RNG.integers(0, 60000, size=s, dtype=np.uint16) for s in [(10, 12, 2), (5, 7, 2)]]
    filts = [np.full((3, 5), 1 / 15, np.float32), RNG.uniform(0, 0.3, size=(5, 2)).astype(np.float32)]
    fills = [np.array(7, np.uint16), np.array(65535, np.uint16)]
    (got,), _ = _run(lambda x, f, v: [fn.experimental.filter(x, f, mode="valid", anchor=[0, 0]),
                                      fn.experimental.filter(x, f, v, border="constant")],
                     imgs, filts, fills, layouts=["HWC", "", ""])
    for img, f, v, val, con in zip(imgs, filts, fills, got[0], got[1]):
        ref = np_filter(img, f.astype(np.float64), mode="valid", channels=True)
        assert val.shape == ref.shape and val.dtype == np.uint16
        assert np.abs(val.astype(int) - _sat(ref, np.uint16).astype(int)).max() <= 1
        ref = np_filter(img, f.astype(np.float64), border="constant", fill=float(v), channels=True)
        assert np.abs(con.astype(int) - _sat(ref, np.uint16).astype(int)).max() <= 1


def test_filter_channel_first_sequence_and_volume():
    # CHW: channels filtered apart; FHWC with one filter per frame; DHWC: a 3-D filter.
    chw = [RNG.uniform(0, 1, size=(2, 9, 11)).astype(np.float32)]
    f2 = RNG.uniform(-1, 1, size=(3, 3)).astype(np.float32)
    (got,), _ = _run(lambda x: fn.experimental.filter(x, f2), chw, layouts=["CHW"])
    for c in range(2):
        np.testing.assert_allclose(got[0][0][c], ndimage.correlate(chw[0][c].astype(np.float64), f2, mode="mirror"),
                                   rtol=1e-4, atol=1e-5)
    seq = [RNG.integers(-300, 300, size=(3, 8, 10, 2)).astype(np.int16)]
    fseq = [RNG.uniform(-1, 1, size=(3, 3, 5)).astype(np.float32)]
    (got,), lay = _run(lambda x, f: fn.experimental.filter(x, f, border="wrap"), seq, fseq, layouts=["FHWC", "FHW"])
    assert lay == ["FHWC"]
    for fr in range(3):
        ref = np_filter(seq[0][fr], fseq[0][fr].astype(np.float64), border="wrap", channels=True)
        assert np.abs(got[0][0][fr].astype(int) - _sat(ref, np.int16).astype(int)).max() <= 1
    vol = [RNG.uniform(0, 1, size=(6, 7, 8, 1)).astype(np.float32)]
    f3 = RNG.uniform(-1, 1, size=(3, 2, 3)).astype(np.float32)
    (got,), _ = _run(lambda x: fn.experimental.filter(x, f3, border="clamp"), vol, layouts=["DHWC"])
    ref = ndimage.correlate(vol[0][..., 0].astype(np.float64), f3.astype(np.float64), mode="nearest")
    # SciPy centres an even extent of 2 at 1, as DALI's default anchor (2 // 2)
    np.testing.assert_allclose(got[0][0][..., 0], np_filter(vol[0][..., 0], f3.astype(np.float64), border="clamp"),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0][0][..., 0], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw, filt, msg", [
    ({"border": "mirror"}, np.ones((3, 3), np.float32), "border"),
    ({"mode": "full"}, np.ones((3, 3), np.float32), "mode"),
    ({"anchor": [3, 0]}, np.ones((3, 3), np.float32), "anchor"),
    ({"dtype": types.INT32}, np.ones((3, 3), np.float32), "dtype"),
    ({}, np.ones((3, 3), np.int32), "FLOAT"),
    ({}, np.ones((3,), np.float32), "dimensions"),
    ({"mode": "valid"}, np.ones((9, 3), np.float32), "bigger"),
])
def test_filter_errors(kw, filt, msg):
    imgs = [np.zeros((5, 6, 3), np.uint8)]
    with pytest.raises(Exception) as e:
        _run(lambda x: fn.experimental.filter(x, filt, **kw), imgs, layouts=["HWC"])
    assert msg in str(e.value)


# --- experimental.warp_perspective -----------------------------------------------------

CV_BORDER = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
             "reflect_101": cv2.BORDER_REFLECT_101, "wrap": cv2.BORDER_WRAP}
CV_INTERP = {types.INTERP_NN: cv2.INTER_NEAREST, types.INTERP_LINEAR: cv2.INTER_LINEAR,
             types.INTERP_CUBIC: cv2.INTER_CUBIC}


def _homography(rng, h, w):
    """A random homography mixing rotation, scale, shift and perspective terms."""
    a = rng.uniform(-0.4, 0.4)
    s = rng.uniform(0.7, 1.3)
    m = np.array([[s * np.cos(a), -s * np.sin(a), rng.uniform(-5, 5)],
                  [s * np.sin(a), s * np.cos(a), rng.uniform(-5, 5)],
                  [rng.uniform(-2e-3, 2e-3), rng.uniform(-2e-3, 2e-3), 1]])
    return m.astype(np.float32)


def cv_warp(img, m, size=None, inverse=True, border="constant", fill=0, interp=types.INTERP_LINEAR,
            corner=True):
    """OpenCV's warpPerspective with DALI's corner-origin conversion done in float32."""
    m = m.astype(np.float32)
    if corner:
        sh = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]], np.float32)
        back = np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]], np.float32)
        m = back @ (m @ sh)
    h, w = (img.shape[:2] if size is None else size)
    flags = CV_INTERP[interp] | (cv2.WARP_INVERSE_MAP if inverse else 0)
    out = cv2.warpPerspective(img, m.astype(np.float64), (w, h), flags=flags, borderMode=CV_BORDER[border],
                              borderValue=fill)
    return out.reshape(h, w, *img.shape[2:])


WIMGS = [RNG.integers(0, 256, size=s, dtype=np.uint8) for s in [(40, 50, 3), (33, 27, 3), (16, 64, 3)]]
WMATS = [_homography(RNG, *i.shape[:2]) for i in WIMGS]


def _close_u8(got, ref, tol=1, frac=0.0):
    d = np.abs(got.astype(int) - ref.astype(int))
    assert d.max() <= tol or (d > tol).mean() <= frac, (d.max(), (d > tol).mean())


@pytest.mark.parametrize("origin", ["corner", "center"])
@pytest.mark.parametrize("inverse", [True, False])
def test_warp_perspective_linear_matches_opencv(origin, inverse):
    (got,), lay = _run(lambda x, m: fn.experimental.warp_perspective(x, m, pixel_origin=origin, inverse_map=inverse,
                                                                     fill_value=[10, 200, 30]),
                       WIMGS, WMATS, layouts=["HWC", ""])
    assert lay == ["HWC"]
    for img, m, g in zip(WIMGS, WMATS, got[0]):
        ref = cv_warp(img, m, inverse=inverse, fill=(10, 200, 30), corner=origin == "corner")
        assert g.shape == ref.shape and g.dtype == np.uint8
        _close_u8(g, ref)
        assert (g != 0).mean() > 0.5  # most of the image is the warped input, not fill


@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC])
def test_warp_perspective_borders_interp_size(border, interp):
    # The matrix as a per-sample argument; an output size other than the input's.
    size = (45, 38)
    (got,), _ = _run(lambda x, m: fn.experimental.warp_perspective(x, matrix=m, size=size, border_mode=border,
                                                                   interp_type=interp, fill_value=77),
                     WIMGS, [m.reshape(-1) for m in WMATS], layouts=["HWC", ""])
    for img, m, g in zip(WIMGS, WMATS, got[0]):
        ref = cv_warp(img, m, size=size, border=border, fill=(77, 77, 77), interp=interp)
        assert g.shape == (45, 38, 3)
        if interp == types.INTERP_NN:
            # exact but for points within float rounding of a pixel boundary
            _close_u8(g, ref, tol=0, frac=0.002)
        else:
            _close_u8(g, ref)


def test_warp_perspective_types_and_sequences():
    m = WMATS[0]
    f32 = [RNG.uniform(-1, 1, size=(30, 20)).astype(np.float32)]
    i16 = [RNG.integers(-30000, 30000, size=(30, 20, 2)).astype(np.int16)]
    u16 = [RNG.integers(0, 65535, size=(30, 20, 1)).astype(np.uint16)]
    seq = [RNG.integers(0, 256, size=(3, 24, 28, 3), dtype=np.uint8)]
    for data, lay in [(f32, "HW"), (i16, "HWC"), (u16, "HWC"), (seq, "FHWC")]:
        (got,), lo = _run(lambda x: fn.experimental.warp_perspective(x, matrix=m.reshape(-1).tolist(),
                                                                     border_mode="replicate"), data, layouts=[lay])
        assert lo == [lay]
        g = got[0][0]
        assert g.dtype == data[0].dtype and g.shape == data[0].shape
        if lay == "FHWC":
            for f in range(3):
                _close_u8(g[f], cv_warp(data[0][f], m, border="replicate"))
        elif lay == "HW":
            np.testing.assert_allclose(g, cv_warp(data[0], m, border="replicate"), rtol=1e-4, atol=1e-4)
        else:
            _close_u8(g, cv_warp(data[0], m, border="replicate"))


@pytest.mark.parametrize("graph, msg", [
    (lambda x, m: fn.experimental.warp_perspective(x, m, matrix=[1, 0, 0, 0, 1, 0, 0, 0, 1]), "matrix"),
    (lambda x, m: fn.experimental.warp_perspective(x), "matrix"),
    (lambda x, m: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0]), "9 numbers"),
    (lambda x, m: fn.experimental.warp_perspective(x, m, fill_value=[1, 2]), "fill_value"),
    (lambda x, m: fn.experimental.warp_perspective(x, m, border_mode="mirror"), "border_mode"),
    (lambda x, m: fn.experimental.warp_perspective(x, m, pixel_origin="middle"), "pixel_origin"),
    (lambda x, m: fn.experimental.warp_perspective(x, fn.cast(m, dtype=types.INT32)), "3x3 FLOAT"),
    (lambda x, m: fn.experimental.warp_perspective(x, m * 0.0, inverse_map=False), "invertible"),
])
def test_warp_perspective_errors(graph, msg):
    with pytest.raises(Exception) as e:
        _run(graph, WIMGS, WMATS, layouts=["HWC", ""])
    assert msg in str(e.value)


# --- experimental.median_blur, dilate, erode ---------------------------------------------


def _planes(img, layout, fn_):
    """Applies fn_ to each 2-D image (HW or HWC) of a sample, as DALI's tests do."""
    out = np.zeros_like(img)
    if layout[0] == "F":
        for f in range(img.shape[0]):
            out[f] = _planes(img[f], layout[1:], fn_)
        return out
    if layout[0] == "C":
        for c in range(img.shape[0]):
            out[c] = fn_(img[c])
        return out
    return fn_(img).reshape(img.shape)


MORPH_DATA = {
    "HWC": [RNG.integers(0, 256, size=(20 + 7 * i, 31 - 4 * i, 3), dtype=np.uint8) for i in range(3)],
    "CHW": [RNG.uniform(0, 1, size=(2, 18, 25)).astype(np.float32) for _ in range(2)],
    "HW": [RNG.integers(0, 65535, size=(15, 22), dtype=np.uint16) for _ in range(2)],
    "FHWC": [RNG.uniform(0, 1, size=(3, 12, 17, 3)).astype(np.float32)],
    "FCHW": [RNG.integers(0, 256, size=(2, 4, 14, 13), dtype=np.uint8)],
}


# OpenCV's medianBlur takes windows larger than 5 only for uint8
@pytest.mark.parametrize("layout, ksize", [(lay, 3) for lay in MORPH_DATA] + [("HWC", 5), ("FCHW", 7)])
def test_median_blur_matches_opencv(layout, ksize):
    data = MORPH_DATA[layout]
    (got,), lay = _run(lambda x: fn.experimental.median_blur(x, window_size=[ksize, ksize]), data, layouts=[layout])
    assert lay == [layout]
    for img, g in zip(data, got[0]):
        assert g.dtype == img.dtype
        np.testing.assert_array_equal(g, _planes(img, layout, lambda p: cv2.medianBlur(p, ksize)))


def test_median_blur_rectangular_window_and_errors():
    img = MORPH_DATA["HW"]
    (got,), _ = _run(lambda x: fn.experimental.median_blur(x, window_size=[5, 3]), img, layouts=["HW"])
    # (width 5, height 3): the median of each 3-row, 5-column window, edges repeated
    for a, g in zip(img, got[0]):
        p = np.pad(a, ((1, 1), (2, 2)), mode="edge")
        win = np.lib.stride_tricks.sliding_window_view(p, (3, 5))
        np.testing.assert_array_equal(g, np.median(win.reshape(*a.shape, 15), axis=-1).astype(a.dtype))
    with pytest.raises(Exception, match="window_size"):
        _run(lambda x: fn.experimental.median_blur(x, window_size=[4, 4]), img, layouts=["HW"])


def _np_morph(p, ksize, anchor, op):
    """Max/min over a (width, height) window at anchor (x, y), the plane wrapped around."""
    (kw, kh), (ax, ay) = ksize, anchor
    pad = np.pad(p, ((ay, kh - 1 - ay), (ax, kw - 1 - ax)), mode="wrap")
    win = np.lib.stride_tricks.sliding_window_view(pad, (kh, kw))
    return win.max(axis=(-2, -1)) if op == "dilate" else win.min(axis=(-2, -1))


@pytest.mark.parametrize("op", ["dilate", "erode"])
@pytest.mark.parametrize("layout, ksize, anchor, border, iters", [
    ("HWC", (3, 3), (-1, -1), "constant", 1),
    ("HWC", (5, 2), (0, 1), "constant", 1),
    ("CHW", (4, 3), (-1, -1), "replicate", 1),
    ("HW", (3, 5), (2, 0), "reflect", 1),
    ("FHWC", (3, 3), (-1, -1), "reflect_101", 2),
    ("FCHW", (2, 4), (1, 3), "wrap", 1),
])
def test_dilate_erode_match_opencv(op, layout, ksize, anchor, border, iters):
    data = MORPH_DATA[layout]
    f = fn.experimental.dilate if op == "dilate" else fn.experimental.erode
    (got,), lay = _run(lambda x: f(x, mask_size=list(ksize), anchor=list(anchor), border_mode=border,
                                   iterations=iters), data, layouts=[layout])
    assert lay == [layout]
    cvf = cv2.dilate if op == "dilate" else cv2.erode
    el = cv2.getStructuringElement(cv2.MORPH_RECT, ksize)
    for img, g in zip(data, got[0]):
        if border == "wrap":  # OpenCV's CPU morphology has no wrap border: numpy
            ref = _planes(img, layout, lambda p: _np_morph(p, ksize, anchor, op))
        else:
            ref = _planes(img, layout, lambda p: cvf(p, el, anchor=anchor, iterations=iters,
                                                     borderType=CV_BORDER[border]))
        assert g.dtype == img.dtype
        np.testing.assert_array_equal(g, ref)


def test_dilate_per_sample_mask_and_errors():
    data = MORPH_DATA["HWC"]
    masks = [np.array(m, np.int32) for m in [(3, 3), (5, 1), (1, 4)]]
    (got,), _ = _run(lambda x, m: fn.experimental.dilate(x, mask_size=m), data, masks, layouts=["HWC", ""])
    for img, m, g in zip(data, masks, got[0]):
        ref = cv2.dilate(img, cv2.getStructuringElement(cv2.MORPH_RECT, tuple(int(v) for v in m)))
        np.testing.assert_array_equal(g, ref)
    for kw, msg in [({"anchor": [3, 0]}, "anchor"), ({"border_mode": "mirror"}, "border_mode"),
                    ({"iterations": 0}, "iterations"), ({"mask_size": [0, 3]}, "mask_size")]:
        with pytest.raises(Exception, match=msg):
            _run(lambda x: fn.experimental.erode(x, **kw), data, layouts=["HWC"])


# --- window filters: windows larger than the image, and their bound (issue 24) -------------

SMALL = [RNG.integers(0, 256, size=(16, 20, 3), dtype=np.uint8), RNG.integers(0, 256, size=(9, 5, 3), dtype=np.uint8)]


@pytest.mark.parametrize("ksize", [41, 401])
def test_median_blur_window_larger_than_image_matches_opencv(ksize):
    # windows over 64 positions count the repeated edge pixels instead of visiting them
    (got,), _ = _run(lambda x: fn.experimental.median_blur(x, window_size=ksize), SMALL, layouts=["HWC"])
    for img, g in zip(SMALL, got[0]):
        np.testing.assert_array_equal(g, cv2.medianBlur(img, ksize))


@pytest.mark.parametrize("op", ["dilate", "erode"])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_dilate_erode_mask_larger_than_image(op, border):
    f = fn.experimental.dilate if op == "dilate" else fn.experimental.erode
    ksize, anchor = (41, 37), (5, 30)
    (got,), _ = _run(lambda x: [f(x, mask_size=list(ksize), anchor=list(anchor), border_mode=border),
                                f(x, mask_size=6001, border_mode=border)], SMALL, layouts=["HWC"])
    cvf = cv2.dilate if op == "dilate" else cv2.erode
    el = cv2.getStructuringElement(cv2.MORPH_RECT, ksize)
    ext = np.max if op == "dilate" else np.min
    for img, g, g_huge in zip(SMALL, got[0], got[1]):
        if border == "wrap":
            ref = np.stack([_np_morph(img[..., c], ksize, anchor, op) for c in range(3)], axis=-1)
        else:
            ref = cvf(img, el, anchor=anchor, borderType=CV_BORDER[border])
        np.testing.assert_array_equal(g, ref)
        # a 6001x6001 window centred on any pixel holds the whole image, whatever the border
        np.testing.assert_array_equal(g_huge, np.broadcast_to(ext(img, axis=(0, 1)), img.shape))


@pytest.mark.parametrize("graph, arg", [
    (lambda x: fn.experimental.median_blur(x, window_size=20001), "window_size"),
    (lambda x: fn.experimental.median_blur(x, window_size=[3, 6003]), "window_size"),
    (lambda x: fn.experimental.dilate(x, mask_size=99999), "mask_size"),
    (lambda x: fn.experimental.erode(x, mask_size=[3, 3], iterations=10**9), "iterations"),
    (lambda x: fn.experimental.erode(x, mask_size=[2, 3], iterations=2**62), "iterations"),
])
def test_window_filters_refuse_windows_over_the_limit_at_build(graph, arg):
    # as gaussian_blur: the limit (6001) is named, and nothing runs for minutes first
    with pytest.raises(Exception, match=arg) as e:
        _run(graph, SMALL, layouts=["HWC"])
    assert "godali's limit (6001)" in str(e.value)


def test_window_filters_refuse_per_sample_windows_over_the_limit():
    sizes = [np.array([3, 3], np.int32), np.array([99999, 3], np.int32)]
    for graph, arg in [(lambda x, m: fn.experimental.dilate(x, mask_size=m), "mask_size"),
                       (lambda x, m: fn.experimental.median_blur(x, window_size=m | 1), "window_size")]:
        with pytest.raises(Exception, match=arg) as e:
            _run(graph, SMALL, sizes, layouts=["HWC", ""])
        assert "godali's limit (6001)" in str(e.value)


def test_window_filters_at_the_limit_are_fast():
    # window 6001 on 16x20 images: the cost of the images' size (it took minutes before)
    import time
    t = time.monotonic()
    (got,), _ = _run(lambda x: [fn.experimental.median_blur(x, window_size=6001),
                                fn.experimental.dilate(x, mask_size=6001, iterations=1),
                                fn.experimental.erode(x, mask_size=[3, 3], iterations=3000)], SMALL, layouts=["HWC"])
    assert time.monotonic() - t < 10
    for img, med, dil, ero in zip(SMALL, *got):
        assert med.shape == img.shape and med.dtype == img.dtype
        np.testing.assert_array_equal(dil, np.broadcast_to(img.max(axis=(0, 1)), img.shape))
        np.testing.assert_array_equal(ero, np.broadcast_to(img.min(axis=(0, 1)), img.shape))
