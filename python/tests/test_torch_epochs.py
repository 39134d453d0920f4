"""godali.torch.DataLoader over several epochs and when things go wrong, compared with
torch's own DataLoader on the same dataset object (the reference):

- the dataset is read again at every epoch, as torch reads it: a new or edited transform
  (progressive resizing), new or edited samples (curricula, relabelling) and a new
  target_transform take effect at the next epoch; a transform godali does not serve makes
  torch's DataLoader read that epoch (logged), and godali serves the next one it can;
- a bad file (truncated JPEG, a non-image with an image extension) fails its batch only,
  with what PIL raises on it (OSError / PIL.UnidentifiedImageError, also a godali
  DataError), and the next batch follows: the samples delivered are torch's
  (num_workers=0 and 2) under a try/except loop;
- loader.batch_sampler is torch's BatchSampler; several live iterators of one loader each
  read the whole epoch, as torch's;
- godali.torch.ImageFolder's samples are torchvision's (nested folders, a symbolic-link
  loop) and its loader reads them in that order.

Transforms are deterministic and end with PILToTensor: every comparison is bit-exact.
"""

import logging
import os

import PIL
import pytest
import torch
import torch.utils.data as tud
import torchvision
import torchvision.transforms as T

import godali
import godali.torch as gt
from conftest import make_jpeg

# Bit-exact references under Pillow 13 too (conftest: the order of its resize passes).
pytestmark = pytest.mark.usefixtures("pillow_horizontal_first")


def tf(size):
    return T.Compose([T.Resize(size), T.PILToTensor()])


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("epochs")
    for i in range(10):
        make_jpeg(str(root / ("c%d" % (i % 3)) / ("im%02d.jpg" % i)), 30 + 3 * i, 44 - 2 * i,
                  seed=300 + i)
    return str(root)


def epoch(loader):
    """One epoch's batches, copied."""
    return [(x.clone(), y if not torch.is_tensor(y) else y.clone()) for x, y in loader]


def torch_epoch(ds, **kw):
    return epoch(gt._TorchDataLoader()(ds, **kw))


def assert_same(got, ref):
    assert len(got) == len(ref)
    for (x, y), (rx, ry) in zip(got, ref):
        assert x.dtype == rx.dtype and x.shape == rx.shape
        assert torch.equal(x, rx)
        assert torch.equal(torch.as_tensor(y), torch.as_tensor(ry))


# -- the dataset read again at every epoch ----------------------------------------------

@pytest.mark.parametrize("make", [gt.ImageFolder, torchvision.datasets.ImageFolder])
def test_a_new_transform_takes_effect_at_the_next_epoch(tree, make):
    ds = make(tree, transform=tf((16, 16)))
    loader = gt.DataLoader(ds, batch_size=4)
    assert_same(epoch(loader), torch_epoch(ds, batch_size=4))
    ds.transform = tf((24, 20))            # progressive resizing: another object
    got = epoch(loader)
    assert got[0][0].shape == (4, 3, 24, 20)
    assert_same(got, torch_epoch(ds, batch_size=4))
    ds.transform.transforms[0].size = (28, 22)   # the same object, edited in place
    got = epoch(loader)
    assert got[0][0].shape == (4, 3, 28, 22)
    assert_same(got, torch_epoch(ds, batch_size=4))
    ds.transform.transforms.insert(1, T.CenterCrop(18))
    got = epoch(loader)
    assert got[0][0].shape == (4, 3, 18, 18)
    assert_same(got, torch_epoch(ds, batch_size=4))


def test_normalize_edited_in_place_takes_effect(tree):
    """ToTensor + Normalize: float32 rounding of the folded normalisation (1e-5)."""
    ds = gt.ImageFolder(tree, transform=T.Compose([
        T.Resize((12, 12)), T.ToTensor(), T.Normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2])]))
    loader = gt.DataLoader(ds, batch_size=5)
    epoch(loader)
    ds.transform.transforms[-1].mean[1] = 0.1    # a list inside the transform, edited
    got, ref = epoch(loader), torch_epoch(ds, batch_size=5)
    assert len(got) == len(ref) == 2
    for (x, y), (rx, ry) in zip(got, ref):
        assert torch.equal(y, ry) and (x - rx).abs().max().item() <= 1e-5


def test_edited_samples_relabelling_and_target_transform(tree):
    ds = torchvision.datasets.ImageFolder(tree, tf((12, 12)))
    loader = gt.DataLoader(ds, batch_size=3)
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))
    full = list(ds.samples)
    ds.samples = full[::2]                 # a curriculum: half the data
    assert len(loader) == len(torch.utils.data.DataLoader(ds, batch_size=3)) == 2
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))
    ds.samples = [(p, (c + 1) % 3) for p, c in full]   # relabelled
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))
    ds.samples[4] = (full[0][0], 2)        # edited in place
    ds.samples.reverse()
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))
    ds.target_transform = lambda t: t * 10
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))
    ds.targets = [0] * len(ds.targets)     # torch reads neither targets nor a new imgs
    ds.imgs = full[:3]
    assert_same(epoch(loader), torch_epoch(ds, batch_size=3))


def test_shuffled_epochs_read_the_changed_samples(tree):
    ds = gt.ImageFolder(tree, transform=tf((12, 12)))
    loader = gt.DataLoader(ds, batch_size=4, shuffle=True, seed=5)
    epoch(loader)
    # every sample its own label: the labels delivered name the samples read
    ds.samples = [(p, k) for k, (p, _) in enumerate(ds.samples)][:7]
    ref = {int(y): x for x, y in zip(*map(torch.cat, zip(*torch_epoch(ds, batch_size=1))))}
    got = epoch(loader)
    labels = torch.cat([y for _, y in got]).tolist()
    assert sorted(labels) == list(range(7))
    for x, y in zip(torch.cat([x for x, _ in got]), labels):
        assert torch.equal(x, ref[y])


def test_a_transform_godali_does_not_serve_makes_torch_read_that_epoch(tree, caplog):
    ds = torchvision.datasets.ImageFolder(tree, tf((16, 16)))
    loader = gt.DataLoader(ds, batch_size=4)
    epoch(loader)
    good = ds.transform
    ds.transform = T.Compose([T.Resize((16, 16)), T.PILToTensor(), T.Lambda(lambda x: 255 - x)])
    with caplog.at_level(logging.INFO, logger="godali.torch"):
        it = iter(loader)
        assert not isinstance(it, gt._LoaderIter)
        got = epoch(it)
    assert "torch's DataLoader reads this epoch" in caplog.text
    assert "Lambda" in caplog.text
    assert_same(got, torch_epoch(ds, batch_size=4))
    ds.transform = good                    # served by godali again
    it = iter(loader)
    assert isinstance(it, gt._LoaderIter)
    assert_same(epoch(it), torch_epoch(ds, batch_size=4))


def test_state_dict_mid_epoch_after_a_change(tree):
    ds = gt.ImageFolder(tree, transform=tf((16, 16)))
    a = gt.DataLoader(ds, batch_size=3, seed=1)
    epoch(a)
    ds.transform = tf((20, 20))
    it = iter(a)
    next(it)
    state = a.state_dict()
    rest = epoch(it)
    b = gt.DataLoader(ds, batch_size=3, seed=1)
    b.load_state_dict(state)
    assert_same(epoch(b), rest)


# -- a bad file fails its batch, as in torch ---------------------------------------------

@pytest.fixture(scope="module")
def bad_tree(tmp_path_factory):
    """48 images in 4 classes; im13 truncated (PIL: OSError), im30 not an image
    (PIL: UnidentifiedImageError)."""
    root = tmp_path_factory.mktemp("bad")
    for i in range(48):
        make_jpeg(str(root / ("c%d" % (i % 4)) / ("im%02d.jpg" % i)), 20 + i % 5, 24,
                  seed=900 + i)
    p = root / "c1" / "im13.jpg"
    data = p.read_bytes()
    p.write_bytes(data[:len(data) // 2])
    (root / "c2" / "im30.jpg").write_bytes(b"this is not an image\n" * 8)
    return str(root)


def delivered(loader):
    """The batches a `try: next(it) except OSError: continue` loop gets, and the errors."""
    got, errors = [], []
    it = iter(loader)
    while True:
        try:
            x, y = next(it)
        except StopIteration:
            break
        except OSError as e:
            errors.append(e)
            assert len(errors) <= 2, errors
            continue
        got.append((x.clone(), y.clone()))
    return got, errors


@pytest.mark.parametrize("make", [gt.ImageFolder, torchvision.datasets.ImageFolder])
@pytest.mark.parametrize("workers", [0, 2])
def test_bad_files_fail_their_batch_only_as_in_torch(bad_tree, make, workers):
    ds = make(bad_tree, transform=tf((16, 16)))
    ref, ref_err = delivered(gt._TorchDataLoader()(ds, batch_size=4, num_workers=workers))
    got, err = delivered(gt.DataLoader(ds, batch_size=4, num_workers=workers))
    assert sum(len(y) for _, y in ref) == 40
    assert_same(got, ref)
    assert [type(e) for e in ref_err] == [OSError, PIL.UnidentifiedImageError]
    assert len(err) == 2
    for e, r, name in zip(err, ref_err, ("im13.jpg", "im30.jpg")):
        assert isinstance(e, type(r)) and isinstance(e, godali.DataError)
        assert os.path.join(bad_tree, "c%d" % (int(name[2:4]) % 4), name) in str(e)
    assert not isinstance(err[0], PIL.UnidentifiedImageError)
    assert "truncated" in str(err[0]) and "cannot identify image file" in str(err[1])


def test_a_bad_file_in_the_last_batch_ends_the_epoch(bad_tree, tmp_path):
    ds = torchvision.datasets.ImageFolder(bad_tree, tf((16, 16)))
    good = [s for s in ds.samples if not s[0].endswith(("im13.jpg", "im30.jpg"))]
    bad = [s for s in ds.samples if s[0].endswith("im13.jpg")]
    ds.samples = good[:13] + bad   # the last batch (2 samples) holds the truncated file
    ref, _ = delivered(gt._TorchDataLoader()(ds, batch_size=4))
    loader = gt.DataLoader(ds, batch_size=4)
    for _ in range(2):             # and the next epoch starts as usual
        got, err = delivered(loader)
        assert len(got) == 3 and len(err) == 1 and "im13.jpg" in str(err[0])
        assert_same(got, ref)


# -- torch's DataLoader attributes and iterators ----------------------------------------

@pytest.mark.parametrize("kw", [{}, {"shuffle": True}, {"drop_last": True}])
def test_batch_sampler_is_torchs(tree, kw):
    ds = gt.ImageFolder(tree, transform=tf((8, 8)))
    loader = gt.DataLoader(ds, batch_size=3, **kw)
    ref = gt._TorchDataLoader()(ds, batch_size=3, **kw)
    bs = loader.batch_sampler
    assert isinstance(bs, tud.BatchSampler)
    assert bs.sampler is loader.sampler and type(bs.sampler) is type(ref.sampler)
    assert (bs.batch_size, bs.drop_last) == (ref.batch_sampler.batch_size,
                                              ref.batch_sampler.drop_last)
    assert len(bs) == len(ref.batch_sampler) == len(loader)
    if not kw.get("shuffle"):
        assert list(bs) == list(ref.batch_sampler)


def test_two_live_iterators_each_read_the_epoch(tree):
    ds = gt.ImageFolder(tree, transform=tf((8, 8)))
    ref = torch_epoch(ds, batch_size=3)
    loader = gt.DataLoader(ds, batch_size=3)
    a = iter(loader)
    got_a = [next(a)]
    b = iter(loader)
    got_b = []
    for _ in range(len(ref)):      # interleaved
        got_b.append(next(b))
        if len(got_a) < len(ref):
            got_a.append(next(a))
    with pytest.raises(StopIteration):
        next(a)
    with pytest.raises(StopIteration):
        next(b)
    assert_same(got_a, ref)
    assert_same(got_b, ref)
    c = iter(loader)               # after both: the loader goes on as usual
    assert_same(epoch(c), ref)
    assert_same(epoch(loader), ref)


def test_an_abandoned_iterator_does_not_hold_the_next_epoch(tree):
    ds = gt.ImageFolder(tree, transform=tf((8, 8)))
    ref = torch_epoch(ds, batch_size=3)
    loader = gt.DataLoader(ds, batch_size=3)
    for _ in range(3):
        for k, _ in enumerate(loader):
            if k == 1:
                break
    kept = iter(loader)
    next(kept)
    assert_same(epoch(loader), ref)
    assert_same([next(kept) for _ in range(len(ref) - 1)], ref[1:])


# -- ImageFolder's listing is torchvision's, and the loader reads it ---------------------

def test_nested_folders_are_read_in_torchvisions_order(tmp_path):
    rels = ["a/x.jpg", "a/x-y/1.jpg", "a/x/z/2.jpg", "a/x/3.jpg", "a/b.jpg", "b/q/r.jpg",
            "b/q.r/s.jpg", "b/Q/t.jpg", "b/q/r/u.jpg"]
    for k, rel in enumerate(rels):
        make_jpeg(str(tmp_path / rel), 20 + k, 24, seed=k)
    ref = torchvision.datasets.ImageFolder(str(tmp_path), tf((8, 8)))
    ds = gt.ImageFolder(str(tmp_path), transform=tf((8, 8)))
    assert ds.samples == ref.samples and ds.classes == ref.classes
    want = torch_epoch(ref, batch_size=2)
    assert_same(epoch(gt.DataLoader(ds, batch_size=2)), want)
    assert_same(epoch(gt.DataLoader(ref, batch_size=2)), want)


def test_a_symlink_loop_is_listed_and_read_as_torchvision(tmp_path):
    make_jpeg(str(tmp_path / "a" / "x.jpg"), 20, 24, seed=1)
    make_jpeg(str(tmp_path / "a" / "sub" / "y.jpg"), 22, 24, seed=2)
    os.symlink("..", str(tmp_path / "a" / "sub" / "up"))   # a/sub/up -> a
    ref = torchvision.datasets.ImageFolder(str(tmp_path), tf((8, 8)))
    ds = gt.ImageFolder(str(tmp_path), transform=tf((8, 8)))
    assert ds.samples == ref.samples and len(ds) > 2   # os.walk follows it until ELOOP
    want = torch_epoch(ref, batch_size=16)
    assert_same(epoch(gt.DataLoader(ds, batch_size=16)), want)
