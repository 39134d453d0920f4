"""DALI 2.4 CPU operators added for issue 29, against independent references: OpenCV
(cv2.cvtColor Bayer->RGB, which DALI's CPU debayer calls; cv2.remap; cv2.createCLAHE, which
DALI's CLAHE tests use as the reference), SciPy (ndimage.correlate for filter) and numpy
implementations written here (bbox_rotate, the LZ4 block format).

Tolerances: debayer (bilinear_ocv, edgeaware_ocv, gray_ocv) exactly; filter within 1 level (uint8) of scipy's float64 correlation
rounded half to even; remap within 1 level of cv2.remap (LINEAR) and exactly for NEAREST
but at pixels whose source coordinate lies within float rounding of a pixel boundary;
clahe within 1 level of cv2 on at least 99% of pixels; bbox_rotate within 1e-5; inflate
exactly.
"""

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import missing_reference, need


@pytest.fixture
def cv2():
    """OpenCV, the reference of debayer, remap and clahe (missing: those tests skip, or
    fail under GODALI_STRICT_REFERENCES=1)."""
    return need("cv2")

RNG = np.random.default_rng(29)


def _run(graph, *sources, layouts=None, batch=None):
    """Runs graph(*external_sources) once; returns ([output][sample], [layout])."""
    batch = batch or len(sources[0])
    layouts = layouts or [""] * len(sources)
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=5)
    with pipe:
        nodes = [fn.external_source(source=(lambda s=s: s), layout=l) for s, l in zip(sources, layouts)]
        outs = graph(*nodes)
        pipe.set_outputs(*(outs if isinstance(outs, (list, tuple)) else [outs]))
    r = pipe.run()
    res = [[np.array(o[i].as_array()) for i in range(batch)] for o in r]
    lay = [o.layout() for o in r]
    pipe.close()
    return res, lay


# --- filter (DALI 2.4's name of experimental.filter) -------------------------------------

def test_filter_is_dali24_name_of_experimental_filter():
    ndimage = need("scipy.ndimage")
    imgs = [RNG.integers(0, 256, size=(9 + i, 11, 3), dtype=np.uint8) for i in range(3)]
    filt = RNG.uniform(-1, 1, size=(3, 5)).astype(np.float32)
    (a, b), lay = _run(lambda x: [fn.filter(x, filt, border="reflect_101"),
                                  fn.experimental.filter(x, filt, border="reflect_101")],
                       imgs, layouts=["HWC"])
    assert lay == ["HWC", "HWC"]
    for img, ga, gb in zip(imgs, a, b):
        ref = np.stack([ndimage.correlate(img[..., c].astype(np.float64), filt.astype(np.float64),
                                          mode="mirror") for c in range(3)], -1)
        ref = np.clip(np.round(ref), 0, 255)
        assert np.abs(ga.astype(int) - ref).max() <= 1
        np.testing.assert_array_equal(ga, gb)


# --- debayer ------------------------------------------------------------------------------

BAYER = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer_matches_opencv_per_sample_pattern(cv2, dtype):
    shapes = [(8, 10), (6, 6), (2, 2), (4, 2), (16, 12)]
    imgs = [RNG.integers(0, np.iinfo(dtype).max + 1, size=s).astype(dtype) for s in shapes]
    pos = [np.array(p, dtype=np.int32) for p in [(0, 0), (0, 1), (1, 0), (1, 1), (0, 1)]]
    (got,), lay = _run(lambda x, b: fn.debayer(x, blue_position=b), imgs, pos, layouts=["HW", ""])
    assert lay == ["HWC"]
    for img, p, g in zip(imgs, pos, got):
        ref = cv2.cvtColor(img, getattr(cv2, "COLOR_Bayer%s2RGB" % BAYER[tuple(p)]))
        assert g.dtype == dtype and g.shape == img.shape + (3,)
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer_edgeaware_ocv_matches_opencv(cv2, dtype):
    shapes = [(8, 10), (6, 6), (2, 2), (16, 12)]
    imgs = [RNG.integers(0, np.iinfo(dtype).max + 1, size=s).astype(dtype) for s in shapes]
    pos = [np.array(p, dtype=np.int32) for p in [(0, 0), (0, 1), (1, 0), (1, 1)]]
    (got,), _ = _run(lambda x, b: fn.debayer(x, blue_position=b, algorithm="edgeaware_ocv"),
                     imgs, pos, layouts=["HW", ""])
    for img, p, g in zip(imgs, pos, got):
        ref = cv2.cvtColor(img, getattr(cv2, "COLOR_Bayer%s2RGB_EA" % BAYER[tuple(p)]))
        np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer_gray_ocv_matches_opencv(cv2, dtype):
    shapes = [(8, 10), (6, 6), (2, 2), (16, 12)]
    imgs = [RNG.integers(0, np.iinfo(dtype).max + 1, size=s).astype(dtype) for s in shapes]
    pos = [np.array(p, dtype=np.int32) for p in [(0, 0), (0, 1), (1, 0), (1, 1)]]
    (got,), lay = _run(lambda x, b: fn.debayer(x, blue_position=b, algorithm="gray_ocv"),
                       imgs, pos, layouts=["HW", ""])
    assert lay == ["HWC"]
    for img, p, g in zip(imgs, pos, got):
        ref = cv2.cvtColor(img, getattr(cv2, "COLOR_Bayer%s2GRAY" % BAYER[tuple(p)]))
        assert g.dtype == dtype and g.shape == img.shape + (1,)
        np.testing.assert_array_equal(g[..., 0], ref)


def test_debayer_sequences_and_experimental_name(cv2):
    seq = [RNG.integers(0, 256, size=(3, 6, 8, 1), dtype=np.uint8) for _ in range(2)]
    (a, b), lay = _run(lambda x: [fn.experimental.debayer(x, blue_position=[1, 1]),
                                  fn.debayer(x, blue_position=[1, 1], algorithm="bilinear_ocv")],
                       seq, layouts=["FHWC"])
    assert lay == ["FHWC", "FHWC"]
    for s, ga, gb in zip(seq, a, b):
        ref = np.stack([cv2.cvtColor(f[..., 0], cv2.COLOR_BayerRG2RGB) for f in s])
        np.testing.assert_array_equal(ga, ref)
        np.testing.assert_array_equal(gb, ref)


def test_debayer_errors():
    odd = [np.zeros((5, 6), np.uint8)]
    with pytest.raises(RuntimeError, match="even"):
        _run(lambda x: fn.debayer(x, blue_position=[0, 0]), odd, layouts=["HW"])
    ok = [np.zeros((4, 6), np.uint8)]
    with pytest.raises(Exception, match="blue_position"):
        _run(lambda x: fn.debayer(x, blue_position=[0, 2]), ok, layouts=["HW"])
    with pytest.raises(Exception, match="default_npp"):
        _run(lambda x: fn.debayer(x, blue_position=[0, 0], algorithm="default_npp"), ok, layouts=["HW"])
    with pytest.raises(Exception, match="vng_ocv"):
        _run(lambda x: fn.debayer(x, blue_position=[0, 0], algorithm="vng_ocv"), ok, layouts=["HW"])
    with pytest.raises(Exception):
        _run(lambda x: fn.debayer(x, blue_position=[0, 0]), [np.zeros((4, 6), np.float32)], layouts=["HW"])


# --- experimental.remap -------------------------------------------------------------------

def _maps(h, w, rng):
    """Maps of points around the image (some outside), on OpenCV's 1/32-pixel grid so that
    the interpolation weights are exact in both implementations."""
    gy, gx = np.mgrid[0:h, 0:w].astype(np.float32)
    mx = gx * 0.9 + rng.uniform(-2.5, 2.5, size=(h, w)) + 0.7
    my = gy * 1.1 + rng.uniform(-2.5, 2.5, size=(h, w)) - 0.4
    return (np.round(mx * 32) / 32).astype(np.float32), (np.round(my * 32) / 32).astype(np.float32)


@pytest.mark.parametrize("interp", ["NN", "LINEAR", "CUBIC"])
@pytest.mark.parametrize("origin", ["center", "corner"])
def test_remap_matches_cv2_remap(cv2, interp, origin):
    imgs, mxs, mys = [], [], []
    for i, (h, w, c) in enumerate([(12, 17, 3), (9, 8, 1), (20, 13, 3)]):
        imgs.append(RNG.integers(0, 256, size=(h, w, c), dtype=np.uint8))
        mx, my = _maps(h, w, RNG)
        mxs.append(mx)
        mys.append(my)
    (got,), lay = _run(lambda x, mx, my: fn.experimental.remap(
        x, mx, my, interp=getattr(types, "INTERP_" + interp), pixel_origin=origin),
        imgs, mxs, mys, layouts=["HWC", "HW", "HW"])
    assert lay == ["HWC"]
    flag = {"NN": cv2.INTER_NEAREST, "LINEAR": cv2.INTER_LINEAR, "CUBIC": cv2.INTER_CUBIC}[interp]
    shift = -0.5 if origin == "corner" else 0.0
    for img, mx, my, g in zip(imgs, mxs, mys, got):
        ref = cv2.remap(img, mx + np.float32(shift), my + np.float32(shift), flag,
                        borderMode=cv2.BORDER_CONSTANT, borderValue=0).reshape(img.shape)
        assert g.shape == img.shape and g.dtype == np.uint8
        diff = np.abs(g.astype(int) - ref)
        if interp == "NN":
            # ties (a coordinate at exactly .5 after the shift) may round either way
            tie = ((np.abs((mx + shift) % 1 - 0.5) < 1e-6) | (np.abs((my + shift) % 1 - 0.5) < 1e-6))
            assert (diff.max(-1)[~tie] == 0).all()
        else:
            assert diff.max() <= 1


def test_remap_float_sequences_and_per_frame_maps(cv2):
    seq = [RNG.uniform(-1, 1, size=(3, 10, 11, 2)).astype(np.float32)]
    mx, my = _maps(10, 11, RNG)
    mxf = np.stack([mx, mx + 1, mx - 2]).astype(np.float32)
    (got,), lay = _run(lambda x, a, b: fn.experimental.remap(x, a, b, pixel_origin="center"),
                       seq, [mxf], [my[..., None]], layouts=["FHWC", "FHW", "HWC"])
    assert lay == ["FHWC"]
    for f in range(3):
        ref = cv2.remap(seq[0][f], mxf[f], my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        np.testing.assert_allclose(got[0][f], ref, rtol=1e-4, atol=1e-4)


def test_remap_errors():
    img = [np.zeros((4, 5, 3), np.uint8)]
    bad = [np.zeros((4, 6), np.float32)]
    good = [np.zeros((4, 5), np.float32)]
    with pytest.raises(RuntimeError, match="mapx"):
        _run(lambda x, a, b: fn.experimental.remap(x, a, b), img, bad, good, layouts=["HWC", "", ""])
    with pytest.raises(Exception, match="pixel_origin"):
        _run(lambda x, a, b: fn.experimental.remap(x, a, b, pixel_origin="middle"), img, good, good,
             layouts=["HWC", "", ""])
    with pytest.raises(Exception, match="FLOAT"):
        _run(lambda x, a, b: fn.experimental.remap(x, a, b), img, [np.zeros((4, 5), np.int32)], good,
             layouts=["HWC", "", ""])


# --- clahe --------------------------------------------------------------------------------

def _photo(path, mode):
    """A photograph of the repository's test corpus (tests/data/corpus)."""
    import os
    Image = need("PIL.Image")
    p = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "corpus", path)
    if not os.path.exists(p):
        missing_reference("test image %s" % p)
    return np.ascontiguousarray(np.array(Image.open(p).convert(mode)))


@pytest.mark.parametrize("tiles,clip", [((8, 8), 2.0), ((4, 3), 3.0), ((5, 7), 1.0), ((2, 2), 40.0),
                                        ((3, 3), 0.0), ((1, 1), 2.1)])
def test_clahe_grey_matches_cv2(cv2, tiles, clip):
    imgs = [RNG.integers(0, 256, size=(37, 53), dtype=np.uint8),
            RNG.integers(0, 256, size=(3, 3), dtype=np.uint8),
            (np.add.outer(np.arange(40), np.arange(64)) * 2).astype(np.uint8),
            _photo("pillow/hopper.bmp", "L")]
    (got,), lay = _run(lambda x: fn.clahe(x, tiles_x=tiles[0], tiles_y=tiles[1], clip_limit=clip),
                       [i[..., None] for i in imgs], layouts=["HWC"])
    assert lay == ["HWC"]
    # DALI reads clip_limit as a 32-bit float before OpenCV gets it as a double
    # (2.1 -> 2.0999999: a different integer clip limit on some tile areas)
    for img, g in zip(imgs, got):
        ref = cv2.createCLAHE(clipLimit=float(np.float32(clip)), tileGridSize=tiles).apply(img)
        np.testing.assert_array_equal(g[..., 0], ref)


@pytest.mark.parametrize("luma", [True, False])
def test_clahe_rgb_matches_cv2(cv2, luma):
    imgs = [_photo("pillow/hopper.bmp", "RGB"), _photo("libjpeg-turbo/testorig.jpg", "RGB")]
    (got,), _ = _run(lambda x: fn.clahe(x, tiles_x=4, tiles_y=3, clip_limit=2.5, luma_only=luma),
                     imgs, layouts=["HWC"])
    eq = cv2.createCLAHE(clipLimit=2.5, tileGridSize=(4, 3))
    for img, g in zip(imgs, got):
        if luma:  # DALI's CPU variant: CLAHE of the L of OpenCV's 8-bit Lab
            lab = cv2.cvtColor(img, cv2.COLOR_RGB2Lab)
            lab[..., 0] = eq.apply(np.ascontiguousarray(lab[..., 0]))
            ref = cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)
            d = np.abs(g.astype(int) - ref)
            # godali's Lab->RGB is computed in float, OpenCV's in fixed point
            assert d.max() <= 4 and (d > 1).mean() < 1e-3
        else:
            ref = np.stack([eq.apply(np.ascontiguousarray(img[..., c])) for c in range(3)], -1)
            np.testing.assert_array_equal(g, ref)


def test_clahe_errors():
    img = [np.zeros((8, 8, 1), np.uint8)]
    with pytest.raises(Exception, match="tiles_x"):
        _run(lambda x: fn.clahe(x, tiles_x=10**6, tiles_y=2, clip_limit=2.0), img, layouts=["HWC"])
    with pytest.raises(Exception, match="tiles_y"):
        _run(lambda x: fn.clahe(x, tiles_x=2, tiles_y=0, clip_limit=2.0), img, layouts=["HWC"])
    with pytest.raises(Exception, match="channels"):
        _run(lambda x: fn.clahe(x, tiles_x=2, tiles_y=2, clip_limit=2.0), [np.zeros((8, 8, 2), np.uint8)],
             layouts=["HWC"])
    with pytest.raises(Exception):
        _run(lambda x: fn.clahe(x, tiles_x=2, tiles_y=2, clip_limit=2.0), [np.zeros((8, 8, 1), np.float32)],
             layouts=["HWC"])


# --- bbox_rotate --------------------------------------------------------------------------

def _rotated_canvas(w, h, rad):
    """fn.rotate's canvas: the rotated bounding box, rounded up (less 0.01), with the
    parity of the input side each output side mostly comes from."""
    c, s = abs(np.cos(rad)), abs(np.sin(rad))
    ow, oh = int(np.ceil(c * w + s * h - 0.01)), int(np.ceil(c * h + s * w - 0.01))
    pw, ph = (h, w) if s > c else (w, h)
    return ow + (ow - pw) % 2, oh + (oh - ph) % 2


def _bbox_rotate_ref(boxes, angle, shape, ltrb=True, norm=True, mode="expand", thr=0.1,
                     keep_size=False, size=None):
    """The boxes' corners turned about the image centre onto the canvas, boxed, corrected
    (fixed/halfway), clipped and filtered, in float64."""
    h, w = shape[0], shape[1]
    rad = np.deg2rad(angle)
    if keep_size:
        cw, ch = w, h
    elif size is not None:
        cw, ch = np.floor(size[1]), np.floor(size[0])
    else:
        cw, ch = _rotated_canvas(w, h, rad)
    out, keep = [], []
    for i, b in enumerate(np.asarray(boxes, np.float64)):
        x0, y0, x1, y1 = b if ltrb else (b[0], b[1], b[0] + b[2], b[1] + b[3])
        xs, ys = np.array([x0, x1, x0, x1]), np.array([y0, y0, y1, y1])
        if norm:
            xs, ys = (xs - 0.5) * w, (ys - 0.5) * h
        else:
            xs, ys = xs - w / 2, ys - h / 2
        ow, oh = xs[1] - xs[0], ys[2] - ys[0]
        rx = xs * np.cos(rad) + ys * np.sin(rad) + cw / 2
        ry = -xs * np.sin(rad) + ys * np.cos(rad) + ch / 2
        r = np.array([rx.min(), ry.min(), rx.max(), ry.max()])
        if mode != "expand":
            nw, nh = r[2] - r[0], r[3] - r[1]
            if (ow < oh) != (nw < nh):
                dw, dh = (nw - oh) / 2, (nh - ow) / 2
            else:
                dw, dh = (nw - ow) / 2, (nh - oh) / 2
            if mode == "halfway":
                dw, dh = dw / 2, dh / 2
            r += [dw, dh, -dw, -dh]
        area = (r[2] - r[0]) * (r[3] - r[1])
        r = np.clip(r, 0, [cw, ch, cw, ch])
        if not ((r[2] - r[0]) * (r[3] - r[1]) / area >= thr):
            continue
        if not ltrb:
            r[2:] -= r[:2]
        if norm:
            r /= [cw, ch, cw, ch]
        out.append(r)
        keep.append(i)
    return np.array(out, np.float64).reshape(-1, 4), keep


BBOX_CASES = [
    dict(angle=30.0), dict(angle=90.0, mode="fixed"), dict(angle=-37.5, mode="halfway"),
    dict(angle=120.0, keep_size=True, remove_threshold=0.5), dict(angle=15.0, size=[300.5, 200.0]),
    dict(angle=45.0, bbox_layout="xyWH", bbox_normalized=False, remove_threshold=0.0),
    dict(angle=270.0, bbox_normalized=False, mode="fixed", keep_size=True, remove_threshold=0.9),
]


@pytest.mark.parametrize("kw", BBOX_CASES)
def test_bbox_rotate_matches_reference(kw):
    shapes = [(120, 200, 3), (301, 97, 3), (64, 64, 1)]
    ltrb = kw.get("bbox_layout", "xyXY") == "xyXY"
    norm = kw.get("bbox_normalized", True)
    boxes, labels = [], []
    for i, (h, w, _) in enumerate(shapes):
        n = 6 - 2 * i
        xy = RNG.uniform(-0.1, 0.9, (n, 2))
        wh = RNG.uniform(0.02, 0.5, (n, 2))
        b = np.concatenate([xy, xy + wh if ltrb else wh], 1)
        if not norm:
            b = b * [w, h, w, h]
        boxes.append(b.astype(np.float32))
        labels.append((np.arange(n, dtype=np.int32) + 7)[:, None])
    shape_src = [np.array(s, np.int32) for s in shapes]
    (ob, ol), _ = _run(lambda b, l, s: list(fn.bbox_rotate(b, l, input_shape=s, **kw)),
                       boxes, labels, shape_src)
    for b, l, s, gb, gl in zip(boxes, labels, shapes, ob, ol):
        ref, keep = _bbox_rotate_ref(b, kw["angle"], s, ltrb, norm, kw.get("mode", "expand"),
                                     kw.get("remove_threshold", 0.1), kw.get("keep_size", False),
                                     kw.get("size"))
        assert gb.dtype == np.float32 and gb.shape == ref.shape
        scale = 1.0 if norm else max(s)
        np.testing.assert_allclose(gb, ref, atol=1e-5 * scale, rtol=1e-5)
        np.testing.assert_array_equal(gl, l[keep])
        assert gl.shape == (len(keep), 1)


def test_bbox_rotate_without_labels_and_errors():
    b = [np.array([[0.1, 0.2, 0.3, 0.5]], np.float32)]
    (got,), _ = _run(lambda x: fn.bbox_rotate(x, angle=90.0, input_shape=[100, 100]), b)
    np.testing.assert_allclose(got[0], [[0.2, 0.7, 0.5, 0.9]], atol=1e-6)
    with pytest.raises(Exception, match="mode"):
        _run(lambda x: fn.bbox_rotate(x, angle=9.0, input_shape=[10, 10], mode="wide"), b)
    with pytest.raises(Exception, match="size"):
        _run(lambda x: fn.bbox_rotate(x, angle=9.0, input_shape=[10, 10], keep_size=True, size=[5, 5]), b)
    with pytest.raises(Exception, match="shape_layout"):
        _run(lambda x: fn.bbox_rotate(x, angle=9.0, input_shape=[10, 10], shape_layout="XY"), b)
    with pytest.raises(Exception, match="input_shape"):
        _run(lambda x: fn.bbox_rotate(x, angle=9.0, input_shape=[10]), b)
    with pytest.raises(Exception, match="size"):
        _run(lambda x: fn.bbox_rotate(x, angle=9.0, input_shape=[10, 10], size=[1e12, 5]), b)


# --- experimental.readers.video -----------------------------------------------------------

@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """Makes (once per module) and returns _level_video clips by name."""
    root = tmp_path_factory.mktemp("clips")
    made = {}

    def clip(name, n):
        if name not in made:
            made[name] = _level_video(root, name, n)
        return made[name]
    return clip


def _level_video(tmp_path, name, n):
    """An MJPEG clip of n frames at 5 fps whose frame i is the flat grey 10 + 20 i."""
    import shutil
    import subprocess
    if shutil.which("ffmpeg") is None:
        missing_reference("the ffmpeg command makes the test clips")
    frames = np.concatenate([np.full((1, 32, 48, 3), 10 + 20 * i, np.uint8) for i in range(n)])
    path = str(tmp_path / name)
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", "48x32", "-r", "5", "-i", "-", "-c:v", "mjpeg", "-q:v", "2",
                    "-pix_fmt", "yuvj444p", path], input=frames.tobytes(), check=True)
    return path


def _ref_sequences(n, seq_len, step, stride, pad):
    """DALI's sequences of a video of n frames: starts 0, step, ... whose seq_len * stride
    frames fit; with padding, those starting inside the video whose start + seq_len *
    stride <= n + step; each frame's index through the pad mode (-1: constant)."""
    out = []
    s = 0
    while s < n:
        full = s + seq_len * stride <= n
        if not full and (pad == "none" or s + seq_len * stride > n + step):
            break
        idx = []
        for i in range(seq_len):
            j = s + i * stride
            if j < n:
                idx.append(j)
            elif pad == "constant":
                idx.append(-1)
            elif pad == "edge":
                idx.append(n - 1)
            elif pad == "reflect_101":
                idx.append(2 * (n - 1) - j)
            else:  # reflect_1001
                idx.append(2 * n - 1 - j)
        out.append(idx)
        s += step
    return out


def _read_all(kw, batch=1):
    pipe = godali.Pipeline(batch_size=batch, num_threads=1)
    with pipe:
        o = fn.experimental.readers.video(**kw)
        pipe.set_outputs(*(o if isinstance(o, (list, tuple)) else [o]))
    n = list(pipe.epoch_size().values())[0]
    res = [[np.array(t[0].as_array()) for t in pipe.run()] for _ in range(n)]
    pipe.close()
    return res


@pytest.mark.parametrize("pad", ["none", "constant", "edge", "reflect_101", "reflect_1001"])
@pytest.mark.parametrize("seq_len,step,stride", [(4, 4, 1), (4, 3, 2), (3, 4, 2), (2, 1, 3)])
def test_experimental_video_reader_sequences_and_padding(clips, pad, seq_len, step, stride):
    v10, v7 = clips("v10.avi", 10), clips("v7.avi", 7)
    got = _read_all(dict(filenames=[v10, v7], labels=[0, 1], sequence_length=seq_len, step=step,
                         stride=stride, pad_mode=pad, fill_value=[1, 2, 3],
                         enable_frame_num="sequence", enable_timestamps=True))
    want = [(0, s) for s in _ref_sequences(10, seq_len, step, stride, pad)] + \
           [(1, s) for s in _ref_sequences(7, seq_len, step, stride, pad)]
    assert len(got) == len(want)
    for (frames, label, fnum, ts), (wl, idx) in zip(got, want):
        assert frames.shape == (seq_len, 32, 48, 3) and frames.dtype == np.uint8
        assert int(label[0]) == wl
        np.testing.assert_array_equal(fnum, idx)
        for f, j, t in zip(frames, idx, ts):
            if j < 0:
                np.testing.assert_array_equal(f.reshape(-1, 3)[0], [1, 2, 3])
                assert t == -1
            else:
                assert abs(float(f.mean()) - (10 + 20 * j)) <= 2  # JPEG of a flat grey
                assert abs(t - 0.2 * j) < 1e-6
        assert ts.dtype == np.float64


def test_experimental_video_reader_uniform_sample_and_frame_num_forms(clips):
    v10, v3 = clips("v10.avi", 10), clips("v3.avi", 3)
    got = _read_all(dict(filenames=[v10, v3], sequence_length=5, uniform_sample=True,
                         enable_frame_num="sequence"))
    assert len(got) == 2
    for (frames, fnum), n in zip(got, [10, 3]):
        want = np.floor(np.linspace(0, n - 1, 5) + 0.5).astype(int)  # DALI: half away from zero
        np.testing.assert_array_equal(fnum, want)
        np.testing.assert_allclose(frames.reshape(5, -1).mean(1), 10 + 20 * want, atol=2)
    np.testing.assert_array_equal(got[1][1], [0, 1, 1, 2, 2])  # DALI's documented example
    for flag in [True, "scalar"]:
        got = _read_all(dict(filenames=[v10], sequence_length=3, step=4, enable_frame_num=flag))
        assert [int(g[1][0]) for g in got] == [0, 4]
    got = _read_all(dict(filenames=[v10], sequence_length=3, enable_frame_num=False))
    assert len(got[0]) == 1


def test_experimental_video_reader_file_list_frames(clips, tmp_path):
    v10, v7 = clips("v10.avi", 10), clips("v7.avi", 7)
    lst = tmp_path / "list.txt"
    lst.write_text("%s 3 2 8\n%s 4 1 -2\n" % (v10, v7))
    got = _read_all(dict(file_list=str(lst), sequence_length=2, file_list_format="frames",
                         enable_frame_num="sequence"))
    # [2, 8) of v10 and [1, 7 - 2) of v7
    assert [(int(g[1][0]), g[2].tolist()) for g in got] == \
        [(3, [2, 3]), (3, [4, 5]), (3, [6, 7]), (4, [1, 2]), (4, [3, 4])]
    # Times (5 fps): the frames shown at 0.3 s and 1.1 s bound [1, 5), as DALI 2.4 reads
    # them; an entry with a start and no end has no frames and is skipped, as DALI's.
    lst.write_text("%s 3 0.3 1.1\n%s 4 0.5\n" % (v10, v7))
    got = _read_all(dict(file_list=str(lst), sequence_length=2, enable_frame_num="sequence"))
    assert [(int(g[1][0]), g[2].tolist()) for g in got] == [(3, [1, 2]), (3, [3, 4])]


def test_experimental_video_reader_argument_errors(clips):
    v10 = clips("v10.avi", 10)
    for kw, arg in [(dict(pad_mode="wrap"), "pad_mode"), (dict(fill_value=[300]), "fill_value"),
                    (dict(enable_frame_num="all"), "enable_frame_num"),
                    (dict(sequence_length=10**9), "sequence_length"),
                    (dict(file_list_rounding="nearest"), "file_list_rounding")]:
        args = dict(filenames=[v10], sequence_length=2)
        args.update(kw)
        with pytest.raises(Exception, match=arg):
            _read_all(args)


# --- decoders.inflate ---------------------------------------------------------------------

def _lz4_literal_block(data):
    """An LZ4 block of literals only (valid per the block format): the reference encoder
    when the lz4 package is absent."""
    n = len(data)
    out = bytearray([min(n, 15) << 4])
    if n >= 15:
        r = n - 15
        while r >= 255:
            out.append(255)
            r -= 255
        out.append(r)
    return bytes(out) + bytes(data)


def _lz4_compress(data):
    try:
        import lz4.block
    except ImportError:
        return _lz4_literal_block(data)
    return lz4.block.compress(data, store_size=False)


def test_inflate_single_chunks_any_dtype():
    arrays = [RNG.integers(0, 5, size=(7, 9, 3)).astype(np.uint8),
              np.tile(np.arange(40, dtype=np.float32), 30).reshape(30, 40),
              np.zeros((0, 4), np.float32) + 1]
    for a, dt in zip(arrays[:2], [types.UINT8, types.FLOAT]):
        comp = [np.frombuffer(_lz4_compress(a.tobytes()), np.uint8)]
        for name in ("decoders", "experimental"):
            f = getattr(fn, name).inflate
            (got,), lay = _run(lambda x: f(x, shape=list(a.shape), dtype=dt, layout="HWC"[:a.ndim]), comp)
            assert lay == ["HWC"[:a.ndim]]
            np.testing.assert_array_equal(got[0], a)
    comp = [np.frombuffer(_lz4_literal_block(arrays[0].tobytes()), np.uint8)]
    (got,), _ = _run(lambda x: fn.decoders.inflate(x, shape=[7, 9, 3]), comp)
    np.testing.assert_array_equal(got[0], arrays[0])


def test_inflate_chunks_as_sequences():
    frames = [RNG.integers(0, 3, size=(4, 6, 3)).astype(np.uint8) for _ in range(3)]
    parts = [_lz4_compress(f.tobytes()) for f in frames]
    sample = np.frombuffer(b"".join(parts), np.uint8)
    sizes = np.array([len(p) for p in parts], np.int32)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    want = np.stack(frames)
    for kw in (dict(chunk_sizes=sizes), dict(chunk_offsets=offsets),
               dict(chunk_offsets=offsets, chunk_sizes=sizes)):
        (got,), lay = _run(lambda x: fn.decoders.inflate(x, shape=[4, 6, 3], layout="HWC", **kw), [sample])
        assert lay == ["FHWC"]
        np.testing.assert_array_equal(got[0], want)
    (got,), _ = _run(lambda x, s: fn.decoders.inflate(x, shape=[4, 6, 3], chunk_sizes=s), [sample], [sizes])
    np.testing.assert_array_equal(got[0], want)


def test_inflate_errors_are_bounded_and_named():
    data = np.arange(64, dtype=np.uint8)
    comp = [np.frombuffer(_lz4_compress(data.tobytes()), np.uint8)]
    with pytest.raises(RuntimeError, match="inflates to more than the 60 bytes"):
        _run(lambda x: fn.decoders.inflate(x, shape=[60]), comp)
    with pytest.raises(RuntimeError, match="inflates to 64 bytes"):
        _run(lambda x: fn.decoders.inflate(x, shape=[70]), comp)
    with pytest.raises(RuntimeError, match="shape"):
        _run(lambda x: fn.decoders.inflate(x, shape=[1 << 20, 1 << 20]), comp)
    with pytest.raises(RuntimeError, match="LZ4 expands at most"):
        _run(lambda x: fn.decoders.inflate(x, shape=[1 << 20]), comp)
    with pytest.raises(RuntimeError, match="not an LZ4 block"):
        _run(lambda x: fn.decoders.inflate(x, shape=[64]), [np.array([0x50, 1, 2], np.uint8)])
    with pytest.raises(RuntimeError, match="outside"):
        _run(lambda x: fn.decoders.inflate(x, shape=[64], chunk_offsets=[0, 500]), comp)
    with pytest.raises(Exception, match="algorithm"):
        _run(lambda x: fn.decoders.inflate(x, shape=[64], algorithm="zstd"), comp)
