"""readers.coco, bb_flip, random_bbox_crop, decoders.image_slice and slice, and DALI's
SSD training pipeline end to end.

The COCO annotation file is written here with the json module and the images with PIL;
the references are straightforward numpy / PIL implementations of DALI's documented
semantics (no pycocotools, nothing from godali).
"""

import json
import math
import os

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types

from conftest import make_jpeg, need

CATEGORIES = [90, 3, 44, 17]  # sparse, unsorted ids


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    """A small COCO data set: 11 images (JPEG and PNG) with ids out of order, objects
    of four sparse categories, crowd regions (RLE), tiny boxes and images without
    objects."""
    root = tmp_path_factory.mktemp("coco")
    img_dir = root / "images"
    rng = np.random.default_rng(42)
    images, anns = [], []
    ids = rng.permutation(np.arange(1000, 1011))
    for i, iid in enumerate(ids):
        h, w = int(rng.integers(60, 140)), int(rng.integers(60, 160))
        name = "img_%02d.%s" % (i, "png" if i % 3 == 1 else "jpg")
        if name.endswith(".jpg"):
            make_jpeg(str(img_dir / name), h, w, seed=i)
        else:
            arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            os.makedirs(img_dir, exist_ok=True)
            Image.fromarray(arr).save(str(img_dir / name))
        images.append({"id": int(iid), "file_name": name, "width": w, "height": h})
        for k in range(int(rng.integers(0, 5)) if i % 4 else 0):
            bw, bh = float(rng.uniform(5, w / 2)), float(rng.uniform(5, h / 2))
            if k == 3:
                bw = 0.05  # below size_threshold
            x, y = float(rng.uniform(0, w - bw)), float(rng.uniform(0, h - bh))
            crowd = int(k == 2)
            a = {"id": len(anns) + 1, "image_id": int(iid),
                 "category_id": int(CATEGORIES[int(rng.integers(0, 4))]),
                 "bbox": [x, y, bw, bh], "iscrowd": crowd, "area": bw * bh}
            if crowd:
                a["segmentation"] = {"counts": [0, 5, 10], "size": [h, w]}
            else:
                a["segmentation"] = [[x, y, x + bw, y, x + bw, y + bh],
                                     [x, y, x + 1, y + 1, x, y + 2, x + 1, y + 3]][:1 + k % 2]
            anns.append(a)
    doc = {"images": images, "annotations": anns,
           "categories": [{"id": c, "name": "c%d" % c} for c in CATEGORIES]}
    ann_file = root / "instances.json"
    with open(ann_file, "w") as f:
        json.dump(doc, f)
    return {"root": str(img_dir), "ann": str(ann_file), "doc": doc}


def reference(doc, ltrb=False, ratio=False, skip_empty=False, include_iscrowd=True,
              avoid_class_remapping=False, size_threshold=0.1, images=None):
    """DALI's documented readers.coco semantics, written out."""
    remap = {c: i + 1 for i, c in enumerate(sorted(c["id"] for c in doc["categories"]))}
    by_id = {im["id"]: im for im in doc["images"]}
    if images is None:
        order = sorted(by_id)
    else:
        by_name = {im["file_name"]: im["id"] for im in doc["images"]}
        order = [by_name[n] for n in images]
    out = []
    for iid in order:
        im = by_id[iid]
        boxes, labels, polys, verts = [], [], [], []
        for a in doc["annotations"]:
            if a["image_id"] != iid:
                continue
            if a["iscrowd"] and not include_iscrowd:
                continue
            x, y, w, h = a["bbox"]
            if w < size_threshold or h < size_threshold:
                continue
            sx, sy = (1.0 / im["width"], 1.0 / im["height"]) if ratio else (1.0, 1.0)
            x, y, w, h = x * sx, y * sy, w * sx, h * sy
            boxes.append([x, y, x + w, y + h] if ltrb else [x, y, w, h])
            labels.append(a["category_id"] if avoid_class_remapping else remap[a["category_id"]])
            if isinstance(a["segmentation"], list):
                for p in a["segmentation"]:
                    start = len(verts)
                    verts += [[p[j] * sx, p[j + 1] * sy] for j in range(0, len(p), 2)]
                    polys.append([len(labels) - 1, start, len(verts)])
        if skip_empty and not boxes:
            continue
        out.append({"id": iid, "file": im["file_name"],
                    "boxes": np.array(boxes, np.float32).reshape(-1, 4),
                    "labels": np.array(labels, np.int32),
                    "polygons": np.array(polys, np.int32).reshape(-1, 3),
                    "vertices": np.array(verts, np.float32).reshape(-1, 2)})
    return out


def _epoch(pipe, n, batch):
    """The first n samples of the pipeline's outputs, per output."""
    rows = None
    for _ in range(math.ceil(n / batch)):
        res = pipe.run()
        if rows is None:
            rows = [[] for _ in res]
        for k, tl in enumerate(res):
            rows[k] += [np.array(tl[i].as_array()) for i in range(len(tl))]
    return [r[:n] for r in rows]


@pytest.mark.parametrize("opts", [
    {},
    {"ltrb": True, "ratio": True},
    {"skip_empty": True, "include_iscrowd": False, "size_threshold": 0.0},
    {"avoid_class_remapping": True, "ratio": True},
    {"images": ["img_05.jpg", "img_01.png", "img_05.jpg"], "ltrb": True},
])
def test_reader_matches_reference(coco, opts):
    want = reference(coco["doc"], **opts)
    batch = 4
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=1)
    with pipe:
        outs = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                               polygon_masks=True, image_ids=True, **opts)
        assert len(outs) == 6  # images, bboxes, labels, polygons, vertices, image_ids
        pipe.set_outputs(*outs)
    jpegs, boxes, labels, polys, verts, ids = _epoch(pipe, len(want), batch)
    pipe.close()
    for i, w in enumerate(want):
        with open(os.path.join(coco["root"], w["file"]), "rb") as f:
            assert jpegs[i].tobytes() == f.read(), w["file"]
        assert ids[i].tolist() == [w["id"]]
        assert boxes[i].dtype == np.float32 and boxes[i].shape == w["boxes"].shape
        np.testing.assert_allclose(boxes[i], w["boxes"], rtol=1e-6, atol=1e-6)
        assert labels[i].dtype == np.int32
        np.testing.assert_array_equal(labels[i], w["labels"])
        np.testing.assert_array_equal(polys[i], w["polygons"])
        np.testing.assert_allclose(verts[i], w["vertices"], rtol=1e-6, atol=1e-6)


def test_reader_default_outputs_and_errors(coco, tmp_path):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
    with pipe:
        outs = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"])
    assert len(outs) == 3
    with pytest.raises(Exception, match="pixelwise_masks"):
        pipe = godali.Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(*fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                              pixelwise_masks=True)[:3])
        pipe.build()
    bad = tmp_path / "bad.json"
    bad.write_text('{"images": [{"id": 1, "file_name": "x.jpg", "width": 0, "height": 5}]}')
    with pytest.raises(Exception, match="bad.json"):
        pipe = godali.Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(*fn.readers.coco(file_root=coco["root"], annotations_file=str(bad)))
        pipe.build()


@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_matches_formula(coco, ltrb):
    n = len(coco["doc"]["images"])
    pipe = godali.Pipeline(batch_size=n, num_threads=2, seed=7)
    with pipe:
        _, boxes, _ = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                      ratio=True, ltrb=ltrb)
        h = fn.random.coin_flip(probability=0.5)
        v = fn.random.coin_flip(probability=0.5)
        pipe.set_outputs(boxes, fn.bb_flip(boxes, ltrb=ltrb, horizontal=h, vertical=v), h, v,
                         fn.bb_flip(boxes, ltrb=ltrb))
    src, got, hs, vs, default = _epoch(pipe, n, n)
    pipe.close()
    assert {int(x) for x in hs} == {0, 1} and {int(x) for x in vs} == {0, 1}
    for b, g, h, v, d in zip(src, got, hs, vs, default):
        want = b.astype(np.float64).copy()
        for axis, on in ((0, int(h)), (1, int(v))):
            if not on:
                continue
            if ltrb:
                want[:, axis], want[:, axis + 2] = 1 - b[:, axis + 2], 1 - b[:, axis]
            else:
                want[:, axis] = 1 - b[:, axis] - b[:, axis + 2]
        np.testing.assert_allclose(g, want, atol=1e-6)
        want = b.astype(np.float64).copy()  # default: horizontal=1, vertical=0
        if ltrb:
            want[:, 0], want[:, 2] = 1 - b[:, 2], 1 - b[:, 0]
        else:
            want[:, 0] = 1 - b[:, 0] - b[:, 2]
        np.testing.assert_allclose(d, want, atol=1e-6)


SSD_CROP = dict(aspect_ratio=[0.5, 2.0], thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9],
                scaling=[0.3, 1.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50)


def _crop_outputs(coco, seed, reps=3, **kw):
    n = len(coco["doc"]["images"])
    pipe = godali.Pipeline(batch_size=n, num_threads=2, seed=seed)
    with pipe:
        _, boxes, labels = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                           ratio=True, ltrb=True)
        outs = fn.random_bbox_crop(boxes, labels, output_bbox_indices=True, **kw)
        assert len(outs) == 5
        pipe.set_outputs(boxes, labels, *outs)
    rows = [_epoch(pipe, n, n) for _ in range(reps)]
    pipe.close()
    return [list(zip(*r)) for r in rows]


def _iou(b, w):
    ix = np.clip(np.minimum(b[:, 2], w[2]) - np.maximum(b[:, 0], w[0]), 0, None)
    iy = np.clip(np.minimum(b[:, 3], w[3]) - np.maximum(b[:, 1], w[1]), 0, None)
    inter = ix * iy
    return inter / ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) + (w[2] - w[0]) * (w[3] - w[1]) - inter)


def test_random_bbox_crop_properties(coco):
    cropped = 0
    for epoch in _crop_outputs(coco, seed=3, **SSD_CROP):
        for boxes, labels, anchor, shape, out, out_labels, idx in epoch:
            boxes = boxes.astype(np.float64)
            assert anchor.shape == (2,) and shape.shape == (2,) and idx.dtype == np.int32
            np.testing.assert_array_equal(out_labels, labels[idx])
            if np.array_equal(shape, [1, 1]):
                assert np.array_equal(anchor, [0, 0])
                np.testing.assert_array_equal(idx, np.arange(len(boxes)))
                np.testing.assert_allclose(out, boxes, atol=1e-7)
                continue
            cropped += 1
            w, h = float(shape[0]), float(shape[1])
            # DALI's rule: the longer side from scaling, width/height from aspect_ratio
            assert 0.3 - 1e-6 <= max(w, h) <= 1 + 1e-6
            assert 0.5 - 1e-6 <= w / h <= 2 + 1e-6
            assert anchor.min() >= 0 and anchor[0] + w <= 1 + 1e-6 and anchor[1] + h <= 1 + 1e-6
            win = np.array([anchor[0], anchor[1], anchor[0] + w, anchor[1] + h], np.float64)
            if len(boxes):
                assert len(idx) > 0
                assert (_iou(boxes, win) >= 0).all()
                cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
                inside = (cx >= win[0] - 1e-6) & (cx <= win[2] + 1e-6) & (cy >= win[1] - 1e-6) & (cy <= win[3] + 1e-6)
                np.testing.assert_array_equal(idx, np.nonzero(inside)[0])
            kept = boxes[idx]
            want = np.stack([
                (np.clip(kept[:, 0], win[0], win[2]) - win[0]) / w,
                (np.clip(kept[:, 1], win[1], win[3]) - win[1]) / h,
                (np.clip(kept[:, 2], win[0], win[2]) - win[0]) / w,
                (np.clip(kept[:, 3], win[1], win[3]) - win[1]) / h], axis=1).reshape(-1, 4)
            np.testing.assert_allclose(out, want, atol=2e-5)
    assert cropped > 0


def test_random_bbox_crop_threshold_rule(coco):
    """One threshold, no whole-image option, one box suffices: the window's IoU with some
    box reaches the threshold whenever a window can (a box whose sides and aspect ratio
    a window can match exactly)."""
    checked = 0
    for epoch in _crop_outputs(coco, seed=4, reps=2, thresholds=[0.5], scaling=[0.1, 1.0],
                               aspect_ratio=[0.5, 2.0], allow_no_crop=False, num_attempts=100,
                               bbox_layout="xyXY", all_boxes_above_threshold=False):
        for boxes, _, anchor, shape, *_ in epoch:
            b = boxes.astype(np.float64)
            bw, bh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
            if not ((np.minimum(bw, bh) >= 0.1) & (bw / bh >= 0.5) & (bw / bh <= 2)).any():
                continue
            win = np.array([anchor[0], anchor[1], anchor[0] + shape[0], anchor[1] + shape[1]], np.float64)
            assert _iou(b, win).max() >= 0.5 - 1e-5, (b, win)
            checked += 1
    assert checked >= 4


def test_random_bbox_crop_is_deterministic(coco):
    a = _crop_outputs(coco, seed=11, reps=1, **SSD_CROP)
    b = _crop_outputs(coco, seed=11, reps=1, **SSD_CROP)
    c = _crop_outputs(coco, seed=12, reps=1, **SSD_CROP)
    flat = lambda r: [x.tobytes() for s in r[0] for x in s]
    assert flat(a) == flat(b)
    assert flat(a) != flat(c)


def _slice_ref(img, anchor, shape):
    """DALI's slice rounding on relative (x, y) anchor and shape."""
    h, w = img.shape[:2]
    x0, y0 = round_half_away(anchor[0] * w), round_half_away(anchor[1] * h)
    x1, y1 = round_half_away((anchor[0] + shape[0]) * w), round_half_away((anchor[1] + shape[1]) * h)
    return img[y0:y1, x0:x1]


def round_half_away(v):
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def test_image_slice_and_slice_match_pil(coco):
    n = len(coco["doc"]["images"])
    pipe = godali.Pipeline(batch_size=n, num_threads=2, seed=5)
    with pipe:
        jpegs, boxes, labels = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                               ratio=True, ltrb=True, name="Reader")
        anchor, shape, _, _ = fn.random_bbox_crop(boxes, labels, **SSD_CROP)
        sliced = fn.decoders.image_slice(jpegs, anchor, shape)
        full = fn.decoders.image(jpegs)
        pipe.set_outputs(sliced, fn.slice(full, anchor, shape), anchor, shape)
    got, got2, anchors, shapes = _epoch(pipe, n, n)
    pipe.close()
    files = [s["file"] for s in reference(coco["doc"])]
    for i, f in enumerate(files):
        img = np.asarray(Image.open(os.path.join(coco["root"], f)).convert("RGB"))
        want = _slice_ref(img, anchors[i].astype(np.float64), shapes[i].astype(np.float64))
        assert got[i].shape == want.shape, f
        assert got2[i].shape == want.shape, f
        # PNG, and JPEG too: the region decode runs the same IDCT and upsampling as
        # PIL's full decode, so the pixels are identical.
        np.testing.assert_array_equal(got[i], want, err_msg=f)
        np.testing.assert_array_equal(got2[i], want, err_msg=f)
    assert any(not np.array_equal(s, [1, 1]) for s in shapes)


def test_slice_out_of_bounds_policies(coco):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=5)
    with pipe:
        jpegs, _, _ = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                      images=["img_01.png", "img_04.png"])
        anchor = fn.random.uniform(values=[-0.25], shape=[2])
        shape = fn.random.uniform(values=[0.5], shape=[2])
        img = fn.decoders.image(jpegs)
        pipe.set_outputs(img, fn.slice(img, anchor, shape, out_of_bounds_policy="pad", fill_values=[7]),
                         fn.slice(img, anchor, shape, out_of_bounds_policy="trim_to_shape"),
                         fn.decoders.image_slice(jpegs, anchor, shape, out_of_bounds_policy="pad",
                                                 fill_values=[7]))
    imgs, padded, trimmed, dpadded = [[np.array(tl[i].as_array()) for i in range(2)] for tl in pipe.run()]
    for img, p, t, dp in zip(imgs, padded, trimmed, dpadded):
        h, w = img.shape[:2]
        x0, y0 = round_half_away(-0.25 * w), round_half_away(-0.25 * h)
        x1, y1 = round_half_away(0.25 * w), round_half_away(0.25 * h)
        want = np.full((y1 - y0, x1 - x0, 3), 7, np.uint8)
        want[-y0:, -x0:] = img[:y1, :x1]
        np.testing.assert_array_equal(p, want)
        np.testing.assert_array_equal(dp, want)
        np.testing.assert_array_equal(t, img[:y1, :x1])
    pipe.close()
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=5)
    with pipe:
        jpegs, _, _ = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"])
        anchor = fn.random.uniform(values=[-0.25], shape=[2])
        shape = fn.random.uniform(values=[0.5], shape=[2])
        pipe.set_outputs(fn.decoders.image_slice(jpegs, anchor, shape))
    with pytest.raises(Exception, match="out_of_bounds_policy"):
        pipe.run()
    pipe.close()


def test_ssd_pipeline_to_torch(coco):
    """DALI's SSD training pipeline: readers.coco -> random_bbox_crop ->
    decoders.image_slice -> flip + bb_flip -> resize 300x300 -> crop_mirror_normalize,
    with the ragged boxes and labels reaching PyTorch as lists of per-sample tensors."""
    torch = need("torch")
    from godali.plugin.pytorch import GodaliRaggedIterator as It

    batch = 4
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=9)
    with pipe:
        jpegs, boxes, labels = fn.readers.coco(file_root=coco["root"], annotations_file=coco["ann"],
                                               skip_empty=True, ratio=True, ltrb=True,
                                               random_shuffle=True, name="Reader")
        anchor, shape, cboxes, clabels = fn.random_bbox_crop(boxes, labels, **SSD_CROP)
        images = fn.decoders.image_slice(jpegs, anchor, shape, device="cpu")
        flip = fn.random.coin_flip(probability=0.5)
        fboxes = fn.bb_flip(cboxes, ltrb=True, horizontal=flip)
        images = fn.flip(images, horizontal=flip)
        images = fn.resize(images, resize_x=300, resize_y=300)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                          std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        pipe.set_outputs(images, fboxes, clabels, cboxes, flip)
    n = len(reference(coco["doc"], skip_empty=True))
    it = It([pipe], ["images", "boxes", "labels", "crop_boxes", "flip"], reader_name="Reader",
            output_types=[It.DENSE_TAG, It.SPARSE_LIST_TAG, It.SPARSE_LIST_TAG,
                          It.SPARSE_LIST_TAG, It.DENSE_TAG])
    seen = 0
    sizes = set()
    for out in it:
        d = out[0]
        assert d["images"].dtype == torch.float32 and tuple(d["images"].shape[1:]) == (3, 300, 300)
        assert isinstance(d["boxes"], list) and isinstance(d["labels"], list)
        for b, l, cb, f in zip(d["boxes"], d["labels"], d["crop_boxes"], d["flip"]):
            assert isinstance(b, torch.Tensor) and b.dtype == torch.float32 and b.shape[1:] == (4,)
            assert l.dtype == torch.int32 and l.shape == (b.shape[0],)
            assert ((b >= 0) & (b <= 1)).all()
            assert set(l.tolist()) <= {1, 2, 3, 4}
            want = cb.clone()
            if int(f):
                want[:, 0], want[:, 2] = 1 - cb[:, 2], 1 - cb[:, 0]
            torch.testing.assert_close(b, want, atol=1e-6, rtol=0)
            sizes.add(b.shape[0])
            seen += 1
    assert seen >= n
    assert len(sizes) > 1  # ragged indeed
    pipe.close()


def test_class_api_names(coco):
    """DALI's class names: ops.readers.COCO (and the former ops.COCOReader),
    ops.RandomBBoxCrop, ops.BbFlip; outputs follow the arguments as in fn."""
    from godali import ops
    assert ops.COCOReader is not None
    reader = ops.readers.COCO(file_root=coco["root"], annotations_file=coco["ann"], ratio=True,
                              ltrb=True, image_ids=True)
    crop = ops.RandomBBoxCrop(**SSD_CROP)
    flip = ops.BbFlip(ltrb=True)
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=2)
    with pipe:
        jpegs, boxes, labels, ids = reader()
        anchor, shape, cboxes = crop(boxes)  # no labels input: no labels output
        pipe.set_outputs(flip(cboxes), ids)
    out = pipe.run()
    assert len(out) == 2 and np.array(out[1][0].as_array()).shape == (1,)
    pipe.close()
