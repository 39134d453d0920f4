"""random_bbox_crop with 3-D boxes, input_shape alone and per-sample input_shape /
crop_shape, checked against numpy from the documented rules (DALI's random_bbox_crop):
the window lies in the image, its longest side is within `scaling`, its x/y, x/z, y/z
ratios within `aspect_ratio`, every box reaches the threshold (3-D IoU), the kept boxes
are those whose centre lies in the window, and they are clipped to it and made relative
to it. Tolerances: ratios and extents 1e-5 relative (float32 outputs), box coordinates
1e-5 absolute."""

import numpy as np
import pytest

import godali
from godali import fn, types

BATCH = 4


def _boxes3(rng, n):
    lo = rng.uniform(0, 0.6, size=(n, 3))
    hi = lo + rng.uniform(0.1, 0.4, size=(n, 3))
    return np.concatenate([lo, hi], axis=1).astype(np.float32)


def _iou(b, w, nd):
    lo = np.maximum(b[:, :nd], w[:nd])
    hi = np.minimum(b[:, nd:], w[nd:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    vb = np.prod(b[:, nd:] - b[:, :nd], axis=1)
    vw = np.prod(w[nd:] - w[:nd])
    return inter / (vb + vw - inter)


def _expected(boxes, a, s, nd):
    """Kept indices (centre in the window) and the boxes mapped into the window."""
    a, s = np.asarray(a, np.float64), np.asarray(s, np.float64)
    c = (boxes[:, :nd].astype(np.float64) + boxes[:, nd:]) / 2
    keep = np.nonzero(np.all((c >= a) & (c <= a + s), axis=1))[0]
    b = boxes[keep].astype(np.float64)
    lo = np.clip((np.maximum(b[:, :nd], a) - a) / s, 0, 1)
    hi = np.clip((np.minimum(b[:, nd:], a + s) - a) / s, 0, 1)
    return keep, np.concatenate([lo, hi], axis=1)


def _pipe(boxes, **kw):
    pipe = godali.Pipeline(batch_size=BATCH, num_threads=2, seed=11)
    with pipe:
        b = fn.external_source(lambda: boxes, batch=True)
        outs = fn.random_bbox_crop(b, output_bbox_indices=True, **kw)
        pipe.set_outputs(*outs)
    return pipe


@pytest.mark.parametrize("aspect", [[0.5, 2.0, 0.6, 2.1, 0.4, 1.9], [1.0, 1.0], [0.5, 0.5, 0.25, 0.25, 0.5, 0.5]])
def test_3d_windows_thresholds_and_boxes(aspect):
    rng = np.random.default_rng(0)
    boxes = [_boxes3(rng, k) for k in (3, 1, 2, 4)]
    thresholds = [0.0, 0.05, 0.1]
    scaling = [0.3, 0.9]
    pipe = _pipe(boxes, bbox_layout="xyzXYZ", thresholds=thresholds, scaling=scaling, aspect_ratio=aspect,
                 allow_no_crop=False, num_attempts=50)
    ranges = np.array(aspect * (3 // (len(aspect) // 2))).reshape(3, 2)
    for _ in range(10):
        anchor, shape, out, idx = [[np.array(o[i].as_array()) for i in range(BATCH)] for o in pipe.run()]
        for i in range(BATCH):
            a, s = anchor[i].astype(np.float64), shape[i].astype(np.float64)
            assert a.shape == (3,) and s.shape == (3,) and out[i].shape[1] == 6
            assert np.all(a >= 0) and np.all(a + s <= 1 + 1e-6)
            assert scaling[0] * (1 - 1e-5) <= s.max() <= scaling[1] * (1 + 1e-5)
            for k, (p, q) in enumerate([(0, 1), (0, 2), (1, 2)]):
                r = s[p] / s[q]
                assert ranges[k, 0] * (1 - 1e-5) <= r <= ranges[k, 1] * (1 + 1e-5), (aspect, s)
            # Every box reaches the smallest threshold; the window met the one drawn.
            w = np.concatenate([a, a + s])
            assert _iou(boxes[i], w, 3).min() >= min(thresholds) - 1e-6
            keep, want = _expected(boxes[i], a, s, 3)
            assert len(keep) > 0 and idx[i].tolist() == keep.tolist()
            np.testing.assert_allclose(out[i], want, atol=1e-5)
    pipe.close()


def test_3d_threshold_is_met():
    # One threshold, one box per sample and every box must reach it (IoU in 3-D).
    rng = np.random.default_rng(1)
    boxes = []
    for _ in range(BATCH):
        lo = rng.uniform(0, 0.4, size=3)
        boxes.append(np.concatenate([lo, lo + rng.uniform(0.3, 0.5, size=3)])[None].astype(np.float32))
    pipe = _pipe(boxes, bbox_layout="xyzXYZ", thresholds=[0.3], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
                 allow_no_crop=False, num_attempts=100)
    for _ in range(5):
        anchor, shape, out, idx = [[np.array(o[i].as_array()) for i in range(BATCH)] for o in pipe.run()]
        for i in range(BATCH):
            w = np.concatenate([anchor[i], anchor[i] + shape[i]]).astype(np.float64)
            assert _iou(boxes[i].astype(np.float64), w, 3)[0] >= 0.3 - 1e-5
    pipe.close()


def test_3d_whd_layout_and_fixed_crop():
    # xyzWHD boxes, crop_shape over input_shape (x, y, z): windows of exactly crop_shape,
    # whole-number anchors in [0, input - crop], boxes written back as xyzWHD.
    rng = np.random.default_rng(2)
    xyzxyz = [_boxes3(rng, 3) for _ in range(BATCH)]
    whd = [np.concatenate([b[:, :3], b[:, 3:] - b[:, :3]], axis=1) for b in xyzxyz]
    ins, crop = np.array([400, 300, 64]), np.array([100, 50, 32])
    pipe = _pipe(whd, bbox_layout="xyzWHD", input_shape=ins.tolist(), crop_shape=crop.tolist(),
                 allow_no_crop=False, thresholds=[0.0])
    for _ in range(5):
        anchor, shape, out, idx = [[np.array(o[i].as_array()) for i in range(BATCH)] for o in pipe.run()]
        for i in range(BATCH):
            a, s = anchor[i], shape[i]
            assert s.tolist() == crop.tolist()
            assert np.all(a >= 0) and np.all(a <= ins - crop) and np.all(a == np.round(a))
            keep, want = _expected(xyzxyz[i], a / ins, s / ins, 3)
            assert idx[i].tolist() == keep.tolist()
            got = np.concatenate([out[i][:, :3], out[i][:, :3] + out[i][:, 3:]], axis=1)
            np.testing.assert_allclose(got, want, atol=1e-5)
    pipe.close()


def test_per_sample_input_shape_makes_square_windows():
    # input_shape alone (here per sample): aspect_ratio [1, 1] means square in those
    # units, i.e. width * W == height * H, while anchor and shape stay relative.
    boxes = [np.array([[0.1, 0.1, 0.4, 0.4], [0.3, 0.2, 0.6, 0.5]], np.float32)] * BATCH
    sizes = [np.array(v, np.int32) for v in ([400, 600], [640, 480], [500, 500], [300, 900])]
    pipe = godali.Pipeline(batch_size=BATCH, num_threads=2, seed=5)
    with pipe:
        b = fn.external_source(lambda: boxes, batch=True)
        sh = fn.external_source(lambda: sizes, batch=True)
        anchor, shape, out = fn.random_bbox_crop(b, bbox_layout="xyXY", input_shape=sh, aspect_ratio=[1.0, 1.0],
                                                 scaling=[0.3, 0.8], thresholds=[0.0], allow_no_crop=False,
                                                 total_num_attempts=100)
        pipe.set_outputs(anchor, shape, out)
    for _ in range(5):
        a, s, o = [[np.array(x[i].as_array()) for i in range(BATCH)] for x in pipe.run()]
        for i in range(BATCH):
            w, h = s[i].astype(np.float64) * sizes[i]
            np.testing.assert_allclose(w, h, rtol=1e-5)
            assert 0.3 * (1 - 1e-5) <= s[i].max() <= 0.8 * (1 + 1e-5)
            assert np.all(a[i] >= 0) and np.all(a[i] + s[i] <= 1 + 1e-6)
    pipe.close()


def test_per_sample_crop_shape():
    boxes = [np.array([[0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.7, 0.6]], np.float32)] * BATCH
    crops = [np.array(v, np.int32) for v in ([100, 50], [200, 100], [50, 300], [400, 300])]
    pipe = godali.Pipeline(batch_size=BATCH, num_threads=2, seed=5)
    with pipe:
        b = fn.external_source(lambda: boxes, batch=True)
        cs = fn.external_source(lambda: crops, batch=True)
        anchor, shape, out = fn.random_bbox_crop(b, bbox_layout="xyXY", input_shape=[400, 300], crop_shape=cs,
                                                 allow_no_crop=False, thresholds=[0.0])
        pipe.set_outputs(anchor, shape, out)
    for _ in range(3):
        a, s, o = [[np.array(x[i].as_array()) for i in range(BATCH)] for x in pipe.run()]
        for i in range(BATCH):
            assert s[i].tolist() == crops[i].tolist()
            assert np.all(a[i] >= 0) and np.all(a[i] <= np.array([400, 300]) - crops[i])
            keep, want = _expected(boxes[i], a[i] / [400, 300], s[i] / [400, 300], 2)
            np.testing.assert_allclose(o[i], want, atol=1e-5)
    pipe.close()


def test_bad_arguments_are_named():
    boxes = [np.zeros((1, 6), np.float32)] * BATCH
    for kw, word in [(dict(bbox_layout="xyzXYW"), "bbox_layout"),
                     (dict(bbox_layout="xyzXYZ", aspect_ratio=[1, 1, 2, 2, 1, 1]), "aspect_ratio"),
                     (dict(bbox_layout="xyXY"), "bbox_layout"),
                     (dict(bbox_layout="xyzXYZ", input_shape=[400, 300]), "input_shape")]:
        with pytest.raises(Exception, match=word):
            pipe = _pipe(boxes, **kw)
            pipe.run()
