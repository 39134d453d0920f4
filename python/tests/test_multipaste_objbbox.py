"""fn.multi_paste and fn.segmentation.random_object_bbox against numpy references (the
connected-component reference is a plain flood fill written here)."""

import collections

import numpy as np
import pytest

from godali import fn, types
from godali.pipeline import Pipeline


def run_ext(batches, build, batch_size, seed=1, n_outputs=None):
    """A pipeline fed `batches` (tuples of per-output lists) through one external source
    of len(batches[0]) outputs; build(*nodes) returns the outputs."""
    k = len(batches[0])
    pipe = Pipeline(batch_size=batch_size, num_threads=2, device_id=None, seed=seed)
    with pipe:
        nodes = fn.external_source(source=batches, num_outputs=k, cycle=False)
        outs = build(*nodes)
        pipe.set_outputs(*(outs if isinstance(outs, (list, tuple)) else [outs]))
    res = []
    for _ in batches:
        res.append([[np.array(tl[i]) for i in range(len(tl))] for tl in pipe.run()])
    return res


# --- multi_paste ---------------------------------------------------------------------

def paste_ref(batch, ids, in_anchors, shapes, out_anchors, out_hw, dtype):
    c = batch[0].shape[2]
    out = np.zeros((out_hw[0], out_hw[1], c), dtype=dtype)
    for j, s in enumerate(ids):
        src = batch[s]
        (iy, ix), (h, w), (oy, ox) = in_anchors[j], shapes[j], out_anchors[j]
        region = src[iy:iy + h, ix:ix + w].astype(np.float64)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            region = np.clip(np.round(region), info.min, info.max)
        out[oy:oy + h, ox:ox + w] = region.astype(dtype)
    return out


def random_pastes(rng, batch, out_hw):
    n = len(batch)
    k = int(rng.integers(1, 5))
    ids = rng.integers(0, n, k).astype(np.int32)
    ia, sh, oa = [], [], []
    for s in ids:
        H, W = batch[s].shape[:2]
        h = int(rng.integers(1, min(H, out_hw[0]) + 1))
        w = int(rng.integers(1, min(W, out_hw[1]) + 1))
        ia.append([int(rng.integers(0, H - h + 1)), int(rng.integers(0, W - w + 1))])
        sh.append([h, w])
        oa.append([int(rng.integers(0, out_hw[0] - h + 1)), int(rng.integers(0, out_hw[1] - w + 1))])
    return ids, np.int32(ia), np.int32(sh), np.int32(oa)


@pytest.mark.parametrize("dtype", [None, types.FLOAT, types.INT16])
def test_multi_paste_in_ids_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    out_hw = (20, 24)
    batches = []
    for n in (4, 2, 4, 1):  # variable batch sizes too
        imgs = [rng.integers(0, 255, (int(rng.integers(8, 30)), int(rng.integers(8, 30)), 3),
                             dtype=np.uint8) for _ in range(n)]
        per = [random_pastes(rng, imgs, out_hw) for _ in range(n)]
        batches.append((imgs, [p[0] for p in per], [p[1] for p in per], [p[2] for p in per],
                        [p[3] for p in per]))
    kw = {} if dtype is None else {"dtype": dtype}
    res = run_ext(batches, lambda img, ids, ia, sh, oa: fn.multi_paste(
        img, in_ids=ids, in_anchors=ia, shapes=sh, out_anchors=oa, output_size=list(out_hw),
        **kw), batch_size=4)
    npdt = {None: np.uint8, types.FLOAT: np.float32, types.INT16: np.int16}[dtype]
    for (imgs, ids, ia, sh, oa), (out,) in zip(batches, res):
        assert len(out) == len(imgs)
        for i in range(len(imgs)):
            want = paste_ref(imgs, ids[i], ia[i], sh[i], oa[i], out_hw, npdt)
            assert out[i].dtype == npdt
            np.testing.assert_array_equal(out[i], want)


def test_multi_paste_defaults_and_relative_coordinates():
    rng = np.random.default_rng(2)
    imgs = [rng.integers(0, 255, (10, 16, 3), dtype=np.uint8) for _ in range(3)]
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None)
    with pipe:
        img = fn.external_source(source=[imgs], cycle=False, layout="HWC")
        # Uniform inputs, no output_size: the canvas is the input's shape; shapes default to
        # the rest of the source; relative anchors are fractions of the source/output size.
        # Constant [pastes, 2] arguments are given flat, row after row.
        a = fn.multi_paste(img, in_ids=[2, 1], in_anchors_rel=[0.5, 0.25, 0.0, 0.0],
                           out_anchors_rel=[0.0, 0.0, 0.5, 0.5],
                           shapes_rel=[0.5, 0.5, 0.5, 0.5])
        b = fn.multi_paste(img, in_ids=[0, 0, 0])
        pipe.set_outputs(a, b)
    a, b = pipe.run()
    for i in range(3):
        want = np.zeros((10, 16, 3), np.uint8)
        want[0:5, 0:8] = imgs[2][5:10, 4:12]
        want[5:10, 8:16] = imgs[1][0:5, 0:8]
        np.testing.assert_array_equal(np.array(a[i]), want)
        np.testing.assert_array_equal(np.array(b[i]), imgs[0])


def test_multi_paste_several_inputs_pastes_in_order():
    rng = np.random.default_rng(3)
    x = [rng.integers(0, 255, (6, 6, 1), dtype=np.uint8) for _ in range(2)]
    y = [rng.integers(0, 255, (4, 4, 1), dtype=np.uint8) for _ in range(2)]
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        a = fn.external_source(source=[x], cycle=False, layout="HWC")
        b = fn.external_source(source=[y], cycle=False, layout="HWC")
        pipe.set_outputs(fn.multi_paste(a, b, output_size=[8, 8],
                                        out_anchors=[0, 0, 3, 3]))
    (out,) = pipe.run()
    for i in range(2):
        want = np.zeros((8, 8, 1), np.uint8)
        want[0:6, 0:6] = x[i]
        want[3:7, 3:7] = y[i]  # the later input covers the earlier one
        np.testing.assert_array_equal(np.array(out[i]), want)


def test_multi_paste_errors():
    imgs = [np.zeros((4, 4, 3), np.uint8)] * 2
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        img = fn.external_source(source=[imgs], cycle=False, layout="HWC")
        pipe.set_outputs(fn.multi_paste(img, in_ids=[5]))
    with pytest.raises(Exception, match=r'in_ids.*sample index 5 out of range \[0, 2\)'):
        pipe.run()
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        img = fn.external_source(source=[imgs], cycle=False, layout="HWC")
        pipe.set_outputs(fn.multi_paste(img, in_ids=[0], out_anchors=[2, 2]))
    with pytest.raises(Exception, match="does not fit"):
        pipe.run()


# --- random_object_bbox --------------------------------------------------------------

def blobs_ref(mask, cls):
    """Bounding boxes [(start, end)] of the axis-connected blobs of label cls (flood fill)."""
    seen = np.zeros(mask.shape, bool)
    boxes = []
    for idx in zip(*np.nonzero(mask == cls)):
        if seen[idx]:
            continue
        lo, hi = list(idx), [v + 1 for v in idx]
        q = collections.deque([idx])
        seen[idx] = True
        while q:
            p = q.popleft()
            for d in range(mask.ndim):
                for step in (-1, 1):
                    nb = list(p)
                    nb[d] += step
                    nb = tuple(nb)
                    if 0 <= nb[d] < mask.shape[d] and not seen[nb] and mask[nb] == cls:
                        seen[nb] = True
                        q.append(nb)
                        lo = [min(a, b) for a, b in zip(lo, nb)]
                        hi = [max(a, b + 1) for a, b in zip(hi, nb)]
        boxes.append((tuple(lo), tuple(hi)))
    return boxes


def random_masks(rng, n, shape, labels=4):
    out = []
    for _ in range(n):
        m = np.zeros(shape, np.int32)
        for _ in range(int(rng.integers(2, 6))):
            lo = [int(rng.integers(0, s)) for s in shape]
            ext = [int(rng.integers(1, 6)) for _ in shape]
            m[tuple(slice(a, a + e) for a, e in zip(lo, ext))] = rng.integers(1, labels)
        out.append(m)
    return out


@pytest.mark.parametrize("fmt", ["anchor_shape", "start_end", "box"])
def test_random_object_bbox_is_a_blob_of_its_class(fmt):
    rng = np.random.default_rng(7)
    masks = random_masks(rng, 6, (16, 20))
    res = run_ext([(masks,)], lambda m: fn.segmentation.random_object_bbox(
        m, format=fmt, output_class=True), batch_size=6)
    outs = res[0]
    for i, m in enumerate(masks):
        if fmt == "box":
            box, cls = outs[0][i], int(outs[1][i])
            start, end = tuple(box[:2]), tuple(box[2:])
        else:
            a, b, cls = outs[0][i], outs[1][i], int(outs[2][i])
            start = tuple(a)
            end = tuple(a + b) if fmt == "anchor_shape" else tuple(b)
        assert outs[0][i].dtype == np.int32
        assert cls != 0
        assert (start, end) in blobs_ref(m, cls), (i, cls, start, end)


def test_random_object_bbox_distribution_over_classes_and_blobs():
    # Class 1: three blobs; class 2: one blob. Class first (1/2 each), then blob: the lone
    # class-2 blob comes out about half the time, each class-1 blob about 1/6.
    m = np.zeros((10, 10), np.uint8)
    m[0:2, 0:2] = 1
    m[5:7, 0:3] = 1
    m[0:1, 7:10] = 1
    m[8:10, 5:9] = 2
    n = 600
    pipe = Pipeline(batch_size=n, num_threads=2, device_id=None, seed=4)
    with pipe:
        x = fn.external_source(source=[[m] * n], cycle=False)
        pipe.set_outputs(fn.segmentation.random_object_bbox(x, format="box"))
    (boxes,) = pipe.run()
    counts = collections.Counter(tuple(np.array(boxes[i])) for i in range(n))
    ref = {tuple(s + e): (0.5 if m[s] == 2 else 1 / 6)
           for c in (1, 2) for s, e in blobs_ref(m, c)}
    assert set(counts) == set(ref)
    for k, p in ref.items():  # binomial: 5 standard deviations
        assert abs(counts[k] - n * p) < 5 * np.sqrt(n * p * (1 - p)), (k, counts[k], n * p)


def test_random_object_bbox_options():
    m = np.zeros((12, 12), np.int32)
    m[0:1, 0:1] = 3   # small blob of class 3
    m[4:10, 2:9] = 3  # large blob of class 3
    m[0:3, 8:12] = 5  # class 5
    n = 64
    outs = {}
    for name, kw in {
        "k1": dict(k_largest=1, classes=[3]),
        "thr": dict(threshold=[2, 2], classes=[3]),
        "weights": dict(classes=[3, 5], class_weights=[0, 1]),
        "bgprob": dict(foreground_prob=0.0),
        "ignore": dict(ignore_class=True, threshold=[3, 4]),
    }.items():
        pipe = Pipeline(batch_size=n, num_threads=1, device_id=None, seed=9)
        with pipe:
            x = fn.external_source(source=[[m] * n], cycle=False)
            pipe.set_outputs(*fn.segmentation.random_object_bbox(x, format="start_end", **kw))
        s, e = pipe.run()
        outs[name] = {(tuple(np.array(s[i])), tuple(np.array(e[i]))) for i in range(n)}
    assert outs["k1"] == {((4, 2), (10, 9))}
    assert outs["thr"] == {((4, 2), (10, 9))}
    assert outs["weights"] == {((0, 8), (3, 12))}
    assert outs["bgprob"] == {((0, 0), (12, 12))}
    assert outs["ignore"] == {((4, 2), (10, 9)), ((0, 8), (3, 12))}


def test_random_object_bbox_no_object_and_3d():
    empty = np.zeros((5, 6, 7), np.uint8)
    vol = np.zeros((5, 6, 7), np.uint8)
    vol[1:3, 2:5, 0:7] = 1
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=[[empty, vol]], cycle=False)
        pipe.set_outputs(*fn.segmentation.random_object_bbox(x, output_class=True))
    a, sh, cls = pipe.run()
    np.testing.assert_array_equal(np.array(a[0]), [0, 0, 0])
    np.testing.assert_array_equal(np.array(sh[0]), [5, 6, 7])
    assert int(np.array(cls[0])) == 0
    np.testing.assert_array_equal(np.array(a[1]), [1, 2, 0])
    np.testing.assert_array_equal(np.array(sh[1]), [2, 3, 7])
    assert int(np.array(cls[1])) == 1


def test_random_object_bbox_argument_errors():
    with pytest.raises(Exception, match="format"):
        pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(source=[[np.zeros((2, 2), np.int32)]], cycle=False)
            pipe.set_outputs(*fn.segmentation.random_object_bbox(x, format="xyz"))
        pipe.build()
    with pytest.raises(Exception, match="ignore_class"):
        pipe = Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            x = fn.external_source(source=[[np.zeros((2, 2), np.int32)]], cycle=False)
            pipe.set_outputs(*fn.segmentation.random_object_bbox(x, ignore_class=True,
                                                                 classes=[1]))
        pipe.build()
