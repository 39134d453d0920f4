"""godali.torch's translation of torchvision's AutoAugment family against torchvision.

Each operation at fixed magnitudes (both signs) runs through the engine's _auto_aug
operator in its torchvision mode and through torchvision's own _apply_op on the same PIL
image (the ImageFolder path). Tolerance: bit-exact for every operation, the BILINEAR
warps (PIL's bilinear transform filter and matrices) included, except the NEAREST warps
(ShearX/Y, TranslateX/Y, Rotate), where at most 2.5% of the pixels may differ
(sampling points that land on a pixel edge go either way: a rotation by 45 or 135 degrees
puts the diagonals through the centre on edges; PIL rounds its matrix to 15 digits). The choice of
operations and magnitude bins is checked with chi-squared tests on the outputs of
one-operation policies, and a DataLoader with TrivialAugmentWide runs end to end.
"""
import json
import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image
from torchvision.transforms.autoaugment import _apply_op, InterpolationMode

import godali
from godali import fn, types
from godali.torch import (DataLoader, ImageFolder, UnsupportedTransformError, _TV_AUG_ORDER,
                          _tv_augs, _internal_op)

from conftest import make_jpeg, feature_of_version

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70)]
WARPS = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tvaa")
    return [make_jpeg(str(d / ("a%d.jpg" % i)), h, w, seed=90 + i)
            for i, (h, w) in enumerate(SIZES)]


def _run(files, policy, iters=1, fill=0.0, seed=3, interp=types.INTERP_NN):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=2, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        img = fn.decoders.image(data, output_type=types.RGB)
        out = _internal_op("_auto_aug")(img, policy=json.dumps(policy), fill_value=fill,
                                         interp_type=interp)
        pipe.set_outputs(img, out)
    got = []
    for _ in range(iters):
        a, b = pipe.run()
        got.append([(a[i].as_array().copy(), b[i].as_array().copy()) for i in range(len(a))])
    pipe.close()
    return got


def _space(space, bins, hw):
    """torchvision's own magnitude tables."""
    cls = {"rand": T.RandAugment, "wide": T.TrivialAugmentWide}[space]
    if space == "wide":
        return cls()._augmentation_space(bins)
    return cls()._augmentation_space(bins, hw)


@pytest.mark.parametrize("space,bins", [("rand", 31), ("wide", 31), ("rand", 10)])
@pytest.mark.parametrize("name", _TV_AUG_ORDER[:-1] + ["Invert"])
def test_each_op_matches_torchvision(jpegs, space, bins, name):
    augs = _tv_augs("auto" if name == "Invert" else space, bins)
    aug = dict(augs[_TV_AUG_ORDER.index(name)])
    for b in sorted({1, bins // 3, bins - 1}):
        for sign in ([1, -1] if aug["negate"] else [1]):
            a = dict(aug, negate=False)
            if sign < 0:
                a["lo"], a["hi"] = -a["lo"], -a["hi"]
                if "mags" in a:
                    a["mags"] = [-v for v in a["mags"]]
            pol = {"scheme": "rand", "bins": bins, "augs": [a], "n": 1, "m": b,
                   "torchvision": True}
            for src, got in _run(jpegs, pol)[0]:
                h, w = src.shape[:2]
                mags, signed = (_space(space, bins, (h, w))[name] if name != "Invert"
                                else (torch.tensor(0.0), False))
                mag = float(mags[b].item()) if mags.ndim > 0 else 0.0
                want = np.asarray(_apply_op(Image.fromarray(src), name, sign * mag,
                                            InterpolationMode.NEAREST, None))
                diff = np.any(got != want, axis=-1)
                what = (name, space, bins, b, sign, (h, w), int(diff.sum()))
                if name in WARPS:
                    assert diff.mean() <= 0.025, what
                else:
                    assert not diff.any(), what


@pytest.mark.parametrize("space,bins,fill", [("rand", 31, 0.0), ("wide", 31, 0.0),
                                             ("wide", 31, 7.0), ("rand", 10, 0.0)])
@pytest.mark.parametrize("name", sorted(WARPS))
def test_bilinear_warps_are_pils(jpegs, space, bins, fill, name):
    """BILINEAR: PIL's bilinear transform filter with PIL's matrices, bit-exact at every
    bin, both signs, the fill value included."""
    augs = _tv_augs(space, bins)
    aug = dict(augs[_TV_AUG_ORDER.index(name)])
    for b in range(bins):
        for sign in (1, -1):
            a = dict(aug, negate=False)
            if sign < 0:
                a["lo"], a["hi"] = -a["lo"], -a["hi"]
                if "mags" in a:
                    a["mags"] = [-v for v in a["mags"]]
            pol = {"scheme": "rand", "bins": bins, "augs": [a], "n": 1, "m": b,
                   "torchvision": True}
            for src, got in _run(jpegs, pol, fill=fill, interp=types.INTERP_LINEAR)[0]:
                h, w = src.shape[:2]
                mag = float(_space(space, bins, (h, w))[name][0][b].item())
                want = np.asarray(_apply_op(Image.fromarray(src), name, sign * mag,
                                            InterpolationMode.BILINEAR, [fill] * 3))
                diff = np.any(got != want, axis=-1)
                assert not diff.any(), (name, space, bins, b, sign, (h, w), int(diff.sum()))


def _chi2(counts, probs):
    n = sum(counts)
    return sum((c - p * n) ** 2 / (p * n) for c, p in zip(counts, probs))


def _crit999(df):  # Wilson-Hilferty bound of the chi-squared 0.999 quantile
    v = 1 - 2 / (9 * df) + 3.09 * math.sqrt(2 / (9 * df))
    return df * v ** 3


def _identify(src, got, levels):
    """Which candidate output this is (index), from a table of candidate outputs."""
    for i, c in enumerate(levels):
        if np.array_equal(got, c):
            return i
    raise AssertionError("output matches no candidate")


def test_trivial_choice_and_magnitude_bins_distribution(tmp_path):
    # A flat-grey image keeps apart: op choice via Identity / Invert / Solarize with
    # distinct outputs, and the magnitude bin through Posterize on a level with every bit.
    img = np.full((8, 8, 3), 255, np.uint8)
    Image.fromarray(img).save(str(tmp_path / "w.png"))
    files = [str(tmp_path / "w.png")] * 16
    bins = 7
    # op choice: identity vs invert vs posterize (three distinct outputs on white)
    augs = [{"name": "identity", "lo": 0, "hi": 0, "negate": False, "param": "", "rel": False},
            {"name": "invert", "lo": 0, "hi": 0, "negate": False, "param": "", "rel": False},
            {"name": "posterize", "lo": 8, "hi": 2, "negate": False, "param": "poster_mask",
             "rel": False}]
    pol = {"scheme": "trivial", "bins": bins, "augs": augs, "torchvision": True}
    # posterize(255, bits) = 255 & ~(2^(8-bits)-1): distinct per bits value
    bits = (8 - (torch.arange(bins) / ((bins - 1) / 6)).round().int()).tolist()
    levels = {255 & ~((1 << (8 - b)) - 1) for b in bits}
    op_counts = [0, 0, 0]
    bit_counts = {b: 0 for b in set(bits)}
    for batch in _run(files, pol, iters=60):
        for _, got in batch:
            v = int(got[0, 0, 0])
            assert np.all(got == v)
            if v == 0:
                op_counts[1] += 1
            elif v == 255:
                # identity, or posterize with 8 bits
                op_counts[0] += 1
            else:
                op_counts[2] += 1
                b = [b for b in set(bits) if 255 & ~((1 << (8 - b)) - 1) == v][0]
                bit_counts[b] += 1
    p8 = bits.count(8) / bins
    probs = [1 / 3 + p8 / 3, 1 / 3, (1 - p8) / 3]
    assert _chi2(op_counts, probs) < _crit999(2), op_counts
    keys = [b for b in bit_counts if b != 8]
    pb = [bits.count(b) / (bins - bits.count(8)) for b in keys]
    assert _chi2([bit_counts[b] for b in keys], pb) < _crit999(len(keys) - 1), bit_counts


def test_rand_and_auto_choice_distribution(tmp_path):
    img = np.full((8, 8, 3), 200, np.uint8)
    Image.fromarray(img).save(str(tmp_path / "g.png"))
    files = [str(tmp_path / "g.png")] * 16
    # RandAugment over the full 14-op space at magnitude 9 of 31, num_ops=1: on a flat
    # image Solarize(255 - 9*8.5 = 178.5) inverts (200 -> 55), Invert is absent, every
    # op but Solarize/Posterize(bits 7: 200 & 0xfe = 200)/Equalize/AutoContrast keeps 200
    # or blends towards it; count how often the output is 55.
    pol = {"scheme": "rand", "bins": 31, "augs": _tv_augs("rand", 31), "n": 1, "m": 9,
           "torchvision": True}
    n55 = tot = 0
    for batch in _run(files, pol, iters=40):
        for _, got in batch:
            tot += 1
            n55 += int(np.all(got == 55))
    assert _chi2([n55, tot - n55], [1 / 14, 13 / 14]) < _crit999(1), (n55, tot)
    # AutoAugment IMAGENET: sub-policy 13 is (Invert 0.6, Equalize 1.0) and sub-policy 22
    # repeats it; equalize of a flat image is a no-op, so the output is 55 exactly when one
    # of those sub-policies runs Invert (and nothing else inverts 200 to 55... Solarize
    # thresholds of the policy are <= 255 - 3*28.3 < 200, so Solarize gives 55 too).
    t = T.AutoAugment()
    subs = t._get_policies(t.policy)
    p55 = 0.0
    for sp in subs:
        # probability that an odd number of inverting stages run (each inverts 200 <-> 55)
        q = 0.0  # probability that the value ends at 55
        for op, p, b in sp:
            inv = op == "Invert" or (op == "Solarize" and 255 - b * 255 / 9 <= 200)
            if inv:
                q = q * (1 - p) + (1 - q) * p
        p55 += q / len(subs)
    pol = {"scheme": "auto", "bins": 10, "augs": _tv_augs("auto", 10), "torchvision": True,
           "sub_policies": [[[_TV_AUG_ORDER.index(o), p, -1 if b is None else b]
                             for o, p, b in sp] for sp in subs]}
    n55 = tot = 0
    for batch in _run(files, pol, iters=40):
        for _, got in batch:
            tot += 1
            n55 += int(np.all(got == 55))
    assert _chi2([n55, tot - n55], [p55, 1 - p55]) < _crit999(1), (n55, tot, p55)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tvaa_folder")
    for i, (h, w) in enumerate([(64, 80), (96, 72), (88, 88), (50, 120), (70, 70)]):
        make_jpeg(str(root / ("c%d" % (i % 2)) / ("im%d.jpg" % i)), h, w, seed=20 + i)
    return str(root)


@pytest.mark.parametrize("aug", [T.TrivialAugmentWide(), T.RandAugment(),
                                 T.AutoAugment(), T.RandAugment(num_ops=3, magnitude=20)])
def test_dataloader_imagefolder_runs(folder, aug):
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    ds = ImageFolder(folder, transform=T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), aug, T.ToTensor(),
        T.Normalize(mean, std)]))
    n = 0
    for x, y in DataLoader(ds, batch_size=2, shuffle=True):
        assert x.shape[1:] == (3, 224, 224) and x.dtype == torch.float32
        assert torch.isfinite(x).all()
        n += x.shape[0]
    assert n == 5


def test_augmix_bicubic_and_fill_refused(folder):
    for tf, match in [(T.AugMix(), "AugMix"),
                      (T.TrivialAugmentWide(interpolation=InterpolationMode.BICUBIC),
                       "BICUBIC"),
                      (T.RandAugment(fill=[1, 2, 3]), "fill")]:
        with pytest.raises((UnsupportedTransformError, ValueError), match=match):
            list(DataLoader(ImageFolder(folder, transform=T.Compose([tf, T.ToTensor()])),
                            batch_size=5))
    # BILINEAR (the reference script's default) needs no approximate=True.
    ds = ImageFolder(folder, transform=T.Compose([
        T.Resize((32, 32)), T.TrivialAugmentWide(interpolation=InterpolationMode.BILINEAR,
                                                 fill=7), T.PILToTensor()]))
    x, _ = next(iter(DataLoader(ds, batch_size=5)))
    assert x.shape == (5, 3, 32, 32)


def _v2_space(space, bins, hw):
    """transforms.v2's own magnitude tables (functions of bins, height, width)."""
    v2 = feature_of_version("torchvision.transforms.v2", "torchvision 0.15 or later")
    cls = {"rand": v2.RandAugment, "wide": v2.TrivialAugmentWide, "auto": v2.AutoAugment}
    return cls[space]._AUGMENTATION_SPACE


@pytest.mark.parametrize("interp", [InterpolationMode.NEAREST, InterpolationMode.BILINEAR])
@pytest.mark.parametrize("space,bins", [("rand", 31), ("wide", 31), ("auto", 10)])
@pytest.mark.parametrize("name", _TV_AUG_ORDER)
def test_each_v2_op_matches_torchvision_v2(jpegs, space, bins, name, interp):
    """transforms.v2's AutoAugment family: each operation as v2 applies it to a PIL image
    (its own _apply_image_or_video_transform) against the engine given godali's v2 tables
    (BILINEAR warps bit-exact, NEAREST ones as in test_each_op_matches_torchvision)."""
    v2 = feature_of_version("torchvision.transforms.v2", "torchvision 0.15 or later")
    if name == "Invert" and space != "auto" or name == "Identity" and space == "auto":
        pytest.skip("not in that augmentation space")
    table = _v2_space(space, bins, None)
    augs = _tv_augs(space, bins, v2=True)
    order = _TV_AUG_ORDER if space == "auto" else _TV_AUG_ORDER[:-1]
    aug = dict(augs[order.index(name)])
    cls = {"rand": v2.RandAugment, "wide": v2.TrivialAugmentWide, "auto": v2.AutoAugment}
    tr = cls[space](interpolation=interp)
    engine_interp = types.INTERP_NN if interp == InterpolationMode.NEAREST else \
        types.INTERP_LINEAR
    for b in sorted({1, bins // 3, bins - 1}):
        for sign in ([1, -1] if aug["negate"] else [1]):
            a = dict(aug, negate=False)
            if sign < 0:
                a["lo"], a["hi"] = -a["lo"], -a["hi"]
                if "mags" in a:
                    a["mags"] = [-v for v in a["mags"]]
            pol = {"scheme": "rand", "bins": bins, "augs": [a], "n": 1, "m": b,
                   "torchvision": True}
            for src, got in _run(jpegs, pol, interp=engine_interp)[0]:
                h, w = src.shape[:2]
                mags = table[name][0](bins, h, w)
                mag = float(mags[b]) if mags is not None else 0.0
                want = np.asarray(tr._apply_image_or_video_transform(
                    Image.fromarray(src), name, sign * mag, interp, tr._fill))
                diff = np.any(got != want, axis=-1)
                what = (name, space, bins, b, sign, (h, w), int(diff.sum()))
                if name in WARPS and interp == InterpolationMode.NEAREST:
                    assert diff.mean() <= 0.025, what
                else:
                    assert not diff.any(), what


def test_v2_solarize_thresholds_are_v2s(tmp_path):
    """v2's thresholds are 255.0 * linspace(1, 0)[bin], in double; v1's are float32
    linspace(255, 0)[bin]: at some bins they lie on either side of an integer, and that
    value solarizes differently. Every bin of TrivialAugmentWide on an image holding all
    256 values (a PNG, lossless) against v2's own Solarize."""
    v2 = feature_of_version("torchvision.transforms.v2", "torchvision 0.15 or later")
    vals = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    path = str(tmp_path / "ramp.png")
    Image.fromarray(vals).save(path)
    k = _TV_AUG_ORDER.index("Solarize")
    a = _tv_augs("wide", 31, v2=True)[k]
    tr = v2.TrivialAugmentWide()
    differ = 0
    for b in range(31):
        pol = {"scheme": "rand", "bins": 31, "augs": [a], "n": 1, "m": b,
               "torchvision": True}
        (src, got), = _run([path], pol)[0]
        mag = float(v2.TrivialAugmentWide._AUGMENTATION_SPACE["Solarize"][0](31, 16, 16)[b])
        want = np.asarray(tr._apply_image_or_video_transform(
            Image.fromarray(src), "Solarize", mag, InterpolationMode.NEAREST, tr._fill))
        assert np.array_equal(got, want), b
        v1 = np.asarray(_apply_op(Image.fromarray(src), "Solarize",
                                  float(T.TrivialAugmentWide()._augmentation_space(31)
                                        ["Solarize"][0][b]), InterpolationMode.NEAREST, None))
        differ += not np.array_equal(v1, want)
    assert differ > 0  # the v1 table would not do
