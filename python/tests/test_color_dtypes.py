"""brightness_contrast / brightness / contrast / color_twist / hue on DALI's element types
(UINT8, INT16, INT32, FLOAT in and out), sequences (FHWC, and 4-D without layout), checked
against numpy references of DALI's formulas: integers within 1 (rounding), floats 1e-4
relative."""

import math

import numpy as np
import pytest

from godali import fn, types
from godali.pipeline import Pipeline

BS = 4
NP = {types.UINT8: np.uint8, types.INT16: np.int16, types.INT32: np.int32,
      types.FLOAT: np.float32}


def _range(dt):
    return 1.0 if np.dtype(dt).kind == "f" else float(np.iinfo(dt).max)


def _sat(x, dt):
    if np.dtype(dt).kind == "f":
        return x.astype(dt)
    i = np.iinfo(dt)
    return np.round(np.clip(x, i.min, i.max)).astype(dt)


def _inputs(dt, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return [rng.random(shape).astype(dt) for _ in range(BS)]
    return [(rng.random(shape) * 255).astype(dt) for _ in range(BS)]


def _run(make, data, layout=None):
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None, seed=3)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        outs = make(x)
        pipe.set_outputs(*outs)
    pipe.build()
    res = pipe.run()
    got = [[np.array(o[i].as_array()) for i in range(BS)] for o in res]
    layouts = [o.layout() for o in res]
    pipe.close()
    return got, layouts


def _close(got, ref, dt):
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if np.dtype(dt).kind == "f":
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    elif dt == np.int32:
        # computed in float32 (as DALI): 24 bits of precision at INT32's scale
        d = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        assert (d <= 1 + np.abs(ref.astype(np.float64)) * 2.0 ** -22).all()
    else:
        assert np.abs(got.astype(np.int64) - ref.astype(np.int64)).max() <= 1


@pytest.mark.parametrize("inp", [types.UINT8, types.INT16, types.FLOAT])
@pytest.mark.parametrize("out", [types.UINT8, types.INT16, types.INT32, types.FLOAT])
@pytest.mark.parametrize("seq", [False, True])
def test_brightness_contrast_types_and_sequences(inp, out, seq):
    shape = (3, 16, 8, 3) if seq else (16, 8, 3)
    data = _inputs(NP[inp], shape)
    center = 0.4 * _range(NP[inp])

    def make(x):
        b = fn.random.uniform(range=[0.0, 2.0], seed=11)
        s = fn.random.uniform(range=[-0.5, 0.5], seed=12)
        c = fn.random.uniform(range=[0.0, 2.0], seed=13)
        y = fn.brightness_contrast(x, brightness=b, brightness_shift=s, contrast=c,
                                   contrast_center=center, dtype=out)
        return y, b, s, c

    (y, b, s, c), layouts = _run(make, data)
    assert layouts[0] == ("FHWC" if seq else "HWC")  # DALI's default for a layout-less input
    for i in range(BS):
        bi, si, ci = float(b[i]), float(s[i]), float(c[i])
        ref = si * _range(NP[out]) + bi * (center + ci * (data[i].astype(np.float64) - center))
        _close(y[i], _sat(ref, NP[out]), NP[out])


def test_brightness_and_contrast_default_center_and_dtype():
    data = _inputs(np.int16, (8, 8, 3))
    (y, z), _ = _run(lambda x: (fn.contrast(x, contrast=0.5), fn.brightness(x, brightness=2)),
                     data, layout="HWC")
    for i in range(BS):
        # contrast_center defaults to half of INT16's range, 2^14; the output type is INT16
        _close(y[i], _sat(16384 + 0.5 * (data[i] - 16384.0), np.int16), np.int16)
        _close(z[i], _sat(2.0 * data[i], np.int16), np.int16)


_RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_YIQ2RGB = np.array([[1, 0.956, 0.621], [1, -0.272, -0.647], [1, -1.107, 1.705]])


def _twist_ref(img, h, s, b, c, grey):
    a = math.radians(h)
    hm = np.array([[1, 0, 0], [0, math.cos(a) * s, math.sin(a) * s],
                   [0, -math.sin(a) * s, math.cos(a) * s]])
    m = _YIQ2RGB @ hm @ _RGB2YIQ
    px = img.reshape(-1, 3).astype(np.float64) @ m.T
    return (((px - grey) * c + grey) * b).reshape(img.shape)


@pytest.mark.parametrize("inp", [types.UINT8, types.INT16, types.FLOAT])
@pytest.mark.parametrize("out", [types.UINT8, types.INT16, types.FLOAT])
def test_color_twist_types(inp, out):
    data = _inputs(NP[inp], (2, 12, 6, 3))  # a 4-D input without layout: FHWC

    def make(x):
        h = fn.random.uniform(range=[-20, 20], seed=1)
        s = fn.random.uniform(range=[0, 2], seed=2)
        b = fn.random.uniform(range=[0, 2], seed=3)
        c = fn.random.uniform(range=[0, 2], seed=4)
        return fn.color_twist(x, hue=h, saturation=s, brightness=b, contrast=c,
                              dtype=out), h, s, b, c

    (y, h, s, b, c), _ = _run(make, data)
    grey = 0.5 if inp == types.FLOAT else 128
    for i in range(BS):
        ref = _twist_ref(data[i], float(h[i]), float(s[i]), float(b[i]), float(c[i]), grey)
        got = y[i]
        assert got.dtype == NP[out]
        tol = 1e-3 if out == types.FLOAT else 1
        assert np.allclose(got, _sat(ref, NP[out]), rtol=1e-3 if out == types.FLOAT else 1 / 512,
                           atol=tol)


@pytest.mark.parametrize("dt", [types.FLOAT, types.INT32, types.INT16, types.UINT8])
def test_hue_keeps_the_input_type(dt):
    data = [np.full((10, 10, 3), 100, NP[dt]) for _ in range(BS)]
    (y,), _ = _run(lambda x: (fn.hue(x, hue=30),), data, layout="HWC")
    for i in range(BS):
        assert y[i].dtype == NP[dt]
        # DALI's YIQ -> RGB matrix is the published rounded one: grey moves slightly
        _close(y[i], _sat(_twist_ref(data[i], 30, 1, 1, 1, 0), NP[dt]), NP[dt])
