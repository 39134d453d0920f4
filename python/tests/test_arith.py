"""Arithmetic on DataNodes, godali.math and types.Constant against numpy references of
DALI's documented rules (type promotions, true division to float, C-style // and %,
broadcasting). Float results: exact for + - * / (float32 arithmetic is emulated exactly),
1e-6 relative for the transcendental functions."""

import re

import numpy as np
import pytest

import godali
import godali.math as gm
from godali import fn, types

BATCH = 3


def _run(graph, batch=BATCH):
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=11)
    with pipe:
        outs = graph()
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[np.array(o[i].as_array()) for i in range(batch)] for o in res]
    pipe.close()
    return got


def _ints(lo, hi, shape, dtype):
    # random.uniform draws floats; casting them through an arithmetic-free path: the
    # constant node carries the exact integers instead.
    rng = np.random.default_rng(abs(hash((lo, hi, dtype))) % 1000)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def test_binary_ops_follow_dali_promotions():
    a = _ints(0, 256, (4, 5), np.uint8)
    b = _ints(-128, 128, (4, 5), np.int8)
    b[b == 0] = 3
    c = _ints(-1000, 1000, (5,), np.int32)
    f = np.linspace(-3, 7, 20, dtype=np.float32).reshape(4, 5)

    def graph():
        A = types.Constant(a)
        B = types.Constant(b)
        C = types.Constant(c)
        F = types.Constant(f)
        return [A + B, A - B, A * B, A / B, A // B, A % B, A + C, A * 2, A + 1.5, F * A,
                A < B, A == A, (A & 7) | 1, -B, F ** 2, 3 - F, A ^ B]
    got = _run(graph)
    # References: operands converted to DALI's result type first, C semantics for // %.
    i16 = lambda x: x.astype(np.int16)
    trunc_div = lambda x, y: (np.trunc(x.astype(np.float64) / y)).astype(np.int64)
    want = [
        (i16(a) + i16(b), np.int16), (i16(a) - i16(b), np.int16), (i16(a) * i16(b), np.int16),
        (a.astype(np.float32) / b.astype(np.float32), np.float32),
        (trunc_div(i16(a), i16(b)).astype(np.int16), np.int16),
        (np.fmod(i16(a), i16(b)).astype(np.int16), np.int16),
        (a.astype(np.int32) + c, np.int32),
        (a.astype(np.int32) * 2, np.int32),  # a Python int is INT32
        (a.astype(np.float32) + np.float32(1.5), np.float32),
        (f * a.astype(np.float32), np.float32),
        (i16(a) < i16(b), np.bool_), (np.ones_like(a, dtype=bool), np.bool_),
        (((a.astype(np.int32) & 7) | 1), np.int32), (-b, np.int8),
        (f * f, np.float32), (np.float32(3) - f, np.float32), (i16(a) ^ i16(b), np.int16),
    ]
    for k, (w, dt) in enumerate(want):
        for s in range(BATCH):
            g = got[k][s]
            assert g.dtype == dt, (k, g.dtype, dt)
            assert g.shape == w.shape, (k, g.shape, w.shape)
            np.testing.assert_array_equal(g, w.astype(dt), err_msg="expression %d" % k)


def test_math_functions_and_broadcast_against_numpy():
    def graph():
        u = fn.random.uniform(range=[0.1, 0.9], shape=[2, 3])
        s = fn.random.uniform(range=[1, 2])  # a per-sample scalar, broadcast
        v = types.Constant(np.array([1.0, 2.0, 3.0], dtype=np.float32))
        return [u, s, gm.sqrt(u), gm.exp(u), gm.log(u), gm.sin(u), gm.atan2(u, s),
                gm.clamp(u * 10, 2, 5), gm.min(u, 0.5), gm.max(u, s), gm.pow(u, v), u * v + s,
                gm.floor(u * 10), gm.abs(u - 0.5), gm.fpow(s, 2)]
    got = _run(graph)
    for i in range(BATCH):
        u, s = got[0][i], got[1][i]
        f = np.float32
        refs = [np.sqrt(u), np.exp(u), np.log(u), np.sin(u), np.arctan2(u, s),
                np.clip(u * f(10), 2, 5).astype(np.float32), np.minimum(u, f(0.5)), np.maximum(u, s),
                u ** np.array([1, 2, 3], np.float32), u * np.array([1, 2, 3], np.float32) + s,
                np.floor(u * f(10)), np.abs(u - f(0.5)), np.array(s ** 2, np.float32)]
        for k, r in enumerate(refs):
            g = got[k + 2][i]
            assert g.dtype == np.float32 and g.shape == np.shape(r), (k, g.dtype, g.shape)
            np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-7, err_msg="function %d" % k)


def test_sqrt_of_integers_is_float32_and_float64_stays():
    a = np.array([0, 1, 4, 255], np.uint8)
    d = np.array([2.0, 8.0], np.float64)
    got = _run(lambda: [gm.sqrt(types.Constant(a)), gm.sqrt(types.Constant(d, dtype=types.FLOAT64)),
                        types.Constant(a) / 2], batch=1)
    assert got[0][0].dtype == np.float32 and got[1][0].dtype == np.float64
    np.testing.assert_allclose(got[0][0], np.sqrt(a.astype(np.float32)), rtol=1e-7)
    np.testing.assert_array_equal(got[1][0], np.sqrt(d))
    assert got[2][0].dtype == np.float32  # '/' of integers is FLOAT


def test_constant_forms():
    got = _run(lambda: [types.Constant(7, shape=[2, 2]), types.Constant([1, 2, 3]),
                        types.Constant(np.arange(6, dtype=np.int64).reshape(2, 3), layout="HW"),
                        types.Constant(np.arange(6, dtype=np.int64), dtype=types.INT64),
                        types.Constant(np.array([0.5, 1.5])),
                        types.Constant(2.5, dtype=types.FLOAT64, shape=[])], batch=2)
    for s in range(2):
        np.testing.assert_array_equal(got[0][s], np.full((2, 2), 7, np.int32))
        assert got[1][s].dtype == np.int32 and list(got[1][s]) == [1, 2, 3]
        # DALI narrows 64-bit numpy arrays to 32 bits unless dtype says otherwise
        assert got[2][s].dtype == np.int32
        np.testing.assert_array_equal(got[2][s], np.arange(6).reshape(2, 3))
        assert got[3][s].dtype == np.int64 and list(got[3][s]) == list(range(6))
        assert got[4][s].dtype == np.float32 and list(got[4][s]) == [0.5, 1.5]
        assert got[5][s].dtype == np.float64 and got[5][s].shape == () and got[5][s] == 2.5
    assert isinstance(types.Constant(3), types.ScalarConstant)


def test_constant_converts_with_saturation():
    # DALI's constant converts its data to dtype with saturation (ConvertSat): idata -1
    # as UINT8 is 0, 300 is 255; fdata to an integer type rounds first.
    def graph():
        return [godali.fn.constant(idata=[-1, 1, 300], dtype=types.UINT8),
                godali.fn.constant(fdata=[-2.6, 1.5, 70000.0], dtype=types.INT16),
                godali.fn.constant(idata=[-5, 7], dtype=types.UINT64)]
    got = _run(graph, batch=1)
    assert got[0][0].tolist() == [0, 1, 255]
    assert got[1][0].tolist() == [-3, 2, 32767]
    assert got[2][0].tolist() == [0, 7]


def test_dali_arithmetic_corner_cases():
    # DALI: integer ** negative is 0 (whatever the base), pow takes BOOL operands,
    # abs() is math.abs, and a ScalarConstant of dtype BOOL holds bool(value), so
    # Constant(7, BOOL) == x compares with True; != builds a node from either side.
    x = np.array([-1, 1, 2, -3], np.int32)
    e = np.array([-1, -2, 3, 0], np.int32)
    b = np.array([True, False, True, False])

    def graph():
        X = fn.external_source(lambda: [x], batch=True)
        E = fn.external_source(lambda: [e], batch=True)
        B = fn.external_source(lambda: [b], batch=True)
        c = types.Constant(7, types.BOOL)
        return [X ** E, X ** B, abs(X), c == B, c != B, B != c]
    pw, pb, ab, eq, ne, ne2 = [g[0] for g in _run(graph, batch=1)]
    np.testing.assert_array_equal(pw, np.where(e >= 0, np.power(x, np.maximum(e, 0)), 0))
    assert pb.dtype == np.int32
    np.testing.assert_array_equal(pb, np.power(x, b.astype(np.int32)))
    assert ab.dtype == np.int32 and ab.tolist() == [1, 1, 2, 3]
    assert eq.tolist() == b.tolist() and ne.tolist() == (~b).tolist() and ne2.tolist() == (~b).tolist()
    assert types.Constant(7, types.BOOL).value is True and types.Constant(2.7, types.INT32).value == 2


def test_dali_division_and_refusals():
    # DALI: // of floats divides as /, // takes a BOOL operand with a number; BOOL-only
    # arithmetic other than *, min, max is refused, as are bitwise ops on floats, with
    # DALI's messages.
    f = np.array([7.0, -7.5, 1.0], np.float32)
    g = np.array([2.0, 2.0, -4.0], np.float32)
    b = np.array([True, True, False])
    i = np.array([5, -5, 3], np.int32)

    def graph():
        F = fn.external_source(lambda: [f], batch=True)
        G = fn.external_source(lambda: [g], batch=True)
        B = fn.external_source(lambda: [b], batch=True)
        return [F // G, B // fn.external_source(lambda: [i], batch=True)]
    fd, bd = [o[0] for o in _run(graph, batch=1)]
    np.testing.assert_allclose(fd, f / g, rtol=1e-7)
    assert bd.dtype == np.int32 and bd.tolist() == [0, 0, 0]
    for expr, msg in [(lambda B, F: B + B, "Inputs to arithmetic operator `+` cannot be booleans"),
                      (lambda B, F: gm.sqrt(B), "Input to arithmetic operator `sqrt` cannot be a boolean"),
                      (lambda B, F: gm.clamp(B, B, B), "cannot be booleans"),
                      (lambda B, F: F & B, "Inputs to bitwise operator `&` must be of integral type"),
                      (lambda B, F: ~F, "Inputs to bitwise operator `~` must be of integral type")]:
        pipe = godali.Pipeline(batch_size=1, num_threads=1)
        with pipe:
            B = fn.external_source(lambda: [b], batch=True)
            F = fn.external_source(lambda: [f], batch=True)
            pipe.set_outputs(expr(B, F))
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            pipe.run()
        pipe.close()


def test_empty_constant():
    # DALI's types.Constant([]): an empty float tensor of shape [0] in every sample; a
    # shape of volume 0 is as good.
    got = _run(lambda: [types.Constant([]), types.Constant(np.zeros((2, 0), np.int32))], batch=2)
    for s in range(2):
        assert got[0][s].shape == (0,) and got[0][s].dtype == np.float32
        assert got[1][s].shape == (2, 0) and got[1][s].dtype == np.int32


def test_errors_name_the_problem():
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        u = fn.random.uniform(shape=[2])
        with pytest.raises(TypeError, match="types.Constant"):
            u + [1, 2]
        with pytest.raises(TypeError, match="no truth value"):
            bool(u > 0)
        bad = u & 1  # bitwise on FLOAT: refused when the graph is built
        pipe.set_outputs(bad)
    with pytest.raises(Exception, match="bitand"):
        pipe.build()
    pipe.close()


def _dali_sat(x, dt):
    # DALI's ConvertSat for float -> integer: round half away from zero, clamp, NaN -> 0.
    info = np.iinfo(dt)
    r = np.where(np.isnan(x), 0, np.sign(x) * np.floor(np.abs(x) + 0.5))
    return np.clip(r, info.min, info.max).astype(dt)


def test_cast_rounds_and_saturates():
    f = np.array([-300.5, -2.5, -0.5, 0.49, 0.5, 1.5, 2.5, 254.6, 255.5, 1e10, -1e10], np.float32)
    i = np.array([-70000, -129, -1, 0, 127, 128, 255, 256, 70000], np.int32)
    got = _run(lambda: [fn.cast(types.Constant(f), dtype=types.UINT8),
                        fn.cast(types.Constant(f), dtype=types.INT8),
                        fn.cast(types.Constant(f), dtype=types.INT32),
                        fn.cast(types.Constant(i), dtype=types.UINT8),
                        fn.cast(types.Constant(i), dtype=types.INT16),
                        fn.cast(types.Constant(i), dtype=types.FLOAT),
                        fn.cast(types.Constant(i), dtype=types.BOOL),
                        fn.cast(types.Constant(np.float32([0.0])) / 0.0, dtype=types.INT32)],
                   batch=1)
    np.testing.assert_array_equal(got[0][0], _dali_sat(f, np.uint8))
    np.testing.assert_array_equal(got[1][0], _dali_sat(f, np.int8))
    np.testing.assert_array_equal(got[2][0], _dali_sat(f, np.int32))
    np.testing.assert_array_equal(got[3][0], np.clip(i, 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(got[4][0], np.clip(i, -32768, 32767).astype(np.int16))
    np.testing.assert_array_equal(got[5][0], i.astype(np.float32))
    np.testing.assert_array_equal(got[6][0], i != 0)
    assert list(got[7][0]) == [0]  # NaN -> 0


def test_shapes_match_pil(tmp_path):
    from PIL import Image
    from conftest import make_jpeg
    sizes = [(40, 56), (53, 47), (31, 70)]
    files = [make_jpeg(str(tmp_path / ("s%d.jpg" % k)), h, w, seed=k) for k, (h, w) in enumerate(sizes)]
    pipe = godali.Pipeline(batch_size=3, num_threads=2, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=files)
        img = fn.decoders.image(data, output_type=types.RGB)
        pipe.set_outputs(fn.shapes(img), fn.shapes(img, dtype=types.INT32),
                         fn.cast(fn.shapes(img), dtype=types.FLOAT) * 0.5)
    res = pipe.run()
    for k, f in enumerate(files):
        w, h = Image.open(f).size
        s = np.array(res[0][k].as_array())
        assert s.dtype == np.int64 and list(s) == [h, w, 3]
        assert np.array(res[1][k].as_array()).dtype == np.int32
        assert list(np.array(res[2][k].as_array())) == [h / 2, w / 2, 1.5]
    pipe.close()


@pytest.mark.parametrize("la, sa, lb, sb, ok", [
    ("ABCD", (2, 3, 4, 5), "BCD", (3, 4, 5), True),
    ("ABCD", (2, 3, 4, 5), "D", (5,), True),
    ("HWC", (4, 6, 3), "", (3,), True),
    ("ABCD", (2, 3, 4, 5), "ABC", (3, 4, 5), False),
    ("X", (5,), "ABCD", (2, 3, 4, 5), False),
])
def test_layouts_must_agree_on_common_trailing_axes(la, sa, lb, sb, ok):
    # DALI: broadcast operands' layouts match on the axes they share from the end.
    a_np, b_np = np.ones(sa, np.float32), np.full(sb, 2, np.float32)
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=lambda: [a_np], batch=True, layout=la)
        b = fn.external_source(source=lambda: [b_np], batch=True, layout=lb or None)
        pipe.set_outputs(a + b)
    if ok:
        (out,) = pipe.run()
        np.testing.assert_array_equal(np.array(out[0]), a_np + b_np)
        assert out.layout() == la
    else:
        with pytest.raises(RuntimeError, match="do not match on their common trailing axes"):
            pipe.build()
    pipe.close()


def test_gpu_constant_is_refused_in_a_cpu_only_pipeline():
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(types.Constant(np.ones((2, 2), np.float32), device="gpu"))
    with pytest.raises(RuntimeError, match="CPU-only pipeline"):
        pipe.build()
