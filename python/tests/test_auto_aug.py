"""godali.auto_aug against DALI's documented behaviour.

Each augmentation at a fixed magnitude is compared with a numpy / PIL reference of DALI's
definition (nvidia.dali.auto_aug.augmentations): uint8 tolerance mean 0.3 / max 1 level for
the arithmetic ones; the warps with INTERP_NN against PIL's affine transform, allowing
0.5% of pixels to differ (points that land exactly on a pixel edge may go either way).
The choice distributions are checked with chi-squared tests (here on outputs; in
ops/image/autoaug_test.go on the sampler itself).
"""

import math
import os

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types
from godali.auto_aug import augmentations as A
from godali.auto_aug import auto_augment, rand_augment, trivial_augment, Policy

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70)]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("autoaug")
    return [make_jpeg(str(d / ("a%d.jpg" % i)), h, w, seed=70 + i) for i, (h, w) in enumerate(SIZES)]


def _run(files, graph, seed=5, iters=1, batch=None):
    pipe = godali.Pipeline(batch_size=batch or len(files), num_threads=2, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    got = []
    for _ in range(iters):
        res = pipe.run()
        got.append([[o[i].as_array().copy() for i in range(len(o))] for o in res])
    pipe.close()
    return got[0] if iters == 1 else got


def _sat(v):
    return np.clip(np.floor(np.asarray(v, np.float64) + 0.5), 0, 255).astype(np.uint8)


def _check(got, want, what, mean=0.3, mx=1):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    assert d.mean() <= mean and d.max() <= mx, (what, d.mean(), d.max())


def _mag(lo, hi, bins, b):
    return np.linspace(lo, hi, bins)[b]


def _pil_affine(img, data):
    im = Image.fromarray(img)
    return np.asarray(im.transform(im.size, Image.AFFINE, data, Image.NEAREST,
                                   fillcolor=(128, 128, 128)))


def _check_warp(got, want, what):
    assert got.shape == want.shape
    frac = np.mean(np.any(got != want, axis=-1))
    assert frac <= 0.005, (what, frac)


def _equalize_ref(img):
    # OpenCV's equalizeHist per channel, written with numpy.
    out = np.empty_like(img)
    for c in range(img.shape[2]):
        ch = img[..., c]
        hist = np.bincount(ch.ravel(), minlength=256)
        first = np.nonzero(hist)[0][0]
        total = ch.size
        if hist[first] == total:
            out[..., c] = ch
            continue
        scale = np.float32(255.0 / (total - hist[first]))
        cum = np.cumsum(hist) - hist[first]
        lut = np.clip(np.rint(cum.astype(np.float32) * scale), 0, 255).astype(np.uint8)
        lut[first] = 0
        out[..., c] = lut[ch]
    return out


def _sharp_ref(img, m):
    blur = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float64) / 13
    k = -m * blur
    k[1, 1] += 1 + m
    p = np.pad(img.astype(np.float64), ((1, 1), (1, 1), (0, 0)), mode="reflect")
    h, w = img.shape[:2]
    acc = sum(k[dy, dx] * p[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3))
    return _sat(acc)


RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
YIQ2RGB = np.array([[1, 0.956, 0.621], [1, -0.272, -0.647], [1, -1.107, 1.705]])


def _color_ref(img, s):
    m = YIQ2RGB @ np.diag([1, s, s]) @ RGB2YIQ
    return _sat(img.astype(np.float64) @ m.T)


def _contrast_ref(img, f):
    center = (img.reshape(-1, 3).mean(0) * np.array([0.299, 0.587, 0.114])).sum()
    return _sat(center + (img.astype(np.float64) - center) * f)


def _autocontrast_ref(img):
    out = img.copy()
    for c in range(3):
        lo, hi = int(img[..., c].min()), int(img[..., c].max())
        if hi > lo:
            out[..., c] = _sat((img[..., c].astype(np.float64) - lo) * (255.0 / (hi - lo)))
    return out


BINS = 11
CASES = [
    # (augmentation with its range, bin, reference(img, magnitude), kind)
    (A.shear_x.augmentation((0, 0.3), False), 7,
     lambda im, m: _pil_affine(im, (1, -m, 0, 0, 1, 0)), "warp"),
    (A.shear_y.augmentation((0, 0.3), False), 4,
     lambda im, m: _pil_affine(im, (1, 0, 0, -m, 1, 0)), "warp"),
    (A.translate_x_no_shape.augmentation((0, 25), False), 3,
     lambda im, m: _pil_affine(im, (1, 0, -m, 0, 1, 0)), "warp"),
    (A.translate_y_no_shape.augmentation((0, 25), False), 6,
     lambda im, m: _pil_affine(im, (1, 0, 0, 0, 1, -m)), "warp"),
    (A.rotate.augmentation((0, 30), False), 8,
     lambda im, m: np.asarray(Image.fromarray(im).rotate(m, Image.NEAREST,
                                                          fillcolor=(128, 128, 128))), "warp"),
    (A.brightness.augmentation((0, 0.9), False), 5,
     lambda im, m: _sat(im.astype(np.float64) * (1 + m)), "u8"),
    (A.contrast.augmentation((0, 0.9), False), 9, lambda im, m: _contrast_ref(im, 1 + m), "u8"),
    (A.color.augmentation((0.1, 1.9), False, None), 2, _color_ref, "u8"),
    (A.sharpness.augmentation((0, 0.9), False), 10, _sharp_ref, "u8"),
    (A.posterize.augmentation((0, 4), False), 6,
     lambda im, m: im & np.uint8(255 ^ (2 ** (8 - min(max(int(np.round(m)), 1), 8)) - 1)), "exact"),
    (A.solarize.augmentation((0, 256), False), 6,
     lambda im, m: np.where(im < m, im, 255 - im).astype(np.uint8), "exact"),
    (A.solarize_add.augmentation((0, 110), False), 7,
     lambda im, m: np.where(im < 128, im + np.uint8(m), im).astype(np.uint8), "exact"),
    (A.invert, None, lambda im, m: 255 - im, "exact"),
    (A.equalize, None, lambda im, m: _equalize_ref(im), "u8"),
    (A.auto_contrast, None, lambda im, m: _autocontrast_ref(im), "u8"),
    (A.identity, None, lambda im, m: im, "exact"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].name for c in CASES])
def test_augmentation_matches_reference(jpegs, case):
    aug, b, ref, kind = case

    def graph(img):
        kw = {}
        if b is not None:
            kw = dict(magnitude_bin=b, num_magnitude_bins=BINS)
        return img, aug(img, interp_type=types.INTERP_NN, **kw)

    imgs, outs = _run(jpegs, graph)
    m = None if b is None else _mag(aug.mag_range[0], aug.mag_range[1], BINS, b)
    changed = False
    for img, out in zip(imgs, outs):
        want = ref(img, m)
        if kind == "warp":
            _check_warp(out, want, aug.name)
        elif kind == "exact":
            np.testing.assert_array_equal(out, want, err_msg=aug.name)
        else:
            _check(out, want, aug.name)
        changed |= not np.array_equal(out, img)
    assert changed or aug.name == "identity", aug.name + " left every image unchanged"


def test_seed_makes_choices_deterministic(jpegs):
    def graph(img):
        return (auto_augment.auto_augment(img, seed=11),
                trivial_augment.trivial_augment_wide(img, seed=12),
                rand_augment.rand_augment(img, n=2, m=15))

    a = _run(jpegs, graph, seed=1, iters=3)
    b = _run(jpegs, graph, seed=2, iters=3)
    c = _run(jpegs, graph, seed=1, iters=3)
    for it in range(3):
        for k in range(2):  # seeded: independent of the pipeline's seed
            for x, y in zip(a[it][k], b[it][k]):
                np.testing.assert_array_equal(x, y)
        for k in range(3):  # same pipeline seed: same everything
            for x, y in zip(a[it][k], c[it][k]):
                np.testing.assert_array_equal(x, y)
    # Without an op seed, another pipeline seed gives other choices somewhere.
    assert any(not np.array_equal(x, y) for it in range(3) for x, y in zip(a[it][2], b[it][2]))


def _solid_jpegs(tmp_path, n, value=200):
    files = []
    for i in range(n):
        p = str(tmp_path / ("s%d.jpg" % i))
        Image.fromarray(np.full((8, 8, 3), value, np.uint8)).save(p, quality=95)
        files.append(p)
    return files


def _chi2(counts, probs):
    n = sum(counts)
    return sum((c - p * n) ** 2 / (p * n) for c, p in zip(counts, probs))


# 0.999 quantiles of chi-squared with 1, 2, 3 degrees of freedom.
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27}


def test_auto_augment_sub_policy_distribution(tmp_path):
    # On a flat grey 200 image: invert -> 55, posterize(2 bits kept) -> 192, identity -> 200.
    post = A.posterize.augmentation((0, 4), False)
    policy = Policy("t", 5, [[(A.invert, 1.0, None)], [(post, 1.0, 2)], [(A.identity, 1.0, None)],
                             [(A.invert, 0.3, None)]])
    files = _solid_jpegs(tmp_path, 50)
    outs = _run(files, lambda img: (img, auto_augment.apply_auto_augment(policy, img)), iters=20)
    counts = {55: 0, 192: 0, 200: 0}
    for it in outs:
        for src, out in zip(*it):
            assert np.all(src == 200)
            v = int(out[0, 0, 0])
            assert np.all(out == v)
            counts[v] += 1
    n = sum(counts.values())
    # invert: 1/4 + 1/4 * 0.3; posterize: 1/4; unchanged: 1/4 + 1/4 * 0.7.
    probs = [0.25 + 0.075, 0.25, 0.25 + 0.175]
    c = _chi2([counts[55], counts[192], counts[200]], probs)
    assert c < CHI2_999[2], (counts, n, c)


def test_trivial_augment_distribution(tmp_path):
    files = _solid_jpegs(tmp_path, 50)
    suite = [A.invert, A.identity, A.solarize.augmentation((0, 256), False)]
    # solarize with 4 bins: thresholds 0, 85.3, 170.7, 256 -> 200 inverted for bins 0..2.
    outs = _run(files, lambda img: (trivial_augment.apply_trivial_augment(
        suite, img, num_magnitude_bins=4),), iters=20)
    counts = {55: 0, 200: 0}
    for it in outs:
        for out in it[0]:
            counts[int(out[0, 0, 0])] += 1
    # 55: invert (1/3) + solarize below bin 3 (1/3 * 3/4).
    p55 = 1 / 3 + 1 / 4
    c = _chi2([counts[55], counts[200]], [p55, 1 - p55])
    assert c < CHI2_999[1], (counts, c)


def test_image_net_policy_is_dalis():
    pol = auto_augment.get_image_net_policy()
    assert pol.num_magnitude_bins == 11 and len(pol.sub_policies) == 25
    first = [(a.name, p, b) for a, p, b in pol.sub_policies[0]]
    assert first == [("equalize", 0.8, None), ("shear_y", 0.8, 4)]
    last = [(a.name, p, b) for a, p, b in pol.sub_policies[-1]]
    assert last == [("color", 0.8, 6), ("rotate", 0.4, 5)]
    names = {a.name for sp in pol.sub_policies for a, _, _ in sp}
    assert names == {"equalize", "shear_x", "shear_y", "color", "rotate", "solarize",
                     "solarize_add", "invert", "posterize", "auto_contrast", "translate_y"}


def test_argument_errors(jpegs):
    with pytest.raises(Exception, match="policy_name"):
        auto_augment.auto_augment(None, policy_name="nope")
    with pytest.raises(Exception, match="magnitude bin"):
        rand_augment.rand_augment(None, n=2, m=31)
    with pytest.raises(Exception, match="excluded"):
        trivial_augment.trivial_augment_wide(None, excluded=["nope"])
    with pytest.raises(ValueError, match="mag_to_param"):
        A.rotate.augmentation(mag_to_param=lambda m: m)._spec()


@pytest.mark.parametrize("scheme", ["auto", "trivial", "rand"])
def test_efficientnet_style_training_pipeline(jpegs, scheme):
    def graph(img):
        img = fn.resize(img, size=[48, 48])
        if scheme == "auto":
            img = auto_augment.auto_augment(img)
        elif scheme == "trivial":
            img = trivial_augment.trivial_augment_wide(img, shape=None)
        else:
            img = rand_augment.rand_augment(img, n=2, m=9)
        return (fn.crop_mirror_normalize(img, dtype=types.FLOAT, output_layout="CHW",
                                         crop=(40, 40), mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                         std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
                                         mirror=fn.random.coin_flip()),)

    outs = _run(jpegs, graph, iters=3)
    for it in outs:
        for x in it[0]:
            assert x.shape == (3, 40, 40) and x.dtype == np.float32
            assert np.isfinite(x).all()


@pytest.mark.parametrize("policy", ["reduced_image_net", "svhn", "reduced_cifar10"])
def test_every_paper_policy_runs(jpegs, policy):
    # The tables themselves are compared with DALI's in tests/compat/test_surface.py;
    # here each policy runs, changes some images and keeps their shapes.
    def graph(img):
        return (img, auto_augment.auto_augment(img, policy_name=policy))

    outs = _run(jpegs, graph, iters=4)
    changed = 0
    for before, after in outs:
        for x, y in zip(before, after):
            assert x.shape == y.shape and y.dtype == np.uint8
            changed += int(not np.array_equal(x, y))
    assert changed > 0
    with pytest.raises(Exception, match="The `max_translate_abs` argument must not be"):
        auto_augment.auto_augment(None, policy_name="reduced_image_net", max_translate_abs=10)
