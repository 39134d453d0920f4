"""Several readers in one pipeline (DALI allows it): each plans its own samples of every
batch, with its own epoch size, shards and shuffling. The first reader (or the
iterator's reader_name) defines the epochs; the others go on across them by themselves.
Files hold their own names, so a batch says exactly what each reader read."""

import json
import os

import numpy as np
import pytest

import godali
from godali import fn
from godali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy


def text_folder(root, tag, per_class):
    """An ImageFolder tree of files whose bytes are their own name tag/classNN/fNN.jpg."""
    names = []
    for c, n in enumerate(per_class):
        d = os.path.join(root, "class%02d" % c)
        os.makedirs(d)
        for i in range(n):
            name = "%s/class%02d/f%02d.jpg" % (tag, c, i)
            with open(os.path.join(d, "f%02d.jpg" % i), "w") as f:
                f.write(name)
            names.append(name)
    return str(root), names


@pytest.fixture
def folders(tmp_path):
    a = text_folder(tmp_path / "a", "A", [3, 2])      # 5 files
    b = text_folder(tmp_path / "b", "B", [1, 1, 1])   # 3 files
    return a, b


@godali.pipeline_def(enable_checkpointing=True)
def two_readers(root_a, root_b, shuffle_b=False):
    a, la = fn.readers.file(file_root=root_a, name="A")
    b, lb = fn.readers.file(file_root=root_b, name="B", random_shuffle=shuffle_b,
                            initial_fill=2)
    return a, la, b, lb


def decode(outs):
    a, la, b, lb = outs
    return ([bytes(np.array(t)).decode() for t in a], [int(np.array(t)) for t in la],
            [bytes(np.array(t)).decode() for t in b], [int(np.array(t)) for t in lb])


def label_of(name):
    return int(name.split("/")[1][len("class"):])


def stream(names, bs, batch):
    """Batch `batch` of an unshuffled reader's endless stream (DALI's: its files over
    and over, an epoch's last batch filled with the next epoch's first files)."""
    return [names[(batch * bs + j) % len(names)] for j in range(bs)]


def epoch_of_batch(n, bs, batch):
    """(epoch, iteration) of a stream batch of a lone shard: an epoch has the batches
    that finish its pass over the n samples from where the stream stands (DALI's FILL)."""
    epoch, start = 0, 0
    while True:
        per = -(-(n - (start - epoch * n)) // bs)
        if batch < per:
            return epoch, batch
        batch -= per
        start += per * bs
        epoch += 1


def test_two_readers_give_their_own_files_and_labels(folders):
    (ra, fa), (rb, fb) = folders
    pipe = two_readers(ra, rb, batch_size=2, num_threads=2, device_id=None, seed=3)
    pipe.build()
    assert sorted(pipe.reader_names()) == ["A", "B"]
    assert pipe.epoch_size() == {"A": 5, "B": 3}
    for k in range(9):  # three epochs of A; run() goes on across them
        a, la, b, lb = decode(pipe.run())
        info = pipe.batch_info
        assert (info.epoch, info.iteration) == epoch_of_batch(5, 2, k)
        assert a == stream(fa, 2, k) and la == [label_of(x) for x in a]
        assert b == stream(fb, 2, k) and lb == [label_of(x) for x in b]


def test_iterator_reader_name_picks_the_epoch_reader(folders):
    (ra, fa), (rb, fb) = folders
    for name, n_batches, epoch_files in (("A", 3, fa), ("B", 2, fb)):
        pipe = two_readers(ra, rb, batch_size=2, num_threads=1, device_id=None, seed=3)
        it = DALIGenericIterator([pipe], ["a", "la", "b", "lb"], reader_name=name,
                                 last_batch_policy=LastBatchPolicy.PARTIAL)
        assert len(it) == n_batches
        for epoch in range(2):
            got = []
            for batch in it:
                d = batch[0]
                key = "a" if name == "A" else "b"
                got += [bytes(t.numpy()).decode() for t in d[key]]
            # PARTIAL: the reader's n files from where its stream stands (each epoch
            # reads whole batches of it, DALI's, and keeps n samples).
            n = len(epoch_files)
            start = epoch * n_batches * 2
            assert got == [epoch_files[(start + i) % n] for i in range(n)], (name, epoch)
            it.reset()


def steps(pipe, n):
    return [decode(pipe.run()) + ((pipe.batch_info.epoch, pipe.batch_info.iteration),)
            for _ in range(n)]


@pytest.mark.parametrize("cut", [0, 2, 4, 7])
def test_checkpoint_restores_every_reader(folders, cut):
    (ra, _), (rb, _) = folders
    kw = dict(batch_size=2, device_id=None, seed=11)
    ref = steps(two_readers(ra, rb, shuffle_b=True, num_threads=1, **kw), cut + 6)
    pipe = two_readers(ra, rb, shuffle_b=True, num_threads=2, prefetch_queue_depth=3, **kw)
    assert steps(pipe, cut) == ref[:cut]
    ckpt = pipe.checkpoint()
    doc = json.loads(ckpt)
    assert set(doc["state"]["other_readers"]) == {"B"}
    assert steps(pipe, 6) == ref[cut:]
    again = two_readers(ra, rb, shuffle_b=True, num_threads=3, checkpoint=ckpt, **kw)
    assert steps(again, 6) == ref[cut:]


def test_same_seed_same_batches(folders):
    (ra, _), (rb, _) = folders
    runs = [steps(two_readers(ra, rb, shuffle_b=True, batch_size=2, num_threads=t,
                              device_id=None, seed=5), 10) for t in (1, 3)]
    assert runs[0] == runs[1]
    other = steps(two_readers(ra, rb, shuffle_b=True, batch_size=2, num_threads=1,
                              device_id=None, seed=6), 10)
    assert [s[2] for s in other] != [s[2] for s in runs[0]]
