"""More operators (brightness_contrast on float input, normalize, color_space_conversion,
pad, erase, noise.*, jpeg_compression_distortion) against numpy/PIL references of DALI's
documented formulas.

Tolerances follow DALI's operator tests (DALI-REFERENCE.md): float outputs 1e-5 (relative
to the value's magnitude, at least 1e-5 absolute); integer outputs within 1 level with a
mean difference <= 0.3 (the references compute in float64, godali in float32 where DALI
does, so a value on a rounding tie may round the other way).
"""

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70)]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("more_ops")
    return [make_jpeg(str(d / ("m%d.jpg" % i)), h, w, seed=70 + i) for i, (h, w) in enumerate(SIZES)]


def _run(files, graph, threads=2, seed=5, iters=1):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=threads, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    got = None
    for _ in range(iters):
        res = pipe.run()
        got = [[o[i].as_array().copy() for i in range(len(files))] for o in res]
    pipe.close()
    return got


def _check_float(got, want, what, tol=1e-5):
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == np.float32, (what, got.dtype)
    err = np.abs(got.astype(np.float64) - want)
    lim = tol * np.maximum(1.0, np.abs(want))
    assert (err <= lim).all(), (what, float(err.max()))


def _check_u8(got, want, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    d = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert d.mean() <= 0.3 and d.max() <= 1, (what, d.mean(), d.max())


def _sat_u8(v):
    return np.clip(np.floor(np.asarray(v, np.float64) + 0.5), 0, 255).astype(np.uint8)


def _scalar(x):
    return float(np.asarray(x).reshape(-1)[0])


# --- brightness_contrast on float input ---------------------------------------------------

def test_brightness_contrast_takes_float_input(jpegs):
    # hsv's FLOAT output used to be refused; DALI's output type is the input's unless
    # dtype is given, and the contrast center of float input is 0.5.
    def graph(img):
        f = fn.hsv(img, hue=20.0, dtype=types.FLOAT)
        scaled = fn.brightness_contrast(img, dtype=types.FLOAT, brightness=1 / 255.0)
        return (f, scaled,
                fn.brightness_contrast(f, brightness=1.1, contrast=0.7, brightness_shift=0.05),
                fn.brightness_contrast(scaled, contrast=1.5),
                fn.brightness_contrast(scaled, contrast=0.5, brightness=255.0, dtype=types.UINT8))

    fs, scaled, out1, out2, out3 = _run(jpegs, graph)
    for i in range(len(jpegs)):
        x = fs[i].astype(np.float64)
        # the center for float input is 0.5 (DALI's default), whatever the values' range
        _check_float(out1[i], 0.05 + 1.1 * (0.5 + 0.7 * (x - 0.5)), "float hsv in", 1e-5)
        s = scaled[i].astype(np.float64)
        _check_float(out2[i], 0.5 + 1.5 * (s - 0.5), "float in, contrast")
        _check_u8(out3[i], _sat_u8(255.0 * (0.5 + 0.5 * (s - 0.5))), "float in, uint8 out")


# --- normalize ------------------------------------------------------------------------------

def _norm_ref(x, axes, mean=None, std=None, scale=1.0, shift=0.0, eps=0.0, ddof=0):
    x = x.astype(np.float64)
    if mean is None:
        mean = x.mean(axis=axes, keepdims=True)
    if std is None:
        var = ((x - mean) ** 2).sum(axis=axes, keepdims=True) / (np.prod([x.shape[a] for a in axes]) - ddof) + eps
        inv = np.where(var > 0, 1 / np.sqrt(np.where(var > 0, var, 1)), 0)
    else:
        inv = 1 / np.asarray(std, np.float64)
    return scale * (x - mean) * inv + shift


def test_normalize_matches_dalis_formula(jpegs):
    def graph(img):
        m = fn.random.uniform(range=[50, 150], shape=[1, 1, 3])
        return (img, m,
                fn.normalize(img),
                fn.normalize(img, axes=[0, 1], scale=64, shift=128, dtype=types.UINT8),
                fn.normalize(img, axis_names="HW", epsilon=4.0, ddof=1),
                fn.normalize(img, mean=m, stddev=40.0),
                fn.normalize(img, mean=m),
                fn.normalize(img, mean=100.0, stddev=20.0, scale=2.0, shift=1.0))

    imgs, ms, o_all, o_u8, o_hw, o_given, o_mean, o_const = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        _check_float(o_all[i], _norm_ref(img, (0, 1, 2)), "all axes")
        _check_u8(o_u8[i], _sat_u8(_norm_ref(img, (0, 1), scale=64, shift=128)), "HW, uint8")
        _check_float(o_hw[i], _norm_ref(img, (0, 1), eps=4.0, ddof=1), "axis_names HW, eps, ddof")
        m = ms[i].astype(np.float64)
        _check_float(o_given[i], _norm_ref(img, (0, 1), mean=m, std=40.0), "per-sample mean, stddev")
        # axes inferred from the per-sample mean's shape (1, 1, 3): H and W are reduced,
        # and the stddev is computed around the given mean.
        _check_float(o_mean[i], _norm_ref(img, (0, 1), mean=m), "per-sample mean, computed stddev")
        _check_float(o_const[i], _norm_ref(img, (0, 1, 2), mean=100.0, std=20.0, scale=2.0, shift=1.0), "constants")
        assert abs(o_all[i].mean()) < 1e-4 and abs(o_all[i].std() - 1) < 1e-4


def test_normalize_per_sample_stddev_scalar_and_bad_shape(jpegs):
    def graph(img):
        s = fn.random.uniform(range=[20, 60], shape=[1])
        return (img, s, fn.normalize(img, mean=90.0, stddev=s))

    imgs, ss, out = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        # a one-element stddev of another rank than the input: every axis is reduced
        _check_float(out[i], _norm_ref(img, (0, 1, 2), mean=90.0, std=_scalar(ss[i])),
                     "per-sample scalar stddev")

    # a per-sample mean of the input's rank must be 1 or the input's extent on each axis
    def bad(img):
        return (fn.normalize(img, mean=fn.random.uniform(range=[0, 1], shape=[2, 1, 3])),)
    with pytest.raises(godali.DataError) as e:
        _run(jpegs, bad)
    assert "m0.jpg" in str(e.value)
    assert 'argument "mean": per-sample shape [2 1 3] does not broadcast' in str(e.value)


def test_normalize_constant_sample_gives_shift_and_refuses_batch(jpegs):
    def graph(img):
        grey = fn.brightness_contrast(img, contrast=0.0)
        return (fn.normalize(grey, shift=3.0),)

    (out,) = _run(jpegs, graph)
    for o in out:
        assert (o == 3.0).all()
    with pytest.raises(Exception, match="batch"):
        _run(jpegs, lambda img: (fn.normalize(img, batch=True,
                                              mean=fn.random.uniform(range=[50, 150], shape=[1, 1, 3])),))
    with pytest.raises(Exception, match="axis_names"):
        _run(jpegs, lambda img: (fn.normalize(img, axis_names="Q"),))


def test_normalize_batch_statistics(jpegs):
    # batch=True: one mean and stddev over every sample (DALI's inter-sample mode); the
    # samples differ in H and W, which are reduced, and share C.
    def graph(img):
        return (img, fn.normalize(img, batch=True),
                fn.normalize(img, batch=True, axes=[0, 1], ddof=1, epsilon=2.0),
                fn.normalize(img, batch=True, mean=90.0, scale=3.0, shift=1.0, dtype=types.INT16))

    imgs, o_all, o_hw, o_i16 = _run(jpegs, graph)
    flat = np.concatenate([x.reshape(-1, 3).astype(np.float64) for x in imgs])
    for i, img in enumerate(imgs):
        x = img.astype(np.float64)
        _check_float(o_all[i], (x - flat.mean()) / flat.std(), "batch, all axes")
        m = flat.mean(axis=0)
        sd = np.sqrt(((flat - m) ** 2).sum(axis=0) / (len(flat) - 1) + 2.0)
        _check_float(o_hw[i], (x - m) / sd, "batch, HW, ddof, epsilon")
        sd = np.sqrt(((flat - 90.0) ** 2).mean())
        ref = np.clip(np.round(3.0 * (x - 90.0) / sd + 1.0), -32768, 32767)
        assert o_i16[i].dtype == np.int16
        assert np.abs(o_i16[i].astype(np.float64) - ref).max() <= 1


def test_normalize_given_stddev_epsilon_zero_and_few_values():
    # A given stddev takes epsilon as sqrt(stddev^2 + epsilon); a zero per-sample stddev
    # gives shift (DALI's keep-zero reciprocal); ddof >= the reduced count gives variance 0.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    pipe = godali.Pipeline(batch_size=1, num_threads=1, seed=1)
    with pipe:
        d = fn.external_source(source=lambda: [x], layout="abc")
        zero_sd = fn.python_function(d, function=lambda v: np.zeros((1, 1, 4), np.float32))
        pipe.set_outputs(fn.normalize(d, stddev=2.0, epsilon=0.25, mean=1.0),
                         fn.normalize(d, axes=[0, 1], stddev=zero_sd, shift=7.0),
                         fn.normalize(d, axes=[0], ddof=2, shift=-1.0, epsilon=0.0))
    a, b, c = [o[0].as_array() for o in pipe.run()]
    pipe.close()
    np.testing.assert_allclose(a, (x - 1.0) / np.sqrt(4.25), rtol=1e-6)
    assert (b == 7.0).all()
    assert (c == -1.0).all()


# --- color_space_conversion -----------------------------------------------------------------

# ITU-R BT.601 limited range, exact coefficients (DALI 2.4's CPU conversion: measured
# against its fn.color_space_conversion, identical but for 20 of 786432 values)
_TO_YCC = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]]) / 255
_YSUM = 0.257 + 0.504 + 0.098


def _csc_ref(x, src, dst, unit):
    x = x.astype(np.float64)
    o16, o128 = (16.0, 128.0) if unit == 255 else (0.0625, 0.5)
    if src == dst:
        return x
    if src == "GRAY" and dst == "YCbCr":
        return np.concatenate([x * _YSUM + o16, np.full_like(x, o128), np.full_like(x, o128)], axis=2)
    if src == "YCbCr" and dst == "GRAY":
        return (x[..., :1] - o16) / _YSUM
    if src == "RGB":
        rgb = x
    elif src == "BGR":
        rgb = x[..., ::-1]
    elif src == "GRAY":
        rgb = np.repeat(x, 3, axis=2)
    else:
        y = 1.164 * (x[..., 0] - o16)
        cb, cr = x[..., 1] - o128, x[..., 2] - o128
        rgb = np.stack([y + 1.596 * cr, y - 0.813 * cr - 0.392 * cb, y + 2.017 * cb], axis=2)
    if dst == "RGB":
        return rgb
    if dst == "BGR":
        return rgb[..., ::-1]
    if dst == "GRAY":
        return (rgb @ np.array([0.299, 0.587, 0.114]))[..., None]
    ycc = rgb @ _TO_YCC.T + np.array([o16, o128, o128])
    return ycc


SPACES = ["RGB", "BGR", "GRAY", "YCbCr"]


def test_color_space_conversion_matches_bt601(jpegs):
    pairs = [(s, d) for s in SPACES for d in SPACES]

    def graph(img):
        outs = [img]
        flt = fn.brightness_contrast(img, dtype=types.FLOAT, brightness=1 / 255.0)
        outs.append(flt)
        srcs = {"RGB": fn.color_space_conversion(img, image_type=types.RGB, output_type=types.RGB), "BGR": fn.color_space_conversion(img, image_type=types.RGB, output_type=types.BGR),
                "GRAY": fn.color_space_conversion(img, image_type=types.RGB, output_type=types.GRAY),
                "YCbCr": fn.color_space_conversion(img, image_type=types.RGB, output_type=types.YCbCr)}
        outs += [srcs[s] for s in SPACES]
        for s, d in pairs:
            outs.append(fn.color_space_conversion(srcs[s], image_type=getattr(types, s), output_type=getattr(types, d)))
        fsrc = {s: fn.color_space_conversion(flt, image_type=types.RGB, output_type=getattr(types, s)) for s in SPACES}
        outs += [fsrc[s] for s in SPACES]
        for s, d in pairs:
            outs.append(fn.color_space_conversion(fsrc[s], image_type=getattr(types, s), output_type=getattr(types, d)))
        return tuple(outs)

    res = _run(jpegs, graph)
    imgs, flts = res[0], res[1]
    srcs = dict(zip(SPACES, res[2:6]))
    conv = res[6:6 + len(pairs)]
    k = 6 + len(pairs)
    fsrcs = dict(zip(SPACES, res[k:k + 4]))
    fconv = res[k + 4:]
    for i, img in enumerate(imgs):
        for s in SPACES:
            _check_u8(srcs[s][i], _sat_u8(_csc_ref(img, "RGB", s, 255)), "RGB->" + s)
            _check_float(fsrcs[s][i], _csc_ref(flts[i], "RGB", s, 1), "float RGB->" + s, 1e-5)
        for j, (s, d) in enumerate(pairs):
            _check_u8(conv[j][i], _sat_u8(_csc_ref(srcs[s][i], s, d, 255)), s + "->" + d)
            _check_float(fconv[j][i], _csc_ref(fsrcs[s][i], s, d, 1), "float " + s + "->" + d, 1e-5)
        # BT.601's limited range: Y within 16..235 and grey has no chroma
        y = srcs["YCbCr"][i][..., 0]
        assert y.min() >= 16 and y.max() <= 235
    with pytest.raises(Exception, match="image_type"):
        _run(jpegs, lambda img: (fn.color_space_conversion(img, image_type=types.GRAY, output_type=types.RGB),))


# --- pad ---------------------------------------------------------------------------------------

def _pad_ref(x, axes, shape=None, align=None, fill=0, batch_max=None):
    """DALI's pad: an axis grows to shape[j] (never shrinks), or where shape is absent or
    -1 to the batch's largest extent (batch_max), then to a multiple of align."""
    out = list(x.shape)
    for j, d in enumerate(axes):
        e = x.shape[d]
        if shape is not None and int(shape[j]) >= 0:
            e = max(e, int(shape[j]))
        elif batch_max is not None:
            e = batch_max[d]
        if align is not None:
            a = align[0] if len(align) == 1 else align[j]
            e = -(-e // a) * a
        out[d] = e
    r = np.full(out, fill, x.dtype)
    r[tuple(slice(0, s) for s in x.shape)] = x
    return r


def test_pad_matches_numpy(jpegs):
    def graph(img):
        s = fn.random.uniform(range=[30, 80], shape=[2], dtype=types.INT32)
        return (img, s,
                fn.pad(img, axes=[0, 1], shape=[60, 72], fill_value=7),
                fn.pad(img, axis_names="WH", shape=[64, 50]),
                fn.pad(img, axis_names="HW", align=[16]),
                fn.pad(img, axes=[0, 1], shape=s, align=[1, 8], fill_value=300),
                fn.pad(img, axes=[-1], shape=[4], fill_value=255),
                fn.pad(img),  # every axis to the batch's largest extent
                fn.pad(img, axes=[0, 1], shape=[-1, 40], fill_value=3))

    imgs, ss, a, b, c, d, e, f, g = _run(jpegs, graph)
    big = np.max([im.shape for im in imgs], axis=0)
    assert len({im.shape for im in imgs}) > 1  # the batch max matters
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(a[i], _pad_ref(img, [0, 1], [60, 72], fill=7))
        np.testing.assert_array_equal(b[i], _pad_ref(img, [1, 0], [64, 50]))
        np.testing.assert_array_equal(c[i], _pad_ref(img, [0, 1], align=[16], batch_max=big))
        np.testing.assert_array_equal(d[i], _pad_ref(img, [0, 1], ss[i], align=[1, 8], fill=255))  # saturated
        np.testing.assert_array_equal(e[i], _pad_ref(img, [2], [4], fill=255))
        np.testing.assert_array_equal(f[i], _pad_ref(img, [0, 1, 2], batch_max=big))
        np.testing.assert_array_equal(g[i], _pad_ref(img, [0, 1], [-1, 40], fill=3, batch_max=big))
    with pytest.raises(Exception, match="align"):
        _run(jpegs, lambda img: (fn.pad(img, align=[0]),))


# --- erase -------------------------------------------------------------------------------------

def _erase_ref(x, axes, anchor, shape, fill, na=False, ns=False, centered=False):
    r = x.copy()
    k = len(axes)
    fill = np.asarray(fill, np.float64)
    fv = np.clip(np.floor(fill + 0.5), 0, 255).astype(x.dtype) if x.dtype == np.uint8 else fill.astype(x.dtype)
    for j in range(len(shape) // k):
        idx = [slice(None)] * x.ndim
        for t, d in enumerate(axes):
            ext = x.shape[d]
            s = shape[j * k + t] * (ext if ns else 1)
            a = (anchor[j * k + t] if len(anchor) else 0) * (ext if na else 1)
            if centered:
                a -= s / 2
            lo, hi = int(np.clip(np.floor(a + 0.5), 0, ext)), int(np.clip(np.floor(a + s + 0.5), 0, ext))  # halves up
            idx[d] = slice(lo, max(lo, hi))
        r[tuple(idx)] = fv if fv.size > 1 else fv.reshape(())
    return r


def test_erase_regions_match_numpy(jpegs):
    def graph(img):
        anc = fn.random.uniform(range=[0.0, 0.8], shape=[4])
        return (img, anc,
                fn.erase(img, anchor=[5, 7, 20, 30], shape=[10, 12, 100, 8], fill_value=[255, 0, 9]),
                fn.erase(img, anchor=anc, shape=[0.2, 0.3, 0.1, 0.5], normalized=True),
                fn.erase(img, anchor=[0.5, 0.5], shape=[11, 9], normalized_anchor=True, centered_anchor=True, fill_value=77),
                fn.erase(img, axes=[1], anchor=[3], shape=[4]),
                fn.erase(img, axis_names="WH", anchor=[2, 1], shape=[6, 3]))

    imgs, ancs, a, b, c, d, e = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(a[i], _erase_ref(img, [0, 1], [5, 7, 20, 30], [10, 12, 100, 8], [255, 0, 9]))
        np.testing.assert_array_equal(b[i], _erase_ref(img, [0, 1], list(ancs[i]), [0.2, 0.3, 0.1, 0.5], [0], True, True))
        np.testing.assert_array_equal(c[i], _erase_ref(img, [0, 1], [0.5, 0.5], [11, 9], [77], na=True, centered=True))
        np.testing.assert_array_equal(d[i], _erase_ref(img, [1], [3], [4], [0]))
        np.testing.assert_array_equal(e[i], _erase_ref(img, [1, 0], [2, 1], [6, 3], [0]))
        assert (a[i] != img).any()


def test_erase_per_sample_fill_value(jpegs):
    # DALI's fill_value may come per sample: one value, or one per channel.
    def graph(img):
        fv = fn.random.uniform(range=[0, 255], shape=[3])
        fv1 = fn.random.uniform(range=[0, 255], shape=[1])
        return (img, fv, fv1, fn.erase(img, anchor=[4, 2, 10, 20], shape=[9, 7, 5, 30], fill_value=fv),
                fn.erase(img, anchor=[3, 3], shape=[4, 4], fill_value=fv1))

    imgs, fvs, fv1s, a, b = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        fill = list(np.clip(np.round(fvs[i].astype(np.float64)), 0, 255))
        np.testing.assert_array_equal(a[i], _erase_ref(img, [0, 1], [4, 2, 10, 20], [9, 7, 5, 30], fill))
        np.testing.assert_array_equal(b[i], _erase_ref(img, [0, 1], [3, 3], [4, 4], [np.round(fv1s[i][0])]))


def test_resize_subpixel_scale_as_dali():
    # A 30x20 image resized to width 7 has a fractional height, 10.5 -> 11 rows: with
    # subpixel_scale (DALI's default) the scale stays 30 / 10.5 and the rows read are
    # the ones DALI 2.4 reads (measured side by side); without it, 30 / 11.
    y, x = np.mgrid[0:30, 0:20]
    img = np.stack([x * 10, y * 8, np.zeros_like(x)], -1).astype(np.uint8)

    def rows(**kw):
        pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            s = fn.external_source(source=lambda: [img], layout="HWC")
            pipe.set_outputs(fn.resize(s, resize_x=7, interp_type=types.INTERP_NN,
                                       antialias=False, **kw))
        pipe.build()
        out = pipe.run()[0].as_array()[0]
        return list(out[:, 0, 1] // 8)

    assert rows() == [0, 3, 6, 9, 12, 14, 17, 20, 23, 26, 29]
    plain = rows(subpixel_scale=False)  # the scale of the rounded size: 30 / 11
    assert plain[:5] == [int((i + 0.5) * 30 / 11) for i in range(5)] and plain != rows()
