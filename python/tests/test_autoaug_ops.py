"""The DALI operators godali.auto_aug needs, used directly: brightness, contrast, hue,
saturation, warp_affine, experimental.equalize, against numpy / PIL references of DALI's
formulas (uint8: mean 0.3 / max 1 level; warps with INTERP_NN against PIL, 0.5% of pixels
may differ where a point lands on a pixel edge)."""

import math

import numpy as np
import pytest
from PIL import Image

from godali import fn, types

from test_auto_aug import (YIQ2RGB, RGB2YIQ, _check, _check_warp, _equalize_ref, _run, _sat,
                           jpegs)  # noqa: F401


def _scalar(x):
    return float(np.asarray(x).reshape(-1)[0])


def test_brightness_and_contrast(jpegs):
    def graph(img):
        b = fn.random.uniform(range=[0.3, 1.7])
        return (img, b, fn.brightness(img, brightness=b, brightness_shift=0.1),
                fn.contrast(img, contrast=b), fn.contrast(img, contrast=1.5, contrast_center=60),
                fn.brightness(img, brightness=0.5, dtype=types.FLOAT))

    imgs, bs, br, co, co60, bf = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        x = img.astype(np.float64)
        b = _scalar(bs[i])
        _check(br[i], _sat(25.5 + b * x), "brightness")
        _check(co[i], _sat(128 + b * (x - 128)), "contrast")
        _check(co60[i], _sat(60 + 1.5 * (x - 60)), "contrast_center")
        np.testing.assert_allclose(bf[i], 0.5 * x, rtol=1e-5)


def _hue_sat(img, hue, s):
    h = math.radians(hue)
    rot = np.array([[1, 0, 0], [0, math.cos(h), math.sin(h)], [0, -math.sin(h), math.cos(h)]])
    m = YIQ2RGB @ rot @ np.diag([1, s, s]) @ RGB2YIQ
    return _sat(img.astype(np.float64) @ m.T)


def test_hue_and_saturation(jpegs):
    def graph(img):
        h = fn.random.uniform(range=[-180, 180])
        return img, h, fn.hue(img, hue=h), fn.saturation(img, saturation=0.4)

    imgs, hs, hue, sat = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        _check(hue[i], _hue_sat(img, _scalar(hs[i]), 1), "hue")
        _check(sat[i], _hue_sat(img, 0, 0.4), "saturation")


def _warp_ref(img, m, oh, ow, fill=128):
    """DALI's warp_affine, NN: output pixel (x, y) shows input pixel
    floor(M (x + 0.5, y + 0.5)), or fill outside."""
    h, w = img.shape[:2]
    ys, xs = np.mgrid[0:oh, 0:ow] + 0.5
    sx = np.floor(m[0] * xs + m[1] * ys + m[2]).astype(np.int64)
    sy = np.floor(m[3] * xs + m[4] * ys + m[5]).astype(np.int64)
    inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
    out = np.full((oh, ow, img.shape[2]), fill, np.uint8)
    out[inside] = img[sy[inside], sx[inside]]
    return out


def test_warp_affine_matches_reference(jpegs):
    m = [0.9, 0.2, 3.0, -0.1, 1.1, -2.0]  # output -> input

    def graph(img):
        return (img, fn.warp_affine(img, matrix=m, fill_value=128, interp_type=types.INTERP_NN),
                fn.warp_affine(img, matrix=m, fill_value=128, interp_type=types.INTERP_NN,
                               size=[30, 20]),
                fn.warp_affine(img, matrix=[1, 0, 5, 0, 1, -3], inverse_map=False,
                               fill_value=128, interp_type=types.INTERP_NN),
                fn.warp_affine(img, matrix=m))

    imgs, out, small, fwd, lin = _run(jpegs, graph)
    for i, img in enumerate(imgs):
        # PIL accumulates the coordinates incrementally, so for this matrix (whose
        # points often land exactly on pixel edges) it differs from the closed form in
        # 5% of pixels: compare with the closed form, and with PIL for a translation.
        im = Image.fromarray(img)
        _check_warp(out[i], _warp_ref(img, m, *img.shape[:2]), "warp_affine")
        _check_warp(small[i], _warp_ref(img, m, 30, 20), "warp_affine size")
        # Forward translation by (5, -3): output(x, y) = input(x - 5, y + 3).
        want = np.asarray(im.transform(im.size, Image.AFFINE, (1, 0, -5, 0, 1, 3), Image.NEAREST,
                                       fillcolor=(128, 128, 128)))
        _check_warp(fwd[i], want, "warp_affine inverse_map=False")
        assert lin[i].shape == img.shape


def test_equalize(jpegs):
    imgs, eq = _run(jpegs, lambda img: (img, fn.experimental.equalize(img)))
    for img, out in zip(imgs, eq):
        _check(out, _equalize_ref(img), "equalize")


def test_warp_affine_rejects_bad_matrix(jpegs):
    with pytest.raises(Exception, match="matrix"):
        _run(jpegs, lambda img: (fn.warp_affine(img, matrix=[1, 2, 3]),))
    with pytest.raises(Exception, match="invertible"):
        _run(jpegs, lambda img: (fn.warp_affine(img, matrix=[0, 0, 1, 0, 0, 1],
                                                inverse_map=False),))
