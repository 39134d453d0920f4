"""Issue 24, items 1, 4 and 7: outputs of more dimensions than numpy takes, float sizes
beyond int64, and strides that overflow. Each case of the issue and variations over a
table of extreme values (1e308, -1e308, NaN, Inf, 2**63, 2**62, -1) end in a named error
or the correct result; nothing crashes the process (the crash cases run in a child)."""

import os
import shutil
import subprocess
import struct
import sys

import numpy as np
import pytest

import godali
from godali import fn, types
from godali import _dlpack, tensors

from conftest import make_jpeg, missing_reference

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)

MAX_SAMPLE_NDIM = 31  # engine.MaxSampleNDim: 32 with the batch's, numpy 1.x's limit


def _build_run(graph, batch=2):
    p = godali.Pipeline(batch_size=batch, num_threads=1, seed=1)
    with p:
        p.set_outputs(*graph())
    try:
        p.build()
        return p.run()
    finally:
        p.close()


def _expand(n):
    return lambda: [fn.expand_dims(types.Constant(np.arange(3, dtype=np.uint8)),
                                   axes=list(range(1, n)))]


# -- item 1: ranks ----------------------------------------------------------------------

def test_max_rank_output_reads_through_every_consumer():
    out, = _build_run(_expand(MAX_SAMPLE_NDIM))
    assert np.asarray(out[0]).shape == (3,) + (1,) * (MAX_SAMPLE_NDIM - 1)
    batch = out.as_array()
    assert batch.ndim == MAX_SAMPLE_NDIM + 1
    np.testing.assert_array_equal(batch.reshape(2, 3), [[0, 1, 2], [0, 1, 2]])
    import torch
    assert torch.from_dlpack(out.as_tensor()).dim() == MAX_SAMPLE_NDIM + 1


@pytest.mark.parametrize("n", [MAX_SAMPLE_NDIM + 1, 33, 40, 64, 69, 70])
def test_too_many_dimensions_refused_at_build(n):
    with pytest.raises(godali.InvalidPipelineError) as e:
        _build_run(_expand(n))
    msg = str(e.value)
    assert "expand_dims" in msg and "%d dimensions" % n in msg and "at most 31" in msg, msg


CHILD = r"""
import sys, numpy as np, godali
from godali import fn, types
n = int(sys.argv[1])
p = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
with p:
    p.set_outputs(fn.expand_dims(types.Constant(np.arange(3, dtype=np.uint8)), axes=list(range(1, n))))
try:
    p.build()
    out, = p.run()
    np.asarray(out[0]); np.asarray(out.as_tensor()); out.as_array()
    print("read")
except Exception as e:
    print("refused", type(e).__name__)
"""


@pytest.mark.parametrize("n", [70, 33])
def test_issue_reproducer_does_not_crash_the_process(n):
    # numpy 1.x overflowed a stack buffer on a 70-dimensional __array_interface__: in a
    # child, so that a regression fails this test instead of killing the run.
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "refused InvalidPipelineError", r.stdout


@pytest.mark.parametrize("n", [33, 40, 64, 70, 1000])
def test_python_guard_before_any_array_interface(n):
    # A tensor described with too many dimensions (one the engine can no longer hand
    # out) is refused by every export before numpy or torch sees it.
    a = np.zeros(1, np.uint8)
    buf = tensors._Buffer(a.ctypes.data, _dlpack.kDLCPU, 0, _dlpack.kDLUInt, 8, 1, (1,) * n,
                          None, a)
    t = tensors.Tensor._wrap(buf)
    import torch
    for f in (lambda: np.asarray(t), t.as_array, lambda: torch.from_dlpack(t),
              lambda: t.__array_interface__, lambda: t.__dlpack__()):
        with pytest.raises(ValueError, match="%d dimensions" % n):
            f()
    ok = tensors.Tensor._wrap(tensors._Buffer(a.ctypes.data, _dlpack.kDLCPU, 0,
                                              _dlpack.kDLUInt, 8, 1, (1,) * 32, None, a))
    assert np.asarray(ok).ndim == 32


def _npy(path, ndim):
    header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%s), }\n" % ("1, " * ndim)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\x07")
    return str(path)


@pytest.mark.parametrize("ndim", [32, 40, 64, 65, 70])
def test_deep_npy_named(tmp_path, ndim):
    path = _npy(tmp_path / ("deep%d.npy" % ndim), ndim)

    def decode():
        data, _ = fn.readers.file(files=[path])
        return [fn.decoders.numpy(data)]
    with pytest.raises(godali.DataError) as e:
        _build_run(decode, batch=1)
    assert "deep%d.npy" % ndim in str(e.value) and "decoders.numpy" in str(e.value)
    with pytest.raises(godali.GodaliError) as e:
        _build_run(lambda: [fn.readers.numpy(files=[path])], batch=1)
    assert "deep%d.npy" % ndim in str(e.value) and "readers.numpy" in str(e.value)


def test_npy_of_max_rank_reads(tmp_path):
    path = _npy(tmp_path / "ok.npy", MAX_SAMPLE_NDIM)
    out, = _build_run(lambda: [fn.readers.numpy(files=[path])], batch=1)
    got = np.asarray(out[0])
    assert got.shape == (1,) * MAX_SAMPLE_NDIM and got.item() == 7


# -- item 4: float sizes ----------------------------------------------------------------

@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("h3")
    paths = [str(d / "a.jpg"), str(d / "b.jpg")]
    make_jpeg(paths[0], 24, 32, 1)
    make_jpeg(paths[1], 30, 20, 2)
    return paths


def _on_images(paths, op):
    def graph():
        j, _ = fn.readers.file(files=paths)
        return [op(fn.decoders.image(j))]
    return _build_run(graph)


EXTREME = [1e308, -1e308, float(2**63), float(2**62), 1e30, 1e20, 1e18]


def _per_sample(v):
    """A per-sample float32 value v (NaN and Inf computed in the graph)."""
    u = fn.random.uniform(range=[0.0, 0.0])
    if v != v:
        return u / 0.0
    if v in (float("inf"), float("-inf")):
        return (u + (1.0 if v > 0 else -1.0)) / 0.0
    return u + v


def test_issue_size_cases(images):
    cases = [("resize_shorter", lambda i: fn.resize(i, resize_shorter=1e30)),
             ("resize_x", lambda i: fn.resize(i, resize_x=_per_sample(1e20), resize_y=10.0)),
             ("ratio", lambda i: fn.paste(i, ratio=1e18, fill_value=0))]
    for arg, op in cases:
        with pytest.raises(godali.GodaliError, match='argument "%s"' % arg):
            _on_images(images, op)
    # 1e9 and 1e4 keep their errors: too large to allocate / a too large canvas.
    for r in (1e9, 1e4):
        with pytest.raises(godali.DataError, match="too large"):
            _on_images(images, lambda i: fn.paste(i, ratio=r, fill_value=0))


SIZE_OPS = {
    "resize_shorter": lambda i, v: fn.resize(i, resize_shorter=v),
    "resize_x": lambda i, v: fn.resize(i, resize_x=v, resize_y=10.0),
    "size": lambda i, v: fn.resize(i, size=v),
    "crop": lambda i, v: fn.crop(i, crop=v, out_of_bounds_policy="pad"),
    "crop_pos_x": lambda i, v: fn.crop(i, crop=[8, 8], crop_pos_x=v, out_of_bounds_policy="pad"),
    "ratio": lambda i, v: fn.paste(i, ratio=v, fill_value=0),
    "min_canvas_size": lambda i, v: fn.paste(i, ratio=1.0, min_canvas_size=v, fill_value=0),
}


@pytest.mark.parametrize("arg", sorted(SIZE_OPS))
def test_extreme_sizes_are_named(images, arg):
    tried = 0
    for v in EXTREME:
        for per_sample in (False, True):
            if arg in ("size", "crop") and per_sample:
                continue  # lists; the Go table covers them per sample
            val = _per_sample(v) if per_sample else v
            if arg in ("size", "crop"):
                val = [v, v]
            with pytest.raises(godali.GodaliError, match='argument "%s"' % arg):
                _on_images(images, lambda i: SIZE_OPS[arg](i, val))
            tried += 1
    for v in (float("nan"), float("inf"), float("-inf")):
        if arg in ("size", "crop"):
            continue
        with pytest.raises(godali.GodaliError, match='argument "%s"' % arg):
            _on_images(images, lambda i: SIZE_OPS[arg](i, _per_sample(v)))
    assert tried


def test_sizes_in_range_still_work(images):
    out, = _on_images(images, lambda i: fn.resize(i, resize_shorter=12.0))
    assert out[0].shape() == [12, 16, 3] and out[1].shape() == [18, 12, 3]
    out, = _on_images(images, lambda i: fn.paste(i, ratio=2.0, fill_value=0))
    assert out[0].shape() == [48, 64, 3]


# -- item 7: strides --------------------------------------------------------------------

@pytest.fixture(scope="module")
def frames_dir(tmp_path_factory):
    from PIL import Image
    d = tmp_path_factory.mktemp("seq")
    os.makedirs(d / "a")
    for k in range(5):
        Image.fromarray(np.full((8, 10, 3), 40 * k, np.uint8)).save(d / "a" / ("f%03d.png" % k))
    return str(d)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    if shutil.which("ffmpeg") is None:
        missing_reference("the ffmpeg command makes the test clip")
    path = str(tmp_path_factory.mktemp("clip") / "a.mp4")
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=32x24:rate=25", "-frames:v", "12", "-c:v", "libx264",
                    "-pix_fmt", "yuv420p", path], check=True)
    return path


BIG_INTS = [2**31, 2**40, 2**62, 2**63 - 1]


@pytest.mark.parametrize("v", BIG_INTS)
@pytest.mark.parametrize("arg", ["stride", "step", "sequence_length"])
def test_readers_sequence_strides(frames_dir, arg, v):
    kw = {"sequence_length": 2, arg: v}
    with pytest.raises(godali.InvalidPipelineError, match='argument "%s": %d' % (arg, v)):
        _build_run(lambda: [fn.readers.sequence(file_root=frames_dir, **kw)], batch=1)


def test_readers_sequence_span(frames_dir):
    with pytest.raises(godali.InvalidPipelineError, match='"sequence_length", "stride".*2\\^31-1'):
        _build_run(lambda: [fn.readers.sequence(file_root=frames_dir, sequence_length=2**16,
                                                stride=2**16)], batch=1)
    out, = _build_run(lambda: [fn.readers.sequence(file_root=frames_dir, sequence_length=2,
                                                   stride=3)], batch=1)
    got = np.asarray(out[0])
    assert got.shape == (2, 8, 10, 3) and got[0, 0, 0, 0] == 0 and got[1, 0, 0, 0] == 120


@pytest.mark.parametrize("v", BIG_INTS)
@pytest.mark.parametrize("arg", ["stride", "step", "sequence_length"])
def test_readers_video_strides(clip, arg, v):
    kw = {"sequence_length": 2, arg: v}
    with pytest.raises(godali.InvalidPipelineError, match='argument "%s": %d' % (arg, v)):
        _build_run(lambda: [fn.readers.video(filenames=[clip], **kw)], batch=1)


@pytest.mark.parametrize("kw,arg", [
    (dict(start_frame=10, stride=2**63 - 1), "stride"),  # the issue's
    (dict(start_frame=2**62), "start_frame"),
    (dict(stride=2**62, sequence_length=3), "stride"),
    (dict(sequence_length=2**31), "sequence_length"),
])
def test_decoders_video_strides(clip, kw, arg):
    def graph():
        data, _ = fn.readers.file(files=[clip])
        return [fn.decoders.video(data, **kw)]
    with pytest.raises(godali.InvalidPipelineError, match='argument "%s"' % arg):
        _build_run(graph, batch=1)


def test_decoders_video_span_and_good_stride(clip):
    def graph(**kw):
        def g():
            data, _ = fn.readers.file(files=[clip])
            return [fn.decoders.video(data, **kw)]
        return g
    with pytest.raises(godali.InvalidPipelineError, match="2\\^31-1"):
        _build_run(graph(start_frame=10, stride=2**30, sequence_length=3), batch=1)
    out, = _build_run(graph(start_frame=1, stride=4), batch=1)
    assert np.asarray(out[0]).shape == (3, 24, 32, 3)  # frames 1, 5, 9 of 12
