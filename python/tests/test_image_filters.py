"""laplacian, water, sphere, grid_mask, resize_crop_mirror / fast_resize_crop_mirror and
decoders.image_crop against independent references: OpenCV (cv2.Laplacian, cv2.remap),
SciPy (ndimage.convolve1d), numpy, and godali's own resize + crop + flip and decoder.

Tolerances: float results within 1e-4 relative (OpenCV and SciPy accumulate in float32,
godali in float64); uint8 results within 1 level (rounding of the last bit) except where
stated; geometric operators (grid_mask, sphere with INTERP_NN, crops) exactly.
"""

import math

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import make_jpeg, need

cv2 = need("cv2")
ndimage = need("scipy.ndimage")

RNG = np.random.default_rng(7)
IMAGES = [RNG.integers(0, 256, size=s, dtype=np.uint8) for s in [(37, 53, 3), (64, 48, 3), (21, 90, 3)]]


def _run(graph, inputs, layout="HWC", threads=2):
    """Runs graph(external_source(inputs)) once; returns its outputs as lists of arrays."""
    pipe = godali.Pipeline(batch_size=len(inputs), num_threads=threads, seed=3)
    with pipe:
        data = fn.external_source(source=lambda: inputs, layout=layout)
        outs = graph(data)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[o[i].as_array().copy() for i in range(len(inputs))] for o in res]
    pipe.close()
    return got


# --- laplacian -------------------------------------------------------------------------

@pytest.mark.parametrize("ksize", [1, 3, 5, 7])
def test_laplacian_uint8_vs_opencv(ksize):
    # OpenCV's ksize 1 is godali's window 3 without smoothing
    kw = dict(window_size=3, smoothing_size=1) if ksize == 1 else dict(window_size=ksize)
    (got,) = _run(lambda x: fn.laplacian(x, **kw), IMAGES)
    for img, g in zip(IMAGES, got):
        want = cv2.Laplacian(img, cv2.CV_8U, ksize=ksize, borderType=cv2.BORDER_REFLECT_101)
        assert g.dtype == np.uint8 and g.shape == img.shape
        assert np.abs(g.astype(int) - want).max() <= 1


@pytest.mark.parametrize("ksize", [3, 5, 9])
def test_laplacian_float_normalized_vs_opencv(ksize):
    (got,) = _run(lambda x: fn.laplacian(x, window_size=ksize, normalized_kernel=True, dtype=types.FLOAT), IMAGES)
    scale = 2.0 ** -(2 * ksize - 4)  # the sum of the absolute weights of both partials
    for img, g in zip(IMAGES, got):
        want = cv2.Laplacian(img.astype(np.float32), cv2.CV_32F, ksize=ksize, scale=scale,
                             borderType=cv2.BORDER_REFLECT_101)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-3)


def test_laplacian_volume_vs_scipy():
    vols = [RNG.normal(size=s).astype(np.float32) for s in [(9, 11, 7), (5, 6, 13)]]
    (got,) = _run(lambda x: fn.laplacian(x, window_size=[3, 5, 3], smoothing_size=[1, 3, 5], scale=[1, 0.5, 2]),
                  vols, layout="DHW")
    d3 = np.array([1.0, -2.0, 1.0])
    d5 = np.array([1.0, 0.0, -2.0, 0.0, 1.0])
    s = {1: np.array([1.0]), 3: np.array([1.0, 2.0, 1.0]), 5: np.array([1.0, 4.0, 6.0, 4.0, 1.0])}
    deriv = [d3, d5, d3]
    smooth = [1, 3, 5]
    scales = [1, 0.5, 2]
    for v, g in zip(vols, got):
        want = np.zeros(v.shape)
        for i in range(3):
            p = v.astype(np.float64)
            for j in range(3):
                w = deriv[i] if i == j else s[smooth[j]]
                p = ndimage.convolve1d(p, w, axis=j, mode="mirror")
            want += scales[i] * p
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


def test_laplacian_sequence_frame_by_frame():
    seq = [RNG.integers(0, 256, size=(4, 20, 30, 3), dtype=np.uint8)]
    (got,) = _run(lambda x: fn.laplacian(x, window_size=5, dtype=types.FLOAT), seq, layout="FHWC")
    for f in range(4):
        want = cv2.Laplacian(seq[0][f].astype(np.float32), cv2.CV_32F, ksize=5, borderType=cv2.BORDER_REFLECT_101)
        np.testing.assert_allclose(got[0][f], want, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("kw, arg", [
    (dict(window_size=4), "window_size"),
    (dict(smoothing_size=0), "smoothing_size"),
    (dict(window_size=[3, 3, 3]), "window_size"),
    (dict(scale=2.0, normalized_kernel=True), "normalized_kernel"),
    (dict(dtype=types.INT16), "dtype"),
])
def test_laplacian_bad_arguments_name_them(kw, arg):
    with pytest.raises(Exception, match='argument "%s"' % arg):
        _run(lambda x: fn.laplacian(x, **kw), IMAGES[:1])


# --- water, sphere ---------------------------------------------------------------------

def _bilinear_reference(img, sx, sy, fill=0.0):
    """Bilinear sample of img at points (sx, sy), pixel (i, j) centred at (i + .5, j + .5);
    neighbours outside the image are fill. float64."""
    h, w = img.shape[:2]
    fx, fy = sx - 0.5, sy - 0.5
    i0, j0 = np.floor(fx).astype(int), np.floor(fy).astype(int)
    ax, ay = (fx - i0)[..., None], (fy - j0)[..., None]

    def at(i, j):
        ok = (i >= 0) & (j >= 0) & (i < w) & (j < h)
        out = np.full(img.shape, fill, np.float64)
        out[ok] = img[j[ok], i[ok]]
        return out
    top = at(i0, j0) * (1 - ax) + at(i0 + 1, j0) * ax
    bot = at(i0, j0 + 1) * (1 - ax) + at(i0 + 1, j0 + 1) * ax
    return top * (1 - ay) + bot * ay


def test_water_linear_vs_references():
    p = dict(ampl_x=2.0, ampl_y=3.0, freq_x=0.06, freq_y=0.08, phase_x=0.2, phase_y=0.5)
    u8, f32 = _run(lambda x: [fn.water(x, interp_type=types.INTERP_LINEAR, **p),
                              fn.water(fn.cast(x, dtype=types.FLOAT), interp_type=types.INTERP_LINEAR, **p)], IMAGES)
    for img, g, gf in zip(IMAGES, u8, f32):
        h, w = img.shape[:2]
        xs, ys = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        # output (x, y) shows the input point (x + ax sin(fx y + px), y + ay cos(fy x + py))
        sx = xs + p["ampl_x"] * np.sin(p["freq_x"] * ys + p["phase_x"])
        sy = ys + p["ampl_y"] * np.cos(p["freq_y"] * xs + p["phase_y"])
        want = _bilinear_reference(img, sx, sy)
        np.testing.assert_allclose(gf, want, atol=1e-3)
        assert np.abs(g.astype(float) - want).max() <= 0.5 + 1e-3  # rounded
        # OpenCV's remap (integer pixel coordinates: 0.5 less) agrees up to its map
        # quantization to 1/32 pixel: at most 1/32 of the largest neighbour step (255)
        cvw = cv2.remap(img.astype(np.float32), (sx - 0.5).astype(np.float32), (sy - 0.5).astype(np.float32),
                        cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        np.testing.assert_allclose(gf, cvw, atol=255 / 32 + 1e-3)


def _nn_reference(img, sx, sy, fill=0):
    h, w = img.shape[:2]
    i, j = np.floor(sx).astype(int), np.floor(sy).astype(int)
    ok = (i >= 0) & (j >= 0) & (i < w) & (j < h)
    out = np.full(img.shape, fill, img.dtype)
    out[ok] = img[j[ok], i[ok]]
    return out


def test_water_nearest_and_mask():
    p = dict(ampl_x=4.0, ampl_y=1.5, freq_x=0.1, freq_y=0.03, phase_x=1.0, phase_y=0.0)
    inputs = IMAGES[:2]

    def graph(x):
        mask = fn.external_source(source=lambda: [np.int32(1), np.int32(0)])
        return fn.water(x, mask=mask, fill_value=7, **p)
    (got,) = _run(graph, inputs)
    img = inputs[0]
    h, w = img.shape[:2]
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    sx = xs + p["ampl_x"] * np.sin(p["freq_x"] * ys + p["phase_x"])
    sy = ys + p["ampl_y"] * np.cos(p["freq_y"] * xs + p["phase_y"])
    np.testing.assert_array_equal(got[0], _nn_reference(img, sx, sy, fill=7))
    np.testing.assert_array_equal(got[1], inputs[1])  # mask 0: unchanged


def test_sphere_nearest_vs_numpy():
    # DALI 2.4's mapping, measured with its CPU operator on coordinate-coded images of odd
    # and even sides (tests/compat/oracle.py compares the two directly): pixel indices
    # around ((w-1)/2, (h-1)/2), the distance over max(w//2, h//2), the nearest source
    # pixel (the index + 0.5 floored).
    (got,) = _run(lambda x: fn.sphere(x), IMAGES)
    for img, g in zip(IMAGES, got):
        h, w = img.shape[:2]
        cx, cy = (w - 1) / 2, (h - 1) / 2
        d = max(w // 2, h // 2)
        xs, ys = np.meshgrid(np.arange(w) - cx, np.arange(h) - cy)
        r = np.sqrt(xs * xs + ys * ys) / d
        np.testing.assert_array_equal(g, _nn_reference(img, cx + r * xs + 0.5,
                                                       cy + r * ys + 0.5))


# --- grid_mask -------------------------------------------------------------------------

@pytest.mark.parametrize("tile, ratio, angle, sx, sy", [
    (40, 0.5, 0.0, 0.0, 0.0), (17, 0.3, 0.7, 3.5, -2.0), (51, 0.38158387, 2.6810782, 0.0, 0.0)])
def test_grid_mask_vs_numpy(tile, ratio, angle, sx, sy):
    imgs = [np.full((61, 77, 3), 200, np.uint8), IMAGES[0]]
    (got,) = _run(lambda x: fn.grid_mask(x, tile=tile, ratio=ratio, angle=angle, shift_x=sx, shift_y=sy), imgs)
    for img, g in zip(imgs, got):
        h, w = img.shape[:2]
        # DALI 2.4's grid, measured with its CPU operator (tests/compat/oracle.py): the
        # shift subtracted after the rotation, fractional parts of u / tile in float32
        f32 = np.float32
        xs, ys = np.meshgrid(np.arange(w, dtype=f32), np.arange(h, dtype=f32))
        ca, sa, inv = f32(math.cos(angle)), f32(math.sin(angle)), f32(1) / f32(tile)
        u = ((xs * ca - ys * sa) - f32(sx)) * inv
        v = ((xs * sa + ys * ca) - f32(sy)) * inv
        black = ((u - np.floor(u)) < f32(ratio)) & ((v - np.floor(v)) < f32(ratio))
        want = img.copy()
        want[black] = 0
        np.testing.assert_array_equal(g, want)
        assert 0 < black.mean() < 1


def test_grid_mask_bad_tile_names_argument():
    with pytest.raises(Exception, match='argument "tile"'):
        _run(lambda x: fn.grid_mask(x, tile=0), IMAGES[:1])


# --- resize_crop_mirror ----------------------------------------------------------------

@pytest.mark.parametrize("op", ["resize_crop_mirror", "fast_resize_crop_mirror"])
@pytest.mark.parametrize("mirror", [0, 1, 2, 3])
def test_resize_crop_mirror_is_resize_crop_flip(op, mirror):
    aa = op == "resize_crop_mirror"
    imgs = IMAGES + [RNG.integers(0, 256, size=(200, 150, 3), dtype=np.uint8)]

    def graph(x):
        rcm = getattr(fn, op)(x, resize_shorter=30, crop=(17, 23), crop_pos_x=0.3, crop_pos_y=0.8, mirror=mirror)
        sep = fn.flip(fn.crop(fn.resize(x, resize_shorter=30, antialias=aa), crop=(17, 23), crop_pos_x=0.3,
                              crop_pos_y=0.8), horizontal=mirror & 1, vertical=mirror >> 1)
        return rcm, sep
    rcm, sep = _run(graph, imgs)
    for a, b in zip(rcm, sep):
        assert a.shape == (17, 23, 3)
        np.testing.assert_array_equal(a, b)


def test_resize_crop_mirror_window_too_large_is_a_sample_error():
    with pytest.raises(Exception, match="crop window"):
        _run(lambda x: fn.resize_crop_mirror(x, resize_shorter=10, crop=(50, 50)), IMAGES[:1])


# --- decoders.image_crop ---------------------------------------------------------------

@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("crop")
    return [make_jpeg(str(d / ("c%d.jpg" % i)), h, w, seed=i) for i, (h, w) in enumerate([(90, 120), (75, 61)])]


@pytest.mark.parametrize("name", ["decoders.image_crop", "experimental.decoders.image_crop", "image_decoder_crop"])
def test_image_crop_vs_decode_and_slice(jpegs, name):
    op = fn
    for part in name.split("."):
        op = getattr(op, part)
    pipe = godali.Pipeline(batch_size=len(jpegs), num_threads=2, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=jpegs)
        pipe.set_outputs(op(data, crop=(40, 33), crop_pos_x=0.25, crop_pos_y=1.0),
                         fn.decoders.image(data))
    crop, full = pipe.run()
    for i in range(len(jpegs)):
        f = full[i].as_array()
        h, w = f.shape[:2]
        y, x = int(round(1.0 * (h - 40))), int(round(0.25 * (w - 33)))
        # the JPEG decoder decodes only the window's blocks: the same pixels
        np.testing.assert_array_equal(crop[i].as_array(), f[y:y + 40, x:x + 33])
    pipe.close()


def test_image_crop_window_too_large_names_crop(jpegs):
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        data, _ = fn.readers.file(files=jpegs[:1])
        pipe.set_outputs(fn.decoders.image_crop(data, crop=(500, 10)))
    with pytest.raises(Exception, match=r'c0.jpg.*cropping window .* is not valid for image dimensions'):
        pipe.run()
    pipe.close()


# --- tensor_resize ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tensor_resize", "experimental.tensor_resize"])
@pytest.mark.parametrize("mode, interp", [("bilinear", types.INTERP_LINEAR), ("nearest-exact", types.INTERP_NN)])
@pytest.mark.parametrize("size", [(7, 11), (3, 5), (16, 4)])
def test_tensor_resize_vs_torch_interpolate(name, mode, interp, size):
    # torch's half-pixel sampling (align_corners=False) without antialiasing is DALI's
    # tensor_resize with sizes and antialias=False; "nearest-exact" is its NN rounding
    torch = need("torch")
    op = fn.experimental.tensor_resize if name.startswith("experimental") else fn.tensor_resize
    data = [RNG.normal(size=(2, 6, 9)).astype(np.float32), RNG.normal(size=(1, 4, 13)).astype(np.float32)]
    (got,) = _run(lambda x: op(x, sizes=list(size), axes=[1, 2], interp_type=interp, antialias=False), data,
                  layout="CHW")
    for d, g in zip(data, got):
        kw = dict(align_corners=False) if mode == "bilinear" else {}
        want = torch.nn.functional.interpolate(torch.from_numpy(d)[None], size=size, mode=mode, **kw)[0].numpy()
        assert g.shape == want.shape
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


def test_tensor_resize_scales_alignment_and_uint8():
    # scales 0.6 of 4 elements: 2 outputs showing 4 / 3.33 of the input; alignment 0/1 puts
    # that region at the start/end: sample points (d + .5) / .6 - .5 + alignment * (4 - 2 / .6)
    data = [np.array([[0, 10, 20, 30]], np.uint8)]
    for align in (0.0, 0.5, 1.0):
        (got,) = _run(lambda x: fn.tensor_resize(x, scales=[0.6], axes=[1], alignment=align, antialias=False),
                      data, layout="HW")
        pts = (np.arange(2) + 0.5) / 0.6 - 0.5 + align * (4 - 2 / 0.6)
        want = np.round(np.interp(pts, np.arange(4), [0, 10, 20, 30]))
        assert got[0].dtype == np.uint8
        np.testing.assert_array_equal(got[0][0], want)


def test_tensor_resize_needs_sizes_or_scales():
    with pytest.raises(Exception, match='argument "sizes"'):
        _run(lambda x: fn.tensor_resize(x), IMAGES[:1])


# --- dump_image ------------------------------------------------------------------------

def test_dump_image_passes_through_and_writes_ppm(tmp_path, monkeypatch):
    from PIL import Image
    monkeypatch.chdir(tmp_path)
    (got,) = _run(lambda x: fn.dump_image(x, suffix="_t"), IMAGES[:2], threads=1)
    # the pipeline may run ahead (prefetch): the first batch is positions 0 and 1
    files = [tmp_path / ("%d-_t-0.ppm" % i) for i in range(2)]
    for img, g in zip(IMAGES[:2], got):
        np.testing.assert_array_equal(g, img)
    for img, f in zip(IMAGES[:2], files):
        np.testing.assert_array_equal(np.asarray(Image.open(f)), img)
