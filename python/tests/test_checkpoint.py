"""Checkpoints (DALI's enable_checkpointing / checkpoint= / pipe.checkpoint() /
iterator.checkpoints()): a pipeline or iterator restored after N steps gives exactly the
steps N, N+1, ... of the same run left uninterrupted, whatever num_threads and
prefetch_queue_depth are."""

import json

import numpy as np
import pytest
import torch

import godali
from godali import fn, types
from godali.plugin.pytorch import (DALIClassificationIterator, DALIGenericIterator,
                                   LastBatchPolicy)


@godali.pipeline_def(enable_checkpointing=True)
def train_pipe(root, shard_id=0, num_shards=1):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, initial_fill=4,
                                    shard_id=shard_id, num_shards=num_shards,
                                    pad_last_batch=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB,
                                           random_area=[0.2, 1.0])
    images = fn.resize(images, resize_x=20, resize_y=20)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                      crop=(20, 20), mean=[120.0] * 3, std=[60.0] * 3,
                                      mirror=fn.random.coin_flip(probability=0.5))
    return images, labels


def make(root, threads=1, depth=1, **kw):
    return train_pipe(root, batch_size=3, num_threads=threads, prefetch_queue_depth=depth,
                      seed=kw.pop("seed", 7), **kw)


def pipe_steps(pipe, n):
    """n consumer steps of run(): a batch as numpy arrays, or "end" (then reset())."""
    out = []
    for _ in range(n):
        try:
            images, labels = pipe.run()
        except StopIteration:
            pipe.reset()
            out.append("end")
            continue
        out.append((images.as_array().copy(), labels.as_array().copy()))
    return out


def assert_same_steps(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, str):
            assert g == w, "step %d" % i
            continue
        assert not isinstance(g, str), "step %d: got %s, want a batch" % (i, g)
        assert np.array_equal(g[1], w[1]), "step %d: labels %s, want %s" % (i, g[1], w[1])
        assert np.array_equal(g[0], w[0]), "step %d: images differ" % i


# image_folder: 10 images, batch 3: 4 batches per epoch, then the end of the epoch.
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 7])
def test_pipeline_resumes_from_checkpoint(image_folder, n):
    m = 8
    ref = pipe_steps(make(image_folder), n + m)
    a = make(image_folder, threads=3, depth=3)  # the workers run ahead of the consumer
    assert_same_steps(pipe_steps(a, n), ref[:n])
    ckpt = a.checkpoint()
    assert_same_steps(pipe_steps(a, m), ref[n:])
    b = make(image_folder, threads=2, depth=2, checkpoint=ckpt)
    assert_same_steps(pipe_steps(b, m), ref[n:])


def test_checkpoint_file_and_document(image_folder, tmp_path):
    a = make(image_folder)
    a.build()
    pipe_steps(a, 2)
    path = tmp_path / "reader.cpt"
    text = a.checkpoint(str(path))
    assert path.read_text() == text
    doc = json.loads(text)
    assert doc["format"] == "godali-checkpoint" and doc["version"] == 1
    assert (doc["state"]["epoch"], doc["state"]["iteration"]) == (0, 2)
    assert doc["pipeline"]["batch_size"] == 3 and doc["pipeline"]["seed"] == 7
    assert doc["pipeline"]["reader"]["args"]["random_shuffle"] is True
    want = pipe_steps(a, 3)
    b = make(image_folder, checkpoint=path.read_bytes())  # DALI reads the file as bytes
    assert_same_steps(pipe_steps(b, 3), want)


def test_checkpointing_must_be_enabled(image_folder):
    pipe = godali.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder, name="Reader")
        pipe.set_outputs(labels)
    pipe.build()
    with pytest.raises(RuntimeError, match="enable_checkpointing=True"):
        pipe.checkpoint()
    with pytest.raises(ValueError, match="enable_checkpointing=True"):
        godali.Pipeline(batch_size=2, checkpoint="{}")


def test_checkpoint_of_another_pipeline_is_refused(image_folder):
    a = make(image_folder)
    pipe_steps(a, 1)
    ckpt = a.checkpoint()
    b = train_pipe(image_folder, batch_size=4, num_threads=1, seed=7, checkpoint=ckpt)
    with pytest.raises(ValueError, match="batch_size is 3 in the checkpoint, 4 in this"):
        b.build()
    # A failed restore never leaves a pipeline that starts from the beginning.
    with pytest.raises(ValueError, match="batch_size"):
        b.run()
    c = make(image_folder, seed=8, checkpoint=ckpt)
    with pytest.raises(godali.InvalidArgumentError, match="seed is 7 in the checkpoint, 8"):
        c.build()
    d = make(image_folder, checkpoint=ckpt, shard_id=1, num_shards=2)
    with pytest.raises(ValueError, match='argument "num_shards" of reader "Reader"'):
        d.build()


@pytest.mark.parametrize("text,match", [
    ("", "empty document"),
    ("not a checkpoint", "not a godali checkpoint"),
    ('{"format": "godali-checkpoint", "version": 2}', "version 2 is not supported"),
    ('{"format": "godali-checkpoint", "version": 1, "pipeline": 3, "state": {}}',
     '"pipeline" is 3'),
    (b"\xff\xfe garbage", "not a godali checkpoint"),
])
def test_garbage_checkpoint_is_a_clear_error(image_folder, text, match):
    p = make(image_folder, checkpoint=text)
    with pytest.raises(ValueError, match=match):
        p.build()


def iter_steps(it, n):
    """n calls of next(it): the labels and data of a batch, or "stop"."""
    out = []
    for _ in range(n):
        try:
            batch = next(it)
        except StopIteration:
            out.append("stop")
            continue
        out.append([(d["label"].clone(), d["data"].clone()) for d in batch])
    return out


def assert_same_iter_steps(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, str):
            assert g == w, "step %d: got a batch, want %s" % (i, w)
            continue
        assert not isinstance(g, str), "step %d: got %s, want a batch" % (i, g)
        for (gl, gd), (wl, wd) in zip(g, w):
            assert torch.equal(gl, wl), "step %d: labels %s, want %s" % (i, gl, wl)
            assert torch.equal(gd, wd), "step %d: data differ" % i


ITERATORS = {
    "reader_partial_auto_reset": dict(reader_name="Reader",
                                      last_batch_policy=LastBatchPolicy.PARTIAL,
                                      auto_reset=True),
    "reader_drop": dict(reader_name="Reader", last_batch_policy=LastBatchPolicy.DROP),
    "size_fill": dict(size=7, last_batch_policy=LastBatchPolicy.FILL, auto_reset=True),
}


@pytest.mark.parametrize("kind", sorted(ITERATORS))
@pytest.mark.parametrize("shards", [1, 2])
@pytest.mark.parametrize("n", [0, 2, 4, 5, 6])
def test_iterator_resumes_from_checkpoints(image_folder, kind, shards, n):
    kw = ITERATORS[kind]
    m = 7
    if not kw.get("auto_reset"):
        # Without auto_reset the caller resets after StopIteration; keep to one epoch.
        m = 3

    def iterator(threads, depth, checkpoints=None):
        pipes = [make(image_folder, threads=threads, depth=depth, shard_id=s,
                      num_shards=shards,
                      **({} if checkpoints is None else {"checkpoint": checkpoints[s]}))
                 for s in range(shards)]
        return DALIClassificationIterator(pipes, **kw)

    ref = iter_steps(iterator(1, 1), n + m)
    it = iterator(3, 3)
    assert_same_iter_steps(iter_steps(it, n), ref[:n])
    cps = it.checkpoints()
    assert len(cps) == shards
    assert_same_iter_steps(iter_steps(it, m), ref[n:])
    want = ref[n:]
    if kw.get("auto_reset") and want[0] == "stop":
        # As DALI 2.4's (measured side by side): an iterator restored at the end of its
        # epoch meets that end when it prepares its first batch, and auto_reset starts
        # the next epoch, so its first next() is a batch, not StopIteration.
        want = want[1:]
    restored = iterator(2, 2, cps)
    assert_same_iter_steps(iter_steps(restored, len(want)), want)


def test_generic_iterator_checkpoints_carry_its_counters(image_folder):
    it = DALIGenericIterator([make(image_folder)], ["images", "labels"],
                             reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
    next(it)
    next(it)
    (cp,) = it.checkpoints()
    assert json.loads(cp)["iterator"] == {"counter": 6, "batches": 2, "ended": False}
    again = DALIGenericIterator([make(image_folder, checkpoint=cp)], ["images", "labels"],
                                reader_name="Reader",
                                last_batch_policy=LastBatchPolicy.PARTIAL)
    rest = [b[0]["labels"].shape[0] for b in again]
    assert rest == [3, 1]  # 10 samples: the last batch is partial
    assert len(again) == 4
