"""Checkpoints and iterator epochs as DALI 2.4 has them, found by running DALI's
checkpointing/test_dali_checkpointing*.py with the imports swapped (docs/operators.md):
an external source whose callable takes the iteration, BatchInfo or SampleInfo is
checkpointed (the restored pipeline calls it with the indices the original calls it with
next), other sources get DALI's warning at build; an iterator restored at the end of its
epoch meets that end when it prepares its first batch; LastBatchPolicy.DROP with size=
smaller than one step refuses as DALI does; and DROP over a reader with pad_last_batch
carries the padded batches an epoch leaves into the next one. The expected values are
DALI 2.4's (tests/compat/pipesweep.py compares them side by side)."""

import os
import warnings

import numpy as np
import pytest

from conftest import need

from godali import fn, pipeline_def  # noqa: E402

torch = need("torch")

from godali.plugin.base_iterator import LastBatchPolicy  # noqa: E402
from godali.plugin.pytorch import DALIGenericIterator  # noqa: E402


def _source(mode, epoch_size, bs):
    """A source of epoch_size batches whose data say which indices it was called with."""
    if mode == "idx":
        def src(i):
            if i >= epoch_size:
                raise StopIteration
            return [np.array([i, j], np.int32) for j in range(bs)]
    elif mode == "batch_info":
        def src(info):
            if info.iteration >= epoch_size:
                raise StopIteration
            return [np.array([info.epoch_idx, info.iteration, j], np.int32)
                    for j in range(bs)]
    else:
        def src(info):
            if info.idx_in_epoch >= epoch_size * bs:
                raise StopIteration
            return np.array([info.epoch_idx, info.iteration, info.idx_in_epoch,
                             info.idx_in_batch], np.int32)
    return src


def _es_pipe(mode, epoch_size=3, bs=2, checkpoint=None):
    @pipeline_def(batch_size=bs, num_threads=1, device_id=None, prefetch_queue_depth=2,
                  enable_checkpointing=True)
    def pipe():
        return fn.external_source(source=_source(mode, epoch_size, bs),
                                  batch=mode != "sample_info",
                                  batch_info=mode == "batch_info")
    p = pipe(checkpoint=checkpoint)
    p.build()
    return p


def _step(p):
    """run(), or at the end of the epoch reset() and run(): the batch as lists."""
    try:
        out = p.run()
    except StopIteration:
        p.reset()
        out = p.run()
    return [np.array(out[0][i]).tolist() for i in range(len(out[0]))]


def _expected(mode, epoch, it, bs=2):
    if mode == "idx":
        return [[it, j] for j in range(bs)]
    if mode == "batch_info":
        return [[epoch, it, j] for j in range(bs)]
    return [[epoch, it, it * bs + j, j] for j in range(bs)]


@pytest.mark.parametrize("mode", ["idx", "batch_info", "sample_info"])
@pytest.mark.parametrize("cut", [0, 2, 3, 4])
def test_indexed_external_source_resumes_from_checkpoint(mode, cut):
    p = _es_pipe(mode)
    for _ in range(cut):
        _step(p)
    q = _es_pipe(mode, checkpoint=p.checkpoint())
    # Epochs of 3 batches: after `cut` runs the next is batch cut % 3 of epoch cut // 3
    # (a checkpoint after an epoch's last batch goes on with the next epoch).
    for k in range(cut, cut + 7):
        want = _expected(mode, k // 3, k % 3)
        assert _step(p) == want, (mode, cut, k)
        assert _step(q) == want, (mode, cut, k)


def test_checkpoint_records_the_source_position_and_types():
    import json
    p = _es_pipe("batch_info")
    _step(p)
    doc = json.loads(p.checkpoint())
    (state,) = doc["external_sources"].values()
    # One batch taken; those polled ahead (prefetch_queue_depth 2) are polled again.
    assert (state["epoch"], state["iteration"]) == (0, 1)
    assert state["outputs"] == [{"dtype": "INT32", "ndim": 1}]
    assert p.description()["checkpointed_feeds"] == list(doc["external_sources"])


@pytest.mark.parametrize("source", [
    [np.array([1], np.int32)] * 3,          # iterable
    lambda: np.array([1], np.int32),        # parameterless callable
])
def test_unrecorded_source_warns_at_build(source):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None, enable_checkpointing=True)
    def pipe():
        return fn.external_source(source=source, batch=False)
    with pytest.warns(Warning, match="DALI doesn't capture state of such 'source'"):
        pipe().build()


def test_indexed_source_does_not_warn():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None, enable_checkpointing=True)
    def pipe():
        return fn.external_source(source=lambda info: np.array([info.idx_in_epoch]),
                                  batch=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe().build()


def _iterator(auto_reset, checkpoint=None):
    p = _es_pipe("batch_info", epoch_size=2, bs=3, checkpoint=checkpoint)
    return DALIGenericIterator([p], ["x"], size=6, auto_reset=auto_reset,
                               last_batch_policy=LastBatchPolicy.FILL,
                               last_batch_padded=True)


def _epoch(it):
    return [b[0]["x"][:, :2].tolist() for b in it]


@pytest.mark.parametrize("auto_reset", [True, False])
def test_iterator_restored_at_the_end_of_its_epoch(auto_reset):
    it = _iterator(auto_reset)
    assert _epoch(it) == [[[0, 0]] * 3, [[0, 1]] * 3]
    restored = _iterator(auto_reset, it.checkpoints()[0])
    # DALI 2.4: the first `for` over the restored iterator runs the next epoch, with or
    # without auto_reset (its first-batch attempt met the end and counts as consumed).
    want = [[[1, 0]] * 3, [[1, 1]] * 3]
    assert _epoch(restored) == want
    if not auto_reset:
        it.reset()
    assert _epoch(it) == want


def test_restored_iterator_next_is_a_batch_with_auto_reset():
    it = _iterator(True)
    next(it)
    next(it)
    restored = _iterator(True, it.checkpoints()[0])
    with pytest.raises(StopIteration):
        next(it)  # the original reports the end it reached
    assert next(restored)[0]["x"][:, :2].tolist() == [[1, 0]] * 3  # DALI 2.4: no end first
    assert next(it)[0]["x"][:, :2].tolist() == [[1, 0]] * 3


@pytest.mark.parametrize("npipes, size", [(2, 5), (1, 2)])
def test_drop_with_size_below_one_step_refuses(npipes, size):
    pipes = [_es_pipe("sample_info", bs=3) for _ in range(npipes)]
    with pytest.raises(RuntimeError, match="It seems that there is no data in the pipeline"):
        DALIGenericIterator(pipes, ["x"], size=size, last_batch_policy=LastBatchPolicy.DROP)
    # Without prepare_first_batch DALI gives empty epochs instead.
    it = DALIGenericIterator(pipes, ["x"], size=size, last_batch_policy=LastBatchPolicy.DROP,
                             prepare_first_batch=False)
    assert len(it) == 0 and list(it) == []


@pytest.mark.parametrize("stick", [True, False])
def test_drop_over_padded_shards_carries_the_padded_batches(tmp_path, stick):
    os.mkdir(tmp_path / "0")
    files = []
    for i in range(11):
        f = tmp_path / "0" / ("%02d.jpg" % i)
        f.write_bytes(bytes([i]))
        files.append(str(f))

    def pipe(shard):
        @pipeline_def(batch_size=3, num_threads=1, device_id=None)
        def p():
            x, _ = fn.readers.file(files=files, pad_last_batch=True, num_shards=3,
                                   shard_id=shard, stick_to_shard=stick, name="R")
            return x
        return p()

    it = DALIGenericIterator([pipe(s) for s in range(3)], ["x"], reader_name="R",
                             last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)
    epochs = [[[b["x"][:, 0].tolist() for b in batch] for batch in it] for _ in range(4)]
    # Shards of 3, 4 and 4 samples padded to 4: the reader's epochs have 2 batches of 3
    # (the second its last sample repeated), DALI's DROP epochs take 1 (floor(11/3) = 3)
    # and do not rewind the reader: every other epoch is the padded batches (DALI 2.4).
    first = [[0, 1, 2], [3, 4, 5], [7, 8, 9]]
    padded = [[2, 2, 2], [6, 6, 6], [10, 10, 10]]
    if stick:
        assert epochs == [[first], [padded], [first], [padded]]
    else:
        # the shards move at each reader epoch (every second iterator epoch)
        assert epochs == [[first], [padded], [first[1:] + first[:1]],
                          [padded[1:] + padded[:1]]]


def test_operator_made_outside_the_pipeline_refuses_checkpointing():
    # DALI's rule: with enable_checkpointing an operator made outside the pipeline's
    # scope (its state could not be tied to the pipeline) fails the build, naming it.
    outside = fn.random.uniform(shape=[2])

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, enable_checkpointing=True)
    def pipe(arg):
        return arg + 0

    with pytest.raises(RuntimeError, match="The pipeline does not support checkpointing "
                                           "because it contains operator.*outside the "
                                           "pipeline scope"):
        pipe(outside).build()

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def plain(arg):
        return arg + 0

    plain(fn.random.uniform(shape=[2])).build()  # without checkpointing it is allowed
