"""fn.python_function, fn.dl_tensor_python_function, torch_python_function and their ops
classes, compared with numpy (and torch) computing the same thing outside the pipeline."""

import numpy as np
import pytest

from godali import _lib, fn, ops, types
from godali.pipeline import Pipeline
from conftest import need

BS = 4


def _batches(seed, n):
    """n batches of ragged uint8 HWC images, with the shapes differing per sample."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, 256, (5 + i + j, 7 + 2 * i, 3), dtype=np.uint8)
             for i in range(BS)] for j in range(n)]


def _source(batches):
    it = iter(batches)
    return lambda: next(it)


def _pipe(**kw):
    return Pipeline(batch_size=BS, num_threads=2, device_id=None, prefetch_queue_depth=1, **kw)


def _samples(tl):
    return [np.array(tl.at(i)) for i in range(len(tl))]


def test_per_sample_functions_match_numpy():
    batches = _batches(1, 3)

    def gray(im):
        return im[:, :, 1] / 255.0  # float64, a strided view of the input

    def mean(im):
        return np.array([im[:, :, c].mean() for c in range(3)])

    def bias(im):
        return im > 127

    pipe = _pipe(exec_async=False, exec_pipelined=False)  # DALI's old requirement, accepted
    with pipe:
        x = fn.external_source(source=_source(batches), dtype=types.UINT8, ndim=3)
        pipe.set_outputs(fn.python_function(x, function=gray),
                         fn.python_function(x, function=mean),
                         fn.python_function(x, function=bias),
                         fn.python_function(x, function=np.fliplr))
    pipe.build()
    for batch in batches:
        outs = pipe.run()
        for f, tl in zip((gray, mean, bias, np.fliplr), outs):
            got = _samples(tl)
            for i, im in enumerate(batch):
                want = f(im)
                assert got[i].dtype == want.dtype and got[i].shape == want.shape
                np.testing.assert_array_equal(got[i], want)  # exact: the same computation


def test_batch_processing_multiple_inputs_and_outputs():
    batches = _batches(2, 2)
    other = _batches(3, 2)
    seen = []

    def mix(a, b):
        seen.append((type(a), len(a)))
        mixed = [(x[:4, :6].astype(np.int32) + y[:4, :6]) // 2 for x, y in zip(a, b)]
        return [m[:, :, 0] for m in mixed], [m[:, :, 2].astype(np.float32) for m in mixed]

    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=_source(batches), dtype=types.UINT8, ndim=3)
        y = fn.external_source(source=_source(other), dtype=types.UINT8, ndim=3)
        r, b = fn.python_function(x, y, function=mix, num_outputs=2, batch_processing=True)
        pipe.set_outputs(r, b)
    pipe.build()
    for bx, by in zip(batches, other):
        r, b = pipe.run()
        want_r, want_b = mix(bx, by)
        for i in range(BS):
            np.testing.assert_array_equal(np.array(r.at(i)), want_r[i])
            np.testing.assert_array_equal(np.array(b.at(i)), want_b[i])
            assert np.array(b.at(i)).dtype == np.float32
    # Once per batch, with a list of the batch's samples.
    assert seen[:2] == [(list, BS), (list, BS)]


def test_zero_inputs_side_effects_and_sink():
    counter = []
    written = []

    def count():
        counter.append(1)
        return np.full((2, 2), len(counter), np.int64)

    pipe = _pipe()
    with pipe:
        c = fn.python_function(function=count)
        fn.python_function(c, function=lambda a: written.append(int(a[0, 0])), num_outputs=0)
        pipe.set_outputs(c)
    pipe.build()
    out, = pipe.run()
    # Per sample: one call per sample, in sample order; the sink ran for every sample.
    assert [int(np.array(out.at(i))[0, 0]) for i in range(BS)] == [1, 2, 3, 4]
    pipe.close()
    # The pipeline may have run ahead (prefetch) into the next batch: its sink calls see
    # the values after 4, never a value twice or one that count() did not produce.
    got = sorted(written)
    assert got[:4] == [1, 2, 3, 4] and got == sorted(set(got)) and got[-1] <= len(counter)


def test_output_layouts():
    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.zeros((2, 3, 4), np.uint8))
        a, b = fn.python_function(x, function=lambda v: (v, v.mean(2)), num_outputs=2,
                                  output_layouts=["ABC", "DE"])
        c, d = fn.python_function(x, function=lambda v: (v, v / 2), num_outputs=2,
                                  output_layouts="FGH")
        pipe.set_outputs(a, b, c, d)
    pipe.build()
    outs = pipe.run()
    assert [o.layout() for o in outs] == ["ABC", "DE", "FGH", "FGH"]


def test_too_many_layouts_rejected():
    pipe = _pipe()
    with pipe:
        pipe.set_outputs(fn.python_function(function=lambda: np.zeros((1, 1)),
                                            output_layouts=["HW", "HWC"]))
    with pytest.raises(_lib.InvalidPipelineError, match="length of output_layouts"):
        pipe.build()


def test_exception_reaches_run_and_pipeline_goes_on():
    calls = []

    def flaky(v):
        calls.append(1)
        if len(calls) == 2:
            raise KeyError("the second sample")
        return v + 1

    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.ones(3, np.int32))
        pipe.set_outputs(fn.python_function(x, function=flaky, name="flaky"))
    pipe.build()
    with pytest.raises(RuntimeError) as e:
        pipe.run()
    assert isinstance(e.value, _lib.DataError)
    assert 'node "flaky" (python_function)' in str(e.value)
    assert "KeyError" in str(e.value) and "the second sample" in str(e.value)
    out, = pipe.run()  # the next batch goes on
    np.testing.assert_array_equal(np.array(out.at(0)), [2, 2, 2])


@pytest.mark.parametrize("num_outputs,func,match", [
    (2, lambda v: [v, v], "must be a tuple"),
    (2, lambda v: (v, v, v), "Unexpected number of outputs.*got 3.*expected 2"),
    (1, lambda v: {"a": v}, "not an array"),
    (1, lambda v: v.astype(np.complex64), "not supported"),
])
def test_bad_returns_name_the_problem(num_outputs, func, match):
    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.ones(3, np.uint8))
        out = fn.python_function(x, function=func, num_outputs=num_outputs)
        pipe.set_outputs(*(out if isinstance(out, tuple) else (out,)))
    pipe.build()
    with pytest.raises(_lib.DataError, match=match):
        pipe.run()


def test_batch_of_wrong_length_and_mixed_types():
    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.ones(3, np.uint8))
        pipe.set_outputs(fn.python_function(x, function=lambda b: b[:2], batch_processing=True))
    pipe.build()
    with pytest.raises(_lib.DataError, match="must have 4 samples"):
        pipe.run()
    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.ones(3, np.uint8))
        pipe.set_outputs(fn.python_function(
            x, batch_processing=True,
            function=lambda b: [v if i else v.astype(np.float32) for i, v in enumerate(b)]))
    pipe.build()
    with pytest.raises(_lib.DataError, match="one type and rank"):
        pipe.run()


def test_reference_for_flip_like_dali_tests():
    # DALI's operator tests: the same input through the operator and through
    # python_function with a numpy reference, compared sample by sample.
    batches = _batches(4, 2)
    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=_source(batches), dtype=types.UINT8, ndim=3,
                               layout="HWC")
        pipe.set_outputs(fn.flip(x, horizontal=1, vertical=1),
                         fn.python_function(x, function=lambda im: im[::-1, ::-1]))
    pipe.build()
    for _ in batches:
        ours, ref = pipe.run()
        for i in range(BS):
            np.testing.assert_array_equal(np.array(ours.at(i)), np.array(ref.at(i)))


def test_dl_tensor_python_function_gets_capsules():
    torch = need("torch")
    from torch.utils import dlpack as tdl
    batches = _batches(5, 2)
    kinds = []

    def f(a, b):
        kinds.append(type(a[0]).__name__)
        ta = [tdl.from_dlpack(c) for c in a]
        tb = [tdl.from_dlpack(c) for c in b]
        return ([tdl.to_dlpack(x.to(torch.float32) + 1) for x in ta],
                [tdl.to_dlpack(y.narrow(2, 0, 1).squeeze(2)) for y in tb])

    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=_source(batches), dtype=types.UINT8, ndim=3)
        pipe.set_outputs(*fn.dl_tensor_python_function(x, x, function=f, num_outputs=2))
    pipe.build()
    for batch in batches:
        p, q = pipe.run()
        for i, im in enumerate(batch):
            np.testing.assert_array_equal(np.array(p.at(i)), im.astype(np.float32) + 1)
            np.testing.assert_array_equal(np.array(q.at(i)), im[:, :, 0])
    assert kinds[0] == "PyCapsule"
    # DALI's helpers: a capsule of a strided array round-trips.
    arr = np.arange(0, 10, 0.5).reshape((2, 10, 1))[:, 2:5, :]
    np.testing.assert_array_equal(ops._dlpack_to_array(ops._dlpack_from_array(arr)), arr)


def test_torch_python_function_per_sample_and_batch():
    torch = need("torch")
    from godali.plugin import pytorch as gtorch
    batches = _batches(6, 2)

    def op(t):
        assert isinstance(t, torch.Tensor)
        n = t.double() / 255
        return n.sin(), n.cos()

    def batch_op(ts):
        outs = [op(t) for t in ts]
        return [o[0] for o in outs], [o[1] for o in outs]

    per = gtorch.TorchPythonFunction(function=op, num_outputs=2, batch_processing=False)
    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=_source(batches), dtype=types.UINT8, ndim=3)
        s1, c1 = per(x)
        s2, c2 = gtorch.fn.torch_python_function(x, function=batch_op, num_outputs=2)
        pipe.set_outputs(s1, c1, s2, c2)
    pipe.build()
    for batch in batches:
        outs = pipe.run()
        for i, im in enumerate(batch):
            n = im.astype(np.float64) / 255
            for tl, want in zip(outs, (np.sin(n), np.cos(n), np.sin(n), np.cos(n))):
                np.testing.assert_allclose(np.array(tl.at(i)), want, rtol=1e-12, atol=0)


def test_ops_python_function_class_and_legacy_names():
    pipe = _pipe()
    f = ops.PythonFunction(function=lambda: np.arange(6, dtype=np.int16).reshape(2, 3))
    with pipe:
        pipe.set_outputs(f())
    pipe.build()
    out, = pipe.run()
    np.testing.assert_array_equal(np.array(out.at(3)), np.arange(6).reshape(2, 3))
    assert np.array(out.at(3)).dtype == np.int16
    from godali.edge import EdgeReference
    assert EdgeReference is ops._DataNode


def test_refusals_are_clear():
    with pytest.raises(ValueError, match="host only"):
        fn.python_function(function=lambda: np.zeros(1), device="gpu")
    with pytest.raises(TypeError, match="callable"):
        fn.python_function(function=3)
    pipe = _pipe()
    with pipe:
        x = fn.python_function(function=lambda: np.zeros((2, 2, 3), np.uint8))
        with pytest.raises(TypeError, match="multiple input sets"):
            fn.python_function([x, x], function=lambda v: v)
        pipe.set_outputs(fn.transpose(x, perm=[1, 0, 2]))
    # A godali operator needs its input's type at build; a python function's is known
    # only when it runs (rotate, whose schema takes one type and rank, may take it:
    # test_rotate_follows_a_python_function).
    with pytest.raises(_lib.InvalidPipelineError, match="known only when it runs"):
        pipe.build()


def test_rotate_follows_a_python_function():
    # DALI's test_python_function pattern: rotate by 90 degrees (nearest neighbour) a
    # python_function's output equals numpy's rot90. rotate's schema takes uint8 HWC only:
    # the node is built for that, each sample is checked when it runs.
    rng = np.random.default_rng(4)
    imgs = [rng.integers(0, 256, (5 + i, 8 - i, 3), np.uint8) for i in range(BS)]
    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=lambda: imgs, batch=True)
        y = fn.python_function(x, function=lambda a: a[1:], output_layouts="HWC")
        z = fn.python_function(x, function=lambda a: a[:, 1:])  # no layout: HWC assumed
        pipe.set_outputs(fn.rotate(y, angle=90, interp_type=types.INTERP_NN),
                         fn.rotate(z, angle=90, interp_type=types.INTERP_NN))
    a, b = pipe.run()
    pipe.close()
    for i in range(BS):
        np.testing.assert_array_equal(np.array(a.at(i)), np.rot90(imgs[i][1:]))
        np.testing.assert_array_equal(np.array(b.at(i)), np.rot90(imgs[i][:, 1:]))
    assert a.layout() == "HWC"


def test_a_python_function_sample_of_another_type_is_refused_when_it_runs():
    pipe = _pipe()
    with pipe:
        y = fn.python_function(function=lambda: np.zeros((4, 4, 3), np.float32))
        pipe.set_outputs(fn.rotate(y, angle=90))
    with pytest.raises(_lib.DataError, match=r"must be uint8 HWC, got float of shape \[4 4 3\]"):
        pipe.run()
    pipe.close()
    pipe = _pipe()
    with pipe:
        y = fn.python_function(function=lambda: np.zeros((4, 4), np.uint8))
        pipe.set_outputs(fn.rotate(y, angle=90))
    with pytest.raises(_lib.DataError, match=r"must be uint8 HWC, got uint8 of shape \[4 4\]"):
        pipe.run()
    pipe.close()


def test_flip_follows_a_python_function():
    # DALI's pattern: decode, resize in Python, then a DALI operator; flip reads the
    # python_function's output type and shape per sample.
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (4 + i, 6, 3), np.uint8) for i in range(BS)]
    pipe = _pipe()
    with pipe:
        x = fn.external_source(source=lambda: imgs, batch=True)
        y = fn.python_function(x, function=lambda a: a[:, 1:].astype(np.int16))
        pipe.set_outputs(fn.flip(y, horizontal=1), fn.flip(y, horizontal=0, vertical=1))
    h, v = pipe.run()
    pipe.close()
    for i in range(BS):
        want = imgs[i][:, 1:].astype(np.int16)
        np.testing.assert_array_equal(np.array(h.at(i)), want[:, ::-1])
        np.testing.assert_array_equal(np.array(v.at(i)), want[::-1])
        assert np.array(h.at(i)).dtype == np.int16
