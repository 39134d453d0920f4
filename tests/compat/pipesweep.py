"""DALI 2.4 as a differential oracle for pipeline semantics: readers on generated data
sets, external_source in its modes, the PyTorch iterators, checkpoints.

Not part of the shipped package. `make-data DIR` writes small data sets with writers
independent of godali (numpy, tarfile, the tfrecord and lmdb packages, mxnet's recordio,
formats/caffe/testdata/caffe_ref.py, JSON for COCO); then each implementation runs every
scenario in a process of its own (`run dali|godali DIR OUT`) and records what it saw, in
terms that do not depend on the library: per iteration the samples' identities (a hash
of each sample's bytes, with its label), the reader's metadata (epoch sizes, shard,
padding), where StopIteration came, the iterator's batches per epoch, a restored
pipeline's continuation. `compare` then says per scenario: same, differs (with the first
difference), or error (one side refused).

Where DALI's order is its RNG's (random_shuffle), the scenario records properties
instead of the order: every sample comes from the data set, and over three epochs each
appears two to four times (DALI shuffles through a buffer, so an epoch's samples are not
exactly the data set's); shuffle_after_epoch permutes each epoch: the multiset per epoch
is compared.

    python3 tests/compat/pipesweep.py make-data DIR
    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/pipesweep.py run dali DIR OUT_D
    PYTHONPATH=python python3 tests/compat/pipesweep.py run godali DIR OUT_G
    python3 tests/compat/pipesweep.py compare OUT_D OUT_G
"""

import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CAFFE_REF = os.path.join(REPO, "formats", "caffe", "testdata", "caffe_ref.py")
MXDIR = os.environ.get("GODALI_MXNET_DIR", "/usr/local/lib/godali-mxnet")
SEED = 29


# --- data sets ---------------------------------------------------------------------------

def _blob(rng, i):
    """A file's bytes: distinct per sample (JPEG-like start, random body)."""
    return bytes([0xFF, 0xD8, 0xFF, i % 256]) + rng.bytes(int(rng.integers(20, 60)))


def make_data(root):
    rng = np.random.default_rng(SEED)
    os.makedirs(root, exist_ok=True)
    made = {}
    # file reader: three class folders, 13 files in all (not a multiple of the batch)
    files = []
    for c, n in enumerate((5, 4, 4)):
        d = os.path.join(root, "files", "class%d" % c)
        os.makedirs(d, exist_ok=True)
        for k in range(n):
            p = os.path.join(d, "img%02d.jpg" % k)
            with open(p, "wb") as fh:
                fh.write(_blob(rng, len(files)))
            files.append((os.path.relpath(p, os.path.join(root, "files")), c))
    with open(os.path.join(root, "files", "list.txt"), "w") as fh:
        for rel, c in reversed(files):  # not sorted: the list's order is the order
            fh.write("%s %d\n" % (rel, (c * 7) % 5))
    made["files"] = len(files)
    # numpy: 11 arrays of one shape, each filled with its number (iterators need one shape)
    d = os.path.join(root, "npy")
    os.makedirs(d, exist_ok=True)
    for k in range(11):
        np.save(os.path.join(d, "a%02d.npy" % k), np.full((2, 3), k, np.float32))
    made["npy"] = 11
    # webdataset: 10 samples of a jpg and a cls
    with tarfile.open(os.path.join(root, "wds.tar"), "w") as tar:
        for k in range(10):
            for ext, data in (("jpg", _blob(rng, 100 + k)), ("cls", str(k % 3).encode())):
                info = tarfile.TarInfo("s%03d.%s" % (k, ext))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    made["wds"] = 10
    made["tfrecord"] = _tfrecord(root, rng)
    made["caffe"] = _caffe(root, rng)
    made["mxnet"] = _mxnet(root, rng)
    made["coco"] = _coco(root, rng)
    with open(os.path.join(root, "made.json"), "w") as fh:
        json.dump(made, fh)
    print("pipesweep: data sets in %s: %s" % (root, made))


def _tfrecord(root, rng):
    try:
        from tfrecord.writer import TFRecordWriter
    except ImportError:
        return None
    path = os.path.join(root, "data.tfrecord")
    w = TFRecordWriter(path)
    for k in range(9):
        w.write({"image/encoded": (_blob(rng, 200 + k), "byte"),
                 "image/class/label": (k % 4, "int")})
    w.close()
    # DALI's index: "offset size" per record (8-byte length, 4-byte CRC, data, 4-byte CRC)
    with open(path, "rb") as fh:
        data = fh.read()
    off, lines = 0, []
    while off < len(data):
        (n,) = struct.unpack("<Q", data[off:off + 8])
        lines.append("%d %d\n" % (off, n + 16))
        off += n + 16
    with open(path + ".idx", "w") as fh:
        fh.writelines(lines)
    return 9


def _caffe(root, rng):
    import importlib.util
    if importlib.util.find_spec("lmdb") is None:  # caffe_ref writes with it
        return None
    d = os.path.join(root, "caffe_src")
    os.makedirs(d, exist_ok=True)
    srcs = []
    for k in range(7):
        p = os.path.join(d, "c%d.jpg" % k)
        with open(p, "wb") as fh:
            fh.write(_blob(rng, 300 + k))
        srcs.append(p)
    for kind in ("caffe", "caffe2"):
        subprocess.run([sys.executable, CAFFE_REF, kind, os.path.join(root, kind)] + srcs,
                       check=True, capture_output=True)
    return 7


def _mxnet(root, rng):
    script = (
        "import numpy as _np\nif not hasattr(_np, 'bool'): _np.bool = bool\n"
        "import sys\nimport mxnet.recordio as rio\n"
        "w = rio.MXIndexedRecordIO(sys.argv[2], sys.argv[1], 'w')\n"
        "for i in range(8):\n"
        "    w.write_idx(i, rio.pack(rio.IRHeader(0, float(i % 3), i, 0), bytes([i]) * (5 + i)))\n"
        "w.close()\n")
    p = subprocess.run([sys.executable, "-c", script, os.path.join(root, "d.rec"),
                        os.path.join(root, "d.idx")],
                       env=dict(os.environ, PYTHONPATH=MXDIR), capture_output=True)
    return 8 if p.returncode == 0 else None


def _coco(root, rng):
    d = os.path.join(root, "coco")
    os.makedirs(d, exist_ok=True)
    images, anns = [], []
    for k in range(6):
        name = "im%d.jpg" % k
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(_blob(rng, 400 + k))
        images.append({"id": k + 1, "file_name": name, "width": 40 + k, "height": 30 + k})
        for j in range(k % 3 + (1 if k != 4 else -1)):  # image 4 has no box
            x, y = float(rng.integers(0, 20)), float(rng.integers(0, 15))
            anns.append({"id": len(anns) + 1, "image_id": k + 1, "category_id": [3, 7, 9][j % 3],
                         "bbox": [x, y, float(rng.integers(2, 15)), float(rng.integers(2, 10))],
                         "area": 10.0, "iscrowd": 0})
    cats = [{"id": c, "name": "c%d" % c} for c in (3, 7, 9)]
    with open(os.path.join(d, "ann.json"), "w") as fh:
        json.dump({"images": images, "annotations": anns, "categories": cats}, fh)
    return 6


# --- what a run records ------------------------------------------------------------------

def _ident(t):
    a = np.array(t)
    if a.dtype == np.uint8 and a.ndim == 1:
        return hashlib.sha1(a.tobytes()).hexdigest()[:10]
    return a.round(5).tolist()


def _batch(outs):
    """One iteration's outputs as [per sample: [per output: identity]]."""
    n = len(outs[0])
    return [[_ident(o.as_cpu()[i] if hasattr(o, "as_cpu") else o[i]) for o in outs]
            for i in range(n)]


# --- scenarios ---------------------------------------------------------------------------
# Each scenario: (name, function(ctx) -> record). ctx has the library, fn, types, the data
# directory and the made counts.

class Ctx:
    def __init__(self, impl, data):
        self.impl = impl
        if impl == "dali":
            import nvidia.dali as lib
            from nvidia.dali import fn, types
        else:
            import godali as lib
            from godali import fn, types
        self.lib, self.fn, self.types = lib, fn, types
        self.data = data
        with open(os.path.join(data, "made.json")) as fh:
            self.made = json.load(fh)

    def pipe(self, bs=4, **kw):
        return self.lib.Pipeline(batch_size=bs, num_threads=1, device_id=None, seed=SEED,
                                 prefetch_queue_depth=1, **kw)


def _reader_record(ctx, make, bs, iters, meta=True):
    p = ctx.pipe(bs)
    with p:
        outs = make(ctx.fn)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        p.set_outputs(*outs)
    p.build()
    rec = {"batches": [_batch(p.run()) for _ in range(iters)]}
    if meta:
        m = p.reader_meta("R")
        rec["meta"] = {k: int(m[k]) for k in ("epoch_size", "epoch_size_padded",
                                              "number_of_shards", "shard_id")}
        rec["meta"].update({k: bool(m[k]) for k in ("pad_last_batch", "stick_to_shard")})
        rec["epoch_size"] = int(p.epoch_size("R"))
    return rec


def _shuffle_props(rec, n_data, n_iters_samples):
    """Replaces the order of a shuffled run with its properties."""
    seen = [s[0] if isinstance(s[0], str) else json.dumps(s[0])
            for b in rec.pop("batches") for s in b]
    counts = {}
    for s in seen:
        counts[s] = counts.get(s, 0) + 1
    rec["distinct"] = len(counts)
    rec["each_2_to_4_times"] = all(2 <= c <= 4 for c in counts.values())
    rec["samples"] = len(seen)
    return rec


def _file_scenarios():
    out = []
    for shard, nsh in ((0, 1), (1, 3), (2, 3)):
        for pad in (False, True):
            for stick in (False, True):
                name = "file/root shard %d of %d pad_last_batch=%s stick_to_shard=%s" % (
                    shard, nsh, pad, stick)
                out.append((name, (lambda shard, nsh, pad, stick: lambda ctx: _reader_record(
                    ctx, lambda fn: fn.readers.file(
                        file_root=os.path.join(ctx.data, "files"), shard_id=shard,
                        num_shards=nsh, pad_last_batch=pad, stick_to_shard=stick, name="R"),
                    4, 12))(shard, nsh, pad, stick)))
    out.append(("file/file_list (its order, its labels)", lambda ctx: _reader_record(
        ctx, lambda fn: fn.readers.file(file_root=os.path.join(ctx.data, "files"),
                                        file_list=os.path.join(ctx.data, "files", "list.txt"),
                                        name="R"), 5, 6)))
    out.append(("file/files and labels", lambda ctx: _reader_record(
        ctx, lambda fn: fn.readers.file(
            files=[os.path.join(ctx.data, "files", "class1", "img%02d.jpg" % k)
                   for k in (3, 0, 2)], labels=[7, 8, 9], name="R"), 2, 4)))
    out.append(("file/shuffle_after_epoch (multiset per epoch)", _file_shuffle_after_epoch))
    out.append(("file/shuffle_after_epoch 3 shards (each epoch: the shards partition the "
                "data set; a shard keeps its size)", _file_shuffle_shards))
    out.append(("file/random_shuffle (properties)", lambda ctx: _shuffle_props(
        _reader_record(ctx, lambda fn: fn.readers.file(
            file_root=os.path.join(ctx.data, "files"), random_shuffle=True,
            initial_fill=4, name="R"), 3, 13), 13, 39)))
    out.append(("file/bad file_root (error)", lambda ctx: _reader_record(
        ctx, lambda fn: fn.readers.file(file_root=os.path.join(ctx.data, "nonexistent"),
                                        name="R"), 2, 1)))
    return out


def _file_shuffle_after_epoch(ctx):
    rec = _reader_record(ctx, lambda fn: fn.readers.file(
        file_root=os.path.join(ctx.data, "files"), shuffle_after_epoch=True, name="R"), 13, 3)
    rec["epochs"] = [sorted(s[0] for s in b) for b in rec.pop("batches")]
    return rec


def _file_shuffle_shards(ctx):
    per = []
    for shard in range(3):
        r = _reader_record(ctx, lambda fn: fn.readers.file(
            file_root=os.path.join(ctx.data, "files"), shuffle_after_epoch=True,
            shard_id=shard, num_shards=3, name="R"), 1, 15)
        per.append([s[0] for b in r["batches"] for s in b])
    n = ctx.made["files"]
    sizes = [len(engine_shard) for engine_shard in
             ([0] * (n * (k + 1) // 3 - n * k // 3) for k in range(3))]
    epochs_ok = []
    for e in range(3):
        got = []
        for k in range(3):
            got += per[k][e * sizes[k]:(e + 1) * sizes[k]] if e * sizes[k] < len(per[k]) else []
        epochs_ok.append(sorted(got) == sorted(set(got)) and len(got) == n)
    return {"shard_sizes": sizes, "partition_per_epoch": epochs_ok,
            "sticks": [len(set(p[:sizes[k]]) - set(p[sizes[k]:2 * sizes[k]])) < sizes[k]
                       or sizes[k] == 0 for k, p in enumerate(per)]}


def _other_readers():
    d = lambda ctx, *p: os.path.join(ctx.data, *p)  # noqa: E731
    out = []
    for shard, nsh, pad in ((0, 1, False), (1, 2, False), (1, 2, True)):
        tag = "shard %d of %d pad_last_batch=%s" % (shard, nsh, pad)
        out.append(("numpy/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.numpy(file_root=d(ctx, "npy"), shard_id=shard,
                                             num_shards=nsh, pad_last_batch=pad, name="R"),
            4, 5))(shard, nsh, pad)))
        out.append(("webdataset/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.webdataset(paths=[d(ctx, "wds.tar")], ext=["jpg", "cls"],
                                                  shard_id=shard, num_shards=nsh,
                                                  pad_last_batch=pad, name="R"),
            3, 5))(shard, nsh, pad)))
        out.append(("tfrecord/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: _tfr(ctx, fn, shard=shard, nsh=nsh, pad=pad), 4, 4))(shard, nsh, pad)))
        out.append(("caffe/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.caffe(path=d(ctx, "caffe"), shard_id=shard,
                                             num_shards=nsh, pad_last_batch=pad, name="R"),
            3, 5))(shard, nsh, pad)))
        out.append(("caffe2/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.caffe2(path=d(ctx, "caffe2"), shard_id=shard,
                                              num_shards=nsh, pad_last_batch=pad,
                                              additional_inputs=1, name="R"),
            3, 5))(shard, nsh, pad)))
        out.append(("mxnet/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.mxnet(path=[d(ctx, "d.rec")], index_path=[d(ctx, "d.idx")],
                                             shard_id=shard, num_shards=nsh,
                                             pad_last_batch=pad, name="R"),
            3, 6))(shard, nsh, pad)))
        out.append(("coco/" + tag, (lambda shard, nsh, pad: lambda ctx: _reader_record(
            ctx, lambda fn: fn.readers.coco(file_root=d(ctx, "coco"),
                                            annotations_file=d(ctx, "coco", "ann.json"),
                                            shard_id=shard, num_shards=nsh, pad_last_batch=pad,
                                            name="R"),
            2, 7))(shard, nsh, pad)))
    out.append(("coco/ltrb ratio skip_empty image_ids", lambda ctx: _reader_record(
        ctx, lambda fn: fn.readers.coco(file_root=d(ctx, "coco"),
                                        annotations_file=d(ctx, "coco", "ann.json"),
                                        ltrb=True, ratio=True, skip_empty=True, image_ids=True,
                                        name="R"), 2, 4)))
    out.append(("numpy/shuffle_after_epoch (multiset per epoch)", lambda ctx: _epochs_multiset(
        _reader_record(ctx, lambda fn: fn.readers.numpy(
            file_root=d(ctx, "npy"), shuffle_after_epoch=True, name="R"), 11, 3))))
    return out


def _epochs_multiset(rec):
    rec["epochs"] = [sorted(json.dumps(s) for s in b) for b in rec.pop("batches")]
    return rec


def _tfr(ctx, fn, shard, nsh, pad):
    tfrec = ctx.lib.tfrecord
    p = os.path.join(ctx.data, "data.tfrecord")
    o = fn.readers.tfrecord(path=p, index_path=p + ".idx", shard_id=shard, num_shards=nsh,
                            pad_last_batch=pad, name="R",
                            features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                                      "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
    return [o["image/encoded"], o["image/class/label"]]


# external_source ------------------------------------------------------------------------

def _es_record(ctx, make, iters=7, bs=3, with_layout=False):
    p = ctx.pipe(bs)
    with p:
        node = make(ctx.fn, ctx.types)
        p.set_outputs(node)
    p.build()
    rec = []
    for _ in range(iters):
        try:
            outs = p.run()
            rec.append(_batch(outs))
            if with_layout:
                rec.append("layout %s" % (outs[0].layout() or ""))
        except StopIteration:
            rec.append("StopIteration")
            p.reset()
    return {"runs": rec}


def _es_data(i, bs=3):
    return [np.full((2, 2), 10 * i + k, np.int32) for k in range(bs)]


def _es_scenarios():
    out = []
    out.append(("external_source/batch callable (iteration number)", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(source=lambda i: _es_data(i), batch=True))))
    out.append(("external_source/per-sample callable (SampleInfo)", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(
            source=lambda si: np.array([si.idx_in_epoch, si.idx_in_batch, si.iteration,
                                        si.epoch_idx], np.int64), batch=False))))
    out.append(("external_source/batch_info=True", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(
            source=lambda bi: _es_data(bi.iteration + 100 * bi.epoch_idx), batch=True,
            batch_info=True))))
    for cycle in (None, "quiet", "raise"):
        out.append(("external_source/iterable cycle=%s" % cycle, (lambda cycle: lambda ctx:
                    _es_record(ctx, lambda fn, types: fn.external_source(
                        source=[_es_data(i) for i in range(3)], cycle=cycle, batch=True)))(cycle)))
    out.append(("external_source/generator function cycle=raise", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(
            source=lambda: (_es_data(i) for i in range(2)), cycle="raise", batch=True))))
    out.append(("external_source/iterator ends (no cycle): StopIteration, then ends again",
                lambda ctx: _es_record(ctx, lambda fn, types: fn.external_source(
                    source=iter([_es_data(i) for i in range(2)]), batch=True), iters=5)))
    out.append(("external_source/callable raising StopIteration", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(source=_stopper(), batch=True))))
    out.append(("external_source/per-sample iterable", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(
            source=[np.array([k], np.int16) for k in range(7)], batch=False, cycle="quiet"))))
    out.append(("external_source/layout and parallel=False", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(source=lambda i: [
            np.full((2, 3, 1), i, np.uint8)] * 3, layout="HWC", parallel=False, batch=True),
        iters=2, with_layout=True)))
    out.append(("external_source/a batch of another size (error)", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(source=lambda: _es_data(0, 5), batch=True),
        iters=1)))
    out.append(("external_source/samples of different ndim (error)", lambda ctx: _es_record(
        ctx, lambda fn, types: fn.external_source(source=lambda: [
            np.zeros((2,), np.uint8), np.zeros((2, 2), np.uint8), np.zeros((1,), np.uint8)],
            batch=True), iters=1)))
    return out


def _stopper():
    state = {"n": 0}

    def src():
        state["n"] += 1
        if state["n"] % 3 == 0:
            raise StopIteration
        return _es_data(state["n"])
    return src


# iterators --------------------------------------------------------------------------------

def _iter_record(ctx, policy, use_reader, auto_reset, padded=False, bs=4, shard=(0, 1),
                 epochs=2):
    if ctx.impl == "dali":
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    else:
        from godali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    p = ctx.pipe(bs)
    with p:
        x = ctx.fn.readers.numpy(file_root=os.path.join(ctx.data, "npy"), name="R",
                                 pad_last_batch=padded, shard_id=shard[0], num_shards=shard[1])
        p.set_outputs(x)
    p.build()
    kw = {"reader_name": "R"} if use_reader else {"size": 11 if shard[1] == 1 else 6}
    if not use_reader:
        kw["last_batch_padded"] = padded  # with reader_name it comes from the reader
    it = DALIGenericIterator([p], ["x"], last_batch_policy=getattr(LastBatchPolicy, policy),
                             auto_reset=auto_reset, **kw)
    rec = {"len": len(it), "epochs": []}
    for e in range(epochs):
        batches = []
        try:
            for b in it:
                batches.append([int(v) for v in b[0]["x"][:, 0, 0].tolist()])
        except StopIteration:
            batches.append("StopIteration")
        rec["epochs"].append(batches)
        if not auto_reset:
            it.reset()
    return rec


def _iter_scenarios():
    out = []
    for policy in ("FILL", "DROP", "PARTIAL"):
        for use_reader in (True, False):
            for auto_reset in (True, False):
                name = "iterator/%s %s auto_reset=%s" % (
                    policy, "reader_name" if use_reader else "size", auto_reset)
                out.append((name, (lambda a, b, c: lambda ctx: _iter_record(ctx, a, b, c))(
                    policy, use_reader, auto_reset)))
        for use_reader in (True, False):
            out.append(("iterator/%s %s pad_last_batch shard 1 of 2" % (
                policy, "reader_name" if use_reader else "size"),
                (lambda a, b: lambda ctx: _iter_record(ctx, a, b, True, padded=True,
                                                       shard=(1, 2)))(policy, use_reader)))
    return out


# checkpoints -----------------------------------------------------------------------------

def _ckpt_record(ctx, shuffle):
    def build(cp=None):
        p = ctx.lib.Pipeline(batch_size=3, num_threads=1, device_id=None, seed=SEED,
                             prefetch_queue_depth=1, enable_checkpointing=True, checkpoint=cp)
        with p:
            data, label = ctx.fn.readers.file(file_root=os.path.join(ctx.data, "files"),
                                              random_shuffle=shuffle, initial_fill=5,
                                              pad_last_batch=True, name="R")
            p.set_outputs(data, label)
        p.build()
        return p
    p = build()
    for _ in range(5):
        p.run()
    cp = p.checkpoint()
    straight = [_batch(p.run()) for _ in range(6)]
    q = build(cp)
    restored = [_batch(q.run()) for _ in range(6)]
    rec = {"restored_equals_uninterrupted": restored == straight}
    if not shuffle:
        rec["continuation"] = restored
    return rec


def _ckpt_scenarios():
    return [("checkpoint/file reader: restore continues the sequence",
             lambda ctx: _ckpt_record(ctx, False)),
            ("checkpoint/file reader random_shuffle: restore continues its own sequence",
             lambda ctx: _ckpt_record(ctx, True))]


# An external source's callable called with the iteration, BatchInfo or SampleInfo: a
# checkpoint records where it is (DALI's rule), so the restored pipeline calls it with the
# indices the original calls it with next. Its data encode the indices it was called with.

def _es_ckpt_source(mode, epoch_size, bs):
    if mode == "idx":
        def src(i):
            if i >= epoch_size:
                raise StopIteration
            return [np.array([i, j], dtype=np.int32) for j in range(bs)]
    elif mode == "batch_info":
        def src(info):
            if info.iteration >= epoch_size:
                raise StopIteration
            return [np.array([info.epoch_idx, info.iteration, j], dtype=np.int32)
                    for j in range(bs)]
    else:
        def src(info):
            if info.idx_in_epoch >= epoch_size * bs:
                raise StopIteration
            return np.array([info.epoch_idx, info.iteration, info.idx_in_epoch,
                             info.idx_in_batch], dtype=np.int32)
    return src


def _es_ckpt_pipe(ctx, mode, epoch_size, bs, cp=None):
    p = ctx.lib.Pipeline(batch_size=bs, num_threads=1, device_id=None, seed=SEED,
                         prefetch_queue_depth=2, enable_checkpointing=True, checkpoint=cp)
    with p:
        p.set_outputs(ctx.fn.external_source(source=_es_ckpt_source(mode, epoch_size, bs),
                                             batch=mode != "sample_info",
                                             batch_info=mode == "batch_info"))
    p.build()
    return p


def _run_and_reset(p):
    try:
        return _batch(p.run())
    except StopIteration:
        p.reset()
        return ["StopIteration", _batch(p.run())]


def _ckpt_es_record(ctx, mode, epoch_size, bs, cut):
    p = _es_ckpt_pipe(ctx, mode, epoch_size, bs)
    for _ in range(cut):
        _run_and_reset(p)
    q = _es_ckpt_pipe(ctx, mode, epoch_size, bs, p.checkpoint())
    n = 2 * epoch_size + 1
    return {"original": [_run_and_reset(p) for _ in range(n)],
            "restored": [_run_and_reset(q) for _ in range(n)]}


def _ckpt_es_warning(ctx, kind):
    import warnings
    source = {"iterable": [np.array([1], np.int32)] * 3,
              "callable": lambda: np.array([1], np.int32)}[kind]
    p = ctx.lib.Pipeline(batch_size=1, num_threads=1, device_id=None,
                         enable_checkpointing=True)
    with p:
        p.set_outputs(ctx.fn.external_source(source=source, batch=False))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p.build()
    return {"warned": any("DALI doesn't capture state of such 'source'" in str(x.message)
                          for x in w)}


def _ckpt_es_scenarios():
    out = []
    for mode in ("idx", "batch_info", "sample_info"):
        for epoch_size, bs, cut in ((3, 2, 0), (3, 2, 2), (3, 2, 3), (3, 2, 4), (1, 1, 3)):
            out.append(("checkpoint/external_source %s epoch %d batch %d after %d runs" % (
                mode, epoch_size, bs, cut),
                (lambda a, b, c, d: lambda ctx: _ckpt_es_record(ctx, a, b, c, d))(
                    mode, epoch_size, bs, cut)))
    for kind in ("iterable", "callable"):
        out.append(("checkpoint/external_source %s source: warning at build" % kind,
                    (lambda k: lambda ctx: _ckpt_es_warning(ctx, k))(kind)))
    return out


def _iter_ckpt_record(ctx, cut, auto_reset):
    """An iterator over an external source (size=, FILL, last_batch_padded), its
    checkpoints taken after `cut` batches (an epoch is 2): the restored iterator's next
    epochs are the original's."""
    if ctx.impl == "dali":
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    else:
        from godali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    def make(cp=None):
        p = _es_ckpt_pipe(ctx, "batch_info", 2, 3, cp)
        return DALIGenericIterator([p], ["x"], size=6, auto_reset=auto_reset,
                                   last_batch_policy=LastBatchPolicy.FILL,
                                   last_batch_padded=True)

    def epochs(it):
        rec = []
        for _ in range(2):
            rec.append([b[0]["x"].tolist() for b in it])
            if not auto_reset:
                it.reset()
        return rec
    it = make()
    done = 0
    while done < cut:
        for _ in it:
            done += 1
            if done == cut:
                break
    cp = it.checkpoints()[0]
    return {"original": epochs(it), "restored": epochs(make(cp))}


def _iter_drop_no_data(ctx, npipes, size):
    """LastBatchPolicy.DROP with size= smaller than one step of all the pipelines."""
    if ctx.impl == "dali":
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    else:
        from godali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    pipes = []
    for _ in range(npipes):
        p = ctx.pipe(3)
        with p:
            p.set_outputs(ctx.fn.external_source(
                source=lambda info: np.array([info.idx_in_epoch], np.int32), batch=False))
        p.build()
        pipes.append(p)
    it = DALIGenericIterator(pipes, ["x"], size=size, last_batch_policy=LastBatchPolicy.DROP)
    return {"len": len(it), "epoch": [[d["x"].tolist() for d in b] for b in it]}


def _iter_ckpt_scenarios():
    out = []
    for cut in (1, 2, 4):
        for auto_reset in (True, False):
            out.append(("iterator/checkpoint size=6 after %d batches auto_reset=%s" % (
                cut, auto_reset), (lambda c, a: lambda ctx: _iter_ckpt_record(ctx, c, a))(
                    cut, auto_reset)))
    for policy in ("DROP", "FILL", "PARTIAL"):
        for shard, nsh, bs in ((2, 3, 3), (1, 4, 2)):
            # 11 samples in shards of 3-4 (2-3), padded: DALI's DROP epochs take fewer
            # batches than the reader's padded epochs have and carry the rest over.
            out.append(("iterator/%s reader_name pad_last_batch shard %d of %d, batches of %d, "
                        "4 epochs" % (policy, shard, nsh, bs),
                        (lambda a, b, c: lambda ctx: _iter_record(
                            ctx, a, True, True, padded=True, bs=c, shard=b, epochs=4))(
                            policy, (shard, nsh), bs)))
    for npipes, size in ((2, 5), (1, 2), (2, 6)):
        out.append(("iterator/DROP %d pipelines of 3, size=%d" % (npipes, size),
                    (lambda n, s: lambda ctx: _iter_drop_no_data(ctx, n, s))(npipes, size)))
    return out


def scenarios():
    return _file_scenarios() + _other_readers() + _es_scenarios() + _iter_scenarios() + \
        _ckpt_scenarios() + _ckpt_es_scenarios() + _iter_ckpt_scenarios()


# --- running and comparing ----------------------------------------------------------------

def run(impl, data, out_path, only=None):
    ctx = Ctx(impl, data)
    res = {}
    for name, f in scenarios():
        if only and only not in name:
            continue
        try:
            res[name] = {"ok": f(ctx)}
        except Exception as e:
            msg = " ".join(str(e).split())
            res[name] = {"error": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                         "message": msg if len(msg) < 500 else msg[:120] + " ... " + msg[-380:]}
    with open(out_path, "w") as fh:
        json.dump(res, fh, indent=0, sort_keys=True, default=str)
    print("pipesweep: %s ran %d scenarios -> %s" % (impl, len(res), out_path))


def _first_diff(a, b, path=""):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path or "record", a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s only in %s" % (path, k, "godali" if k not in a else "DALI")
            d = _first_diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items vs %d: %s vs %s" % (path, len(a), len(b),
                                                     json.dumps(a)[:200], json.dumps(b)[:200])
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: DALI %r vs godali %r" % (path, a, b)


def compare(dali_out, godali_out):
    with open(dali_out) as fh:
        a = json.load(fh)
    with open(godali_out) as fh:
        b = json.load(fh)
    rows = []
    for name in sorted(a):
        x, y = a[name], b.get(name)
        if y is None:
            rows.append((name, "missing", ""))
        elif "error" in x or "error" in y:
            if "error" in x and "error" in y:
                st = "refused" if x["error"] in y.get("mro", [y["error"]]) else "refused-other-type"
                rows.append((name, st, "DALI %s: %s | godali %s: %s" % (
                    x["error"], x["message"][:150], y["error"], y["message"][:150])))
            else:
                e, who = (y, "godali") if "error" in y else (x, "DALI")
                rows.append((name, "error", "%s refuses: %s: %s" % (who, e["error"], e["message"])))
        else:
            d = _first_diff(x["ok"], y["ok"])
            rows.append((name, "differs" if d else "same", d or ""))
    return rows


def main(argv):
    if len(argv) == 2 and argv[0] == "make-data":
        make_data(argv[1])
    elif len(argv) in (4, 5) and argv[0] == "run":
        run(argv[1], argv[2], argv[3], argv[4] if len(argv) == 5 else None)
    elif len(argv) == 3 and argv[0] == "compare":
        rows = compare(argv[1], argv[2])
        for name, st, why in rows:
            print("%-62s %-9s %s" % (name, st, " ".join(why.split())[:400]))
        n = {}
        for _n, st, _w in rows:
            n[st] = n.get(st, 0) + 1
        print("pipesweep: %d scenarios %s" % (len(rows), n))
        return 0 if all(r[1] in ("same", "refused") for r in rows) else 1
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(3)
