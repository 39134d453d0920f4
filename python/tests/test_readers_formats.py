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


@pytest.mark.parametrize("dtype", ["<f4", ">i4", "<i8", "|u1", "<f2"])
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
        pytest.skip("mxnet not installed (scripts/setup.sh): " + p.stderr.strip().splitlines()[-1])
    ref = json.loads(p.stdout)
    data, label = _run(fn.readers.mxnet, 4, path=[rec], index_path=[idx])
    for i, (d, l) in enumerate(ref):
        assert data[i].as_array().tobytes() == bytes.fromhex(d)
        np.testing.assert_array_equal(label[i].as_array(), np.array(l, np.float32))


def _caffe_db(kind, tmp_path):
    pytest.importorskip("lmdb")
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


def test_caffe2(tmp_path):
    db, ref = _caffe_db("caffe2", tmp_path)
    images, labels, extra = _run(fn.readers.caffe2, len(ref), path=db, additional_inputs=1)
    for i, r in enumerate(ref):
        assert images[i].as_array().tobytes() == open(r["file"], "rb").read()
        assert labels[i].as_array().tolist() == [r["label"]]
        np.testing.assert_array_equal(extra[i].as_array(), np.array(r["extra"], np.float32))
