"""fn.readers.webdataset and fn.readers.tfrecord with godali.tfrecord, against shards and
records written by independent writers (tarfile, webdataset's TarWriter, the tfrecord
package)."""

import io
import os
import struct
import tarfile

import numpy as np
import pytest

import godali
import godali.tfrecord as tfrec
from godali import fn, pipeline_def

from conftest import make_jpeg, need


def _samples(tmp_path, n):
    out = []
    for i in range(n):
        p = tmp_path / ("img%02d.jpg" % i)
        make_jpeg(str(p), 10 + i % 3 * 4, 14 + i % 2 * 6, seed=i)
        out.append((str(p), i % 4))
    return out


def _write_tar(path, samples, start):
    with tarfile.open(path, "w") as tf:
        for k, (p, label) in enumerate(samples):
            key = "s%04d" % (start + k)
            tf.add(p, arcname=key + ".JPG")
            b = struct.pack("<i", label)
            ti = tarfile.TarInfo(key + ".cls")
            ti.size = len(b)
            tf.addfile(ti, io.BytesIO(b))


def _run_all(pipe, n):
    pipe.build()
    outs = []
    while sum(len(o[0]) for o in outs) < n:
        outs.append([[np.array(t.at(i)) for i in range(len(t))] for t in
                     [o.as_cpu() if hasattr(o, "as_cpu") else o for o in pipe.run()]])
    return outs


def test_webdataset_equals_file_reader(tmp_path):
    samples = _samples(tmp_path, 11)
    shards = [str(tmp_path / "a.tar"), str(tmp_path / "b.tar")]
    _write_tar(shards[0], samples[:6], 0)
    try:
        import webdataset as wds
        with wds.TarWriter(shards[1]) as w:
            for k, (p, label) in enumerate(samples[6:]):
                with open(p, "rb") as f:
                    w.write({"__key__": "s%04d" % (6 + k), "JPG": f.read(),
                             "cls": struct.pack("<i", label)})
    except ImportError:
        _write_tar(shards[1], samples[6:], 6)

    common = dict(random_shuffle=True, initial_fill=4, num_shards=2, shard_id=1,
                  pad_last_batch=True)

    @pipeline_def(batch_size=3, num_threads=2, seed=7)
    def files():
        jpegs, labels = fn.readers.file(files=[p for p, _ in samples],
                                        labels=[l for _, l in samples], **common)
        return fn.decoders.image(jpegs), labels

    @pipeline_def(batch_size=3, num_threads=2, seed=7)
    def tars():
        jpegs, labels = fn.readers.webdataset(paths=shards, ext=["jpg", "cls"],
                                              case_sensitive_extensions=False,
                                              dtypes=[godali.types.UINT8, godali.types.INT32],
                                              **common)
        return fn.decoders.image(jpegs), labels

    want, got = _run_all(files(), 12), _run_all(tars(), 12)
    assert len(want) == len(got)
    for wb, gb in zip(want, got):
        for wo, go in zip(wb, gb):
            for w, g in zip(wo, go):
                assert w.dtype == g.dtype and w.shape == g.shape
                assert np.array_equal(w, g)


def test_webdataset_one_output_and_bad_args(tmp_path):
    samples = _samples(tmp_path, 3)
    path = str(tmp_path / "a.tar")
    _write_tar(path, samples, 0)

    @pipeline_def(batch_size=3, num_threads=1)
    def one():
        return fn.readers.webdataset(paths=path, ext="cls;JPG")

    (raw,) = one().run()
    assert [np.array(raw.at(i)).tobytes() for i in range(3)] == \
        [open(p, "rb").read() for p, _ in samples]
    with pytest.raises(Exception, match="missing_component_behavior"):
        @pipeline_def(batch_size=1, num_threads=1)
        def bad():
            return fn.readers.webdataset(paths=path, ext="jpg", missing_component_behavior="x")
        bad().build()


def test_tfrecord_dict_and_features(tmp_path):
    tfrecord = need("tfrecord")
    from tfrecord.tools.tfrecord2idx import create_index
    path, idx = str(tmp_path / "a.tfrecord"), str(tmp_path / "a.idx")
    w = tfrecord.TFRecordWriter(path)
    recs = []
    for i in range(5):
        d = {"image/encoded": (bytes([i + 1]) * (i + 3), "byte"),
             "label": ([i * 10], "int"),
             "bbox": ([0.5 * i] * (2 * (i % 3)), "float")}
        if i == 2:
            del d["label"]
        w.write(d)
        recs.append(d)
    w.close()
    create_index(path, idx)

    @pipeline_def(batch_size=5, num_threads=2)
    def p():
        out = fn.readers.tfrecord(path=path, index_path=[idx], features={
            "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
            "label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
            "bbox": tfrec.VarLenFeature([2], tfrec.float32, 0.0)})
        assert isinstance(out, dict) and list(out) == ["image/encoded", "label", "bbox"]
        return out["image/encoded"], out["label"], out["bbox"]

    images, labels, boxes = p().run()
    for i, d in enumerate(recs):
        assert np.array(images.at(i)).tobytes() == d["image/encoded"][0]
        lab = np.array(labels.at(i))
        assert lab.dtype == np.int64 and lab.tolist() == ([i * 10] if i != 2 else [-1])
        box = np.array(boxes.at(i))
        assert box.dtype == np.float32 and box.shape == (i % 3, 2)
        assert np.array_equal(box.ravel(), np.float32(d["bbox"][0]))


def test_tfrecord_feature_module():
    f = tfrec.FixedLenFeature([2, 3], tfrec.float32, 1)
    assert f.to_json("x") == {"name": "x", "kind": "fixed", "dtype": "float32",
                              "shape": [2, 3], "default": 1.0}
    v = tfrec.VarLenFeature(tfrec.int64, 0)
    assert v.to_json("y") == {"name": "y", "kind": "var", "dtype": "int64", "default": 0}
    with pytest.raises(TypeError, match="dtype"):
        tfrec.FixedLenFeature([1], "int32", 0)
    with pytest.raises(TypeError, match="default"):
        tfrec.FixedLenFeature([1], tfrec.int64, "x")
    with pytest.raises(TypeError, match="features"):
        tfrec.encode_features({"a": 3})


def test_ops_classes(tmp_path):
    from godali import ops
    assert ops.readers.TFRecord.schema.name == "readers.tfrecord"
    assert ops.TFRecordReader.schema.name == "readers.tfrecord"
    assert ops.readers.Webdataset.schema.name == "readers.webdataset"
    samples = _samples(tmp_path, 2)
    path = str(tmp_path / "a.tar")
    _write_tar(path, samples, 0)
    reader = ops.readers.Webdataset(paths=[path], ext=["jpg", "cls"], case_sensitive_extensions=False)

    @pipeline_def(batch_size=2, num_threads=1)
    def p():
        jpegs, cls = reader()
        return jpegs, cls

    jpegs, cls = p().run()
    assert np.array(jpegs.at(1)).tobytes() == open(samples[1][0], "rb").read()
