"""Regression tests for the gaps found by running DALI's own PyTorch iterator tests against
godali with only the imports changed (issue 13). Written from DALI's documented behaviour."""

import numpy as np
import pytest

from conftest import need

torch = need("torch")

from godali import fn, types  # noqa: E402
from godali.pipeline import Pipeline, pipeline_def  # noqa: E402
from godali.plugin.base_iterator import LastBatchPolicy  # noqa: E402
from godali.plugin.pytorch import DALIGenericIterator, feed_ndarray  # noqa: E402


class _Counted:
    """An iterator source of `n` batches per epoch (it rewinds itself when it raises
    StopIteration), counting its polls."""

    def __init__(self, n, bs):
        self.n, self.bs, self.polls, self.i = n, bs, 0, 0

    def __iter__(self):
        self.i = 0
        return self

    def __next__(self):
        self.polls += 1
        if self.i >= self.n:
            self.i = 0  # with cycle=False the same iterator goes on after the reset
            raise StopIteration
        self.i += 1
        return [np.full((3,), self.i, dtype=np.uint8) for _ in range(self.bs)]


def _source_pipe(src, bs):
    pipe = Pipeline(batch_size=bs, num_threads=1, device_id=0, prefetch_queue_depth=1)
    with pipe:
        pipe.set_outputs(fn.external_source(source=src))
    return pipe


def test_backend_impl_module_has_tensor_types():
    from godali import backend_impl
    from godali.tensors import TensorCPU
    assert backend_impl.TensorCPU is TensorCPU


def test_tensorcpu_keeps_a_layout_that_does_not_match_ndim():
    from godali.backend_impl import TensorCPU
    arr = np.arange(27, dtype=np.int16).reshape(3, 9)
    t = TensorCPU(arr, "NHWC")
    assert t.layout() == "NHWC"
    out = torch.empty((3, 9), dtype=torch.int16)
    feed_ndarray(t, out)
    np.testing.assert_array_equal(out.numpy(), arr)


def test_feed_ndarray_bool():
    from godali.backend_impl import TensorCPU
    arr = np.array([[True, False, True], [False, False, True]])
    out = torch.empty((2, 3), dtype=torch.bool)
    feed_ndarray(TensorCPU(arr), out)
    np.testing.assert_array_equal(out.numpy(), arr)


def test_feed_ndarray_type_mismatch_is_assertion_error_with_dalis_wording():
    from godali.backend_impl import TensorCPU
    t = TensorCPU(np.ones((2,), dtype=np.float32))
    with pytest.raises(AssertionError, match="element type of DALI Tensor/TensorList doesn't "
                       "match the element type of the target PyTorch Tensor"):
        feed_ndarray(t, torch.empty((2,), dtype=torch.int8))
    with pytest.raises(TypeError):  # still a TypeError for godali's earlier callers
        feed_ndarray(t, torch.empty((2,), dtype=torch.int8))
    with pytest.raises(AssertionError, match="Shapes do not match"):
        feed_ndarray(t, torch.empty((3,), dtype=torch.float32))


def test_pipeline_def_may_return_a_numpy_constant():
    @pipeline_def
    def p():
        return np.array([1.5, 2.5])

    pipe = p(batch_size=2, num_threads=1, device_id=0)
    out = pipe.run()[0]
    np.testing.assert_array_equal(np.asarray(out.as_tensor()), [[1.5, 2.5], [1.5, 2.5]])


def test_wrong_last_batch_policy_type_message():
    pipe = _source_pipe(_Counted(2, 2), 2)
    with pytest.raises(ValueError, match="Wrong type for `last_batch_policy`"):
        DALIGenericIterator(pipe, ["data"], size=4, last_batch_policy="FILL")


def test_size_zero_and_negative_size_with_several_pipelines_messages():
    with pytest.raises(AssertionError, match="Size cannot be 0"):
        DALIGenericIterator(_source_pipe(_Counted(1, 1), 1), ["data"], size=0)
    pipes = [_source_pipe(_Counted(1, 1), 1) for _ in range(2)]
    with pytest.raises(AssertionError,
                       match="Negative size is supported only for a single pipeline"):
        DALIGenericIterator(pipes, ["data"], size=-1)


@pytest.mark.parametrize("auto_reset", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_sized_iterator_over_ending_source_gives_every_epoch(n, auto_reset):
    # size = the source's epoch: DALI polls the source one batch ahead, sees its
    # StopIteration with the epoch's last batch and restarts it at reset(), so every epoch
    # has all n batches (godali used to return an empty second epoch).
    bs = 2
    it = DALIGenericIterator(_source_pipe(_Counted(n, bs), bs), ["data"], size=n * bs,
                             auto_reset=auto_reset)
    counts = []
    for _ in range(3):
        c = sum(1 for _ in it)
        counts.append(c)
        if not auto_reset:
            it.reset()
    assert counts == [n, n, n]


def test_prepare_first_batch_false_polls_nothing_before_next():
    src = _Counted(3, 2)
    it = DALIGenericIterator(_source_pipe(src, 2), ["data"], auto_reset=True,
                             prepare_first_batch=False)
    assert src.polls == 0
    got = [int(b[0]["data"][0, 0]) for b in it]
    assert got == [1, 2, 3]
    assert src.polls > 0
    assert [int(b[0]["data"][0, 0]) for b in it] == [1, 2, 3]


def test_drop_with_batch_larger_than_shard_message(tmp_path):
    from PIL import Image
    for i in range(3):
        d = tmp_path / "c0"
        d.mkdir(exist_ok=True)
        Image.new("RGB", (4, 4)).save(d / ("%d.jpg" % i))
    pipe = Pipeline(batch_size=5, num_threads=1, device_id=0)
    with pipe:
        _, labels = fn.readers.file(file_root=str(tmp_path), name="Reader")
        pipe.set_outputs(labels)
    with pytest.raises(RuntimeError, match="It seems that there is no data in the pipeline"):
        DALIGenericIterator(pipe, ["data"], reader_name="Reader",
                            last_batch_policy=LastBatchPolicy.DROP)
