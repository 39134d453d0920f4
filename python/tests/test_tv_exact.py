"""godali.torch's exact torchvision operators, against torchvision's own functional calls
on PIL images with the same parameters: _tv_color_jitter (ColorJitter's PIL path),
Resize(int)'s truncated longer side, RandomCrop's integer offsets on images of varying
size. Tolerance: bit-exact (0 levels).
"""

import itertools

import numpy as np
import pytest
import torchvision.transforms.functional as TF
from PIL import Image

import godali
from godali import fn, types
from godali.torch import _internal_op

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70)]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """JPEGs plus a PNG of random colours and one of grey/saturated extremes (lossless)."""
    d = tmp_path_factory.mktemp("tvexact")
    files = [make_jpeg(str(d / ("t%d.jpg" % i)), h, w, seed=120 + i) for i, (h, w) in enumerate(SIZES)]
    rng = np.random.default_rng(3)
    rnd = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    Image.fromarray(rnd).save(str(d / "rnd.png"))
    v = np.arange(256, dtype=np.uint8)
    ext = np.stack(np.meshgrid(v, v[::-1], indexing="ij"), -1)
    ext = np.concatenate([ext, np.full(ext.shape[:2] + (1,), 255, np.uint8)], -1)
    ext[::3] = ext[::3, :, [2, 0, 1]]
    ext[1::3, :, 2] = ext[1::3, :, 0]
    Image.fromarray(ext).save(str(d / "ext.png"))
    return files + [str(d / "rnd.png"), str(d / "ext.png")]


def _run(files, graph, threads=2, seed=5):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=threads, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[o[i].as_array().copy() for i in range(len(files))] for o in res]
    pipe.close()
    return got


ADJ = [lambda im, f: TF.adjust_brightness(im, f), lambda im, f: TF.adjust_contrast(im, f),
       lambda im, f: TF.adjust_saturation(im, f), lambda im, f: TF.adjust_hue(im, f)]


def _tv(img, factors, order):
    im = Image.fromarray(img)
    for k in order:
        if factors[k] is not None:
            im = ADJ[k](im, factors[k])
    return np.asarray(im)


@pytest.mark.parametrize("factors", [
    (1.37, None, None, None), (0.41, None, None, None), (None, 1.6, None, None),
    (None, 0.3, None, None), (None, 0.0, None, None), (None, None, 0.45, None),
    (None, None, 1.8, None), (None, None, None, 0.13), (None, None, None, -0.5),
    (None, None, None, 0.5), (None, None, None, -0.07), (None, None, None, 0.0),
    (1.2, 0.7, 1.4, -0.2), (0.6, 1.9, 0.0, 0.31)])
def test_color_jitter_matches_torchvision_pil(images, factors):
    orders = [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1)]
    kw = {n: [f, f] for n, f in zip(("brightness", "contrast", "saturation", "hue"), factors) if f is not None}
    outs = _run(images, lambda img: (img,) + tuple(_internal_op("_tv_color_jitter")(img, order=list(o), **kw) for o in orders))
    imgs = outs[0]
    for o, got in zip(orders, outs[1:]):
        for i, img in enumerate(imgs):
            want = _tv(img, factors, o)
            d = np.abs(got[i].astype(int) - want.astype(int))
            assert d.max() == 0, (factors, o, i, int(d.max()), int((d > 0).sum()))


def test_color_jitter_random_order_and_factors(images):
    f = (1.5, None, None, 0.2)  # brightness and hue do not commute: the two orders differ
    imgs, got = _run(images * 8, lambda img: (img, _internal_op("_tv_color_jitter")(img, brightness=[1.5, 1.5], hue=[0.2, 0.2])))
    seen = set()
    for i, img in enumerate(imgs):
        cands = {o: _tv(img, f, o) for o in [(0, 3), (3, 0)]}
        match = [o for o, w in cands.items() if np.array_equal(w, got[i])]
        assert match, i
        if not np.array_equal(cands[(0, 3)], cands[(3, 0)]):
            seen.add(match[0])
    assert seen == {(0, 3), (3, 0)}
    # factors drawn in the range: brightness of a uniform grey image scales its level
    imgs, b = _run(images, lambda img: (img, _internal_op("_tv_color_jitter")(img, brightness=[0.5, 0.9])))
    ratios = [b[i].astype(float).sum() / imgs[i].astype(float).sum() for i in range(len(imgs))]
    assert all(0.49 <= r <= 0.9 for r in ratios) and len(set(np.round(ratios, 4))) > 1
    with pytest.raises(Exception, match="hue"):
        _run(images, lambda img: (_internal_op("_tv_color_jitter")(img, hue=[0.1, 0.7]),))
    with pytest.raises(Exception, match="order"):
        _run(images, lambda img: (_internal_op("_tv_color_jitter")(img, hue=[0.1, 0.2], order=[0, 0, 1, 2]),))


def test_resize_against_the_installed_pillow(tmp_path):
    """Resize on both axes through godali.torch against torchvision on the installed
    Pillow itself: bit-exact where Pillow resamples horizontally first (Pillow 9.4 always);
    under a Pillow that takes the vertical pass first for some sizes (13.0), within 1
    level, and exact once the reference takes the horizontal pass first (conftest.py)."""
    import torch
    import torchvision.transforms as T
    from conftest import _horizontal_first_resize, pil_resizes_vertically_first
    from godali.torch import DataLoader, ImageFolder

    for i, (h, w) in enumerate([(120, 60), (64, 80), (50, 120), (96, 72)]):
        make_jpeg(str(tmp_path / "c" / ("%d.jpg" % i)), h, w, seed=300 + i)
    vertical_first = pil_resizes_vertically_first()
    two_pass = _horizontal_first_resize(Image.Image.resize)
    differing = 0
    for size in [(36, 40), (40, 36), (30, 30), (20, 96)]:
        ds = ImageFolder(str(tmp_path), transform=T.Compose([T.Resize(size), T.PILToTensor()]))
        got = torch.cat([x for x, _ in DataLoader(ds, batch_size=4)]).numpy()
        for j, (path, _) in enumerate(ds.samples):
            im = Image.open(path).convert("RGB")
            ref = np.asarray(TF.resize(im, list(size))).transpose(2, 0, 1)
            d = np.abs(got[j].astype(int) - ref.astype(int))
            assert d.max() <= (1 if vertical_first else 0), (path, size, int(d.max()))
            differing += int(d.max() > 0)
            h_first = np.asarray(two_pass(im, size[::-1], Image.BILINEAR)).transpose(2, 0, 1)
            assert np.array_equal(got[j], h_first), (path, size)
    # The probe and the comparisons agree on whether this Pillow's order differs.
    assert (differing > 0) == vertical_first
