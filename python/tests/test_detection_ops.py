"""Detection, geometry-transform and segmentation operators against numpy references
written here from the definitions (matrix formulas for transforms.*, row-wise M x + T for
coord_transform, IoU matching for box_encoder, index arithmetic for paste and
select_masks). Tolerances: float32 outputs within 1e-5 (relative to the values' scale)
of float64 references; integer outputs exact."""

import numpy as np
import pytest

import godali
from godali import fn, types

BATCH = 3


def _run(graph, batch=BATCH, iters=1, **kw):
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=7, **kw)
    with pipe:
        pipe.set_outputs(*graph())
    outs = []
    for _ in range(iters):
        res = pipe.run()
        outs.append([[np.array(o[i].as_array()) for i in range(batch)] for o in res])
    pipe.close()
    return outs if iters > 1 else outs[0]


def _hom(mt):
    n = mt.shape[0]
    m = np.identity(n + 1)
    m[:n, :] = mt
    return m


def _translate(off):
    m = np.identity(len(off) + 1)
    m[:-1, -1] = off
    return m


def _about(center, lin):
    """The linear map lin (n x n) about center, as an (n+1)^2 matrix."""
    n = len(center)
    m = np.identity(n + 1)
    m[:n, :n] = lin
    return _translate(center) @ m @ _translate(-np.asarray(center, dtype=np.float64))


def _rodrigues(axis, deg):
    """Rotation about axis by deg, from the cross-product matrix: exp(theta K) summed as
    a power series (an independent route to the closed form the operator uses)."""
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    th = np.deg2rad(deg)
    m, term = np.identity(3), np.identity(3)
    for i in range(1, 40):
        term = term @ (th * K) / i
        m = m + term
    return m


def _close(got, want, tol=1e-5):
    want = np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.max(np.abs(got.astype(np.float64) - want), initial=0) <= tol * scale, (got, want)


# --- transforms.* -----------------------------------------------------------------------

def test_transform_generators_match_matrix_formulas():
    def graph():
        t0 = fn.random.uniform(range=(-1, 1), shape=(2, 3))
        t03 = fn.random.uniform(range=(-1, 1), shape=(3, 4))
        ang = fn.random.uniform(range=(-90, 90))
        return [t0, t03, ang,
                fn.transforms.translation(offset=(2.0, -1.0)),
                fn.transforms.translation(t0, offset=(2.0, -1.0)),
                fn.transforms.translation(t0, offset=(2.0, -1.0), reverse_order=True),
                fn.transforms.scale(scale=(2.0, 0.5), center=(1.0, 3.0)),
                fn.transforms.scale(t03, scale=[3.0]),
                fn.transforms.rotation(angle=ang, center=(1.0, 0.5)),
                fn.transforms.rotation(t03, angle=40.0, axis=(0.4, 0.3, 0.1), center=(1.0, -0.4, 10.0)),
                fn.transforms.shear(shear=(1.0, 2.0), center=(0.4, 0.5)),
                fn.transforms.shear(angles=(40.0, 30.0, 10.0, 35.0, 25.0, 15.0)),
                fn.transforms.crop(from_start=(0.1, 0.2), from_end=(1.0, 1.2), to_start=(0.3, 0.2), to_end=(0.5, 0.6)),
                fn.transforms.crop(from_start=(1.0,), from_end=(0.0,), to_start=(5.0, 2.0), absolute=True)]
    out = _run(graph)
    for i in range(BATCH):
        T0, T03, a = _hom(out[0][i]), _hom(out[1][i]), float(out[2][i])
        c, s = np.cos(np.deg2rad(a)), np.sin(np.deg2rad(a))
        sh2 = np.array([[1, 1.0], [2.0, 1]])
        t = np.tan(np.deg2rad([40.0, 30.0, 10.0, 35.0, 25.0, 15.0]))
        sh3 = np.array([[1, t[0], t[1]], [t[2], 1, t[3]], [t[4], t[5], 1]])
        # crop: per dimension, scale = (to_end - to_start) / (from_end - from_start)
        sc = (np.array([0.5, 0.6]) - [0.3, 0.2]) / (np.array([1.0, 1.2]) - [0.1, 0.2])
        crop = np.identity(3)
        crop[[0, 1], [0, 1]] = sc
        crop[:2, 2] = np.array([0.3, 0.2]) - sc * [0.1, 0.2]
        # absolute crop from [1, 0] to [5, 1]/[2, 1]: start/end swapped where reversed
        crop_abs = np.identity(3)
        crop_abs[[0, 1], [0, 1]] = [1.0 - 5.0, 1.0 - 2.0]
        crop_abs[:2, 2] = [5.0, 2.0]
        crop_abs[[0, 1], [0, 1]] = [abs(1.0 - 5.0), abs(1.0 - 2.0)]
        crop_abs[:2, 2] = [1.0, 1.0]
        want = [
            _translate([2.0, -1.0]),
            _translate([2.0, -1.0]) @ T0,
            T0 @ _translate([2.0, -1.0]),
            _about([1.0, 3.0], np.diag([2.0, 0.5])),
            np.diag([3.0, 3.0, 3.0, 1.0]) @ T03,
            _about([1.0, 0.5], np.array([[c, -s], [s, c]])),
            _about([1.0, -0.4, 10.0], _rodrigues((0.4, 0.3, 0.1), 40.0)) @ T03,
            _about([0.4, 0.5], sh2),
            _about([0.0, 0.0, 0.0], sh3),
            crop,
            crop_abs,
        ]
        for k, w in enumerate(want):
            got = out[3 + k][i]
            _close(got, w[:-1, :], 2e-5)


def test_transforms_combine_applies_in_input_order():
    pts = np.array([[0.3, -2.0], [1.5, 4.0]])

    def graph():
        a = fn.transforms.translation(offset=(1.0, 2.0))
        b = fn.transforms.rotation(angle=fn.random.uniform(range=(-180, 180)))
        c = fn.transforms.scale(scale=(2.0, -1.0))
        return [a, b, c, fn.transforms.combine(a, b, c), fn.transforms.combine(a, b, c, reverse_order=True)]
    out = _run(graph)
    for i in range(BATCH):
        A, B, C = (_hom(out[k][i]) for k in range(3))
        comb, rev = _hom(out[3][i]), _hom(out[4][i])
        for p in pts:
            x = np.append(p, 1.0)
            _close((comb @ x)[:2], (C @ (B @ (A @ x)))[:2])  # a first, then b, then c
            _close((rev @ x)[:2], (A @ (B @ (C @ x)))[:2])


def test_transforms_import_as_modules_and_ops_classes():
    import godali.fn.transforms as T
    import godali.ops.transforms as OT
    import godali.fn.segmentation as S
    assert T.rotation is fn.transforms.rotation
    assert OT.Rotation.schema.name == "transforms.rotation"
    assert S.random_mask_pixel is fn.segmentation.random_mask_pixel
    assert godali.ops.CoordTransform.schema.name == "coord_transform"
    assert godali.ops.BBoxPaste.schema.name == "bbox_paste"
    assert godali.ops.ROIRandomCrop.schema.name == "roi_random_crop"


@pytest.mark.parametrize("make, msg", [
    (lambda: fn.transforms.shear(shear=(1.0, 2.0, 3.0)), "shear"),
    (lambda: fn.transforms.shear(angles=(95.0, 0.0)), "angles"),
    (lambda: fn.transforms.rotation(angle=10.0, axis=(1.0, 0.0)), "axis"),
    (lambda: fn.transforms.scale(scale=(1.0, 2.0), center=(1.0, 2.0, 3.0)), "center"),
    (lambda: fn.transforms.crop(from_start=(0.5, 1.0), from_end=(0.5, 2.0, 3.0)), "from_end"),
    (lambda: fn.transforms.scale(scale=2.0), "ndim"),
    (lambda: fn.transforms.translation(fn.random.uniform(range=(0, 1), shape=(3, 4)), offset=(1.0, 2.0)), "2-D"),
])
def test_transform_errors_name_the_argument(make, msg):
    with pytest.raises(Exception, match=msg):
        _run(lambda: [make()])


# --- coord_transform, coord_flip ---------------------------------------------------------

def test_coord_transform_matches_rows_times_matrix():
    rng = np.random.default_rng(1)
    pts = [rng.uniform(-50, 50, (n, 3)).astype(np.float32) for n in (5, 0, 7)]
    M = rng.uniform(-1, 1, (2, 3))
    T = np.array([3.0, -4.0])
    ipts = [rng.integers(0, 200, (6, 2)).astype(np.uint8) for _ in range(BATCH)]

    def graph():
        x = fn.external_source(source=lambda: pts, layout="NX")
        xi = fn.external_source(source=lambda: ipts)
        mt = fn.transforms.rotation(angle=30.0)
        return [fn.coord_transform(x, M=M.ravel().tolist(), T=T.tolist()),
                fn.coord_transform(x, M=2.0, T=1.0),
                fn.coord_transform(xi, MT=mt, dtype=types.UINT8),
                fn.coord_transform(x, M=fn.random.uniform(range=(0, 1), shape=(1, 3)))]
    out = _run(graph)
    rot = np.array([[np.cos(np.pi / 6), -np.sin(np.pi / 6)], [np.sin(np.pi / 6), np.cos(np.pi / 6)]])
    for i in range(BATCH):
        p = pts[i].astype(np.float64)
        _close(out[0][i], p @ M.T + T)
        _close(out[1][i], p * 2 + 1)
        ref = np.clip(np.floor(ipts[i] @ rot.T + 0.5), 0, 255)  # round half up (values >= 0), saturate
        assert out[2][i].dtype == np.uint8 and np.array_equal(out[2][i], ref.astype(np.uint8))
        assert out[3][i].shape == (p.shape[0], 1)


def test_coord_flip_mirrors_about_the_center():
    rng = np.random.default_rng(2)
    pts = [rng.uniform(0, 1, (4, 3)).astype(np.float32) for _ in range(BATCH)]

    def graph():
        x = fn.external_source(source=lambda: pts)
        fy = fn.random.coin_flip(probability=0.5)
        return [fy, fn.coord_flip(x), fn.coord_flip(x, layout="zyx", flip_x=0, flip_y=fy, flip_z=1, center_z=2.0, center_y=0.0)]
    out = _run(graph)
    for i in range(BATCH):
        p = pts[i].astype(np.float64)
        want = p.copy()
        want[:, 0] = 1 - p[:, 0]
        _close(out[1][i], want)
        want = p.copy()
        want[:, 0] = 4.0 - p[:, 0]          # z is column 0: 2 * 2.0 - z
        if out[0][i]:
            want[:, 1] = -p[:, 1]           # y about 0
        _close(out[2][i], want)


def test_coord_flip_refuses_bad_layout():
    with pytest.raises(Exception, match="layout"):
        _run(lambda: [fn.coord_flip(fn.random.uniform(range=(0, 1), shape=(3, 2)), layout="xx")])


# --- bbox_paste, paste -----------------------------------------------------------------

def test_bbox_paste_follows_the_pasted_image():
    boxes = np.array([[0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0]], dtype=np.float32)

    def graph():
        b = types.Constant(boxes)
        return [fn.bbox_paste(b, ratio=2.0, paste_x=0.25, paste_y=1.0, ltrb=True),
                fn.bbox_paste(b, ratio=4.0)]
    out = _run(graph)
    # ltrb: a point x of the image lands at (x * w + paste_x * (W - w)) / W, W = ratio * w
    ref = boxes.astype(np.float64).copy()
    ref[:, [0, 2]] = (ref[:, [0, 2]] + 0.25 * (2 - 1)) / 2
    ref[:, [1, 3]] = (ref[:, [1, 3]] + 1.0 * (2 - 1)) / 2
    # xywh: the corner moves as a point, the size shrinks by 1/ratio
    ref2 = boxes.astype(np.float64).copy()
    ref2[:, :2] = (ref2[:, :2] + 0.5 * 3) / 4
    ref2[:, 2:] = ref2[:, 2:] / 4
    for i in range(BATCH):
        _close(out[0][i], ref)
        _close(out[1][i], ref2)


def test_paste_places_the_image_on_a_filled_canvas():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for h, w in ((5, 7), (8, 3), (1, 1))]

    def graph():
        x = fn.external_source(source=lambda: imgs, layout="HWC")
        return [fn.paste(x, ratio=1.5, paste_x=0.6, paste_y=0.4, fill_value=(128, 73, 39)),
                fn.paste(x, ratio=2, fill_value=7, min_canvas_size=12)]
    out = _run(graph)
    for i, im in enumerate(imgs):
        h, w = im.shape[:2]
        for k, (ratio, px, py, fill, mc) in enumerate([(1.5, 0.6, 0.4, (128, 73, 39), 0), (2, 0.5, 0.5, (7, 7, 7), 12)]):
            ch, cw = max(int(h * ratio), mc), max(int(w * ratio), mc)
            ref = np.empty((ch, cw, 3), np.uint8)
            ref[:] = fill
            y, x = int(py * (ch - h)), int(px * (cw - w))
            ref[y:y + h, x:x + w] = im
            assert np.array_equal(out[k][i], ref), (i, k)


@pytest.mark.parametrize("kw, msg", [({"ratio": 0.5}, "ratio of less than 1"), ({"ratio": 2, "paste_x": 1.1}, "must be in range"),
                                     ({"ratio": 2, "min_canvas_size": -1.0}, "min_canvas_size")])
def test_paste_errors(kw, msg):
    img = [np.zeros((4, 4, 3), np.uint8)] * BATCH
    with pytest.raises(Exception, match=msg):
        _run(lambda: [fn.paste(fn.external_source(source=lambda: img, layout="HWC"), fill_value=0, **kw)])


# --- box_encoder -------------------------------------------------------------------------

def _iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def _encode_ref(boxes, labels, anchors, criteria, offset=False, scale=1.0, means=(0, 0, 0, 0), stds=(1, 1, 1, 1)):
    iou = _iou(anchors, boxes)                     # [A, N]
    match = np.where(iou.max(axis=1) > criteria, iou.argmax(axis=1), -1) if len(boxes) else np.full(len(anchors), -1)
    for n in range(len(boxes)):                    # every box keeps its best anchor
        match[np.argmax(iou[:, n])] = n
    out = anchors.astype(np.float64).copy()
    lab = np.zeros(len(anchors), np.int32)
    out[match >= 0] = boxes[match[match >= 0]]
    lab[match >= 0] = labels[match[match >= 0]]
    if offset:
        cw = lambda x: np.stack([(x[:, 0] + x[:, 2]) / 2, (x[:, 1] + x[:, 3]) / 2, x[:, 2] - x[:, 0], x[:, 3] - x[:, 1]], 1)
        b, a = cw(out), cw(anchors.astype(np.float64))
        raw = np.concatenate([(b[:, :2] - a[:, :2]) / a[:, 2:], np.log(b[:, 2:] / a[:, 2:])], axis=1)
        out = (raw * scale - np.array(means)) / np.array(stds)
    return out, lab


def test_box_encoder_matches_iou_matching():
    rng = np.random.default_rng(4)
    g = np.stack(np.meshgrid(np.linspace(0, 0.8, 5), np.linspace(0, 0.8, 5)), -1).reshape(-1, 2)
    anchors = np.concatenate([g, g + 0.2], axis=1).astype(np.float32)
    boxes, labels = [], []
    for n in (3, 1, 4):
        lt = rng.uniform(0, 0.7, (n, 2))
        wh = rng.uniform(0.1, 0.3, (n, 2))
        boxes.append(np.concatenate([lt, lt + wh], 1).astype(np.float32))
        labels.append(rng.integers(1, 80, n).astype(np.int32))

    def graph():
        b, l = fn.external_source(source=lambda: (boxes, labels), num_outputs=2)
        e1 = fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), criteria=0.3)
        e2 = fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), criteria=0.5, offset=True, scale=2.0,
                            means=[0.1, 0.2, 0.0, 0.0], stds=[0.1, 0.1, 0.2, 0.2])
        return list(e1) + list(e2)
    out = _run(graph)
    for i in range(BATCH):
        rb, rl = _encode_ref(boxes[i], labels[i], anchors, 0.3)
        _close(out[0][i], rb)
        assert np.array_equal(out[1][i], rl)
        rb, rl = _encode_ref(boxes[i], labels[i], anchors, 0.5, True, 2.0, [0.1, 0.2, 0, 0], [0.1, 0.1, 0.2, 0.2])
        _close(out[2][i], rb, 1e-4)
        assert np.array_equal(out[3][i], rl)


def test_box_encoder_errors_name_arguments():
    def graph(**kw):
        b = types.Constant(np.zeros((1, 4), np.float32))
        l = types.Constant(np.zeros((1,), np.int32))
        return list(fn.box_encoder(b, l, **kw))
    with pytest.raises(Exception, match="anchors"):
        _run(lambda: graph(anchors=[0.0, 0.0, 1.0]))
    with pytest.raises(Exception, match="stds"):
        _run(lambda: graph(anchors=[0.0, 0.0, 1.0, 1.0], stds=[1, 1, 0, 1]))


# --- segmentation, random crops --------------------------------------------------------

def test_select_masks_keeps_selected_polygons_in_order():
    polys = [np.array([[0, 0, 3], [1, 3, 5], [2, 5, 9]], np.int32)] * BATCH
    verts = [np.arange(18, dtype=np.float32).reshape(9, 2) + 100 * i for i in range(BATCH)]
    ids = [np.array([2, 0], np.int32), np.array([1], np.int32), np.array([0, 1, 2], np.int32)]

    def graph():
        p, v, s = fn.external_source(source=lambda: (polys, verts, ids), num_outputs=3)
        return list(fn.segmentation.select_masks(s, p, v)) + list(fn.segmentation.select_masks(s, p, v, reindex_masks=True))
    out = _run(graph)
    for i in range(BATCH):
        rows, vs, start = [], [], 0
        for k, m in enumerate(ids[i]):
            _, a, b = polys[i][m]
            rows.append((m, start, start + b - a))
            vs.append(verts[i][a:b])
            start += b - a
        assert np.array_equal(out[0][i], np.array(rows, np.int32))
        assert np.array_equal(out[1][i], np.concatenate(vs))
        re = np.array(rows, np.int32)
        re[:, 0] = np.arange(len(rows))
        assert np.array_equal(out[2][i], re)


def test_select_masks_errors():
    polys = [np.array([[0, 0, 20]], np.int32)] * BATCH
    verts = [np.zeros((3, 2), np.float32)] * BATCH
    ids = [np.array([0], np.int32)] * BATCH

    def graph(sel):
        p, v, s = fn.external_source(source=lambda: (polys, verts, sel), num_outputs=3)
        return list(fn.segmentation.select_masks(s, p, v))
    with pytest.raises(Exception, match="out of bounds"):
        _run(lambda: graph(ids))
    with pytest.raises(Exception, match="not present"):
        _run(lambda: graph([np.array([5], np.int32)] * BATCH))


def test_random_mask_pixel_draws_foreground_uniformly():
    mask = np.zeros((6, 9), np.int32)
    fg = [(1, 2), (4, 7), (5, 0)]
    for y, x in fg:
        mask[y, x] = 3
    mask[2, 2] = 1

    def graph():
        m = types.Constant(mask)
        return [fn.segmentation.random_mask_pixel(m, foreground=1, value=3),
                fn.segmentation.random_mask_pixel(m, foreground=1, threshold=2.0),
                fn.segmentation.random_mask_pixel(m, foreground=0),
                fn.segmentation.random_mask_pixel(m, foreground=1, value=9)]
    counts = {p: 0 for p in fg}
    anywhere = set()
    for outs in _run(graph, batch=8, iters=40):
        for i in range(8):
            p = tuple(outs[0][i].tolist())
            assert outs[0][i].dtype == np.int64 and p in counts
            counts[p] += 1
            assert tuple(outs[1][i].tolist()) in counts
            anywhere.add(tuple(outs[2][i].tolist()))
            y, x = outs[3][i].tolist()       # no element == 9: anywhere in the mask
            assert 0 <= y < 6 and 0 <= x < 9
    # 320 draws over 3 pixels: each well within [60, 160] (binomial sd ~8.4)
    assert all(60 <= c <= 160 for c in counts.values()), counts
    assert len(anywhere) > 30


def test_roi_random_crop_contains_or_is_contained():
    def graph():
        return [fn.roi_random_crop(crop_shape=(10, 4), roi_start=(5, 2), roi_end=(9, 12), in_shape=(30, 20)),
                fn.roi_random_crop(fn.random.uniform(range=(0, 1), shape=(30, 20)), crop_shape=(10, 4), roi_start=(5, 2), roi_shape=(4, 10))]
    for outs in _run(graph, batch=8, iters=10):
        for k in range(2):
            for i in range(8):
                y, x = outs[k][i].tolist()
                assert outs[k][i].dtype == np.int64
                # dimension 0: crop 10 >= ROI 4 -> contains [5, 9) and stays in [0, 30)
                assert y <= 5 and y + 10 >= 9 and y >= 0 and y + 10 <= 30
                # dimension 1: crop 4 < ROI 10 -> inside [2, 12)
                assert 2 <= x and x + 4 <= 12


def test_roi_random_crop_errors():
    with pytest.raises(Exception, match="roi_end"):
        _run(lambda: [fn.roi_random_crop(crop_shape=(2, 2), roi_start=(0, 0))])
    with pytest.raises(Exception, match="roi_start"):
        _run(lambda: [fn.roi_random_crop(crop_shape=(2, 2), roi_start=(0,), roi_end=(1, 1))])


def test_random_crop_generator_windows_fit_the_image():
    def graph():
        shp = types.Constant(np.array([40, 60, 3], np.int32))
        return list(fn.random_crop_generator(shp, random_area=[0.2, 0.5], random_aspect_ratio=[0.5, 2.0]))
    for outs in _run(graph, batch=8, iters=5):
        for i in range(8):
            (y, x), (h, w) = outs[0][i].tolist(), outs[1][i].tolist()
            assert 0 <= y and y + h <= 40 and 0 <= x and x + w <= 60
            assert 0.15 <= h * w / 2400 <= 0.55 or (h, w) != (40, 60)


def test_random_choices_do_not_depend_on_num_threads():
    def graph():
        m = fn.cast(fn.random.uniform(range=(0, 2), shape=(20, 30)), dtype=types.INT32)
        return [fn.segmentation.random_mask_pixel(m, foreground=1),
                fn.roi_random_crop(crop_shape=(10, 4), roi_start=(5, 2), roi_end=(9, 12), in_shape=(30, 20))]
    runs = []
    for nt in (1, 3):
        pipe = godali.Pipeline(batch_size=6, num_threads=nt, seed=11)
        with pipe:
            pipe.set_outputs(*graph())
        res = pipe.run()
        runs.append([[np.array(o[i].as_array()) for i in range(6)] for o in res])
        pipe.close()
    for a, b in zip(runs[0], runs[1]):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_coord_transform_takes_the_last_dimension_as_coordinates():
    rng = np.random.default_rng(5)
    data = [rng.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(BATCH)]
    M = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0]], np.float64)   # reverses the channels

    def graph():
        x = fn.external_source(source=lambda: data, layout="HWC")
        return [fn.coord_transform(x, M=M.ravel().tolist(), dtype=types.UINT8),
                fn.transforms.crop(from_start=(0.0, 1.0), from_end=(1.0, 1.0), to_start=(0.2, 0.3), to_end=(0.8, 0.5))]
    out = _run(graph)
    for i in range(BATCH):
        assert np.array_equal(out[0][i], data[i][..., ::-1])
        # dimension 1 has an empty source box: scale 1, from_start -> to_start
        _close(out[1][i], [[0.6, 0, 0.2], [0, 1, 0.3 - 1.0]])


def test_ssd_random_crop_cuts_a_window_of_the_image():
    H, W = 60, 90
    img = np.zeros((H, W, 3), np.uint8)
    img[..., 0] = np.arange(H)[:, None]          # each pixel says where it was
    img[..., 1] = np.arange(W)[None, :]
    boxes = np.array([[0.1, 0.1, 0.4, 0.5], [0.5, 0.3, 0.9, 0.9]], np.float32)
    labels = np.array([3, 8], np.int32)

    def graph():
        return list(fn.ssd_random_crop(types.Constant(img, layout="HWC"), types.Constant(boxes), types.Constant(labels), num_attempts=5))
    for outs in _run(graph, batch=8, iters=4):
        for i in range(8):
            im, bx, lb = outs[0][i], outs[1][i], outs[2][i]
            y0, x0 = int(im[0, 0, 0]), int(im[0, 0, 1])
            h, w = im.shape[:2]
            assert np.array_equal(im, img[y0:y0 + h, x0:x0 + w])
            assert h >= int(0.3 * H) - 1 and w >= int(0.3 * W) - 1
            assert 1 <= len(lb) <= 2 and set(lb.tolist()) <= {3, 8} and bx.shape == (len(lb), 4)
            assert bx.min() >= 0 and bx.max() <= 1


def test_ssd_random_crop_of_a_single_channel_hw_image():
    # DALI accepts a 2-D (HW) image (its checkpointing test crops fn.random.uniform of
    # shape (100, 100)): the window is cut as from the HWC image with one channel.
    H, W = 60, 90
    img = (np.arange(H)[:, None] * 3 + np.arange(W)[None, :] * 7).astype(np.uint8)
    boxes = np.array([[0.1, 0.1, 0.4, 0.5], [0.5, 0.3, 0.9, 0.9]], np.float32)
    labels = np.array([3, 8], np.int32)

    def graph(image, layout):
        def g():
            return list(fn.ssd_random_crop(types.Constant(image, layout=layout),
                                           types.Constant(boxes), types.Constant(labels),
                                           num_attempts=5, seed=11))
        return g
    flat = list(_run(graph(img, "HW"), batch=8, iters=3))
    chan = list(_run(graph(img[..., None], "HWC"), batch=8, iters=3))
    for a, b in zip(flat, chan):
        for i in range(8):
            assert a[0][i].ndim == 2
            assert np.array_equal(a[0][i], b[0][i][..., 0])
            assert np.array_equal(a[1][i], b[1][i]) and np.array_equal(a[2][i], b[2][i])
    assert any(a[0][i].shape != img.shape for a in flat for i in range(8))  # windows cut


def test_random_bbox_crop_fixed_crop_shape():
    # DALI's crop_shape with input_shape: windows of exactly crop_shape (in input_shape's
    # units, x then y), anchors in [0, input - crop], boxes relative to the window.
    boxes = [np.array([[0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.7, 0.6]], np.float32)] * 4
    pipe = godali.Pipeline(batch_size=4, num_threads=1, seed=3)
    with pipe:
        b = fn.external_source(lambda: boxes, batch=True)
        anchor, shape, out = fn.random_bbox_crop(b, bbox_layout="xyXY", input_shape=[400, 300],
                                                 crop_shape=[100, 50], allow_no_crop=False,
                                                 thresholds=[0.0], scaling=None, aspect_ratio=None)
        pipe.set_outputs(anchor, shape, out)
    for _ in range(5):
        a, s, o = pipe.run()
        for i in range(4):
            an, sh, ob = np.array(a[i]), np.array(s[i]), np.array(o[i])
            assert sh.tolist() == [100.0, 50.0]
            assert 0 <= an[0] <= 300 and 0 <= an[1] <= 250
            rel_a, rel_s = an / [400, 300], sh / [400, 300]
            centers = (boxes[i][:, :2] + boxes[i][:, 2:]) / 2
            inside = np.all((centers >= rel_a) & (centers <= rel_a + rel_s), axis=1)
            want = np.clip((boxes[i][inside].reshape(-1, 2, 2) - rel_a) / rel_s, 0, 1).reshape(-1, 4)
            np.testing.assert_allclose(ob, want, atol=1e-5)
    pipe.close()


def test_random_mask_pixel_of_a_mask_shaped_per_sample():
    # The mask's shape comes per sample from a stack of two scalars: its rank (2) is known
    # when the pipeline is built, so random_mask_pixel takes it (as in DALI).
    pipe = godali.Pipeline(batch_size=3, num_threads=2, seed=7, device_id=None)
    with pipe:
        dims = [fn.cast(fn.random.uniform(range=(5, 9)), dtype=types.INT32) for _ in range(2)]
        shape = fn.stack(*dims)
        mask = fn.cast(fn.random.uniform(range=(0, 2), shape=shape), dtype=types.INT32)
        pipe.set_outputs(mask, fn.segmentation.random_mask_pixel(mask, foreground=1))
    m, px = pipe.run()
    pipe.close()
    for i in range(3):
        mi, pi = np.array(m[i]), np.array(px[i])
        assert mi.ndim == 2 and pi.shape == (2,)
        if mi.any():
            assert mi[tuple(pi)] > 0
