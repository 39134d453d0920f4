"""godali.plugin.pytorch: DALI's iterator semantics (LastBatchPolicy, len, sharding) and
ImageFolderLoader against DataLoader(ImageFolder)."""

import logging
import math

import numpy as np
import pytest
import torch
import torchvision
from torchvision import transforms

import godali
from godali import fn, types
from godali.plugin.pytorch import (DALIClassificationIterator, DALIGenericIterator,
                                   GodaliClassificationIterator, GodaliGenericIterator,
                                   ImageFolderLoader, LastBatchPolicy)


def _labels_pipe(files, labels, batch_size=2, pad=False, shard_id=0, num_shards=1,
                 shuffle=False, seed=1):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=1, seed=seed)
    with pipe:
        jpegs, lab = fn.readers.file(files=files, labels=labels, pad_last_batch=pad,
                                     shard_id=shard_id, num_shards=num_shards,
                                     shuffle_after_epoch=shuffle, name="Reader")
        images = fn.resize(fn.decoders.image(jpegs), resize_x=4, resize_y=4)
        pipe.set_outputs(images, lab)
    return pipe


def _epoch(it):
    return [b[0]["label"].reshape(-1).tolist() for b in it]


# DALI's documented example: data [1..7], batch 2; the first epoch, then the second
# ("next iteration will return"): without pad_last_batch the reader is one stream.
TABLE2 = [
    (LastBatchPolicy.PARTIAL, False, [[1, 2], [3, 4], [5, 6], [7]],
     [[2, 3], [4, 5], [6, 7], [1]]),
    (LastBatchPolicy.PARTIAL, True, [[1, 2], [3, 4], [5, 6], [7]], None),
    (LastBatchPolicy.FILL, True, [[1, 2], [3, 4], [5, 6], [7, 7]], None),
    (LastBatchPolicy.FILL, False, [[1, 2], [3, 4], [5, 6], [7, 1]], [[2, 3], [4, 5], [6, 7]]),
    (LastBatchPolicy.DROP, False, [[1, 2], [3, 4], [5, 6]], [[2, 3], [4, 5], [6, 7]]),
    (LastBatchPolicy.DROP, True, [[1, 2], [3, 4], [5, 6]], None),
]
TABLE = [t[:3] for t in TABLE2]


@pytest.mark.parametrize("policy,padded,expected,second", TABLE2)
def test_last_batch_policy_table_with_reader_name(seven_files, policy, padded, expected,
                                                  second):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels, pad=padded),
                                    reader_name="Reader", last_batch_policy=policy,
                                    auto_reset=True)
    assert len(it) == len(expected)
    assert _epoch(it) == expected
    second = second or expected  # padded: the next epoch is the same
    assert len(it) == len(second)
    assert _epoch(it) == second


@pytest.mark.parametrize("policy,padded,expected", TABLE)
def test_last_batch_policy_table_with_size(seven_files, policy, padded, expected):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels, pad=padded), size=7,
                                    last_batch_policy=policy, last_batch_padded=padded)
    assert len(it) == len(expected)
    assert it.size == 7
    assert _epoch(it) == expected


def test_len_follows_dali():
    def n_batches(n, k, bs, pad, policy):
        # DALI's iterator: the per-shard size, then whole batches.
        if policy == LastBatchPolicy.DROP:
            return (n // k) // bs
        size = math.ceil(n / k) if pad else math.ceil(math.ceil(n / k) / bs) * bs
        return math.ceil(size / bs)

    class Meta:
        pass

    for n, k, bs in [(7, 1, 2), (7, 2, 2), (7, 3, 2), (10, 3, 4), (1000, 8, 32)]:
        for pad in (False, True):
            for policy in LastBatchPolicy:
                it = GodaliGenericIterator.__new__(GodaliGenericIterator)
                it.batch_size = bs
                it._policy = policy
                it._size_mode = False
                it._pipes = [None]
                it._meta = {"n": n, "k": k, "pad": pad, "stick": False, "shards": [0]}
                it._size = it._reader_size()
                assert len(it) == n_batches(n, k, bs, pad, policy), (n, k, bs, pad, policy)


@pytest.mark.parametrize("num_shards", [2, 3])
def test_shards_cover_every_sample_once(seven_files, num_shards):
    files, labels = seven_files
    n = len(files)
    its = []
    for shard in range(num_shards):
        pipe = _labels_pipe(files, labels, pad=True, shard_id=shard, num_shards=num_shards,
                            shuffle=True, seed=5)
        pipe.build()
        meta = pipe.reader_meta("Reader")
        assert meta["epoch_size"] == n and meta["number_of_shards"] == num_shards
        assert meta["shard_size"] == math.ceil(n / num_shards)  # padded
        assert meta["epoch_size_padded"] == math.ceil(n / num_shards) * num_shards
        its.append(DALIClassificationIterator(pipe, reader_name="Reader",
                                              last_batch_policy=LastBatchPolicy.PARTIAL,
                                              auto_reset=True))
    lengths = {len(it) for it in its}
    assert lengths == {math.ceil(math.ceil(n / num_shards) / 2)}
    orders = []
    for epoch in range(3):
        seen = []
        for it in its:
            batches = _epoch(it)
            assert len(batches) == len(it)
            seen.extend(x for b in batches for x in b)
        assert sorted(seen) == labels, (epoch, seen)
        orders.append(seen)
    assert orders[0] != orders[1] or orders[1] != orders[2]  # reshuffled


def test_unpadded_shard_sizes(seven_files):
    files, labels = seven_files
    for k in (2, 3):
        for i in range(k):
            pipe = _labels_pipe(files, labels, shard_id=i, num_shards=k)
            pipe.build()
            want = (7 * (i + 1)) // k - (7 * i) // k
            assert pipe.reader_meta("Reader")["shard_size"] == want
            pipe.close()


def test_generic_iterator_outputs_are_zero_copy_tensors(seven_files):
    files, labels = seven_files
    pipe = _labels_pipe(files, labels)
    it = DALIGenericIterator([pipe], ["images", "labels"], reader_name="Reader",
                             last_batch_policy=LastBatchPolicy.PARTIAL,
                             prepare_first_batch=False)
    batch = next(it)
    assert isinstance(batch, list) and len(batch) == 1
    d = batch[0]
    assert set(d) == {"images", "labels"}
    assert d["images"].shape == (2, 4, 4, 3) and d["images"].dtype == torch.uint8
    assert d["labels"].dtype == torch.int32 and d["labels"].shape == (2, 1)
    assert d["images"].device.type == "cpu"
    # The tensors are views of the engine's buffers: exported, not copied.
    assert pipe.pool_stats()["exported"] >= 2
    assert GodaliGenericIterator is DALIGenericIterator
    assert GodaliClassificationIterator is DALIClassificationIterator


def test_reset_rules(seven_files, caplog):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels), reader_name="Reader",
                                    last_batch_policy=LastBatchPolicy.PARTIAL)
    first = next(it)
    with caplog.at_level(logging.WARNING, logger="godali"):
        it.reset()  # mid-epoch: ignored with a warning, as DALI
    assert "not finished" in caplog.text
    rest = _epoch(it)
    assert [first[0]["label"].reshape(-1).tolist()] + rest == [[1, 2], [3, 4], [5, 6], [7]]
    with pytest.raises(StopIteration):  # no auto_reset: next() stays exhausted...
        next(it)
    # ... and iter() starts the next epoch, as DALI's (a second `for` loop works). The
    # reader is one stream: each PARTIAL epoch reads 8 positions of it and keeps 7.
    assert _epoch(it) == [[2, 3], [4, 5], [6, 7], [1]]
    it.reset()
    assert _epoch(it) == [[3, 4], [5, 6], [7, 1], [2]]
    # Stopping after len() batches without seeing StopIteration still allows reset().
    it.reset()
    for _ in range(len(it)):
        next(it)
    it.reset()
    assert len(_epoch(it)) == 4


def test_iterator_argument_checks(seven_files):
    files, labels = seven_files
    with pytest.raises(ValueError, match="size must not be set"):
        DALIClassificationIterator(_labels_pipe(files, labels), size=7, reader_name="Reader")
    with pytest.raises(ValueError, match="output_map"):
        DALIGenericIterator(_labels_pipe(files, labels), ["only_one"])
    with pytest.raises(godali.GodaliError, match="no reader named"):
        DALIClassificationIterator(_labels_pipe(files, labels), reader_name="Nope")


# --- ImageFolderLoader -----------------------------------------------------------------

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def val_folder(tmp_path_factory):
    """Sizes for which Resize(36) + CenterCrop(32) is unambiguous (even margins, no
    rounding of the longer side), so godali and torchvision must agree pixel for pixel
    within the resize tolerance."""
    from conftest import make_jpeg
    root = tmp_path_factory.mktemp("val")
    sizes = [(40, 60), (60, 45), (50, 50), (45, 70), (64, 48), (54, 36)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("k%d" % (i % 2)) / ("v%d.jpg" % i)), h, w, seed=300 + i)
    return str(root)


def test_val_loader_matches_dataloader(val_folder):
    s = 32
    tf = transforms.Compose([transforms.Resize(int(s * 256 / 224)), transforms.CenterCrop(s),
                             transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(val_folder, tf)
    ref = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=False)
    loader = ImageFolderLoader(val_folder, batch_size=4, train=False, image_size=s,
                               num_threads=2)
    assert loader.classes == ds.classes and loader.class_to_idx == ds.class_to_idx
    assert len(loader) == len(ref)
    for (x, y), (rx, ry) in zip(loader, ref):
        assert x.dtype == torch.float32 and y.dtype == torch.int64
        assert x.shape == rx.shape and y.shape == ry.shape
        assert torch.equal(y, ry)
        # In 8-bit levels: DALI's resize tolerance on interior pixels.
        err = ((x - rx).abs() * torch.tensor(STD).view(1, 3, 1, 1) * 255)[:, :, 2:-2, 2:-2]
        assert err.mean() <= 0.4 and err.max() <= 10, (err.mean(), err.max())


def _epoch_labels(loader):
    out = []
    for x, y in loader:
        assert x.dtype == torch.float32 and x.shape[1:] == (3, 24, 24)
        assert y.dtype == torch.int64 and y.dim() == 1 and len(y) == len(x)
        out.extend(y.tolist())
    return out


def test_train_loader_epochs(unique_folder):
    n = 11
    ds = torchvision.datasets.ImageFolder(unique_folder)
    for drop_last in (False, True):
        loader = ImageFolderLoader(unique_folder, batch_size=4, image_size=24, seed=3,
                                   num_threads=2, drop_last=drop_last)
        ref = torch.utils.data.DataLoader(ds, batch_size=4, drop_last=drop_last)
        assert len(loader) == len(ref) == (2 if drop_last else 3)
        orders = [_epoch_labels(loader) for _ in range(3)]
        for o in orders:
            if drop_last:
                assert len(o) == 8 and len(set(o)) == 8
            else:
                assert sorted(o) == list(range(n))  # every sample once
        assert len({tuple(o) for o in orders}) > 1  # reshuffled each epoch


def test_set_epoch_is_reproducible(unique_folder):
    def epoch_of(e, loader=None):
        loader = loader or ImageFolderLoader(unique_folder, batch_size=4, image_size=24,
                                             seed=11, num_threads=1)
        loader.set_epoch(e)
        xs, ys = zip(*[(x.clone(), y.clone()) for x, y in loader])
        return torch.cat(xs), torch.cat(ys)

    x2, y2 = epoch_of(2)
    x2b, y2b = epoch_of(2)
    assert torch.equal(y2, y2b) and torch.equal(x2, x2b)  # bit for bit, fresh loader
    x1, y1 = epoch_of(1)
    assert not torch.equal(y1, y2)
    # The same loader going 0 -> 1 -> 2 meets the fresh loaders' epochs.
    loader = ImageFolderLoader(unique_folder, batch_size=4, image_size=24, seed=11,
                               num_threads=1)
    epoch_of(0, loader)
    assert torch.equal(epoch_of(1, loader)[1], y1)
    assert torch.equal(epoch_of(2, loader)[0], x2)


def test_abandoned_epoch_then_full_epoch(unique_folder):
    loader = ImageFolderLoader(unique_folder, batch_size=2, image_size=24, seed=1,
                               num_threads=1)
    for i, _ in enumerate(loader):
        if i == 1:
            break
    assert sorted(_epoch_labels(loader)) == list(range(11))


def test_unshuffled_train_order_is_imagefolders(unique_folder):
    loader = ImageFolderLoader(unique_folder, batch_size=5, image_size=24, shuffle=False,
                               num_threads=1)
    ds = torchvision.datasets.ImageFolder(unique_folder)
    assert _epoch_labels(loader) == ds.targets


@pytest.mark.parametrize("num_shards", [2, 3])
def test_sharded_loaders_cover_the_data_set_as_distributed_sampler(unique_folder, num_shards):
    """torch's DistributedSampler: ceil(11 / k) samples per rank, padded with repeats."""
    loaders = [ImageFolderLoader(unique_folder, batch_size=2, image_size=24, seed=4,
                                 shard_id=i, num_shards=num_shards, num_threads=1)
               for i in range(num_shards)]
    assert len({len(x) for x in loaders}) == 1
    for epoch in (0, 1, 5):
        seen = []
        for ld in loaders:
            ld.set_epoch(epoch)
            seen.extend(_epoch_labels(ld))
        assert sorted(set(seen)) == list(range(11)), (epoch, seen)
        assert len(seen) == num_shards * -(-11 // num_shards)


def test_loader_cuda_without_gpu_is_refused(unique_folder):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        ImageFolderLoader(unique_folder, batch_size=2, device="cuda")


def test_top_level_alias():
    assert godali.ImageFolderLoader is ImageFolderLoader


@pytest.mark.gpu
def test_loader_on_gpu(unique_folder):
    loader = ImageFolderLoader(unique_folder, batch_size=4, image_size=24, device="cuda")
    seen = []
    for x, y in loader:
        assert x.is_cuda and y.is_cuda
        seen.extend(y.tolist())
    assert sorted(seen) == list(range(11))


@pytest.mark.gpu
def test_mixed_decoder_matches_cpu(image_folder):
    def run(device):
        pipe = godali.Pipeline(batch_size=10, num_threads=2, device_id=0)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=image_folder)
            pipe.set_outputs(fn.decoders.image(jpegs, device=device, output_type=types.RGB))
        (images,) = pipe.run()
        return [torch.from_dlpack(images[i]).cpu().numpy() for i in range(len(images))]

    for a, b in zip(run("cpu"), run("mixed")):
        assert a.shape == b.shape
        # DALI: cpu vs mixed JPEG decoding within 4 levels.
        assert np.abs(a.astype(np.int16) - b.astype(np.int16)).max() <= 4
