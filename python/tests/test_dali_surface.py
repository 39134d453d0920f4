"""DALI usage patterns that must work with only the import changed (issue 18's Python
surface, issue 16's external_source items), each checked against numpy."""

import numpy as np
import pytest

import godali
from godali import Pipeline, fn, ops, pipeline_def, types


def _arrays(tl):
    return [np.array(tl.at(i)) for i in range(len(tl))]


def test_external_source_outside_with_pipe():
    data = [[np.full((2, 3), 10 * i + s, np.float32) for s in range(2)] for i in range(3)]
    it = iter(data)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    src = fn.external_source(lambda: next(it))  # no `with pipe:`, as DALI allows
    pipe.set_outputs(src * 2)
    for i in range(3):
        out, = pipe.run()
        for got, want in zip(_arrays(out), data[i]):
            np.testing.assert_array_equal(got, want * 2)


def test_iter_setup_feeds_untyped_sources():
    rng = np.random.default_rng(1)
    batches = [([rng.random((2, i + 1)) for _ in range(3)],
                [rng.integers(0, 9, (4,), dtype=np.int16) for _ in range(3)]) for i in range(3)]

    class Feeding(Pipeline):
        def __init__(self):
            super().__init__(batch_size=3, num_threads=1, device_id=0)
            self.a = ops.ExternalSource()
            self.b = ops.ExternalSource()
            self.it = iter(batches)

        def define_graph(self):
            self.x = self.a(name="x")
            self.y = self.b()
            return self.x, self.y

        def iter_setup(self):
            x, y = next(self.it)
            self.feed_input("x", x)
            self.feed_input(self.y, y)

    pipe = Feeding()
    for x, y in batches:
        ox, oy = pipe.run()
        for got, want in zip(_arrays(ox) + _arrays(oy), x + y):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    with pytest.raises(StopIteration):
        pipe.run()


def test_feed_input_to_unused_source_is_key_error():
    class Missing(Pipeline):
        def define_graph(self):
            self.used = fn.external_source()
            self.unused = fn.external_source()
            return self.used

        def iter_setup(self):
            self.feed_input(self.used, np.zeros((2, 3)))
            self.feed_input(self.unused, np.zeros((2, 3)))

    with pytest.raises(KeyError, match="Could not find an input operator"):
        Missing(batch_size=2, num_threads=1, device_id=None).run()


def test_ops_external_source_positional_source_and_outputs():
    batches = [(np.arange(6, dtype=np.int32).reshape(2, 3) + i,
                np.full((2, 1), i, np.uint8)) for i in range(2)]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    a, b = ops.ExternalSource(batches, 2)()
    pipe.set_outputs(a, b)
    for x, y in batches:
        oa, ob = pipe.run()
        np.testing.assert_array_equal(np.stack(_arrays(oa)), x)
        np.testing.assert_array_equal(np.stack(_arrays(ob)), y)


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.uint32, np.uint64, np.int8,
                                   np.float16, np.bool_])
def test_external_source_every_dtype(dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        vals = np.array([[info.min, info.max, 1], [0, info.max - 1, 2]], dtype=dtype)
    else:
        vals = np.array([[0, 1, 1], [1, 0, 1]]).astype(dtype)
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(lambda: vals, dtype=vals.dtype))
    out, = pipe.run()
    got = np.stack(_arrays(out))
    assert got.dtype == vals.dtype
    np.testing.assert_array_equal(got, vals)


def test_callback_refilling_one_buffer_is_copied():
    # A common DALI pattern: the callback refills one buffer. DALI copies by default.
    buf = np.zeros((3, 1), np.int32)
    counter = iter(range(100))

    def refill():
        for s in range(3):
            buf[s] = next(counter)
        return buf

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.external_source(refill))
    got = np.concatenate([np.stack(_arrays(pipe.run()[0])).ravel() for _ in range(2)])
    np.testing.assert_array_equal(got, np.arange(6))


@pytest.mark.parametrize("bad,word", [(None, "None"), ({"a": 1}, "dict"), (5, "scalar")])
def test_bad_batch_says_what_was_returned(bad, word):
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(lambda: bad, dtype=types.INT32, ndim=1))
    with pytest.raises(TypeError, match=word):
        pipe.run()


def test_source_error_raised_by_its_own_run():
    def source(info):
        if info.iteration == 2:
            raise ValueError("bad batch 2")
        return [np.array([info.iteration], np.int32)] * 2

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.external_source(source, batch_info=True))
    for i in range(2):  # batches polled before the failing one are returned first
        out, = pipe.run()
        assert [int(a[0]) for a in _arrays(out)] == [i, i]
    with pytest.raises(ValueError, match="bad batch 2"):
        pipe.run()


def test_pipeline_def_parameter_shadows_pipeline_argument():
    @pipeline_def(batch_size=2, device_id=None)
    def pipe_fn(num_threads):
        return types.Constant(np.int32(num_threads)) + fn.random.coin_flip(probability=0.0)

    pipe = pipe_fn(num_threads=7)
    assert pipe.num_threads == -1  # not given to the Pipeline, as DALI
    out, = pipe.run()
    assert [int(a) for a in _arrays(out)] == [7, 7]
    assert pipe_fn._is_pipeline_def

    @pipeline_def
    def with_kwargs(a, **kw):
        return fn.random.coin_flip()
    with pytest.raises(TypeError, match=r"\*\*kwargs.*not allowed"):
        with_kwargs(a=1, batch_size=1)


def test_constants_as_positional_inputs():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.reshape(np.arange(6, dtype=np.int16), shape=[2, 3]))
    out, = pipe.run()
    for got in _arrays(out):
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, np.arange(6, dtype=np.int16).reshape(2, 3))


def test_node_made_outside_feeds_two_pipelines():
    seven = fn.random.uniform(range=[7, 7.0000001])  # made outside any pipeline
    outs = []
    for _ in range(2):
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            pipe.set_outputs(fn.cast(seven, dtype=types.INT32))
        outs.append([int(a) for a in _arrays(pipe.run()[0])])
    assert outs == [[7, 7], [7, 7]]


def test_and_or_not_under_conditionals():
    vals = np.array([0, 1, 2, 3, 4, 5], np.int32)

    @pipeline_def(batch_size=6, num_threads=1, device_id=None, enable_conditionals=True)
    def logic():
        # scalar samples: DALI refuses 1-d operands of and/or/not (and so does godali)
        x = fn.external_source(lambda: [v for v in vals], batch=True)
        both = (x > 1) and (x < 4)
        either = (x < 1) or not (x < 5)
        if x > 2 and not x > 4:
            y = x * 10
        else:
            y = x
        return both, either, y

    both, either, y = logic().run()
    np.testing.assert_array_equal(np.stack(_arrays(both)), (vals > 1) & (vals < 4))
    np.testing.assert_array_equal(np.stack(_arrays(either)), (vals < 1) | (vals >= 5))
    np.testing.assert_array_equal(np.stack(_arrays(y)),
                                  np.where((vals > 2) & (vals <= 4), vals * 10, vals))


def test_uniform_range_one_ulp_wide_stays_at_lo():
    lo = np.float32(0.3)
    hi = np.nextafter(lo, np.float32(1))
    pipe = Pipeline(batch_size=64, num_threads=1, device_id=None, seed=5)
    with pipe:
        pipe.set_outputs(fn.random.uniform(range=[float(lo), float(hi)], shape=[16]))
    got = np.concatenate(_arrays(pipe.run()[0]))
    assert got.dtype == np.float32 and (got == lo).all()


def test_module_surface():
    assert fn.crop_mirror_normalize._schema_name == "crop_mirror_normalize"
    assert fn.external_source._schema_name == "external_source"
    assert godali.data_node.DataNode is godali.DataNode
    v = godali.backend.GetNvjpegVersion()
    assert isinstance(v, int) and (v == -1 or v >= 11000)
    from godali.pipeline import do_not_convert

    def f(x):
        return x
    assert do_not_convert(f) is f
    with pytest.raises(FileNotFoundError):
        godali.plugin_manager.load_library("/nonexistent/libplugin.so")


def test_datanode_subscripts_match_numpy():
    data = [np.arange(60, dtype=np.int32).reshape(3, 4, 5) + 100 * i for i in range(2)]
    where = [1, -1]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    x = fn.external_source(lambda: data, layout="HWC")
    idx = fn.external_source(lambda: [np.int64(w) for w in where])
    pipe.set_outputs(x[1:-1, ::2], x[..., 0], x[idx], x[1:, :-1, 1], x[::-1, 2], x[:, 3:0:-2])
    refs = [lambda a, i: a[1:-1, ::2], lambda a, i: a[..., 0], lambda a, i: a[where[i]],
            lambda a, i: a[1:, :-1, 1], lambda a, i: a[::-1, 2], lambda a, i: a[:, 3:0:-2]]
    for out, ref in zip(pipe.run(), refs):
        for i in range(2):
            np.testing.assert_array_equal(np.array(out.at(i)), ref(data[i], i))


def test_datanode_subscript_out_of_range_names_the_index():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    x = fn.external_source(lambda: [np.zeros((2, 3), np.uint8)])
    pipe.set_outputs(x[5])
    with pytest.raises(godali.DataError, match="index 5 is out of range"):
        pipe.run()


def test_reshape_layout_alone_keeps_the_shape():
    data = [np.arange(24, dtype=np.uint8).reshape(2, 3, 4)]
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.reshape(fn.external_source(lambda: data, layout="HWC"),
                                    layout="XYZ"))
    out, = pipe.run()
    np.testing.assert_array_equal(np.array(out.at(0)), data[0])
    assert out.layout() == "XYZ"
