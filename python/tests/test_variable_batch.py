"""Variable batch size (DALI's max_batch_size): batch_size is the pipeline's maximum, and
an iteration has as many samples as its external sources give it. Compared with numpy."""

import numpy as np
import pytest

from godali import fn, types
from godali.pipeline import Pipeline, pipeline_def
from conftest import need

MAX = 8
SIZES = [MAX // 2, 1, MAX, 3, MAX // 4, MAX]


def image_batches(seed=0, sizes=SIZES):
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, 255, (int(rng.integers(6, 12)), int(rng.integers(5, 9)), 3),
                          dtype=np.uint8) for _ in range(n)] for n in sizes]


def as_arrays(tl):
    return [np.array(tl[i]) for i in range(len(tl))]


def test_max_batch_size_property():
    pipe = Pipeline(batch_size=MAX, num_threads=1, device_id=None)
    assert pipe.max_batch_size == MAX
    assert pipe.batch_size == MAX
    # DALI's name for a CPU-only pipeline's device_id.
    cpu = Pipeline(batch_size=2, num_threads=1, device_id=types.CPU_ONLY_DEVICE_ID)
    assert cpu.device_id is None


def test_operators_follow_the_fed_batch_size():
    batches = image_batches()
    pipe = Pipeline(batch_size=MAX, num_threads=2, device_id=None, seed=3)
    with pipe:
        img = fn.external_source(source=batches, cycle=False, layout="HWC")
        flipped = fn.flip(img, horizontal=True)
        as_float = fn.cast(img, dtype=types.FLOAT)
        arith = img * 2 + 1
        chw = fn.crop_mirror_normalize(img, output_layout="CHW", dtype=types.UINT8)
        shapes = fn.shapes(img)
        rnd = fn.random.uniform(range=[0, 1])
        pipe.set_outputs(img, flipped, as_float, arith, chw, shapes, rnd)
    for k, batch in enumerate(batches):
        outs = pipe.run()
        n = len(batch)
        assert [len(o) for o in outs] == [n] * len(outs), "iteration %d" % k
        assert pipe.batch_info.batch_size == n
        for i, x in enumerate(batch):
            np.testing.assert_array_equal(as_arrays(outs[0])[i], x)
            np.testing.assert_array_equal(as_arrays(outs[1])[i], x[:, ::-1])
            np.testing.assert_array_equal(as_arrays(outs[2])[i], x.astype(np.float32))
            np.testing.assert_array_equal(as_arrays(outs[3])[i],
                                          (x.astype(np.int64) * 2 + 1).astype(
                                              as_arrays(outs[3])[i].dtype))
            np.testing.assert_array_equal(as_arrays(outs[4])[i], np.transpose(x, (2, 0, 1)))
            np.testing.assert_array_equal(as_arrays(outs[5])[i], np.array(x.shape))
        r = np.array(outs[6].as_array())
        assert r.shape == (n,) and np.all((r >= 0) & (r < 1))
    with pytest.raises(StopIteration):
        pipe.run()


def test_random_streams_do_not_depend_on_earlier_batch_sizes():
    # Sample i of iteration k draws the same numbers whatever the sizes before it.
    def draws(sizes):
        data = [np.zeros((n, 2), dtype=np.float32) for n in sizes]
        pipe = Pipeline(batch_size=MAX, num_threads=2, device_id=None, seed=11)
        with pipe:
            x = fn.external_source(source=data, cycle=False)
            pipe.set_outputs(x + fn.random.uniform(range=[0, 1]))
        return [np.array(pipe.run()[0].as_array()) for _ in sizes]

    a = draws([MAX, MAX])
    b = draws([2, 5])
    np.testing.assert_array_equal(a[1][:5], b[1])
    np.testing.assert_array_equal(a[0][:2], b[0])


def test_python_function_sees_the_batch():
    # A whole-batch operator gets the iteration's samples, and as many outputs come out.
    seen = []

    def per_batch(xs):
        seen.append(len(xs))
        return [np.sin(x.astype(np.float64)) for x in xs]

    batches = image_batches(1)
    pipe = Pipeline(batch_size=MAX, num_threads=2, device_id=None, exec_async=False,
                    exec_pipelined=False)
    with pipe:
        img = fn.external_source(source=batches, cycle=False)
        pipe.set_outputs(fn.python_function(img, function=per_batch, batch_processing=True))
    for batch in batches:
        (out,) = pipe.run()
        assert len(out) == len(batch)
        for i, x in enumerate(batch):
            np.testing.assert_allclose(as_arrays(out)[i], np.sin(x.astype(np.float64)),
                                       rtol=1e-12)
    # Batches in flight may call it in any order (godali runs ahead of the consumer).
    assert sorted(seen) == sorted(len(b) for b in batches)


def test_feed_input_dense_and_sample_mode_source():
    pipe = Pipeline(batch_size=MAX, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.INT32, ndim=1)
        pipe.set_outputs(x * 3)
    pipe.build()
    for n in (5, 1, MAX):
        data = np.arange(n * 4, dtype=np.int32).reshape(n, 4)
        pipe.feed_input("x", data)
        (out,) = pipe.run()
        np.testing.assert_array_equal(np.array(out.as_array()), data * 3)


def test_too_large_and_empty_batches_are_refused():
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="src", dtype=types.UINT8, ndim=1))
    pipe.build()
    with pytest.raises(ValueError, match=r"'src'.*5 samples, more than the pipeline's "
                                         r"max_batch_size \(batch_size\) 4"):
        pipe.feed_input("src", np.zeros((5, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="empty batch"):
        pipe.feed_input("src", [])


def test_sources_of_one_iteration_must_agree():
    a = [np.zeros((2, 1), np.float32), np.zeros((3, 1), np.float32)]
    b = [np.zeros((2, 1), np.float32), np.zeros((1, 1), np.float32)]
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=a, name="a", cycle=False) +
                         fn.external_source(source=b, name="b", cycle=False))
    (out,) = pipe.run()
    assert len(out) == 2
    with pytest.raises(Exception, match=r'"a" 3 samples, "b" 1'):
        pipe.run()


def test_num_outputs_source_sizes_must_agree():
    def src():
        return [np.zeros(2, np.int32)] * 2, [np.zeros(2, np.int32)] * 3

    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None)
    with pipe:
        a, b = fn.external_source(source=src, num_outputs=2)
        pipe.set_outputs(a, b)
    with pytest.raises(ValueError, match=r"batches of different sizes \[2, 3\]"):
        pipe.run()


def test_pytorch_iterator_with_variable_batches():
    torch = need("torch")
    from godali.plugin.pytorch import GodaliGenericIterator

    sizes = [5, 2, MAX, 1]
    data = [np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 100 * k
            for k, n in enumerate(sizes)]

    @pipeline_def(batch_size=MAX, num_threads=1, device_id=None)
    def pipe_fn():
        x = fn.external_source(source=data, cycle=False)
        return x, x * 2

    it = GodaliGenericIterator([pipe_fn()], ["x", "y"])
    got = [b[0] for b in it]
    assert [tuple(g["x"].shape) for g in got] == [(n, 3) for n in sizes]
    for g, d in zip(got, data):
        assert isinstance(g["x"], torch.Tensor)
        np.testing.assert_array_equal(g["x"].numpy(), d)
        np.testing.assert_array_equal(g["y"].numpy(), d * 2)


def test_pytorch_iterator_size_counts_the_actual_samples():
    need("torch")
    from godali.plugin.base_iterator import LastBatchPolicy
    from godali.plugin.pytorch import GodaliGenericIterator

    sizes = [3, 2, 4, 1]
    data = [np.full((n, 1), k, dtype=np.int32) for k, n in enumerate(sizes)]

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe_fn():
        return fn.external_source(source=data, cycle=True)

    # size=8 samples: 3 + 2 + 4 reaches it, so an epoch is three batches.
    it = GodaliGenericIterator([pipe_fn()], ["x"], size=8, last_batch_policy=LastBatchPolicy.PARTIAL)
    got = [b[0]["x"].shape[0] for b in it]
    assert got == [3, 2, 3]


def test_set_outputs_constant_list_is_one_output():
    # DALI's roi_random_crop test returns a constant roi_start list among its outputs:
    # a list of numbers is one constant output of that shape, per sample of the batch.
    data = [np.zeros((n, 1), np.float32) for n in (3, 1)]
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=data, cycle=False)
        # An empty array is an empty constant (DALI's tests output np.int32([])).
        pipe.set_outputs(x, [35, 36], np.int32([]))  # [x + 1]: DALI's TypeError (test_dali_testfile_parity)
    for n in (3, 1):
        outs = pipe.run()
        assert len(outs) == 3
        assert len(outs[1]) == n and len(outs[2]) == n
        for i in range(n):
            np.testing.assert_array_equal(np.array(outs[1][i]), [35, 36])
            e = np.array(outs[2][i])
            assert e.shape == (0,) and e.dtype == np.int32


def test_per_sample_source_follows_the_batch_source_size():
    # DALI: a batch=False source is polled once per sample of the iteration, whose size
    # the batch-mode source decides.
    sizes = [3, 1, 4, 2]
    data = [np.arange(n, dtype=np.int32).reshape(n, 1) for n in sizes]
    calls = []

    def per_sample(info):
        calls.append((info.iteration, info.idx_in_batch))
        return np.float32([info.idx_in_batch])

    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None)
    with pipe:
        per = fn.external_source(per_sample, batch=False)  # declared first on purpose
        x = fn.external_source(source=data, cycle=False)
        pipe.set_outputs(x, per)
    for k, n in enumerate(sizes):
        a, b = pipe.run()
        assert len(a) == n and len(b) == n
        np.testing.assert_array_equal(np.array(b.as_array()).ravel(), np.arange(n))
    assert [c for c in calls if c[0] < len(sizes)] == \
        [(k, i) for k, n in enumerate(sizes) for i in range(n)]


def test_input_set_of_a_one_output_source_and_varying_batches():
    # DALI: external_source(num_outputs=1) gives a 1-tuple; an operator given a list of
    # DataNodes as an input runs once per element (an input set) and returns a list.
    batches = image_batches(seed=5)
    pipe = Pipeline(batch_size=MAX, num_threads=1, device_id=None)
    with pipe:
        (img,) = src = fn.external_source(source=[(b,) for b in batches], num_outputs=1,
                                          cycle=False)
        assert isinstance(src, tuple) and len(src) == 1
        other = img + 1
        outs = fn.cast([img, other], dtype=types.INT32)
        assert isinstance(outs, list) and len(outs) == 2
        pipe.set_outputs(*outs)
    for b in batches:
        a, c = pipe.run()
        assert len(a) == len(b) and len(c) == len(b)
        for s, x, y in zip(b, as_arrays(a), as_arrays(c)):
            np.testing.assert_array_equal(x, s.astype(np.int32))
            np.testing.assert_array_equal(y, (s + np.uint8(1)).astype(np.int32))


def test_input_sets_must_have_equal_lengths():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=[[np.zeros(3, np.uint8)] * 2])
        with pytest.raises(ValueError, match="same length, got lengths 2, 1"):
            fn.cat([a, a], [a])


def test_int_argument_takes_integral_floats():
    # DALI's variable-batch test calls reshape(shape=(160 / 2, 80 * 2, 3)).
    batches = [[np.arange(24, dtype=np.uint8).reshape(4, 6)] * n for n in (2, 1, 3)]
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=batches, cycle=False)
        pipe.set_outputs(fn.reshape(x, shape=(8 / 2, 3.0, np.float32(2))))
    for b in batches:
        (out,) = pipe.run()
        assert len(out) == len(b)
        for s, y in zip(b, as_arrays(out)):
            np.testing.assert_array_equal(y, s.reshape(4, 3, 2))
    with pytest.raises(TypeError, match="expected an int, got float 2.5"):
        fn.reshape(x, shape=(2.5, 2))
