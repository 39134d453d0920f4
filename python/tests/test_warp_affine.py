"""warp_affine against independent references: a numpy float64 implementation of DALI's
definition (pixel-edge coordinates, output pixel (x, y) reads the point M (x+0.5, y+0.5, 1)
exactly; NN the pixel containing it, LINEAR the four pixels whose centres surround it) and
OpenCV's cv2.warpAffine (the matrix moved to OpenCV's centre coordinates, as DALI's
test_warp.py does).

Tolerances: against numpy, integer outputs within 1 level (rounding of the last bit),
FLOAT within 1e-3 absolute; NN exact but for at most 0.2% of pixels (points within float
rounding of a pixel edge). Against cv2.warpAffine, which snaps source points to 1/32 pixel,
on smooth images: within 2 levels but for at most 0.5% of pixels (along the edge of the
fill, where a step of up to 255 levels meets the 1/32 grid); DALI's own test allows 8
levels on photos.
"""

import numpy as np
import pytest

import godali
from godali import fn, types
from conftest import need

cv2 = need("cv2")

RNG = np.random.default_rng(23)


def _run(graph, *sources, layouts=None, batch=None):
    """Runs graph(*external_sources) once; returns [output][sample] and the output layouts."""
    batch = batch or len(sources[0])
    layouts = layouts or [""] * len(sources)
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=5)
    with pipe:
        nodes = [fn.external_source(source=(lambda s=s: s), layout=l) for s, l in zip(sources, layouts)]
        outs = graph(*nodes)
        pipe.set_outputs(*(outs if isinstance(outs, (list, tuple)) else [outs]))
    r = pipe.run()
    res = [[np.array(o[i].as_array()) for i in range(batch)] for o in r]
    lays = [o.layout() for o in r]
    pipe.close()
    return res, lays


def _smooth(h, w, c=3, lo=0, hi=255, dtype=np.uint8):
    """A smooth random image (sums of low-frequency sinusoids) in [lo, hi]."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    chans = []
    for _ in range(c):
        v = np.zeros((h, w))
        for _ in range(3):
            fx, fy, ph = RNG.uniform(0.02, 0.12), RNG.uniform(0.02, 0.12), RNG.uniform(0, 6.3)
            v += np.sin(fx * xs + fy * ys + ph)
        chans.append((v + 3) / 6)
    img = lo + (hi - lo) * np.stack(chans, -1)
    return (img if dtype == np.float32 else np.round(img)).astype(dtype)


def _out_to_in(m, inverse):
    m = np.asarray(m, np.float64).reshape(2, 3)
    if inverse:
        return m
    a = np.linalg.inv(m[:, :2])
    return np.hstack([a, -a @ m[:, 2:]])


def ref_warp(img, m, size=None, inverse=True, fill=None, nn=False, dtype=None):
    """DALI's warp_affine in float64 numpy (see the module doc)."""
    m = _out_to_in(m, inverse)
    h, w, c = img.shape
    oh, ow = size or (h, w)
    ys, xs = np.mgrid[0:oh, 0:ow] + 0.5
    sx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    sy = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]
    src = img.astype(np.float64)

    def at(ix, iy):
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        v = src[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
        if fill is not None:
            v[~inside] = fill
        return v

    if nn:
        out = at(np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64))
    else:
        sx, sy = sx - 0.5, sy - 0.5
        x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
        tx, ty = (sx - x0)[..., None], (sy - y0)[..., None]
        top = at(x0, y0) * (1 - tx) + at(x0 + 1, y0) * tx
        bot = at(x0, y0 + 1) * (1 - tx) + at(x0 + 1, y0 + 1) * tx
        out = top * (1 - ty) + bot * ty
    dtype = np.dtype(dtype or img.dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = np.clip(np.round(out), info.min, info.max)
    return out.astype(dtype)


def cv_warp(img, m, size=None, inverse=True, fill=None, nn=False):
    """cv2.warpAffine with the matrix moved from DALI's edge to OpenCV's centre coordinates."""
    m = np.asarray(m, np.float64).reshape(2, 3)
    cvm = m.copy()
    cvm[:, 2] = m @ np.array([0.5, 0.5, 1]) - 0.5
    h, w = size or img.shape[:2]
    flags = (cv2.INTER_NEAREST if nn else cv2.INTER_LINEAR) | (cv2.WARP_INVERSE_MAP if inverse else 0)
    border = cv2.BORDER_REPLICATE if fill is None else cv2.BORDER_CONSTANT
    out = cv2.warpAffine(img, cvm, (w, h), flags=flags, borderMode=border,
                         borderValue=[0 if fill is None else fill] * 4)
    return out.reshape(h, w, *img.shape[2:])


def _close(got, ref, tol=1, frac=0.0):
    d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    assert d.max() <= tol or (d > tol).mean() <= frac, (d.max(), (d > tol).mean())


IMGS = [_smooth(*s) for s in [(48, 64), (37, 29), (20, 70)]]
# output -> input; a rotation + zoom around the centre like DALI's gen_transform, and a shear
MATS = [np.array([[0.9, 0.25, 3.0], [-0.2, 1.1, -2.0]], np.float32),
        np.array([[0.1, 0.9, 10], [0.8, -0.2, -20]], np.float32),
        np.array([[1.3, -0.1, -4.5], [0.05, 0.7, 6.25]], np.float32)]


@pytest.mark.parametrize("inverse", [True, False])
@pytest.mark.parametrize("fill", [None, 42])
@pytest.mark.parametrize("nn", [False, True])
def test_uint8_matches_numpy_and_opencv(inverse, fill, nn):
    interp = types.INTERP_NN if nn else types.INTERP_LINEAR
    kw = {} if fill is None else {"fill_value": fill}
    m = MATS[0]
    (got,), lay = _run(lambda x: fn.warp_affine(x, matrix=m.reshape(-1).tolist(), inverse_map=inverse,
                                                interp_type=interp, **kw), IMGS, layouts=["HWC"])
    assert lay == ["HWC"]
    for img, g in zip(IMGS, got):
        assert g.dtype == np.uint8 and g.shape == img.shape
        ref = ref_warp(img, m, inverse=inverse, fill=fill, nn=nn)
        _close(g, ref, tol=0 if nn else 1, frac=0.002 if nn else 0)
        if not nn:  # OpenCV snaps points to 1/32 pixel; NN ties differ too often to compare
            _close(g, cv_warp(img, m, inverse=inverse, fill=fill), tol=2, frac=0.005)


@pytest.mark.parametrize("itype, otype", [
    (np.uint8, np.float32), (np.float32, np.uint8), (np.float32, np.float32),
    (np.int16, np.int16), (np.uint16, np.uint16), (np.int16, np.float32), (np.uint16, np.uint8)])
def test_types(itype, otype):
    lo, hi = {np.uint8: (0, 255), np.float32: (-20, 300), np.int16: (-30000, 30000),
              np.uint16: (0, 65535)}[itype]
    imgs = [_smooth(30, 40, 3, lo, hi, itype), _smooth(25, 22, 1, lo, hi, itype)]
    dt = {np.uint8: types.UINT8, np.float32: types.FLOAT, np.int16: types.INT16, np.uint16: types.UINT16}[otype]
    fill = 12.5 if otype == np.float32 else 42
    m = MATS[0]
    (got,), _ = _run(lambda x: fn.warp_affine(x, matrix=m.reshape(-1).tolist(), fill_value=fill, dtype=dt,
                                              size=[24, 32]), imgs, layouts=["HWC"])
    for img, g in zip(imgs, got):
        assert g.dtype == otype and g.shape == (24, 32, img.shape[2])
        ref = ref_warp(img, m, size=(24, 32), fill=fill, dtype=otype)
        if otype == np.float32:
            np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-3)
        else:
            _close(g, ref, tol=1)
        assert (g != np.asarray(fill, otype)).mean() > 0.3  # not all fill


def test_matrix_as_input_and_per_sample_argument():
    mats = [MATS[0], MATS[1], MATS[2]]

    def graph(x, m, flat, size):
        return (fn.warp_affine(x, m, fill_value=7),
                fn.warp_affine(x, matrix=flat, fill_value=7, inverse_map=False),
                fn.warp_affine(x, m, size=size, fill_value=7))

    sizes = [np.array([20, 30], np.float32), np.array([33, 17], np.float32), np.array([8, 64], np.float32)]
    (a, b, c), _ = _run(graph, IMGS, mats, [m.reshape(-1) for m in mats], sizes, layouts=["HWC", "", "", ""])
    for i, (img, m) in enumerate(zip(IMGS, mats)):
        _close(a[i], ref_warp(img, m, fill=7), tol=1)
        _close(b[i], ref_warp(img, m, fill=7, inverse=False), tol=1)
        sz = tuple(int(v) for v in sizes[i])
        assert c[i].shape == sz + (3,)
        _close(c[i], ref_warp(img, m, size=sz, fill=7), tol=1)
        _close(c[i], cv_warp(img, m, size=sz, fill=7), tol=2, frac=0.005)


def test_sequences_same_and_per_frame_matrix():
    seq = [np.stack([_smooth(26, 34) for _ in range(3)])]
    m = MATS[0]
    per = np.stack([MATS[0].reshape(-1), MATS[1].reshape(-1), MATS[2].reshape(-1)])

    def graph(v, pm):
        return (fn.warp_affine(v, matrix=m.reshape(-1).tolist(), fill_value=0, dtype=types.FLOAT),
                fn.warp_affine(v, matrix=fn.per_frame(pm), fill_value=0))

    (same, pf), lay = _run(graph, seq, [per], layouts=["FHWC", ""])
    assert lay == ["FHWC", "FHWC"]
    assert same[0].shape == seq[0].shape and same[0].dtype == np.float32
    for f in range(3):
        np.testing.assert_allclose(same[0][f], ref_warp(seq[0][f], m, fill=0, dtype=np.float32), atol=1e-3)
        _close(pf[0][f], ref_warp(seq[0][f], per[f], fill=0), tol=1)


@pytest.mark.parametrize("graph, msg", [
    (lambda x, m: fn.warp_affine(x, m, matrix=[1, 0, 0, 0, 1, 0]), "not both"),
    (lambda x, m: fn.warp_affine(x), "matrix"),
    (lambda x, m: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1]), "6 numbers"),
    (lambda x, m: fn.warp_affine(x, matrix=[1, 2, 0, 2, 4, 0], inverse_map=False), "invertible"),
    (lambda x, m: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1, 0], dtype=types.INT64), "dtype"),
    (lambda x, m: fn.warp_affine(x, fn.reshape(m, shape=[3, 2])), "2x3"),
])
def test_errors(graph, msg):
    with pytest.raises(Exception) as e:
        _run(graph, IMGS[:1], [MATS[0]], layouts=["HWC", ""])
    assert msg in str(e.value)
