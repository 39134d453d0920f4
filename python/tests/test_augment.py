"""Augmentation operators against independent numpy/PIL references of DALI's definitions.

Tolerance for uint8 outputs, as DALI's operator tests use for integer outputs: mean
absolute difference <= 0.3 and max <= 1 level (the references compute in float64 and
godali in float32, as DALI does, so a value that lands on a rounding tie may round the
other way). Float outputs: 1e-4 relative.
"""

import inspect
import math

import re

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70), (48, 33)]  # ragged batch


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("augment")
    return [make_jpeg(str(d / ("a%d.jpg" % i)), h, w, seed=40 + i) for i, (h, w) in enumerate(SIZES)]


def _run(files, graph, threads=2, seed=5):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=threads, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[o[i].as_array().copy() for i in range(len(files))] for o in res]
    pipe.close()
    return got


def _check_u8(got, want, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    assert d.mean() <= 0.3 and d.max() <= 1, (what, d.mean(), d.max())
    return d.mean(), int(d.max())


def _sat_u8(v):
    # DALI's ConvertSat: round half away from zero, then clamp (negatives clamp to 0).
    return np.clip(np.floor(np.asarray(v, np.float64) + 0.5), 0, 255).astype(np.uint8)


def _scalar(x):
    return float(np.asarray(x).reshape(-1)[0])


# --- brightness_contrast ----------------------------------------------------------------

def _bc_ref(img, brightness=1.0, shift=0.0, contrast=1.0, center=128.0, out_range=255.0):
    x = img.astype(np.float64)
    return shift * out_range + brightness * (center + contrast * (x - center))


def test_brightness_contrast_matches_dalis_formula(jpegs):
    def graph(img):
        b = fn.random.uniform(range=[0.5, 1.5])
        c = fn.random.uniform(range=[0.3, 2.0])
        s = fn.random.uniform(range=[-0.2, 0.2])
        return (img, b, c, s,
                fn.brightness_contrast(img, brightness=b, contrast=c, brightness_shift=s),
                fn.brightness_contrast(img, brightness=1.2, contrast=0.8, contrast_center=100),
                fn.brightness_contrast(img, contrast=c, dtype=types.FLOAT),
                fn.brightness_contrast(img, brightness=-1, brightness_shift=1))

    imgs, bs, cs, ss, out, fixed, flt, neg = _run(jpegs, graph)
    worst = 0
    for i, img in enumerate(imgs):
        b, c, s = _scalar(bs[i]), _scalar(cs[i]), _scalar(ss[i])
        worst = max(worst, _check_u8(out[i], _sat_u8(_bc_ref(img, b, s, c)), "per-sample")[1])
        _check_u8(fixed[i], _sat_u8(_bc_ref(img, 1.2, 0, 0.8, 100)), "contrast_center")
        # FLOAT output: output_range 1, no rounding or clamping.
        assert flt[i].dtype == np.float32
        np.testing.assert_allclose(flt[i], _bc_ref(img, 1, 0, c, 128, 1), rtol=1e-4, atol=1e-3)
        # DALI's negative image: brightness -1, brightness_shift 1.
        np.testing.assert_array_equal(neg[i], 255 - img)
    print("brightness_contrast vs numpy: worst difference %d level(s)" % worst)


# --- hsv and color_twist ----------------------------------------------------------------

RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
YIQ2RGB = np.array([[1, 0.956, 0.621], [1, -0.272, -0.647], [1, -1.107, 1.705]])


def _hsv_matrix(hue, saturation, value):
    """DALI's hsv: RGB -> YIQ, rotate (I, Q) by hue degrees, scale them by saturation,
    scale all by value, back to RGB."""
    h = math.radians(hue)
    rot = np.array([[1, 0, 0], [0, math.cos(h), math.sin(h)], [0, -math.sin(h), math.cos(h)]])
    sat = np.diag([1, saturation, saturation])
    return YIQ2RGB @ rot @ sat @ (value * np.eye(3)) @ RGB2YIQ


def _apply(img, m, offset=0.0):
    return img.astype(np.float64) @ m.T + offset


def test_hsv_matches_dalis_yiq_transform(jpegs):
    def graph(img):
        hue = fn.random.uniform(range=[-180, 180])
        sat = fn.random.uniform(range=[0, 2])
        return img, hue, sat, fn.hsv(img, hue=hue, saturation=sat, value=0.9), \
            fn.hsv(img), fn.hsv(img, saturation=0.0, dtype=types.FLOAT)

    imgs, hues, sats, out, neutral, grey = _run(jpegs, graph)
    worst = 0
    for i, img in enumerate(imgs):
        m = _hsv_matrix(_scalar(hues[i]), _scalar(sats[i]), 0.9)
        worst = max(worst, _check_u8(out[i], _sat_u8(_apply(img, m)), "hsv")[1])
        # DALI's matrices are rounded, so the neutral transform is the identity within a level.
        _check_u8(neutral[i], img, "neutral hsv")
        np.testing.assert_allclose(grey[i], _apply(img, _hsv_matrix(0, 0, 1)), rtol=1e-4, atol=1e-3)
        assert np.ptp(grey[i], axis=2).max() < 1e-3  # saturation 0 is grey
    print("hsv vs numpy: worst difference %d level(s)" % worst)


def test_color_twist_matches_dali(jpegs):
    def graph(img):
        b = fn.random.uniform(range=[0.5, 1.5])
        c = fn.random.uniform(range=[0.5, 1.5])
        h = fn.random.normal(stddev=30)
        return img, b, c, h, fn.color_twist(img, brightness=b, contrast=c, hue=h, saturation=1.4), \
            fn.color_twist(img, hue=40.0, saturation=0.5, image_type=types.BGR)

    imgs, bs, cs, hs, out, bgr = _run(jpegs, graph)
    worst = 0
    for i, img in enumerate(imgs):
        b, c, h = _scalar(bs[i]), _scalar(cs[i]), _scalar(hs[i])
        # out = brightness * (contrast * (M x) + 128 * (1 - contrast))
        want = b * (c * _apply(img, _hsv_matrix(h, 1.4, 1)) + 128 * (1 - c))
        worst = max(worst, _check_u8(out[i], _sat_u8(want), "color_twist")[1])
        # image_type=BGR: the same transform on the channels reversed, reversed back.
        want = _apply(img[..., ::-1], _hsv_matrix(40, 0.5, 1))[..., ::-1]
        _check_u8(bgr[i], _sat_u8(want), "color_twist BGR")
    print("color_twist vs numpy: worst difference %d level(s)" % worst)


# --- rotate -----------------------------------------------------------------------------

def _rotated_size(h, w, deg):
    a = math.radians(deg)
    c, s = abs(math.cos(a)), abs(math.sin(a))
    ow = math.ceil(c * w + s * h - 0.01)
    oh = math.ceil(c * h + s * w - 0.01)
    pw, ph = (w % 2, h % 2) if s <= c else (h % 2, w % 2)
    return oh + ((oh % 2) ^ ph), ow + ((ow % 2) ^ pw)


def _rotate_ref(img, deg, out_hw, fill=None, nearest=False):
    """Output pixel centre -> input point by the inverse rotation about the centres;
    bilinear on pixel centres; outside pixels are fill, or the clamped edge."""
    h, w, _ = img.shape
    oh, ow = out_hw
    a = math.radians(deg)
    ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float64)
    px, py = xs + 0.5 - ow / 2, ys + 0.5 - oh / 2
    sx = math.cos(a) * px - math.sin(a) * py + w / 2
    sy = math.sin(a) * px + math.cos(a) * py + h / 2
    src = img.astype(np.float64)

    def at(ix, iy):
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        v = src[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
        if fill is not None:
            v = np.where(inside[..., None], v, float(fill))
        return v

    if nearest:
        return _sat_u8(at(np.floor(sx).astype(int), np.floor(sy).astype(int)))
    sx, sy = sx - 0.5, sy - 0.5
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]
    top = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
    bot = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
    return _sat_u8(top * (1 - fy) + bot * fy)


def test_rotate_matches_reference(jpegs):
    def graph(img):
        angle = fn.random.uniform(range=[-180, 180])
        return (img, angle, fn.rotate(img, angle=angle),
                fn.rotate(img, angle=angle, fill_value=17, keep_size=True),
                fn.rotate(img, angle=30, size=(50, 60), interp_type=types.INTERP_NN, fill_value=0))

    imgs, angles, out, kept, sized = _run(jpegs, graph)
    worst = 0
    for i, img in enumerate(imgs):
        deg = _scalar(angles[i])
        size = _rotated_size(img.shape[0], img.shape[1], deg)
        assert out[i].shape == size + (3,), (deg, img.shape, out[i].shape, size)
        worst = max(worst, _check_u8(out[i], _rotate_ref(img, deg, size), "rotate")[1])
        _check_u8(kept[i], _rotate_ref(img, deg, img.shape[:2], fill=17), "keep_size fill")
        assert sized[i].shape == (50, 60, 3)
        _check_u8(sized[i], _rotate_ref(img, 30, (50, 60), fill=0, nearest=True), "size NN")
    print("rotate vs numpy: worst difference %d level(s)" % worst)


def test_rotate_agrees_with_pil(jpegs):
    """PIL rotates counter-clockwise about (w/2, h/2) too: with keep_size, nearest
    neighbour and a zero fill the two pick the same input pixel everywhere except where
    the point falls on a pixel boundary (PIL steps in 16.16 fixed point), so any pixel
    that differs must map within 1e-3 of one."""
    angles = [12.5, -37, 90, 200]

    def graph(img):
        return (img,) + tuple(fn.rotate(img, angle=a, keep_size=True, fill_value=0,
                                        interp_type=types.INTERP_NN) for a in angles)

    imgs, *rots = _run(jpegs, graph)
    worst = 0.0
    for k, a in enumerate(angles):
        for i, img in enumerate(imgs):
            want = np.asarray(Image.fromarray(img).rotate(a, resample=Image.NEAREST,
                                                          fillcolor=(0, 0, 0)))
            ys, xs = np.nonzero(np.any(rots[k][i] != want, axis=2))
            h, w, _ = img.shape
            r = math.radians(a)
            px, py = xs + 0.5 - w / 2, ys + 0.5 - h / 2
            sx = math.cos(r) * px - math.sin(r) * py + w / 2
            sy = math.sin(r) * px + math.cos(r) * py + h / 2
            tie = np.minimum(np.abs(sx - np.round(sx)), np.abs(sy - np.round(sy)))
            assert np.all(tie < 1e-3), (a, i, tie.max())
            worst = max(worst, len(xs) / (h * w))
    print("rotate vs PIL (NN, keep_size): %.2f%% of pixels differ at most, all on "
          "pixel-boundary ties" % (100 * worst))


def test_rotate_quarter_turn_is_exact(jpegs):
    imgs, r90, r270 = _run(jpegs, lambda img: (img, fn.rotate(img, angle=90), fn.rotate(img, angle=-90)))
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(r90[i], np.rot90(img, 1))  # numpy's rot90 is CCW too
        np.testing.assert_array_equal(r270[i], np.rot90(img, -1))


# --- random.normal and random.choice ------------------------------------------------------

def test_random_normal():
    pipe = godali.Pipeline(batch_size=4, num_threads=2, seed=11)
    with pipe:
        m = fn.random.uniform(range=[-100, 100])
        many = fn.random.normal(mean=3, stddev=2, shape=[5000])
        exact = fn.random.normal(mean=m, stddev=0.0)
        ints = fn.random.normal(mean=m, stddev=0.4, dtype=types.INT32)
        pipe.set_outputs(m, many, exact, ints)
    m, many, exact, ints = [o.as_array() for o in pipe.run()]
    pipe.close()
    assert many.shape == (4, 5000) and many.dtype == np.float32
    assert abs(many.mean() - 3) < 0.05 and abs(many.std() - 2) < 0.05
    np.testing.assert_array_equal(exact, m)  # per-sample mean, stddev 0
    assert ints.dtype == np.int32 and np.all(np.abs(ints - m) <= 3)  # rounded, not truncated
    print("random.normal: mean %.3f std %.3f over 20000 draws" % (many.mean(), many.std()))


def test_random_choice():
    pipe = godali.Pipeline(batch_size=8, num_threads=3, seed=2)
    with pipe:
        n = fn.random.choice(5, shape=[1000])
        vals = fn.random.choice([0.5, 2.0, 8.0], p=[0.2, 0.0, 0.8], shape=[1000])
        one = fn.random.choice(np.array([7, 9]))
        pipe.set_outputs(n, vals, one)
    n, vals, one = [o.as_array() for o in pipe.run()]
    pipe.close()
    assert n.dtype == np.int32 and set(np.unique(n)) == {0, 1, 2, 3, 4}
    assert vals.dtype == np.float32 and set(np.unique(vals)) == {0.5, 8.0}
    assert abs((vals == 0.5).mean() - 0.2) < 0.02
    assert one.shape == (8,) and set(np.unique(one)) <= {7, 9}


def test_random_choice_call_forms():
    # As in DALI, a is the first input: a constant (an int n, a list, an array) or a
    # node, with a per-sample p and an optional shape_like second input.
    pipe = godali.Pipeline(batch_size=4, num_threads=1, seed=3)
    with pipe:
        a = fn.external_source(lambda: [np.array([[1, 1], [2, 2], [3, 3]], np.int16)] * 4,
                               batch=True, layout="NC")
        p = fn.external_source(lambda: [np.array([0.0, 0.0, 1.0], np.float32),
                                        np.array([1.0, 0.0, 0.0], np.float32)] * 2, batch=True)
        rows = fn.random.choice(a, p=p)
        many = fn.random.choice(a, np.zeros((5, 2)), p=p)
        pipe.set_outputs(rows, many, fn.random.choice(a, shape=[7]))
    rows, many, seven = pipe.run()
    assert rows.layout() == "C" and seven.layout() == "NC" and many.layout() == ""
    for i in range(4):
        want = 3 if i % 2 == 0 else 1
        assert np.array(rows[i]).dtype == np.int16
        np.testing.assert_array_equal(np.array(rows[i]), [want, want])
        np.testing.assert_array_equal(np.array(many[i]), np.full((5, 2, 2), want))
        s = np.array(seven[i])
        assert s.shape == (7, 2) and (s[:, 0] == s[:, 1]).all() and set(s[:, 0]) <= {1, 2, 3}
    pipe.close()
    for args, kw, msg in [((), {}, '"a": missing'),
                          ((5.0,), {}, "Data type float is not supported for 0D inputs"),
                          ((0,), {}, "Expected positive number of elements for sampling, got: 0"),
                          ((2,), {"p": 0.25}, "Sum of probabilities must be 1.0, but got 0.5"),
                          ((5,), {"p": [0.25, 0.5, 0.25]}, "Expected {5}, but got {3}")]:
        pipe = godali.Pipeline(batch_size=1, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.random.choice(*args, **kw))
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            pipe.run()
        pipe.close()


def test_augmentations_are_cpu_only(jpegs):
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=0)
    with pipe:
        data, _ = fn.readers.file(files=jpegs[:1])
        img = fn.decoders.image(data)
        # brightness_contrast, hsv and color_twist have gpu backends (CUDA flavour).
        for op, kw in [(fn.rotate, {"angle": 3}), (fn.gaussian_blur, {"sigma": 1})]:
            with pytest.raises(ValueError, match="only a CPU implementation"):
                op(img, device="gpu", **kw)
        with pytest.raises(ValueError, match="fn.random.normal has only a CPU implementation"):
            fn.random.normal(device="gpu")


# --- gaussian_blur ------------------------------------------------------------------------

def _gauss(sigma, taps):
    x = np.arange(taps) - taps // 2
    w = np.exp(-x * x / (2.0 * sigma * sigma))
    return w / w.sum()


def _blur_ref(img, wy, wx):
    """Separable convolution with reflect-101 borders (numpy's 'reflect'), in float64."""
    ry, rx = len(wy) // 2, len(wx) // 2
    x = np.pad(img.astype(np.float64), ((ry, ry), (rx, rx), (0, 0)), mode="reflect")
    h, w, _ = img.shape
    tmp = sum(wy[k] * x[k:k + h] for k in range(len(wy)))
    return sum(wx[k] * tmp[:, k:k + w] for k in range(len(wx)))


def test_gaussian_blur_matches_reference(jpegs):
    def graph(img):
        s = fn.random.uniform(range=[0.5, 3.0])
        return (img, s, fn.gaussian_blur(img, sigma=s),
                fn.gaussian_blur(img, window_size=(3, 7)),
                fn.gaussian_blur(img, sigma=(2.0, 0.7), window_size=(5, 0), dtype=types.FLOAT))

    imgs, sigmas, out, win, flt = _run(jpegs, graph)
    worst = 0
    for i, img in enumerate(imgs):
        s = _scalar(sigmas[i])
        taps = 2 * math.ceil(3 * s) + 1  # DALI: radius ceil(3 sigma)
        want = _sat_u8(_blur_ref(img, _gauss(s, taps), _gauss(s, taps)))
        worst = max(worst, _check_u8(out[i], want, "sigma")[1])
        # window only: sigma = (radius - 1) * 0.3 + 0.8
        want = _blur_ref(img, _gauss(0.8, 3), _gauss((3 - 1) * 0.3 + 0.8, 7))
        _check_u8(win[i], _sat_u8(want), "window_size")
        want = _blur_ref(img, _gauss(2.0, 5), _gauss(0.7, 2 * math.ceil(2.1) + 1))
        np.testing.assert_allclose(flt[i], want, rtol=1e-4, atol=2e-3)
    print("gaussian_blur vs numpy: worst difference %d level(s)" % worst)


def test_random_choice_per_sample_set_and_p():
    """a as a DataNode (DALI: per-sample sets; a scalar n means [0, n)), p per sample; the
    output keeps a's type. Checked against the sets and, over 4000 draws, the weights."""
    sets = [np.array([3, 5, 7], np.int16), np.array([-1, 10], np.int16),
            np.array([100], np.int16), np.array([2, 4, 6, 8], np.int16)]
    ns = [np.array(4, np.int32), np.array(1, np.int32), np.array(9, np.int32),
          np.array(2, np.int32)]
    ps = [np.array([1.0, 0.0, 0.0], np.float32), np.array([0.25, 0.75], np.float32),
          np.array([1.0], np.float32), np.array([0.0, 0.5, 0.0, 0.5], np.float32)]
    pipe = godali.Pipeline(batch_size=4, num_threads=2, seed=5, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: sets)
        n = fn.external_source(source=lambda: ns)
        p = fn.external_source(source=lambda: ps)
        pipe.set_outputs(fn.random.choice(a, shape=[4000]), fn.random.choice(n, shape=[50]),
                         fn.random.choice(a, p=p, shape=[4000]))
    pipe.build()
    u, m, w = pipe.run()
    pipe.close()
    for i in range(4):
        ui, mi, wi = np.array(u[i].as_array()), np.array(m[i].as_array()), np.array(w[i].as_array())
        assert ui.dtype == np.int16 and set(np.unique(ui)) == set(sets[i].tolist())
        assert mi.dtype == np.int32 and set(np.unique(mi)) <= set(range(int(ns[i])))
        for v, q in zip(sets[i], ps[i]):
            assert abs((wi == v).mean() - q) < 0.03, (i, v, q)


def _blur_axes_ref(x, windows, axes):
    """Separable reflect-101 convolution of x along each of axes, in float64."""
    x = x.astype(np.float64)
    for w, ax in zip(windows, axes):
        r = len(w) // 2
        pad = [(0, 0)] * x.ndim
        pad[ax] = (r, r)
        xp = np.pad(x, pad, mode="reflect")
        n = x.shape[ax]
        x = sum(w[k] * np.take(xp, np.arange(k, k + n), axis=ax) for k in range(len(w)))
    return x


def test_gaussian_blur_volumes_channel_first_and_per_sample_windows():
    # DALI's generic blur: every spatial axis of DHW volumes (sigma per axis, outer
    # first), channel-first CHW (C not blurred), any input type, per-sample window_size.
    rng = np.random.default_rng(4)
    vols = [rng.random((6 + i, 9, 11), np.float32) * 100 for i in range(3)]
    chw = [rng.integers(0, 256, (3, 12 + i, 10), np.uint8) for i in range(3)]
    wins = [np.array([3, 5], np.int32), np.array([7, 3], np.int32), np.array([5, 5], np.int32)]
    pipe = godali.Pipeline(batch_size=3, num_threads=2, seed=1)
    with pipe:
        v = fn.external_source(lambda: vols, batch=True, layout="DHW")
        c = fn.external_source(lambda: chw, batch=True, layout="CHW")
        w = fn.external_source(lambda: wins, batch=True)
        pipe.set_outputs(fn.gaussian_blur(v, sigma=[1.0, 0.5, 1.5]),
                         fn.gaussian_blur(c, window_size=5, dtype=types.FLOAT),
                         fn.gaussian_blur(c, window_size=w))
    bv, bc, bw = pipe.run()
    pipe.close()
    assert bv.layout() == "DHW" and bc.layout() == "CHW"
    for i in range(3):
        sig = [1.0, 0.5, 1.5]
        want = _blur_axes_ref(vols[i], [_gauss(s, 2 * math.ceil(3 * s) + 1) for s in sig], [0, 1, 2])
        np.testing.assert_allclose(np.array(bv[i]), want, rtol=1e-4, atol=1e-3)
        g5 = _gauss((2 - 1) * 0.3 + 0.8, 5)
        want = _blur_axes_ref(chw[i], [g5, g5], [1, 2])
        np.testing.assert_allclose(np.array(bc[i]), want, rtol=1e-4, atol=2e-3)
        ws = [_gauss((k // 2 - 1) * 0.3 + 0.8, k) for k in wins[i]]
        want = np.clip(np.round(_blur_axes_ref(chw[i], ws, [1, 2])), 0, 255)
        got = np.array(bw[i]).astype(np.float64)
        assert got.dtype == np.float64 and np.abs(got - want).max() <= 1


@pytest.mark.parametrize("layout,shape,msg", [
    ("DHCW", (4, 5, 3, 6), "Only channel-first or channel-last layouts are supported"),
    ("HFWC", (5, 2, 6, 3), "For sequences, layout should begin with 'F' or 'C'"),
    ("CCHW", (3, 3, 5, 6), "Found more the one occurrence of 'F' or 'C' axes"),
    ("WXYZ", (3, 3, 5, 6), "Too many dimensions, found: 4 data axes, maximum supported is: 3."),
])
def test_gaussian_blur_refuses_layouts_as_dali(layout, shape, msg):
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        x = fn.external_source(lambda: [np.zeros(shape, np.uint8)], batch=True, layout=layout)
        pipe.set_outputs(fn.gaussian_blur(x, sigma=1.0))
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        pipe.run()
    pipe.close()
