"""fn.external_source and Pipeline.feed_input, after DALI's documented examples."""

import gc
import os

import numpy as np
import pytest

import godali
from godali import _lib, fn, types
from godali import external_source as es
from godali.pipeline import Pipeline, pipeline_def
from conftest import need

BS = 4


def run_all(pipe, limit=100):
    """Runs until StopIteration; returns the first output of every batch as arrays."""
    out = []
    for _ in range(limit):
        try:
            tl = pipe.run()[0]
        except StopIteration:
            return out
        out.append([np.array(tl[i]) for i in range(len(tl))])
    raise AssertionError("no StopIteration after %d runs" % limit)


def test_callable_per_batch_doc_example():
    # DALI's basic example: a callable returning a list of arrays per batch.
    rng = np.random.default_rng(1)
    batches = [[rng.integers(0, 255, (3 + i, 5, 3), dtype=np.uint8) for i in range(BS)]
               for _ in range(3)]
    calls = []

    def source():
        calls.append(1)
        return batches[len(calls) - 1]

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=source, layout="HWC"))
    for k in range(3):
        (tl,) = pipe.run()
        assert tl.layout() == "HWC"
        for i in range(BS):
            np.testing.assert_array_equal(np.array(tl[i]), batches[k][i])


def test_dense_batch_and_batch_info():
    seen = []

    def source(info):
        seen.append((info.iteration, info.epoch_idx))
        if info.iteration >= 3:
            raise StopIteration
        return np.full((BS, 2), 10 * info.epoch_idx + info.iteration, dtype=np.int64)

    @pipeline_def(batch_size=BS, num_threads=1, device_id=None, prefetch_queue_depth=2)
    def pipe_fn():
        return fn.external_source(source=source, batch_info=True)

    pipe = pipe_fn()
    first = run_all(pipe)
    assert [b[0][0] for b in first] == [0, 1, 2]
    assert all(b[i].dtype == np.int64 and b[i].shape == (2,) for b in first for i in range(BS))
    pipe.reset()
    second = run_all(pipe)
    assert [b[0][0] for b in second] == [10, 11, 12]
    assert (0, 1) in seen and (3, 0) in seen


def test_reset_before_the_end_does_nothing():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda i: [np.array([i], np.int32)]))
    assert pipe.run()[0].as_array().ravel().tolist() == [0]
    pipe.reset()  # DALI: a no-op before a source ended the epoch
    assert pipe.run()[0].as_array().ravel().tolist() == [1]


def test_per_sample_sample_info():
    # DALI's per-sample mode: the callback gets SampleInfo and raises StopIteration at the
    # end of the epoch.
    n = 10
    infos = []

    def source(si):
        if si.idx_in_epoch >= n:
            raise StopIteration
        infos.append(si)
        return np.array([si.idx_in_epoch, si.idx_in_batch, si.iteration, si.epoch_idx],
                        dtype=np.int32)

    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=source, batch=False))
    for epoch in range(2):
        got = run_all(pipe)
        # 10 samples in batches of 3: 3 whole batches, the partial 4th is dropped.
        assert len(got) == 3
        for it, b in enumerate(got):
            for i, s in enumerate(b):
                assert s.tolist() == [it * 3 + i, i, it, epoch]
        pipe.reset()


def batches_of(values):
    return [[np.array([v, j], dtype=np.int32) for j in range(2)] for v in values]


def firsts(got):
    return [int(b[0][0]) for b in got]


def test_iterable_no_cycle():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=batches_of([1, 2, 3])))
    assert firsts(run_all(pipe)) == [1, 2, 3]
    pipe.reset()
    # cycle=False: the same iterator goes on after reset, and a list's is exhausted.
    assert firsts(run_all(pipe)) == []


def test_iterable_cycle_quiet():
    for cycle in (True, "quiet"):
        pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            pipe.set_outputs(fn.external_source(source=batches_of([1, 2, 3]), cycle=cycle))
        got = [int(pipe.run()[0].as_array()[0, 0]) for _ in range(7)]
        assert got == [1, 2, 3, 1, 2, 3, 1]


def test_iterable_cycle_raise():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.external_source(source=batches_of([1, 2, 3]), cycle="raise"))
    for _ in range(3):
        assert firsts(run_all(pipe)) == [1, 2, 3]
        pipe.reset()


def test_generator_function_and_generator_object():
    def gen():
        for v in (5, 6):
            yield batches_of([v])[0]

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=gen, cycle="raise"))
    for _ in range(2):
        assert firsts(run_all(pipe)) == [5, 6]
        pipe.reset()
    with pytest.raises(TypeError, match="generator"):
        with Pipeline(batch_size=2, num_threads=1, device_id=None):
            fn.external_source(source=gen(), cycle=True)
    with pytest.raises(ValueError, match="cycle"):
        with Pipeline(batch_size=2, num_threads=1, device_id=None):
            fn.external_source(source=lambda: None, cycle=True)


def test_num_outputs():
    def source(info):
        if info.iteration >= 2:
            raise StopIteration
        imgs = [np.full((2, 2, 3), info.iteration, np.uint8) for _ in range(BS)]
        labels = np.arange(BS, dtype=np.int32).reshape(BS, 1) + 100 * info.iteration
        return imgs, labels

    @pipeline_def(batch_size=BS, num_threads=2, device_id=None)
    def pipe_fn():
        images, labels = fn.external_source(source=source, num_outputs=2, batch_info=True,
                                            layout=["HWC", ""], dtype=[types.UINT8, types.INT32])
        return images, labels

    pipe = pipe_fn()
    for it in range(2):
        images, labels = pipe.run()
        assert images.as_array().shape == (BS, 2, 2, 3)
        assert (images.as_array() == it).all()
        assert labels.as_array().ravel().tolist() == [100 * it + i for i in range(BS)]
    with pytest.raises(StopIteration):
        pipe.run()


def test_feed_input():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x", dtype=types.FLOAT, ndim=1))
    pipe.build()
    with pytest.raises(_lib.GodaliError, match="feed"):
        pipe.run()  # nothing fed: an error, never a hang
    for k in range(3):
        pipe.feed_input("x", [np.arange(k + 1, dtype=np.float32), np.ones(2, np.float32)])
    for k in range(3):
        tl = pipe.run()[0]
        np.testing.assert_array_equal(np.array(tl[0]), np.arange(k + 1))
    with pytest.raises(ValueError, match="no external source named 'y'"):
        pipe.feed_input("y", [np.zeros(1, np.float32)] * 2)
    # A declared type the data does not have is refused when fed.
    with pytest.raises(_lib.InvalidArgumentError, match="INT32.*FLOAT|FLOAT.*INT32"):
        pipe.feed_input("x", [np.zeros(1, np.int32)] * 2)


def test_feed_input_infers_type_and_copies():
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x"))
    pipe.build()  # deferred: the type comes with the first feed
    a = np.array([[1, 2], [3, 4]], dtype=np.int64)
    pipe.feed_input("x", a)
    a[:] = 0  # feed_input copied (DALI's default no_copy=False)
    out = pipe.run()[0].as_array()
    assert out.dtype == np.int64 and out.tolist() == [[1, 2], [3, 4]]


def test_feed_input_layout_types_an_undeclared_source():
    # DALI takes an external source's layout from the data fed; a source fed before the
    # build (iter_setup) gets the layout of its first feed_input, which operators that
    # look axes up by name then see.
    class P(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.src = godali.ops.ExternalSource()

        def define_graph(self):
            self.x = self.src()
            return self.x, fn.erase(self.x, anchor=[1], shape=[2], axis_names="W")

        def iter_setup(self):
            self.feed_input(self.x, [np.ones((3, 4, 2), np.float32)] * 2, layout="HWC")

    x, e = P().run()
    assert x.layout() == "HWC" and e.layout() == "HWC"
    ref = np.ones((3, 4, 2), np.float32)
    ref[:, 1:3] = 0
    np.testing.assert_array_equal(np.array(e[0]), ref)


def test_repeat_last():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x", dtype=types.INT32, ndim=1,
                                            repeat_last=True))
    pipe.build()
    pipe.feed_input("x", [np.array([7], np.int32)])
    assert [int(pipe.run()[0].as_array()[0, 0]) for _ in range(3)] == [7, 7, 7]
    pipe.feed_input("x", [np.array([8], np.int32)])
    assert int(pipe.run()[0].as_array()[0, 0]) == 8


def test_torch_zero_copy():
    torch = need("torch")
    tensors = [torch.arange(6, dtype=torch.float32).reshape(2, 3) + 10 * i for i in range(3)]
    ptrs = [t.data_ptr() for t in tensors]

    def source(info):
        if info.iteration >= 3:
            raise StopIteration
        return tensors[info.iteration]  # a dense [batch, 3] tensor

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=source, batch_info=True, no_copy=True))
    (tl,) = pipe.run()
    np.testing.assert_array_equal(tl.as_array(), tensors[0].numpy())
    # The library reads the tensor's own memory (no copy) and holds it while in use.
    assert ptrs[0] in es.held_pointers()
    pipe.run()
    pipe.run()
    # Released with their batches: the first two are no longer referenced.
    assert ptrs[0] not in es.held_pointers() and ptrs[1] not in es.held_pointers()
    with pytest.raises(StopIteration):
        pipe.run()
    pipe.close()
    assert not set(ptrs) & set(es.held_pointers())


def test_dlpack_and_array_interface_inputs():
    class AI:
        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x", dtype=types.UINT8, ndim=1))
    pipe.build()
    a = np.arange(4, dtype=np.uint8)
    pipe.feed_input("x", [AI(a[:2]), np.from_dlpack(a[2:])], no_copy=True)
    assert pipe.run()[0].as_array().tolist() == [[0, 1], [2, 3]]


def test_decode_resize_equals_reader(image_folder):
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(image_folder) for f in fs)
    files = files[:8]

    @pipeline_def(batch_size=BS, num_threads=2, device_id=None, seed=3)
    def from_reader():
        jpegs, _ = fn.readers.file(files=files)
        return fn.resize(fn.decoders.image(jpegs), resize_x=40, resize_y=30)

    def source(info):
        if info.iteration * BS >= len(files):
            raise StopIteration
        return [np.fromfile(f, dtype=np.uint8) for f in files[info.iteration * BS:
                                                                 (info.iteration + 1) * BS]]

    @pipeline_def(batch_size=BS, num_threads=2, device_id=None, seed=3)
    def from_source():
        jpegs = fn.external_source(source=source, batch_info=True)
        return fn.resize(fn.decoders.image(jpegs), resize_x=40, resize_y=30)

    def paths_source(i):
        if i * BS >= len(files):
            raise StopIteration
        return files[i * BS:(i + 1) * BS]  # str samples: the paths' bytes

    @pipeline_def(batch_size=BS, num_threads=2, device_id=None, seed=3)
    def from_paths():
        paths = fn.external_source(source=paths_source)
        return fn.resize(fn.decoders.image(fn.io.file.read(paths)), resize_x=40, resize_y=30)

    ref = from_reader()
    a, b = from_source(), from_paths()
    for _ in range(len(files) // BS):
        want = ref.run()[0].as_array()
        np.testing.assert_array_equal(a.run()[0].as_array(), want)
        np.testing.assert_array_equal(b.run()[0].as_array(), want)
    for p in (a, b):
        with pytest.raises(StopIteration):
            p.run()


def test_file_read_errors_name_the_file(tmp_path):
    missing = str(tmp_path / "missing.jpg")
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.io.file.read(fn.external_source(name="p", dtype=types.UINT8,
                                                            ndim=1)))
    pipe.build()
    pipe.feed_input("p", [missing])
    with pytest.raises(_lib.DataError, match="missing.jpg"):
        pipe.run()
    pipe.feed_input("p", [str(tmp_path)])
    with pytest.raises(_lib.DataError, match="not a regular file"):
        pipe.run()


def test_generic_iterator_epochs():
    torch = need("torch")
    from godali.plugin.pytorch import GodaliGenericIterator

    def source(info):
        if info.iteration >= 3:
            raise StopIteration
        return [np.full((2,), 10 * info.epoch_idx + info.iteration, np.int32)] * 2

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=source, batch_info=True))
    it = GodaliGenericIterator([pipe], ["x"], auto_reset=True)
    for epoch in range(2):
        batches = list(it)
        assert [int(b[0]["x"][0, 0]) for b in batches] == [10 * epoch + k for k in range(3)]
        assert all(isinstance(b[0]["x"], torch.Tensor) for b in batches)


def test_generic_iterator_size():
    need("torch")
    from godali.plugin.pytorch import GodaliGenericIterator

    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda i: [np.array([i], np.int64)] * 2))
    with pytest.warns(Warning):
        it = GodaliGenericIterator([pipe], ["x"], size=6, auto_reset=True)
    assert [int(b[0]["x"][0, 0]) for b in it] == [0, 1, 2]
    assert [int(b[0]["x"][0, 0]) for b in it] == [3, 4, 5]


def test_release_on_close_and_gc():
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.external_source(name="x", dtype=types.UINT8, ndim=1))
    pipe.build()
    a = np.arange(3, dtype=np.uint8)
    pipe.feed_input("x", [a], no_copy=True)
    pipe.feed_input("x", [a], no_copy=True)
    assert a.ctypes.data in es.held_pointers()
    pipe.close()
    gc.collect()
    assert a.ctypes.data not in es.held_pointers()


def test_ops_external_source_legacy_api():
    from godali import ops

    class P(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.src = ops.ExternalSource(dtype=types.INT32, ndim=1)

        def define_graph(self):
            self.x = self.src(name="x")
            return self.x

        def iter_setup(self):
            self.feed_input(self.x, [np.array([1, 2], np.int32), np.array([3], np.int32)])

    pipe = P()
    pipe.build()
    (tl,) = pipe.run()
    assert [np.array(tl[i]).tolist() for i in range(2)] == [[1, 2], [3]]


def test_source_returning_tensors_keeps_their_layout():
    # DALI 2.4 gives 'HWC', 'HWC' and '' for these three sources (run side by side).
    from godali.backend import TensorCPU, TensorListCPU
    sources = [lambda: [TensorCPU(np.zeros((2, 3, 1), np.uint8), "HWC")] * 2,
               lambda: TensorListCPU(np.zeros((2, 2, 3, 1), np.uint8), "HWC"),
               lambda: [np.zeros((2, 3, 1), np.uint8)] * 2]
    for src, want in zip(sources, ["HWC", "HWC", ""]):
        @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            return fn.external_source(source=src)

        p = pipe()
        p.build()
        assert p.run()[0].layout() == want
