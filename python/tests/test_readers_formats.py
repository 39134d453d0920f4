"""fn.readers.numpy / mxnet / caffe / caffe2 through a pipeline, against data written by
numpy, mxnet's own RecordIO writer, and the protobuf + lmdb packages (caffe_ref.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import godali
from godali import fn

from conftest import missing_reference, need

HERE = os.path.dirname(os.path.abspath(__file__))
CAFFE_REF = os.path.join(HERE, "..", "..", "formats", "caffe", "testdata", "caffe_ref.py")
MXDIR = "/usr/local/lib/godali-mxnet"


def _run(reader_fn, batch_size, **kw):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=1, seed=1)
    with pipe:
        outs = reader_fn(**kw)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    pipe.build()
    return pipe.run()


@pytest.mark.parametrize("dtype", ["<f4", ">i4", "<i8", "|u1", "<f2", "<u2", ">u2", "<i2", ">i2", "<u4", ">u4",
                                   "<u8", ">u8", ">i8", "|i1", ">f8", ">f2", "|b1"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_numpy(tmp_path, dtype, order):
    rng = np.random.default_rng(1)
    arrays = [(rng.standard_normal((3, 2 + i, 4)) * 50).astype(dtype) for i in range(3)]
    for i, a in enumerate(arrays):
        np.save(tmp_path / ("x%d.npy" % i), np.asfortranarray(a) if order == "F" else a)
    (tmp_path / "note.txt").write_text("not an array")
    (out,) = _run(fn.readers.numpy, 3, file_root=str(tmp_path))
    for i, a in enumerate(arrays):
        got = out[i].as_array()
        assert got.dtype == a.dtype.newbyteorder("=") and got.shape == a.shape
        assert got.tobytes() == np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
    # DLPack (numpy.from_dlpack; BOOL goes through __array_interface__) and torch.
    for i, a in enumerate(arrays):
        t = out[i]
        via = np.asarray(t) if a.dtype.kind == "b" else np.from_dlpack(t)
        assert via.dtype == a.dtype.newbyteorder("=") and np.array_equal(via, a)
    torch = need("torch")
    tt = {"u2": getattr(torch, "uint16", None), "u4": getattr(torch, "uint32", None),
          "u8": getattr(torch, "uint64", None)}
    if a.dtype.str[1:] in tt and tt[a.dtype.str[1:]] is None:
        return  # this torch has no unsigned types wider than 8 bits
    if a.dtype.kind == "b" and tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 0):
        return  # torch before 2.0 refuses DLPack's kDLBool
    for i, a in enumerate(arrays):
        tv = torch.from_dlpack(out[i])
        assert tv.numpy().tobytes() == np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def _pad_ref(a, start, end, fill):
    """a[start:end] per dimension, with fill where the region leaves a (numpy reference)."""
    out = np.full([e - s for s, e in zip(start, end)], fill, dtype=a.dtype)
    lo = [min(max(s, 0), n) for s, n in zip(start, a.shape)]
    hi = [max(l, min(e, n)) for l, e, n in zip(lo, end, a.shape)]
    src = tuple(slice(l, h) for l, h in zip(lo, hi))
    dst = tuple(slice(l - s, h - s) if h > l else slice(0, 0) for l, h, s in zip(lo, hi, start))
    out[dst] = a[src]
    return out


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["<i2", ">f4"])
def test_numpy_roi(tmp_path, order, dtype):
    rng = np.random.default_rng(2)
    arrays = [(rng.standard_normal((6 + i, 5, 7)) * 1000).astype(dtype) for i in range(3)]
    for i, a in enumerate(arrays):
        np.save(tmp_path / ("x%d.npy" % i), np.asfortranarray(a) if order == "F" else a)

    def check(want_fn, **kw):
        (out,) = _run(fn.readers.numpy, 3, file_root=str(tmp_path), **kw)
        for i, a in enumerate(arrays):
            w = want_fn(a)
            got = out[i].as_array()
            assert got.shape == w.shape and got.tobytes() == np.ascontiguousarray(w).astype(w.dtype.newbyteorder("<")).tobytes(), kw

    check(lambda a: a[1:4, 2:5, 0:7], roi_start=[1, 2, 0], roi_end=[4, 5, 7])
    check(lambda a: a[2:5, :, 3:5], roi_start=[2, 3], roi_shape=[3, 2], roi_axes=[0, 2])
    check(lambda a: a[:, 1:3, :], roi_start=[1], roi_end=[3], roi_axes=[1])
    # Relative bounds: round(rel * extent), halves away from zero.
    def rel(a):
        n = a.shape[0]
        s, e = int(np.floor(0.25 * n + 0.5)), int(np.floor(0.75 * n + 0.5))
        return a[s:e, :, 2:5]
    check(rel, rel_roi_start=[0.25, 2 / 7], rel_roi_end=[0.75, 5 / 7], roi_axes=[0, 2])
    check(lambda a: a[:, :, 1:6], rel_roi_start=[1 / 7], rel_roi_shape=[5 / 7], roi_axes=[2])
    # Out of bounds: trim_to_shape clips, pad fills, error refuses.
    check(lambda a: a[3:, :, :2], roi_start=[3, -2], roi_end=[20, 2], roi_axes=[0, 2],
          out_of_bounds_policy="trim_to_shape")
    check(lambda a: _pad_ref(a, [-2, 1, 5], [9, 3, 10], 7), roi_start=[-2, 1, 5], roi_end=[9, 3, 10],
          out_of_bounds_policy="pad", fill_value=7)
    check(lambda a: _pad_ref(a, [-3, -1, -4], [-1, 2, -2], -5), roi_start=[-3, -1, -4], roi_end=[-1, 2, -2],
          out_of_bounds_policy="pad", fill_value=-5)
    with pytest.raises(Exception, match="leaves the array"):
        _run(fn.readers.numpy, 3, file_root=str(tmp_path), roi_start=[0, 0, 5], roi_end=[2, 2, 8])
    # JSON has no NaN or infinity: the argument is named (was "pipeline description is
    # not a JSON object").
    for bad in (float("-inf"), float("nan")):
        with pytest.raises(ValueError, match="argument 'rel_roi_start' must be finite"):
            _run(fn.readers.numpy, 3, file_root=str(tmp_path), rel_roi_start=[bad],
                 rel_roi_end=[1.0], roi_axes=[0])


def test_numpy_roi_per_sample(tmp_path):
    """Region arguments as DataNodes (per sample), against numpy slicing."""
    rng = np.random.default_rng(4)
    arrays = [rng.integers(0, 60000, (8, 9), dtype=np.uint16) for _ in range(4)]
    for i, a in enumerate(arrays):
        np.save(tmp_path / ("x%d.npy" % i), a)
    starts = [np.array([i, 2 * i], dtype=np.int32) for i in range(4)]
    pipe = godali.Pipeline(batch_size=4, num_threads=1, seed=1)
    with pipe:
        st = fn.external_source(source=lambda: starts, batch=True)
        out = fn.readers.numpy(file_root=str(tmp_path), roi_start=st, roi_shape=[3, 2])
        pipe.set_outputs(out, st)
    pipe.build()
    got, _ = pipe.run()
    for i, a in enumerate(arrays):
        np.testing.assert_array_equal(got[i].as_array(), a[i:i + 3, 2 * i:2 * i + 2])


def test_mxnet(tmp_path):
    script = """
import sys, json
import mxnet.recordio as rio
w = rio.MXIndexedRecordIO(sys.argv[2], sys.argv[1], "w")
out = []
for i in range(4):
    label = float(i) if i % 2 == 0 else [float(i), 1.5]
    data = bytes(range(i, i + 10 + i))
    w.write_idx(i, rio.pack(rio.IRHeader(0, label, i, 0), data))
    out.append([data.hex(), label if isinstance(label, list) else [label]])
w.close()
json.dump(out, sys.stdout)
"""
    env = dict(os.environ, PYTHONPATH=MXDIR)
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    pre = "import numpy as _np\nif not hasattr(_np, 'bool'): _np.bool = bool\n"
    p = subprocess.run([sys.executable, "-c", pre + script, rec, idx], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        missing_reference("mxnet not installed (scripts/setup.sh): " + p.stderr.strip().splitlines()[-1])
    ref = json.loads(p.stdout)
    data, label = _run(fn.readers.mxnet, 4, path=[rec], index_path=[idx])
    for i, (d, l) in enumerate(ref):
        assert data[i].as_array().tobytes() == bytes.fromhex(d)
        np.testing.assert_array_equal(label[i].as_array(), np.array(l, np.float32))


def _caffe_db(kind, tmp_path):
    need("lmdb")
    files = []
    for i in range(3):
        f = tmp_path / ("i%d.jpg" % i)
        f.write_bytes(bytes([0xFF, 0xD8, i]) * (20 + i))
        files.append(str(f))
    db = str(tmp_path / kind)
    p = subprocess.run([sys.executable, CAFFE_REF, kind, db] + files, capture_output=True, text=True, check=True)
    ref = json.loads(p.stdout)
    return db, [ref[k] for k in sorted(ref)]


def test_caffe(tmp_path):
    db, ref = _caffe_db("caffe", tmp_path)
    images, labels = _run(fn.readers.caffe, len(ref), path=db)
    for i, r in enumerate(ref):
        if "file" in r:
            assert images[i].as_array().tobytes() == open(r["file"], "rb").read()
        else:
            assert images[i].as_array().shape == tuple(r["shape"])
        assert labels[i].as_array().tolist() == [r["label"]]
    # label only: DALI returns a single output
    out = _run(fn.readers.caffe, 1, path=db, image_available=False)
    assert len(out) == 1 and out[0][0].as_array().tolist() == [ref[0]["label"]]


def test_caffe_images_feed_the_decoder(tmp_path):
    # DALI's tests decode readers.caffe's images (encoded Datums: 1-D bytes, as
    # readers.file gives); the graph must accept the decoder at build.
    need("lmdb")
    from conftest import make_jpeg
    sizes = [(30, 41), (52, 25)]
    files = [make_jpeg(str(tmp_path / ("c%d.jpg" % i)), h, w, seed=i) for i, (h, w) in enumerate(sizes)]
    db = str(tmp_path / "caffe_jpegs")
    subprocess.run([sys.executable, CAFFE_REF, "caffe", db] + files, capture_output=True, text=True, check=True)
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
    with pipe:
        jpegs, _ = fn.readers.caffe(path=db)
        pipe.set_outputs(fn.decoders.image(jpegs))
    (imgs,) = pipe.run()
    pipe.close()
    assert sorted(np.array(imgs[i]).shape for i in range(2)) == sorted((h, w, 3) for h, w in sizes)


def test_caffe2(tmp_path):
    db, ref = _caffe_db("caffe2", tmp_path)
    images, labels, extra = _run(fn.readers.caffe2, len(ref), path=db, additional_inputs=1)
    for i, r in enumerate(ref):
        assert images[i].as_array().tobytes() == open(r["file"], "rb").read()
        assert labels[i].as_array().tolist() == [r["label"]]
        np.testing.assert_array_equal(extra[i].as_array(), np.array(r["extra"], np.float32))


def test_caffe_images_feed_a_decoder(tmp_path):
    """readers.caffe's images are encoded bytes (1-D) in the graph, so a decoder takes them;
    decoded as PIL decodes the same files (within 1 level)."""
    need("lmdb")
    from PIL import Image
    from conftest import make_jpeg
    files = [make_jpeg(str(tmp_path / ("p%d.jpg" % i)), 16 + i, 24, seed=i) for i in range(3)]
    db = str(tmp_path / "caffe_jpeg")
    subprocess.run([sys.executable, CAFFE_REF, "caffe", db] + files, capture_output=True,
                   text=True, check=True)
    pipe = godali.Pipeline(batch_size=3, num_threads=1, seed=1)
    with pipe:
        jpegs, _ = fn.readers.caffe(path=db)
        pipe.set_outputs(fn.decoders.image(jpegs), jpegs)
    pipe.build()
    images, raw = pipe.run()
    for i in range(3):
        data = raw[i].as_array().tobytes()
        src = [f for f in files if open(f, "rb").read() == data]
        assert len(src) == 1
        ref = np.array(Image.open(src[0]).convert("RGB"), np.int16)
        assert np.abs(images[i].as_array().astype(np.int16) - ref).max() <= 1
