"""What torchvision's reference classification script gives DataLoader, served by godali:
preset objects that wrap a Compose (a class whose __call__ only returns
self.transforms(img)), torchvision's weights.transforms() (the ImageClassification
preset), a trailing RandomErasing, transforms.v2's core classes, and batch-level
collate_fns (mixup/cutmix style) applied to the (image, target) samples torch would
pass them.

The preset classes here are this file's own, with the reference script's structure.
References: torch's own DataLoader (gt._TorchDataLoader()) on the same dataset objects,
and dataset[i] (torchvision running the transform in Python). Tolerances: uint8 outputs
bit-exact; float outputs 1e-5 (float32 rounding of the folded normalisation).
RandomErasing and the collate_fns draw from torch's generator in this process, in the
same order as torch's DataLoader with num_workers=0, so the batches are compared for
equality after the same torch.manual_seed.
"""

import logging

import pytest
import torch
import torch.utils.data as tud
import torchvision
import torchvision.transforms as T

import godali.torch as gt
from conftest import make_jpeg, feature_of_version

# Bit-exact references under Pillow 13 too (conftest: the order of its resize passes).
pytestmark = pytest.mark.usefixtures("pillow_horizontal_first")

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    d = tmp_path_factory.mktemp("presets")
    sizes = [(40, 60), (61, 45), (50, 53), (45, 71), (64, 49), (57, 36), (48, 48), (52, 66),
             (70, 44), (39, 58)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(d / ("c%d" % (i % 3)) / ("p%d.jpg" % i)), h, w, seed=900 + i)
    return str(d)


class EvalPreset:
    """The reference script's eval preset, structurally: a Compose kept in
    self.transforms, and a __call__ that only delegates to it."""

    def __init__(self, *, crop_size, resize_size, interpolation=T.InterpolationMode.BILINEAR):
        self.transforms = T.Compose([
            T.Resize(resize_size, interpolation=interpolation), T.CenterCrop(crop_size),
            T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])

    def __call__(self, img):
        return self.transforms(img)


class TrainPreset:
    def __init__(self, *, crop_size, erase=0.0):
        steps = [T.RandomResizedCrop(crop_size), T.RandomHorizontalFlip(0.5), T.PILToTensor(),
                 T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
        if erase > 0:
            steps.append(T.RandomErasing(p=erase))
        self.transforms = T.Compose(steps)

    def __call__(self, picture):
        """A docstring and another parameter name: still only a delegation."""
        return self.transforms(picture)


class DoesMore(EvalPreset):
    def __call__(self, img):
        return self.transforms(img) * 2


class PropertyPreset:
    def __init__(self):
        self._n = 0

    @property
    def transforms(self):
        self._n += 1
        return T.Compose([T.Resize((16, 16)), T.PILToTensor()])

    def __call__(self, img):
        return self.transforms(img)


class ModulePreset(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.transforms = T.Compose([T.CenterCrop((20, 24)), T.PILToTensor()])

    def forward(self, img):
        return self.transforms(img)


def torch_loader(*a, **kw):
    return gt._TorchDataLoader()(*a, **kw)


def batches(loader):
    return [tuple(t.clone() for t in b) for b in loader]


def assert_same(got, ref, atol):
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert len(g) == len(r)
        for a, b in zip(g, r):
            assert a.shape == b.shape and a.dtype == b.dtype
            assert (a.double() - b.double()).abs().max().item() <= atol


def served(ds, caplog, **kw):
    caplog.set_level(logging.INFO, logger="godali.torch")
    gt.install()
    try:
        loader = tud.DataLoader(ds, **kw)
    finally:
        gt.uninstall()
    return loader, caplog.records[-1].getMessage()


# -- presets ----------------------------------------------------------------------------

def test_eval_preset_is_served_and_matches_torch(root, caplog):
    ds = torchvision.datasets.ImageFolder(root, EvalPreset(crop_size=28, resize_size=32))
    loader, line = served(ds, caplog, batch_size=4, sampler=tud.SequentialSampler(ds),
                          pin_memory=True)
    assert type(loader) is gt.DataLoader, line
    assert "served by godali" in line
    assert_same(batches(loader), batches(torch_loader(ds, batch_size=4)), 1e-5)


def test_preset_recognition_is_by_behaviour_not_by_name(root, caplog):
    # A module whose forward only delegates is a preset too.
    ds = torchvision.datasets.ImageFolder(root, ModulePreset())
    loader, _ = served(ds, caplog, batch_size=5)
    assert type(loader) is gt.DataLoader
    assert_same(batches(loader), batches(torch_loader(ds, batch_size=5)), 0)
    # ... but not with a hook on it, nor when __call__ does anything else, nor when
    # .transforms is a property (each call could give another pipeline).
    hooked = ModulePreset()
    hooked.register_forward_hook(lambda m, i, o: o + 1)
    for tf, why in ((hooked, "hooks"), (DoesMore(crop_size=28, resize_size=32),
                                         "__call__ does more than return self.transforms"),
                    (PropertyPreset(), ".transforms is a property")):
        ds = torchvision.datasets.ImageFolder(root, tf)
        loader, line = served(ds, caplog, batch_size=5)
        assert type(loader) is not gt.DataLoader, line
        assert "torch's DataLoader keeps it" in line and why in line, line


def test_weights_transforms_preset_is_translated_exactly(root, caplog):
    from torchvision.transforms._presets import ImageClassification
    tf = ImageClassification(crop_size=30, resize_size=34,
                             interpolation=T.InterpolationMode.BICUBIC, mean=(0.5, 0.4, 0.3),
                             std=(0.2, 0.25, 0.3))
    ds = torchvision.datasets.ImageFolder(root, tf)
    loader, line = served(ds, caplog, batch_size=3)
    assert type(loader) is gt.DataLoader, line
    got = torch.cat([x for x, _ in loader])
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    assert got.shape == (10, 3, 30, 30)
    assert (got - ref).abs().max().item() <= 1e-5
    # The real weights' preset (no download: transforms() only builds the preset).
    ds = torchvision.datasets.ImageFolder(
        root, torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms())
    loader, line = served(ds, caplog, batch_size=5)
    assert type(loader) is gt.DataLoader, line
    got = next(iter(loader))[0]
    assert (got - torch.stack([ds[i][0] for i in range(5)])).abs().max().item() <= 1e-5

    class Mine(ImageClassification):  # a subclass may compute anything
        pass
    ds = torchvision.datasets.ImageFolder(root, Mine(crop_size=30))
    loader, line = served(ds, caplog, batch_size=5)
    assert type(loader) is not gt.DataLoader and "Mine" in line, line


def test_train_preset_with_random_erasing_matches_torch(root, caplog):
    # Deterministic geometry, so that only RandomErasing draws from torch's generator:
    # after the same manual_seed both loaders give the same batches.
    tf = T.Compose([T.CenterCrop((24, 28)), T.PILToTensor(), T.ConvertImageDtype(torch.float),
                    T.Normalize(MEAN, STD), T.RandomErasing(p=0.6, value="random")])
    ds = torchvision.datasets.ImageFolder(root, tf)
    torch.manual_seed(5)
    loader, line = served(ds, caplog, batch_size=4)
    assert type(loader) is gt.DataLoader, line
    got = batches(loader)
    torch.manual_seed(5)
    ref = batches(torch_loader(ds, batch_size=4))
    assert_same(got, ref, 1e-5)
    plain = torchvision.datasets.ImageFolder(root, T.Compose(list(tf.transforms[:-1])))
    base = next(iter(torch_loader(plain, batch_size=10)))[0]
    godali_x = torch.cat([g[0] for g in got])
    erased = sum(int((x - b).abs().max() > 1e-4) for x, b in zip(godali_x, base))
    assert 0 < erased < 10  # p=0.6 on 10 images erased some, not all

    # The whole train preset (random crops and flips by godali's engine): served, and
    # RandomErasing's rectangles as torchvision draws them.
    ds = torchvision.datasets.ImageFolder(root, TrainPreset(crop_size=32, erase=1.0))
    loader, line = served(ds, caplog, batch_size=5, sampler=tud.RandomSampler(ds))
    assert type(loader) is gt.DataLoader, line
    for x, _ in loader:
        assert x.shape == (5, 3, 32, 32)
        zero = (x == 0).all(1)  # value 0: erased pixels are 0 in every channel
        for z in zero:
            if not z.any():
                continue  # 10 attempts without a rectangle that fits: not erased
            rows, cols = z.any(1).sum().item(), z.any(0).sum().item()
            assert rows * cols == z.sum().item()  # one rectangle
            # area in scale=(0.02, 0.33) of 32 x 32, give or take the rounding of h and w
            assert 0.02 * 1024 * 0.5 <= rows * cols <= 0.33 * 1024 * 1.5


def test_random_erasing_not_last_stays_with_torch(root, caplog):
    tf = T.Compose([T.Resize((8, 8)), T.ToTensor(), T.RandomErasing(), T.Normalize(MEAN, STD)])
    loader, line = served(torchvision.datasets.ImageFolder(root, tf), caplog, batch_size=2)
    assert type(loader) is not gt.DataLoader and "RandomErasing" in line, line


# -- collate_fn -----------------------------------------------------------------------------

class Mix(torch.nn.Module):
    """A batch-level augmentation in the manner of mixup: one-hot targets, the batch
    blended with itself rolled by one, the weight drawn from torch's generator."""

    def __init__(self, classes):
        super().__init__()
        self.classes = classes

    def forward(self, x, y):
        y = torch.nn.functional.one_hot(y, self.classes).to(x.dtype)
        lam = float(torch.rand(1))
        return x * lam + x.roll(1, 0) * (1 - lam), y * lam + y.roll(1, 0) * (1 - lam)


def test_batch_collate_fn_gets_what_torch_gives_it(root, caplog):
    ds = torchvision.datasets.ImageFolder(root, EvalPreset(crop_size=20, resize_size=24))
    mix = T.RandomChoice([Mix(3), Mix(3)])
    collate = lambda batch: mix(*tud.default_collate(batch))  # noqa: E731 (the script's)
    torch.manual_seed(11)
    loader, line = served(ds, caplog, batch_size=4, sampler=tud.RandomSampler(ds),
                          collate_fn=collate, pin_memory=True)
    assert type(loader) is gt.DataLoader, line
    seen = []
    for x, y in loader:
        assert x.shape[1:] == (3, 20, 20) and y.shape[1] == 3
        assert torch.allclose(y.sum(1), torch.ones(len(y)))
        seen.append(len(x))
    assert seen == [4, 4, 2]
    # In order and with the same seed, exactly torch's batches.
    torch.manual_seed(3)
    got = batches(gt.DataLoader(ds, batch_size=4, collate_fn=collate))
    torch.manual_seed(3)
    ref = batches(torch_loader(ds, batch_size=4, collate_fn=collate))
    assert_same(got, ref, 1e-5)


def test_collate_fn_receives_the_samples(root):
    ds = torchvision.datasets.ImageFolder(root, T.Compose([T.Resize((6, 5)), T.PILToTensor()]),
                                          target_transform=lambda t: "class%d" % t)
    got = list(gt.DataLoader(ds, batch_size=3, drop_last=True, collate_fn=lambda b: b))
    assert len(got) == 3
    flat = [s for b in got for s in b]
    for i, (img, target) in enumerate(flat):
        ref_img, ref_target = ds[i]
        assert torch.equal(img, ref_img) and target == ref_target


# -- transforms.v2 ------------------------------------------------------------------------

def test_v2_pipelines_are_served(root, caplog):
    v2 = feature_of_version("torchvision.transforms.v2", "torchvision 0.15 or later")
    ev = v2.Compose([v2.Resize(32, antialias=True), v2.CenterCrop(28), v2.ToImage(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD),
                     v2.ToPureTensor()])
    ds = torchvision.datasets.ImageFolder(root, ev)
    loader, line = served(ds, caplog, batch_size=4)
    assert type(loader) is gt.DataLoader, line
    assert_same(batches(loader), batches(torch_loader(ds, batch_size=4)), 1e-5)
    tr = v2.Compose([v2.RandomResizedCrop(24), v2.RandomHorizontalFlip(), v2.PILToTensor(),
                     v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD),
                     v2.RandomErasing(p=0.5), v2.ToPureTensor()])
    loader, line = served(torchvision.datasets.ImageFolder(root, tr), caplog, batch_size=5)
    assert type(loader) is gt.DataLoader, line
    assert next(iter(loader))[0].shape == (5, 3, 24, 24)
    # v2's auto-augment classes are translated (tests/test_tv_autoaug.py compares each
    # operation with v2's).
    bilinear = T.InterpolationMode.BILINEAR
    aa = v2.Compose([v2.RandomResizedCrop(24), v2.TrivialAugmentWide(),
                     v2.RandAugment(interpolation=bilinear), v2.AutoAugment(),
                     v2.PILToTensor()])
    loader, line = served(torchvision.datasets.ImageFolder(root, aa), caplog, batch_size=5)
    assert type(loader) is gt.DataLoader, line
    assert next(iter(loader))[0].shape == (5, 3, 24, 24)
    # v2 classes godali does not translate, a fill per input type, and tensor-backend
    # pipelines (torchvision's tensor kernels after PILToTensor) stay torch's, saying why.
    per_type = v2.TrivialAugmentWide(fill={torchvision.tv_tensors.Image: 3, "others": 0})
    for tf, why in ((v2.Compose([v2.RandomResizedCrop(24), per_type, v2.PILToTensor()]),
                     "fill"),
                    (v2.Compose([v2.RandomResizedCrop(24), v2.AugMix(), v2.PILToTensor()]),
                     "AugMix"),
                    (v2.Compose([v2.PILToTensor(), v2.Resize(32), v2.CenterCrop(28)]),
                     "after the tensor conversion")):
        loader, line = served(torchvision.datasets.ImageFolder(root, tf), caplog,
                              batch_size=2)
        assert type(loader) is not gt.DataLoader and why in line, line
