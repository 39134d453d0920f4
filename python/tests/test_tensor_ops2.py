"""transpose, copy, cast_like, reinterpret, one_hot, lookup_table, element_extract,
zeros/ones/full(_like), get_property, reductions.*, batch_permutation and random.beta
against numpy: values (exact, or float32 rounding where stated), dtypes, layouts, shapes,
empty samples and argument errors."""

import numpy as np
import pytest

import godali
from godali import fn, ops, types
from conftest import need

BATCH = 3


def _samples():
    rng = np.random.default_rng(7)
    return [rng.integers(-20, 20, size=(2 + i, 3, 4)).astype(np.int16) for i in range(BATCH)]


def _run(graph, data=None, layout="ABC", batch=BATCH):
    data = _samples() if data is None else data
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=4)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        pipe.set_outputs(*graph(x))
    res = pipe.run()
    got = [[np.array(o[i]) for i in range(batch)] for o in res]
    layouts = [o.layout() for o in res]
    pipe.close()
    return data, got, layouts


def test_transpose_copy_cast_like():
    data, got, lay = _run(lambda x: [fn.transpose(x, perm=[2, 0, 1]),
                                     fn.transpose(x, perm=[1, 0, 2], transpose_layout=False),
                                     fn.transpose(x, perm=[1, 2, 0], output_layout="XYZ"),
                                     fn.copy(x), fn.cast_like(x, fn.zeros(shape=[1], dtype=types.FLOAT))])
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], a.transpose(2, 0, 1))
        np.testing.assert_array_equal(got[1][i], a.transpose(1, 0, 2))
        np.testing.assert_array_equal(got[2][i], a.transpose(1, 2, 0))
        np.testing.assert_array_equal(got[3][i], a)
        assert got[3][i].dtype == np.int16 and got[4][i].dtype == np.float32
        np.testing.assert_array_equal(got[4][i], a.astype(np.float32))
    assert lay == ["CAB", "", "XYZ", "ABC", "ABC"]


def test_transpose_default_reverses_the_dimensions():
    # DALI: without perm the dimensions are reversed (numpy's transpose default)
    flat = [np.arange(5 + i, dtype=np.float32) for i in range(BATCH)]
    data, got, lay = _run(lambda x: [fn.transpose(x)])
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], a.transpose())
    assert lay == ["CBA"]
    data, got, lay = _run(lambda x: [fn.transpose(x)], data=flat, layout="X")
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], a)


def test_reinterpret():
    data, got, lay = _run(lambda x: [fn.reinterpret(x, dtype=types.UINT8),
                                     fn.reinterpret(x, dtype=types.INT32, shape=[-1]),
                                     fn.reinterpret(x, rel_shape=[1, 2, 0.5])])
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], a.view(np.uint8))
        np.testing.assert_array_equal(got[1][i], a.reshape(-1).view(np.int32))
        np.testing.assert_array_equal(got[2][i], a.reshape(a.shape[0], 6, 2))
    assert lay[0] == "ABC" and lay[1] == ""


def test_one_hot_and_lookup_table():
    data, got, lay = _run(lambda x: [
        fn.one_hot(x, num_classes=10, axis=1, axis_name="K", dtype=types.INT8),
        fn.one_hot(x, num_classes=10, on_value=2.5, off_value=-1),
        fn.lookup_table(x, keys=[0, 3, 5, 3], values=[1.5, 9, 7, 3], default_value=-2, dtype=types.FLOAT64)])
    for i, a in enumerate(data):
        ref = (a[..., None] == np.arange(10)).astype(np.int8)
        np.testing.assert_array_equal(got[0][i], np.moveaxis(ref, -1, 1))
        assert got[0][i].dtype == np.int8
        np.testing.assert_array_equal(got[1][i], np.where(ref, 2.5, -1).astype(np.float32))
        lut = {0: 1.5, 3: 3, 5: 7}
        np.testing.assert_array_equal(got[2][i], np.vectorize(lambda v: lut.get(int(v), -2.0))(a))
    assert lay[0] == "AKBC" and lay[1] == "" and lay[2] == "ABC"


def test_one_hot_scalar_legacy():
    data = [np.array([i], dtype=np.int32) for i in range(BATCH)]
    _, got, _ = _run(lambda x: [fn.one_hot(x, num_classes=4)], data=data, layout=None)
    for i in range(BATCH):
        np.testing.assert_array_equal(got[0][i], np.eye(4, dtype=np.float32)[i])


def test_element_extract():
    data, got, lay = _run(lambda x: list(fn.element_extract(x, element_map=[1, 0])), layout="FHW")
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], a[1])
        np.testing.assert_array_equal(got[1][i], a[0])
    assert lay == ["HW", "HW"]


def test_constant_values():
    fill = np.array([[1.5], [2.5]], dtype=np.float32)
    data, got, lay = _run(lambda x: [fn.zeros(shape=[2, 3]), fn.ones(shape=[4], dtype=types.UINT8),
                                     fn.full(fill, shape=[2, 2, 3]), fn.zeros_like(x), fn.ones_like(x),
                                     fn.full_like(x, np.array([7, 8, 9, 10], dtype=np.int16))])
    for i, a in enumerate(data):
        np.testing.assert_array_equal(got[0][i], np.zeros((2, 3), np.int32))
        assert got[0][i].dtype == np.int32
        np.testing.assert_array_equal(got[1][i], np.ones(4, np.uint8))
        np.testing.assert_array_equal(got[2][i], np.broadcast_to(fill, (2, 2, 3)))
        np.testing.assert_array_equal(got[3][i], np.zeros_like(a))
        np.testing.assert_array_equal(got[4][i], np.ones_like(a))
        np.testing.assert_array_equal(got[5][i], np.full_like(a, [7, 8, 9, 10]))
    assert lay[3:] == ["ABC"] * 3


def test_get_property():
    _, got, _ = _run(lambda x: [fn.get_property(x, key="layout"), fn.get_property(x, key="source_info")])
    assert bytes(got[0][0]).decode() == "ABC" and got[0][0].dtype == np.uint8
    assert got[1][0].size == 0


NP_REDUCE = {"sum": np.sum, "min": np.min, "max": np.max, "mean": np.mean,
             "mean_square": lambda a, **k: np.mean(a.astype(np.float64) ** 2, **k),
             "rms": lambda a, **k: np.sqrt(np.mean(a.astype(np.float64) ** 2, **k))}


@pytest.mark.parametrize("axes", [None, (), 0, (1, 2), -1])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions(axes, keep):
    names = sorted(NP_REDUCE)

    def graph(x):
        outs = [getattr(fn.reductions, n)(x, axes=axes, keep_dims=keep) for n in names]
        mean = fn.reductions.mean(x, axes=axes, keep_dims=keep)
        outs += [fn.reductions.std_dev(x, mean, axes=axes, keep_dims=keep),
                 fn.reductions.variance(x, mean, axes=axes, keep_dims=keep, ddof=0)]
        return outs
    data, got, lay = _run(graph)
    for i, a in enumerate(data):
        for k, n in enumerate(names):
            ref = NP_REDUCE[n](a, axis=axes, keepdims=keep)
            np.testing.assert_allclose(got[k][i], ref, rtol=1e-6, err_msg=n)
            assert got[k][i].shape == np.shape(ref)
        np.testing.assert_allclose(got[-2][i], np.std(a, axis=axes, keepdims=keep), rtol=1e-5)
        np.testing.assert_allclose(got[-1][i], np.var(a, axis=axes, keepdims=keep), rtol=1e-5)
    types_ = {n: got[k][0].dtype for k, n in enumerate(names)}
    assert types_ == {"max": np.int16, "min": np.int16, "sum": np.int64, "mean": np.float32,
                      "mean_square": np.float32, "rms": np.float32}
    if keep:
        assert set(lay) == {"ABC"}
    elif axes is None:
        assert set(lay) == {""}


def test_reduction_errors_name_the_argument():
    with pytest.raises(Exception, match="axes.*Axis index out of range"):
        _run(lambda x: [fn.reductions.sum(x, axes=5)])
    with pytest.raises(Exception, match="axis_names"):
        _run(lambda x: [fn.reductions.max(x, axis_names="Q")])


def test_argument_errors():
    for graph, what in [(lambda x: [fn.transpose(x, perm=[0, 0, 1])], "perm"),
                        (lambda x: [fn.lookup_table(x, keys=[1, 2], values=[1])], "values"),
                        (lambda x: [fn.one_hot(x, num_classes=-1)], "num_classes"),
                        (lambda x: [fn.get_property(x, key="colour")], "key"),
                        (lambda x: [fn.reinterpret(fn.transpose(x, perm=[0, 2, 1]), dtype=types.INT32)], "dtype")]:
        with pytest.raises(Exception, match=what):
            _run(graph)
    with pytest.raises(Exception, match="integers"):
        _run(lambda x: [fn.lookup_table(fn.cast(x, dtype=types.FLOAT), keys=[1], values=[1])])


def test_empty_samples():
    data = [np.zeros((0, 3), np.int16) for _ in range(BATCH)]
    _, got, _ = _run(lambda x: [fn.transpose(x, perm=[1, 0]), fn.one_hot(x, num_classes=2, axis=0),
                                fn.reductions.sum(x, axes=0), fn.copy(x)], data=data, layout="AB")
    assert got[0][0].shape == (3, 0) and got[1][0].shape == (2, 0, 3) and got[3][0].shape == (0, 3)
    np.testing.assert_array_equal(got[2][0], np.zeros(3))


def test_batch_permutation_and_beta():
    pipe = godali.Pipeline(batch_size=8, num_threads=2, seed=9)
    with pipe:
        pipe.set_outputs(fn.batch_permutation(), fn.batch_permutation(no_fixed_points=True),
                         fn.random.beta(alpha=2.0, beta=5.0, shape=[2000]))
    for _ in range(3):
        p, d, b = pipe.run()
        p = [int(np.array(p[i])) for i in range(8)]
        d = [int(np.array(d[i])) for i in range(8)]
        assert sorted(p) == list(range(8)) and sorted(d) == list(range(8))
        assert all(v != i for i, v in enumerate(d))
        x = np.concatenate([np.array(b[i]) for i in range(8)])
        assert x.dtype == np.float32 and x.min() >= 0 and x.max() <= 1
        # Beta(2, 5): mean 2/7, variance 10/392; 16000 draws: 5 standard errors.
        assert abs(x.mean() - 2 / 7) < 5 * np.sqrt(10 / 392 / x.size)
    pipe.close()


def test_class_and_legacy_names():
    assert ops.Transpose.schema.name == "transpose"
    assert ops.reductions.StdDev.schema.name == "reductions.std_dev"
    assert ops.OneHot.schema.name == "one_hot" and ops.LookupTable.schema.name == "lookup_table"
    assert ops.random.Beta.schema.name == "random.beta"
    assert fn.caffe_reader.schema.name == "readers.caffe"
    assert fn.mxnet_reader.schema.name == "readers.mxnet"
    assert ops.MXNetReader.schema.name == "readers.mxnet"
    assert ops.readers.MXNet.schema.name == "readers.mxnet"


def test_constant_of_a_torch_tensor_keeps_its_type():
    # types.Constant(torch tensor) reads it as numpy would: uint8 and float16 stay, and
    # 64-bit integers narrow to INT32 as for a numpy array.
    torch = need("torch")
    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(types.Constant(torch.tensor([1, 2], dtype=torch.uint8)),
                         types.Constant(torch.tensor([1.5, -2.0], dtype=torch.float16)),
                         types.Constant(torch.tensor([[3, 4]])))
    a, b, c = pipe.run()
    pipe.close()
    assert np.array(a[0]).dtype == np.uint8 and np.array(a[1]).tolist() == [1, 2]
    assert np.array(b[0]).dtype == np.float16 and np.array(b[0]).tolist() == [1.5, -2.0]
    assert np.array(c[0]).dtype == np.int32 and np.array(c[0]).tolist() == [[3, 4]]


@pytest.mark.parametrize("data, layout, emap, msg", [
    ([np.zeros((4,), np.uint8)], "F", [1], "Input must have at least two dimensions - outermost for sequence"),
    ([np.zeros((6, 1), np.uint8)], "XF", [1], "Input layout must describe a sequence - it must start with 'F', got 'XF' instead."),
    ([np.zeros((6, 1), np.uint8)], "FX", [10], "Index `10` from `element_map` is out of bounds for sample with sequence length equal `6`"),
    ([np.zeros((6, 1), np.uint8)], "FX", [-5], "Negative indices in `element_map` are not allowed, found: -5"),
])
def test_element_extract_errors_use_dalis_wording(data, layout, emap, msg):
    # DALI's tests match these messages
    with pytest.raises(RuntimeError) as e:
        _run(lambda x: [fn.element_extract(x, element_map=emap)], data=data, layout=layout, batch=1)
    assert msg in str(e.value)


def test_batch_permutation_with_its_own_seed_ignores_the_pipeline_seed():
    # DALI: an operator given `seed` draws the same values in any pipeline.
    got = []
    for pipeline_seed in (1, 2):
        pipe = godali.Pipeline(batch_size=6, num_threads=2, seed=pipeline_seed, device_id=None)
        with pipe:
            pipe.set_outputs(fn.batch_permutation(seed=5))
        (p,) = pipe.run()
        pipe.close()
        got.append([int(np.array(p[i])) for i in range(6)])
    assert got[0] == got[1] and sorted(got[0]) == list(range(6))
