"""Faithfulness of godali.torch against torch's own DataLoader: the same torchvision
dataset and transform read by torch.utils.data.DataLoader (PIL + torchvision, the
reference) and by godali.torch.DataLoader, on real photographs (tests/data/corpus:
Pillow's and libjpeg-turbo's test images, licences there) and on files made from them
with PIL (EXIF orientations 1-8, 16-bit grey PNG, a rotated TIFF).

Tolerance: bit-exact (uint8 batches equal) for every deterministic transform, float
batches within 1e-6 (ToTensor's division); RandomResizedCrop's DCT-domain downscale,
godali's default, within the figures that docs/pytorch.md and the log line state, and
bit-exact with exact=True.
"""

import logging
import os
import shutil

import numpy as np
import pytest
import torch
import torchvision.datasets as D
import torchvision.transforms as T
from PIL import Image, ImageOps

import godali.torch as gt
from conftest import missing_reference

# Bit-exact references under Pillow 13 too (conftest: the order of its resize passes).
pytestmark = pytest.mark.usefixtures("pillow_horizontal_first")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "tests", "data", "corpus")
PHOTOS = ["pillow/flower.jpg", "pillow/flower2.jpg", "pillow/exif_typeerror.jpg",
          "pillow/exif-72dpi-int.jpg", "pillow/app13-multiple.jpg",
          "libjpeg-turbo/testorig.jpg"]
HOPPER = ["pillow/hopper_orientation_%d.jpg" % o for o in range(2, 9)]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """{"photos", "orient", "grey16", "tiff"}: ImageFolder roots."""
    if not os.path.isdir(CORPUS):
        missing_reference("no image corpus (tests/data/corpus)")
    base = tmp_path_factory.mktemp("faithful")
    out = {}

    def folder(name, cls):
        d = base / name / cls
        d.mkdir(parents=True, exist_ok=True)
        out[name] = str(base / name)
        return d

    d = folder("photos", "a")
    for i, p in enumerate(PHOTOS):
        shutil.copy(os.path.join(CORPUS, p), str(d / ("%d.jpg" % i)))
    # Orientation 1-8 on a photograph (PIL writes the tag), and Pillow's own
    # hopper_orientation_N files; a second class so that labels vary.
    d = folder("orient", "made")
    photo = Image.open(os.path.join(CORPUS, "pillow/flower2.jpg"))
    for o in range(1, 9):
        ex = Image.Exif()
        ex[0x0112] = o
        photo.save(str(d / ("o%d.jpg" % o)), exif=ex, quality=90)
    d = folder("orient", "pillow")
    for p in HOPPER:
        shutil.copy(os.path.join(CORPUS, p), str(d / os.path.basename(p)))
    # 16-bit grey PNGs (PIL mode "I"): a photograph's luma spread over 0..1023, so that
    # clipping (PIL) and scaling to 8 bits give different pixels.
    d = folder("grey16", "a")
    lum = np.asarray(photo.convert("L")).astype(np.uint16)
    for k, mul in enumerate((4, 1, 257)):
        Image.fromarray((lum * mul).astype(np.uint16)).save(str(d / ("g%d.png" % k)))
    # TIFF with an orientation tag: PIL's loader transposes TIFFs on load.
    d = folder("tiff", "a")
    for o in (1, 3, 6, 8):
        ex = Image.Exif()
        ex[0x0112] = o
        photo.crop((0, 0, 120, 90)).save(str(d / ("t%d.tif" % o)), exif=ex)
    return out


def _batches(ds, exact=False, seed=11):
    """(torch's batch, godali's batch) of the whole dataset, in order."""
    n = len(ds)
    (want, wl), = list(torch.utils.data.DataLoader(ds, batch_size=n))
    (got, gl), = list(gt.DataLoader(ds, batch_size=n, seed=seed, exact=exact))
    assert torch.equal(wl, gl)
    assert got.shape == want.shape and got.dtype == want.dtype
    return want, got


def _levels(want, got):
    """Per-image (mean, max) absolute difference in 8-bit levels."""
    d = (want.double() - got.double()).abs()
    if want.is_floating_point():
        d = d * 255
    d = d.reshape(d.shape[0], -1)
    return d.mean(1).numpy(), d.max(1).values.numpy()


def _exact(want, got):
    if want.is_floating_point():
        assert torch.allclose(want, got, rtol=0, atol=1e-6), float((want - got).abs().max())
    else:
        bad = [i for i in range(len(want)) if not torch.equal(want[i], got[i])]
        assert not bad, ("images differ", bad, _levels(want, got))


DETERMINISTIC = {
    "resize_hw": T.Compose([T.Resize((64, 80)), T.PILToTensor()]),
    "resize_center_crop": T.Compose([T.Resize(72), T.CenterCrop(64), T.ToTensor()]),
    "resize_bicubic": T.Compose([T.Resize(57, interpolation=T.InterpolationMode.BICUBIC),
                                 T.CenterCrop((50, 56)), T.PILToTensor()]),
    # NEAREST at sizes whose column choice depends on PIL's accumulated position
    "nearest_ties": T.Compose([T.Resize((45, 62), interpolation=T.InterpolationMode.NEAREST),
                               T.PILToTensor()]),
    "nearest_int": T.Compose([T.Resize(91, interpolation=T.InterpolationMode.NEAREST),
                              T.CenterCrop(77), T.PILToTensor()]),
    "flips": T.Compose([T.Resize((40, 52)), T.RandomHorizontalFlip(1.0),
                        T.RandomVerticalFlip(1.0), T.PILToTensor()]),
    # RandomResizedCrop with a deterministic window (scale 1, an unreachable ratio: 10
    # failed attempts, then torchvision's centred fallback), after another transform:
    # the window is resampled alone, as PIL crops before it resizes.
    "later_rrc": T.Compose([T.Resize((150, 210)),
                            T.RandomResizedCrop((48, 40), scale=(1, 1), ratio=(3, 3)),
                            T.PILToTensor()]),
    "later_rrc_tall": T.Compose([T.Resize((150, 210)),
                                 T.RandomResizedCrop(40, scale=(1, 1), ratio=(0.3, 0.3)),
                                 T.PILToTensor()]),
    "rotation_nearest": T.Compose([T.Resize((60, 84)), T.RandomRotation((30, 30)),
                                   T.PILToTensor()]),
    "pil_to_tensor_convert": T.Compose([T.CenterCrop(100), T.PILToTensor(),
                                        T.ConvertImageDtype(torch.float32)]),
}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_transforms_bit_exact(folders, name):
    ds = D.ImageFolder(folders["photos"], DETERMINISTIC[name])
    _exact(*_batches(ds))


def test_nearest_case_has_ties():
    """The nearest_ties sizes do exercise PIL's accumulated position: the product
    (i + 0.5) * scale picks another column somewhere (else the test above proves
    nothing about ties)."""
    for n, o in ((800, 62), (480, 62), (300, 62), (227, 62), (531, 45), (360, 45)):
        s = float(np.float32(n)) / o
        pos, acc = s * 0.5, []
        for _ in range(o):
            acc.append(int(pos))
            pos += s
        if acc != [int(np.floor((i + 0.5) * s)) for i in range(o)]:
            return
    pytest.fail("no tie among the photographs' sizes")


def test_normalize_within_float_rounding(folders):
    """ToTensor + Normalize fold into one multiply-add per element: float32 rounding of
    torchvision's two steps (the documented 1e-5)."""
    tf = T.Compose([T.Resize(72), T.CenterCrop(64), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    want, got = _batches(D.ImageFolder(folders["photos"], tf))
    assert torch.allclose(want, got, rtol=0, atol=1e-5), float((want - got).abs().max())


# -- EXIF orientation --------------------------------------------------------------


def test_exif_orientation_not_applied_as_pil(folders):
    """torchvision's loader (Image.open + convert("RGB")) ignores the EXIF Orientation
    tag; the drop-in does too, bit for bit, on orientations 1-8."""
    root = folders["orient"]
    # the files carry the tag: applying it changes orientations 2-8
    for cls in ("made", "pillow"):
        for f in sorted(os.listdir(os.path.join(root, cls))):
            im = Image.open(os.path.join(root, cls, f))
            o = im.getexif().get(0x0112, 1)
            assert o == (int(f[1]) if cls == "made" else int(f.split("_")[-1][0]))
            if o != 1:
                up = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
                plain = np.asarray(im.convert("RGB"))
                assert up.shape != plain.shape or not np.array_equal(up, plain), f
    for tf in (T.Compose([T.CenterCrop((96, 120)), T.PILToTensor()]),
               T.Compose([T.Resize((64, 64)), T.PILToTensor()])):
        ds = D.ImageFolder(root, tf)
        _exact(*_batches(ds))
    # RandomResizedCrop as the first transform decodes through the random-crop decoder:
    # a deterministic window there must come out unrotated too.
    ds = D.ImageFolder(root, T.Compose([T.RandomResizedCrop((32, 48), scale=(1, 1),
                                                            ratio=(3, 3)),
                                        T.PILToTensor()]))
    _exact(*_batches(ds, exact=True))


def test_dali_decoder_still_applies_orientation(folders):
    """fn.decoders.image keeps DALI's adjust_orientation=True default (DALI's documented
    behaviour); like_pil=True is the drop-in's PIL loader."""
    import godali
    from godali import fn, types
    f = os.path.join(folders["orient"], "made", "o6.jpg")
    im = Image.open(f)
    pipe = godali.Pipeline(batch_size=1, num_threads=1, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=[f])
        pipe.set_outputs(fn.decoders.image(data, output_type=types.RGB),
                         fn.decoders.image(data, output_type=types.RGB, like_pil=True),
                         fn.decoders.image(data, output_type=types.RGB,
                                           adjust_orientation=False))
    up, pil, off = [o[0].as_array() for o in pipe.run()]
    pipe.close()
    assert np.array_equal(up, np.asarray(ImageOps.exif_transpose(im).convert("RGB")))
    assert np.array_equal(pil, np.asarray(im.convert("RGB")))
    assert np.array_equal(off, pil)


def test_tiff_orientation_applied_as_pil(folders):
    """PIL's TIFF loader transposes on load (the one format where Image.open applies the
    tag): the drop-in does the same."""
    shapes = {np.asarray(Image.open(os.path.join(folders["tiff"], "a", f)).convert("RGB")).shape
              for f in os.listdir(os.path.join(folders["tiff"], "a"))}
    assert shapes == {(90, 120, 3), (120, 90, 3)}
    ds = D.ImageFolder(folders["tiff"], T.Compose([T.CenterCrop(80), T.PILToTensor()]))
    _exact(*_batches(ds))


# -- 16-bit grey --------------------------------------------------------------------


def test_grey16_png_clipped_as_pil(folders):
    """PIL opens a 16-bit grey PNG as mode "I" and convert("RGB") clips it to 255;
    godali's drop-in clips too (DALI's decoder scales it to 8 bits)."""
    f = os.path.join(folders["grey16"], "a", "g0.png")
    im = Image.open(f)
    a = np.asarray(im.convert("RGB"))[..., 0]
    raw = np.asarray(im).astype(np.int64)
    assert im.mode in ("I", "I;16") and raw.max() > 255
    assert np.array_equal(a, np.minimum(raw, 255))  # PIL's rule, on this Pillow
    ds = D.ImageFolder(folders["grey16"], T.Compose([T.CenterCrop(160), T.PILToTensor()]))
    _exact(*_batches(ds))
    ds = D.ImageFolder(folders["grey16"], T.Compose([T.Resize((60, 80)), T.ToTensor()]))
    _exact(*_batches(ds))


# -- transforms recognised by identity ----------------------------------------------


class ToTensor:
    """timm's kind of ToTensor: a tensor of the uint8 values, not divided by 255."""

    def __call__(self, pic):
        return torch.from_numpy(np.array(pic, np.uint8)).permute(2, 0, 1).float()


class CenterCrop(T.CenterCrop):
    """A subclass that overrides forward: not torchvision's CenterCrop any more."""

    def forward(self, img):
        return super().forward(img).transpose(Image.FLIP_LEFT_RIGHT)


class FixedWindowRRC(T.RandomResizedCrop):
    """Overrides get_params (the window): not torchvision's RandomResizedCrop."""

    @staticmethod
    def get_params(img, scale, ratio):
        return 0, 0, 32, 32


class LoggingCompose(T.Compose):
    """Overrides __call__: godali would not run it."""

    def __call__(self, img):
        return super().__call__(img)


class PlainResize(T.Resize):
    """A subclass that only renames torchvision's Resize: still torchvision's."""


@pytest.fixture
def installed(caplog):
    gt.install()
    caplog.set_level(logging.INFO, logger="godali.torch")
    yield caplog
    gt.uninstall()


@pytest.mark.parametrize("tf,served,why", [
    (T.Compose([T.Resize((64, 80)), ToTensor()]), False, "is not torchvision's ToTensor"),
    (T.Compose([T.Resize((64, 80)), CenterCrop(48), T.ToTensor()]), False,
     "overrides forward"),
    (T.Compose([FixedWindowRRC(40), T.PILToTensor()]), False, "overrides get_params"),
    (LoggingCompose([T.Resize((64, 80)), T.PILToTensor()]), False, "overrides __call__"),
    (T.Compose([PlainResize((64, 80)), T.CenterCrop(48), T.ToTensor()]), True, None),
    (T.Compose([T.Resize((64, 80)), T.CenterCrop(48), T.ToTensor()]), True, None),
])
def test_transforms_recognised_by_identity(folders, installed, tf, served, why):
    ds = D.ImageFolder(folders["photos"], tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=len(ds))
    assert isinstance(loader, gt.DataLoader) == served
    line = [r.getMessage() for r in installed.records if r.name == "godali.torch"][-1]
    if served:
        assert "served by godali" in line
    else:
        assert "torch's DataLoader keeps it" in line and why in line, line
    # whoever serves it, the batch is what torch computes with the user's own classes
    (want, _), = list(gt._TorchDataLoader()(ds, batch_size=len(ds)))
    (got, _), = list(loader)
    _exact(want, got)


# -- RandomResizedCrop's DCT-domain downscale ---------------------------------------


def test_random_resized_crop_dct_logged_measured_and_exact(folders, caplog):
    """RandomResizedCrop first: windows at least twice the output are scaled down in
    the DCT domain by default; the log line says so; the difference stays within the
    documented figures; exact=True (install(exact=True)) gives torchvision's pixels."""
    caplog.set_level(logging.INFO, logger="godali.torch")
    tf = T.Compose([T.RandomResizedCrop((48, 40), scale=(1, 1), ratio=(3, 3)),
                    T.PILToTensor()])
    ds = D.ImageFolder(folders["photos"], tf)
    gt.install()
    try:
        torch.utils.data.DataLoader(ds, batch_size=2)
    finally:
        gt.uninstall()
    line = [r.getMessage() for r in caplog.records if r.name == "godali.torch"][-1]
    assert "served by godali" in line and "DCT domain" in line and "exact=True" in line
    gt.install(exact=True)
    try:
        loader = torch.utils.data.DataLoader(ds, batch_size=2)
        assert loader.exact
    finally:
        gt.uninstall()
    line = [r.getMessage() for r in caplog.records if r.name == "godali.torch"][-1]
    assert "served by godali" in line and "DCT" not in line

    want, got = _batches(ds)
    mean, mx = _levels(want, got)
    assert (mx > 0).any()            # the downscale is in use on these windows
    assert mean.max() <= 5 and mx.max() <= 91, (mean, mx)
    _exact(*_batches(ds, exact=True))


def test_random_resized_crop_exact_same_windows(folders):
    """exact=True changes only the decoding, not the random windows: with the same seed
    the default and exact batches differ only where the window was downscaled, and by
    the documented amount."""
    tf = T.Compose([T.RandomResizedCrop(64), T.PILToTensor()])
    ds = D.ImageFolder(folders["photos"], tf)
    means = []
    for seed in range(4):
        (a, _), = list(gt.DataLoader(ds, batch_size=len(ds), seed=seed))
        (b, _), = list(gt.DataLoader(ds, batch_size=len(ds), seed=seed, exact=True))
        m, mx = _levels(b, a)
        assert m.max() <= 5 and mx.max() <= 91, (m, mx)
        means += m.tolist()
    assert min(means) == 0 and max(means) > 0
