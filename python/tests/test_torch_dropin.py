"""godali.torch: DataLoader / ImageFolder / DistributedSampler with torchvision transforms,
compared with torchvision itself (dataset[i] runs the transform in Python on PIL images,
as torchvision.datasets.ImageFolder does).

Tolerances (uint8 levels unless said): geometry, flips, rotation (nearest), fixed-size
resize (Resize(int) included) and crops are bit-exact; ColorJitter (all four, in any
order) bit-exact; GaussianBlur and RandomGrayscale within 1 level (PIL rounds or
truncates where godali rounds half away from zero); bilinear rotation within 1 level away
from the image border; CenterCrop on images of varying size bit-exact too. Random transforms are checked through their fixed-parameter cases and by the
distribution of the parameters they draw.
"""

import os

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

from conftest import make_jpeg
from godali.torch import (DataLoader, DistributedSampler, ImageFolder,
                          UnsupportedTransformError, datasets)

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# References resize with Pillow's horizontal pass first, as godali does, also under a
# Pillow that takes the vertical one first for some sizes (conftest.py; the difference
# from such a Pillow itself is bounded in test_tv_exact.py).
pytestmark = pytest.mark.usefixtures("pillow_horizontal_first")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("dropin")
    sizes = [(64, 80), (72, 96), (96, 72), (50, 120), (88, 88), (120, 60), (64, 64),
             (100, 76), (48, 56), (80, 100), (70, 70)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("c%d" % (i % 3)) / ("im%02d.jpg" % i)), h, w, seed=40 + i)
    return str(root)


@pytest.fixture(scope="module")
def coords(tmp_path_factory):
    """PNG images whose pixels encode their coordinates: R = x, G = y (lossless)."""
    root = tmp_path_factory.mktemp("coords")
    h, w = 60, 90
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x, y, np.full_like(x, 7)], axis=-1).astype(np.uint8)
    os.makedirs(root / "a")
    for i in range(4):
        Image.fromarray(img).save(str(root / "a" / ("%d.png" % i)))
    return str(root), h, w


def batches(loader):
    return [(x.clone(), y.clone()) for x, y in loader]


def compare(folder, tf, atol=0, batch_size=4):
    ds = ImageFolder(folder, transform=tf)
    got = torch.cat([x for x, _ in DataLoader(ds, batch_size=batch_size)])
    for i in range(len(ds)):
        ref, label = ds[i]
        assert got[i].dtype == ref.dtype
        assert got[i].shape == ref.shape, (i, got[i].shape, ref.shape)
        d = (got[i].double() - ref.double()).abs().max().item()
        assert d <= atol, "sample %d (%s): max difference %g > %g" % (
            i, ds.samples[i][0], d, atol)
    return ds, got


# -- deterministic transforms vs torchvision -------------------------------------------

def test_resize_centercrop_totensor_normalize_matches_torchvision(folder):
    tf = T.Compose([T.Resize((40, 44)), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])
    # float32 rounding: godali computes (x - 255 m) / (255 s) in one step.
    compare(folder, tf, atol=1e-5)


def test_totensor_is_float_chw_in_unit_range_and_piltotensor_uint8(folder):
    ds, got = compare(folder, T.Compose([T.Resize((30, 30)), T.ToTensor()]), atol=1e-6)
    assert got.dtype == torch.float32 and got.shape[1:] == (3, 30, 30)
    assert 0 <= got.min() and got.max() <= 1
    _, got = compare(folder, T.Compose([T.Resize((30, 30)), T.PILToTensor()]))
    assert got.dtype == torch.uint8
    _, got = compare(folder, T.Compose([T.Resize((30, 30)), T.PILToTensor(),
                                        T.ConvertImageDtype(torch.float32),
                                        T.Normalize(MEAN, STD)]), atol=1e-5)
    _, got = compare(folder, T.Compose([T.Resize((30, 30)), T.PILToTensor(),
                                        T.ConvertImageDtype(torch.float16)]), atol=1e-3)
    assert got.dtype == torch.float16


def test_centercrop_of_varying_sizes_and_padding(folder):
    # Every (size - crop) here is even: exact. 46 > the smallest side (48 x 56 has 48).
    compare(folder, T.Compose([T.CenterCrop(48), T.PILToTensor()]))
    # A crop larger than the image pads with zeros, as torchvision's CenterCrop.
    compare(folder, T.Compose([T.Resize((40, 41)), T.CenterCrop((47, 44)), T.PILToTensor()]))
    compare(folder, T.Compose([T.Resize((41, 40)), T.CenterCrop((30, 31)), T.PILToTensor()]))


def test_resize_shorter_side(folder):
    """Resize(int): torchvision's truncated longer side, bit-exact (size_rounding="truncate")."""
    ds = ImageFolder(folder, transform=T.Compose([T.Resize(40), T.PILToTensor()]))
    loader = DataLoader(ds, batch_size=1)
    truncated = 0
    for i, (x, _) in enumerate(loader):
        ref = ds[i][0]
        h, w = Image.open(ds.samples[i][0]).size[::-1]
        s, l = min(h, w), max(h, w)
        assert max(ref.shape[1:]) == int(l * 40 / s)       # torchvision: truncated
        truncated += int(l * 40 / s) != round(l * 40 / s)
        assert x.shape[1:] == ref.shape
        assert torch.equal(x[0], ref), ds.samples[i][0]
    assert truncated >= 2  # the cases where rounding would differ are covered
    # CenterCrop after it: the size is per image, and the centre offset rounds half to
    # even as torchvision's (crop_rounding="torchvision"): exact.
    tf = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    got = torch.cat([x for x, _ in DataLoader(ds, batch_size=5)])
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    assert torch.equal(got, ref)


def test_resize_max_size(folder):
    tf = T.Compose([T.Resize(40, max_size=50), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    for i, (x, _) in enumerate(DataLoader(ds, batch_size=1)):
        assert x.shape[1:] == ds[i][0].shape
        assert torch.equal(x[0], ds[i][0]), ds.samples[i][0]


def test_flips_with_p0_and_p1(folder):
    base = [T.Resize((36, 40))]
    compare(folder, T.Compose(base + [T.RandomHorizontalFlip(1.0), T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.RandomHorizontalFlip(0.0), T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.RandomVerticalFlip(1.0), T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.RandomVerticalFlip(1.0), T.CenterCrop(31),
                                      T.RandomHorizontalFlip(1.0), T.ToTensor()]), atol=1e-6)


def test_random_vertical_flip_before_the_tensor_conversion(folder):
    # A coin-flipped vertical flip as the last image step (it used to fail at the
    # construction: the translation tested the coin's DataNode for truth).
    base = [T.Resize((36, 40))]
    tf = T.Compose(base + [T.RandomVerticalFlip(0.5), T.PILToTensor()])
    ref = ImageFolder(folder, transform=T.Compose(base + [T.PILToTensor()]))
    got = torch.cat([x for x, _ in DataLoader(ImageFolder(folder, transform=tf),
                                              batch_size=4, seed=2)])
    flipped = 0
    for i in range(len(ref)):
        r = ref[i][0]
        if torch.equal(got[i], r.flip(1)):
            flipped += 1
        else:
            assert torch.equal(got[i], r), ref.samples[i][0]
    assert 0 < flipped < len(ref)  # seed 2 draws both


def test_rotation_fixed_angle(folder):
    base = [T.Resize((40, 40))]
    compare(folder, T.Compose(base + [T.RandomRotation((30, 30)), T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.RandomRotation((-75, -75), fill=9), T.PILToTensor()]))
    # Bilinear: exact to 1 level away from the border (PIL and godali blend the fill
    # differently in the last pixel row of the rotated image).
    tf = T.Compose(base + [T.RandomRotation((30, 30), interpolation=T.InterpolationMode.BILINEAR),
                           T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    got = torch.cat([x for x, _ in DataLoader(ds, batch_size=4)])
    yy, xx = torch.meshgrid(torch.arange(40) - 19.5, torch.arange(40) - 19.5, indexing="ij")
    inner = (yy.abs() < 12) & (xx.abs() < 12)
    for i in range(len(ds)):
        d = (got[i].int() - ds[i][0].int()).abs()
        assert d[:, inner].max() <= 1


def test_blur_gray_brightness_saturation_fixed(folder):
    base = [T.Resize((36, 40))]
    compare(folder, T.Compose(base + [T.GaussianBlur((5, 3), sigma=(1.5, 1.5)),
                                      T.PILToTensor()]), atol=1)
    compare(folder, T.Compose(base + [T.RandomGrayscale(1.0), T.PILToTensor()]), atol=1)
    compare(folder, T.Compose(base + [T.RandomGrayscale(0.0), T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.ColorJitter(brightness=(1.3, 1.3)),
                                      T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.ColorJitter(saturation=(0.4, 0.4)),
                                      T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.ColorJitter(contrast=(0.6, 0.6)),
                                      T.PILToTensor()]))
    compare(folder, T.Compose(base + [T.ColorJitter(hue=(-0.3, -0.3)),
                                      T.PILToTensor()]))


def test_colorjitter_all_four_matches_one_of_torchvisions_orders(folder):
    """Fixed factors: every sample equals torchvision's functional calls in one of the 24
    orders, and several orders occur (randperm(4) per call)."""
    import itertools
    import torchvision.transforms.functional as TF
    f = (1.3, 0.7, 1.6, 0.12)
    tf = T.Compose([T.Resize((24, 28)), T.ColorJitter(*[(v, v) for v in f]), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    loader = DataLoader(ds, batch_size=4, shuffle=True, seed=9)
    adj = [TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue]
    base = {}
    for p, _ in ds.samples:
        base[p] = T.Resize((24, 28))(Image.open(p).convert("RGB"))
    refs = {}
    for p, im in base.items():
        refs[p] = {}
        for o in itertools.permutations(range(4)):
            r = im
            for k in o:
                r = adj[k](r, f[k])
            refs[p][o] = torch.from_numpy(np.asarray(r).copy()).permute(2, 0, 1)
    seen = set()
    for _ in range(6):
        for x, y in loader:
            for s in x:
                hits = [(p, o) for p in refs for o, r in refs[p].items() if torch.equal(r, s)]
                assert hits, "no order of torchvision's adjustments gives this sample"
                seen.update(o for _, o in hits)
    assert len(seen) >= 8


# -- random transforms: the parameters they draw ---------------------------------------

def _windows(x):
    """(x0, y0, x1, y1) of the coordinate image region each output sample shows."""
    r, g = x[:, 0].double(), x[:, 1].double()
    return torch.stack([r.amin((1, 2)), g.amin((1, 2)), r.amax((1, 2)), g.amax((1, 2))], 1)


def test_random_resized_crop_draws_torchvisions_windows(coords):
    root, h, w = coords
    tf = T.Compose([T.RandomResizedCrop((16, 16), scale=(0.2, 0.9), ratio=(0.5, 2.0),
                                        interpolation=T.InterpolationMode.NEAREST),
                    T.PILToTensor()])
    ds = ImageFolder(root, transform=tf)
    loader = DataLoader(ds, batch_size=4, shuffle=True, seed=3)
    win = torch.cat([_windows(x) for _ in range(150) for x, _ in [next(iter(loader))]])
    # Nearest sampling of a window [x0, x0 + cw) into 16 pixels shows x0 + cw/32 ..
    # x0 + cw - cw/32: widths and heights from the extremes.
    cw = (win[:, 2] - win[:, 0]) * 16 / 15
    ch = (win[:, 3] - win[:, 1]) * 16 / 15
    area = cw * ch / (w * h)
    logr = torch.log(cw / ch)
    g = torch.Generator().manual_seed(0)
    ref = [T.RandomResizedCrop.get_params(torch.zeros(1, h, w), (0.2, 0.9),
                                          (0.5, 2.0)) for _ in range(len(win))]
    ra = torch.tensor([r[2] * r[3] / (w * h) for r in ref])
    rl = torch.tensor([np.log(r[3] / r[2]) for r in ref])
    del g
    n = len(win)
    # Means within 4 standard errors of torchvision's, and the same spread.
    assert abs(area.mean() - ra.mean()) < 4 * ra.std() / n ** 0.5 + 0.02
    assert abs(logr.mean() - rl.mean()) < 4 * rl.std() / n ** 0.5 + 0.05
    assert 0.7 < area.std() / ra.std() < 1.4
    assert area.min() > 0.15 and area.max() < 0.95


def test_random_crop_offsets_uniform_with_padding(coords):
    root, h, w = coords
    tf = T.Compose([T.Resize((20, 20), interpolation=T.InterpolationMode.NEAREST),
                    T.RandomCrop(20, padding=3, fill=200), T.PILToTensor()])
    ds = ImageFolder(root, transform=tf)
    loader = DataLoader(ds, batch_size=4, shuffle=True, seed=5)
    pad = T.Compose([T.Resize((20, 20), interpolation=T.InterpolationMode.NEAREST),
                     T.Pad(3, fill=200), T.PILToTensor()])(
        Image.open(ds.samples[0][0]).convert("RGB"))
    counts = np.zeros((7, 7))
    for _ in range(60):
        x, _ = next(iter(loader))
        for s in x:
            hits = [(i, j) for i in range(7) for j in range(7)
                    if torch.equal(pad[:, i:i + 20, j:j + 20], s)]
            assert len(hits) == 1, "the crop is no window of the padded image"
            counts[hits[0]] += 1
    # 240 draws over 49 equally likely offsets, the borders included.
    assert counts.sum() == 240
    assert counts[0].sum() > 10 and counts[6].sum() > 10
    assert counts[:, 0].sum() > 10 and counts[:, 6].sum() > 10
    chi2 = ((counts.sum(0) - 240 / 7) ** 2 / (240 / 7)).sum()
    assert chi2 < 22.5  # 6 degrees of freedom, p = 0.001


def test_random_flip_and_grayscale_rates(folder):
    tf = T.Compose([T.Resize((8, 8)), T.RandomHorizontalFlip(0.3), T.RandomGrayscale(0.6),
                    T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    plain = T.Compose([T.Resize((8, 8)), T.PILToTensor()])
    refs = [plain(Image.open(p).convert("RGB")) for p, _ in ds.samples]
    loader = DataLoader(ds, batch_size=len(ds), seed=1)
    flips = grays = total = 0
    for _ in range(30):
        x, _ = next(iter(loader))
        for i, s in enumerate(x):
            s = s.int()
            gray = (s[0] - s[1]).abs().max() <= 1 and (s[1] - s[2]).abs().max() <= 1
            if gray:
                grays += 1
            else:
                # A colour sample is the plain image, flipped or not (to 1 level: hsv
                # with saturation 1 goes through YIQ and back in float32).
                r = refs[i].int()
                flipped = (s - r.flip(-1)).abs().max() <= 1
                assert flipped or (s - r).abs().max() <= 1
                flips += bool(flipped)
            total += 1
    assert 0.5 < grays / total < 0.7
    colour = total - grays
    assert 0.2 < flips / colour < 0.42


# -- DataLoader arguments -----------------------------------------------------------------

def test_labels_lengths_and_drop_last(folder):
    tf = T.Compose([T.Resize((16, 16)), T.ToTensor()])
    ds = ImageFolder(folder, transform=tf)
    assert ds.classes == ["c0", "c1", "c2"] and len(ds) == 11
    tv = torchvision.datasets.ImageFolder(folder)
    assert [(os.path.basename(p), c) for p, c in ds.samples] == \
        [(os.path.basename(p), c) for p, c in tv.samples]
    out = batches(DataLoader(ds, batch_size=4))
    assert [len(y) for _, y in out] == [4, 4, 3]
    assert torch.cat([y for _, y in out]).tolist() == ds.targets
    assert out[0][1].dtype == torch.int64
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [len(y) for _, y in batches(dl)] == [4, 4]
    dl = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, pin_memory=True,
                    persistent_workers=True, prefetch_factor=3)
    e0 = torch.cat([y for _, y in dl])
    e1 = torch.cat([y for _, y in dl])
    assert sorted(e0.tolist()) == sorted(ds.targets) == sorted(e1.tolist())


def test_shuffle_follows_torch_manual_seed(folder):
    tf = T.Compose([T.Resize((8, 8)), T.ToTensor()])
    ds = ImageFolder(folder, transform=tf)

    def run():
        torch.manual_seed(11)
        dl = DataLoader(ds, batch_size=3, shuffle=True)
        return [torch.cat([x for x, _ in dl]) for _ in range(2)]

    a, b = run(), run()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_torchvision_imagefolder_and_target_transform(folder):
    tv = torchvision.datasets.ImageFolder(folder, transform=T.Compose([
        T.Resize((12, 12)), T.PILToTensor()]), target_transform=lambda c: c * 10)
    out = batches(DataLoader(tv, batch_size=5))
    assert torch.cat([y for _, y in out]).tolist() == [c * 10 for c in tv.targets]
    assert torch.equal(out[0][0][1], tv[1][0])
    assert datasets.ImageFolder is ImageFolder


def test_distributed_sampler_shards_and_set_epoch(folder):
    tf = T.Compose([T.Resize((8, 8)), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)
    key = {}
    plain = [x for x, _ in DataLoader(ds, batch_size=len(ds))][0]
    for i, s in enumerate(plain):
        key[s.numpy().tobytes()] = i

    def epoch(rank, e, sampler_cls=DistributedSampler, **kw):
        s = sampler_cls(ds, num_replicas=3, rank=rank, seed=4, **kw)
        dl = DataLoader(ds, batch_size=2, sampler=s)
        s.set_epoch(e)
        got = [key[x.numpy().tobytes()] for b, _ in dl for x in b]
        assert len(dl) == -(-len(s) // 2)
        return got

    for e in (0, 1):
        ranks = [epoch(r, e) for r in range(3)]
        assert all(len(r) == 4 for r in ranks)  # ceil(11 / 3), padded
        assert set(sum(ranks, [])) == set(range(11))
    assert epoch(0, 0) == epoch(0, 0)
    assert epoch(0, 0) != epoch(0, 1)
    # torch's own DistributedSampler is read the same way.
    from torch.utils.data.distributed import DistributedSampler as TorchDS
    assert epoch(1, 1, TorchDS) == epoch(1, 1)
    ranks = [epoch(r, 0, drop_last=True) for r in range(3)]
    assert all(len(r) == 3 for r in ranks) and len(set(sum(ranks, []))) == 9


def test_unsupported_arguments_are_named(folder):
    tf = T.Compose([T.Resize((8, 8)), T.ToTensor()])
    ds = ImageFolder(folder, transform=tf)
    with pytest.raises(ValueError, match="worker_init_fn"):
        DataLoader(ds, worker_init_fn=lambda w: None)
    with pytest.raises(ValueError, match="WeightedRandomSampler"):
        DataLoader(ds, sampler=torch.utils.data.WeightedRandomSampler([1.0] * 11, 11))
    with pytest.raises(ValueError, match="loader="):
        ImageFolder(folder, loader=lambda p: p)
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(ds, batch_sampler=[[0, 1]])
    with pytest.raises(TypeError, match="ImageFolder"):
        DataLoader(torch.utils.data.TensorDataset(torch.zeros(3)))


@pytest.mark.parametrize("tf, match", [
    (T.Compose([T.Resize((8, 8)), T.RandomErasing(), T.ToTensor()]), "RandomErasing.*Supported"),
    (T.Compose([T.Resize((8, 8)), T.Lambda(lambda x: x), T.ToTensor()]), "Lambda"),
    (T.Compose([T.Resize((8, 8))]), "ToTensor"),
    (T.Compose([T.Resize((8, 8)), T.PILToTensor(), T.Normalize(MEAN, STD)]), "float tensor"),
    (T.Compose([T.ToTensor(), T.Resize((8, 8))]), "before ToTensor"),
    (T.Compose([T.RandomCrop(8, pad_if_needed=True), T.ToTensor()]), "varying size.*approximate=True"),
    (T.Compose([T.RandomCrop(8, padding=2), T.ToTensor()]), "varying size"),
    (T.Compose([T.Resize((8, 8)), T.RandomRotation(10, center=(1, 1)), T.ToTensor()]), "center"),
])
def test_unsupported_transforms_are_named(folder, tf, match):
    with pytest.raises(UnsupportedTransformError, match=match):
        iter(DataLoader(ImageFolder(folder, transform=tf), batch_size=2))


def test_colorjitter_random_factors_run_without_approximate(folder):
    tf = T.Compose([T.Resize((16, 16)), T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ToTensor()])
    x, _ = next(iter(DataLoader(ImageFolder(folder, transform=tf), batch_size=4)))
    assert x.shape == (4, 3, 16, 16) and 0 <= x.min() and x.max() <= 1


def test_random_crop_of_varying_sizes_uniform_integer_offsets(coords, folder):
    """RandomCrop without a fixed-size transform before it: offsets uniform over every
    integer of [0, W - w] x [0, H - h] (the ends as likely as the rest), as torchvision."""
    root, h, w = coords
    tf = T.Compose([T.RandomCrop((50, 84)), T.PILToTensor()])
    loader = DataLoader(ImageFolder(root, transform=tf), batch_size=4, shuffle=True, seed=2)
    counts = np.zeros((h - 50 + 1, w - 84 + 1))
    for _ in range(150):
        x, _ = next(iter(loader))
        for s in x:
            x0, y0 = int(s[0, 0, 0]), int(s[1, 0, 0])
            assert torch.equal(s[0, 0], torch.arange(x0, x0 + 84, dtype=torch.uint8))
            counts[y0, x0] += 1
    n = counts.sum()
    for c in (counts.sum(0), counts.sum(1)):  # 7 and 11 values
        want = n / len(c)
        chi2 = ((c - want) ** 2 / want).sum()
        assert chi2 < 3 * len(c) + 10, c  # generous: p well below 1e-3 for dof 6 and 10
        assert c[0] > want / 2 and c[-1] > want / 2, c  # the ends are not halved
    # a crop larger than an image is an error, as in torchvision
    with pytest.raises(Exception, match="leaves|larger"):
        next(iter(DataLoader(ImageFolder(folder, transform=T.Compose([T.RandomCrop(60), T.ToTensor()])),
                             batch_size=11)))


# -- state_dict / load_state_dict ---------------------------------------------------------

@pytest.mark.parametrize("stop", [0, 1, 3, 6])
def test_state_dict_resumes_with_exactly_the_remaining_batches(folder, stop):
    tf = T.Compose([T.RandomResizedCrop(12), T.RandomHorizontalFlip(), T.ToTensor()])
    ds = ImageFolder(folder, transform=tf)

    def make():
        return DataLoader(ds, batch_size=3, shuffle=True, seed=21, num_workers=2)

    ref = make()
    want = batches(ref) + batches(ref)  # epochs 0 and 1: 4 batches each
    run = make()
    it = iter(run)
    got = []
    for _ in range(min(stop, 4)):
        got.append(next(it))
    if stop >= 4:
        for b in it:
            got.append(b)
        it = iter(run)
        for _ in range(stop - 4):
            got.append(next(it))
    state = run.state_dict()
    assert state == it.state_dict()
    other = make()
    other.load_state_dict(state)
    for b in other:
        got.append(b)
    if stop < 4:
        got.extend(batches(other))
    assert len(got) == len(want)
    for i, ((x, y), (wx, wy)) in enumerate(zip(got, want)):
        assert torch.equal(y, wy), "batch %d" % i
        assert torch.equal(x, wx), "batch %d" % i


def test_state_dict_with_distributed_sampler(folder):
    tf = T.Compose([T.Resize((8, 8)), T.RandomHorizontalFlip(), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)

    def make():
        s = DistributedSampler(ds, num_replicas=2, rank=1, seed=2)
        s.set_epoch(3)
        return DataLoader(ds, batch_size=2, sampler=s, seed=9)

    want = batches(make())
    dl = make()
    it = iter(dl)
    first = [next(it), next(it)]
    st = dl.state_dict()
    other = make()
    other.sampler.set_epoch(0)  # the state's epoch wins
    other.load_state_dict(st)
    rest = batches(other)
    got = first + rest
    assert len(got) == len(want) == 3
    for (x, y), (wx, wy) in zip(got, want):
        assert torch.equal(x, wx) and torch.equal(y, wy)


def test_load_state_dict_rejects_foreign_state(folder):
    ds = ImageFolder(folder, transform=T.Compose([T.Resize((8, 8)), T.ToTensor()]))
    dl = DataLoader(ds, batch_size=2)
    with pytest.raises(ValueError, match="state_dict"):
        dl.load_state_dict({"x": 1})
    st = DataLoader(ds, batch_size=3).state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        dl.load_state_dict(st)


def test_load_state_dict_is_atomic(folder):
    """A refused state changes nothing (it used to replace the seeds first, so the loader
    read another order afterwards); every key is checked and named."""
    tf = T.Compose([T.Resize((8, 8)), T.PILToTensor()])
    ds = ImageFolder(folder, transform=tf)

    def make(seed):
        return DataLoader(ds, batch_size=3, shuffle=True, seed=seed)

    want = batches(make(21))
    other = make(5)
    it = iter(other)
    next(it)
    good = other.state_dict()
    assert good["batches"] == 1 and isinstance(good["checkpoint"], str)
    corrupt = good["checkpoint"].replace('"order_digest": "', '"order_digest": "00', 1)
    assert corrupt != good["checkpoint"]
    bad_states = [
        (dict(good, epoch=good["epoch"] + 1), "checkpoint"),   # the checkpoint disagrees
        (dict(good, checkpoint=None), "checkpoint"),           # mid-epoch, no checkpoint
        (dict(good, checkpoint=corrupt), "checkpoint"),        # the engine refuses it
        (dict(good, batches=0), "checkpoint"),                 # a checkpoint at batch 0
        (dict(good, batches=99), "batches"),
        (dict(good, seed="5"), "seed"),
        (dict(good, order_seed=-1), "order_seed"),
        (dict(good, shard=[0]), "shard"),
        (dict(good, epoch=True), "epoch"),
    ]
    for key in ("epoch", "batches", "seed", "order_seed", "shard", "checkpoint"):
        st = dict(good)
        del st[key]
        bad_states.append((st, key))
    loader = make(21)
    for st, key in bad_states:
        with pytest.raises(ValueError, match="'%s'" % key):
            loader.load_state_dict(st)
    got = batches(loader)
    assert len(got) == len(want)
    for (x, y), (wx, wy) in zip(got, want):
        assert torch.equal(y, wy) and torch.equal(x, wx)
    # The good state still loads, and resumes where `other` was.
    loader.load_state_dict(good)
    rest = batches(loader)
    ref = batches(make(5))
    assert len(rest) == len(ref) - 1
    for (x, y), (wx, wy) in zip(rest, ref[1:]):
        assert torch.equal(y, wy) and torch.equal(x, wx)
