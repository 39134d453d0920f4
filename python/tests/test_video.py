"""fn.readers.video against PyAV (an independent decoder: its own demuxing, seeking and
conversion code over the same FFmpeg libraries), on clips the ffmpeg command makes."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import missing_reference, need

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)

av = need("av", reason="PyAV (python3-av, scripts/setup.sh) is the reference decoder")
if shutil.which("ffmpeg") is None:
    missing_reference("the ffmpeg command (scripts/setup.sh) makes the test clips")


def make_clip(path, frames=30, size="64x48", codec="libx264", extra=()):
    cmd = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
           "-i", "testsrc2=size=%s:rate=25" % size, "-frames:v", str(frames), "-c:v", codec,
           "-g", "8", "-pix_fmt", "yuv420p"]
    if codec == "libx265":
        cmd += ["-x265-params", "log-level=error:pools=1:frame-threads=1"]
    if codec == "libx264":
        cmd += ["-bf", "2", "-preset", "ultrafast"]
    cmd += list(extra) + [str(path)]
    subprocess.run(cmd, check=True)
    return str(path)


def pyav_frames(path):
    with av.open(path) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def run_once(batch_size, **kw):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=2, seed=7)
    with pipe:
        outs = fn.readers.video(name="Reader", **kw)
        pipe.set_outputs(*(outs if isinstance(outs, (tuple, list)) else (outs,)))
    pipe.build()
    return pipe, pipe.run()


def test_sequences_match_pyav(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=26)
    b = make_clip(tmp_path / "b.mkv", frames=19, size="64x64", codec="libx265")
    refs = [pyav_frames(a), pyav_frames(b)]
    L, step, stride = 4, 3, 2
    want = [(fi, s) for fi, n in enumerate([26, 19]) for s in range(0, n, step) if s + (L - 1) * stride < n]
    pipe, (video, labels, frame_num) = run_once(len(want), filenames=[a, b], labels=[], sequence_length=L,
                                                step=step, stride=stride, enable_frame_num=True)
    assert pipe.epoch_size("Reader") == len(want)
    for i, (fi, s) in enumerate(want):
        got = video[i].as_array()
        assert video[i].layout() == "FHWC"
        assert got.dtype == np.uint8 and got.shape == (L,) + refs[fi][0].shape
        for k in range(L):
            np.testing.assert_array_equal(got[k], refs[fi][s + k * stride],
                                          err_msg="sample %d frame %d" % (i, k))
        assert int(labels[i].as_array()[0]) == fi
        assert int(frame_num[i].as_array()[0]) == s


def test_shuffled_shards_cover_every_sequence_once(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=40)
    ref = pyav_frames(a)
    seen = []
    for shard in range(2):
        pipe = godali.Pipeline(batch_size=5, num_threads=2, seed=7)
        with pipe:
            v, fnum = fn.readers.video(filenames=[a], sequence_length=2, random_shuffle=True, initial_fill=8,
                                       shard_id=shard, num_shards=2, enable_frame_num=True, pad_last_batch=True)
            pipe.set_outputs(v, fnum)
        pipe.build()
        for _ in range(2):
            v, fnum = pipe.run()
            for i in range(5):
                s = int(fnum[i].as_array()[0])
                seen.append(s)
                np.testing.assert_array_equal(v[i].as_array()[0], ref[s])
                np.testing.assert_array_equal(v[i].as_array()[1], ref[s + 1])
    assert sorted(seen) == list(range(0, 40, 2))


def test_torch_tensor_and_float(tmp_path):
    torch = need("torch")
    a = make_clip(tmp_path / "a.webm", frames=12, codec="libvpx-vp9")
    ref = pyav_frames(a)
    _, (video,) = run_once(3, filenames=[a], sequence_length=4, dtype=types.FLOAT, normalized=True)
    t = torch.from_dlpack(video.as_tensor())
    assert t.shape == (3, 4, 48, 64, 3) and t.dtype == torch.float32
    want = np.stack([np.stack(ref[4 * i:4 * i + 4]) for i in range(3)]).astype(np.float32) / 255
    np.testing.assert_allclose(t.numpy(), want, atol=1e-6)


def test_corrupt_file_is_named(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 1000)
    with pytest.raises(godali.DataError, match="bad.mp4"):
        run_once(1, filenames=[str(bad)], sequence_length=2)


def test_missing_ffmpeg_says_what_to_install(tmp_path):
    # A directory without the libraries stands for a host without FFmpeg; the library
    # itself loads, and building a video operator says what is missing.
    a = make_clip(tmp_path / "a.mp4", frames=4)
    code = """
import godali
from godali import fn
p = godali.Pipeline(batch_size=1, num_threads=1)
with p:
    p.set_outputs(fn.random.uniform())
p.build(); p.run()
p = godali.Pipeline(batch_size=1, num_threads=1)
with p:
    p.set_outputs(fn.readers.video(filenames=[%r], sequence_length=2))
try:
    p.build()
except Exception as e:
    print("ERROR:", e)
""" % a
    env = dict(os.environ, GODALI_FFMPEG_LIBDIR=str(tmp_path), PYTHONPATH=PYTHON_DIR)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ERROR:" in out.stdout and "libavcodec.so.59" in out.stdout and "GODALI_FFMPEG_LIBDIR" in out.stdout, out.stdout


@pytest.mark.parametrize("kw,frames", [
    ({}, list(range(14))),
    ({"start_frame": 3, "stride": 4}, [3, 7, 11]),
    ({"start_frame": 2, "end_frame": 9, "stride": 3, "sequence_length": 5}, [2, 5, 8, -1, -1]),
    ({"frames": [9, 1, 4, 4], "pad_mode": "none"}, [9, 1, 4, 4]),
    ({"start_frame": 10, "sequence_length": 6, "pad_mode": "edge"}, [10, 11, 12, 13, 13, 13]),
    # DALI 2.4's border modes (measured side by side): past the end, the frame numbers
    # start + i * stride would have, read through the mode; edge is the video's last frame
    ({"start_frame": 1, "stride": 5, "sequence_length": 5, "pad_mode": "repeat"}, [1, 6, 11, 13, 13]),
    ({"start_frame": 11, "sequence_length": 6, "pad_mode": "symmetric"}, [11, 12, 13, 13, 12, 11]),
    ({"start_frame": 11, "sequence_length": 6, "pad_mode": "reflect"}, [11, 12, 13, 12, 11, 10]),
    ({"start_frame": 5, "stride": 4, "sequence_length": 5, "pad_mode": "reflect_1001"}, [5, 9, 13, 10, 6]),
])
@pytest.mark.parametrize("api", ["experimental.decoders.video", "decoders.video"])
def test_decoders_video_from_file_bytes(tmp_path, kw, frames, api):
    a = make_clip(tmp_path / "a.mp4", frames=14)
    b = make_clip(tmp_path / "b.mkv", frames=14, size="32x32")
    refs = [pyav_frames(a), pyav_frames(b)]
    pipe = godali.Pipeline(batch_size=2, num_threads=2, seed=1)
    decode = fn.experimental.decoders.video if api.startswith("experimental") else fn.decoders.video
    with pipe:
        data, _ = fn.readers.file(files=[a, b])
        pipe.set_outputs(decode(data, fill_value=[7, 8, 9], **kw))
    pipe.build()
    (out,) = pipe.run()
    for i in range(2):
        got = out[i].as_array()
        assert out[i].layout() == "FHWC" and got.shape[0] == len(frames)
        for k, f in enumerate(frames):
            want = refs[i][f] if f >= 0 else np.broadcast_to(np.array([7, 8, 9], np.uint8), refs[i][0].shape)
            np.testing.assert_array_equal(got[k], want, err_msg="sample %d frame %d" % (i, k))


def test_decoders_video_bad_bytes_named(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x01" * 333)
    pipe = godali.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        data, _ = fn.readers.file(files=[str(bad)])
        pipe.set_outputs(fn.experimental.decoders.video(data))
    pipe.build()
    with pytest.raises(godali.DataError, match="bad.mp4"):
        pipe.run()


def _frames_as_images(frames_list, op, **kw):
    """Runs op on each frame as an ordinary HWC image (external_source), the reference
    for the frame-by-frame sequence path."""
    n = len(frames_list)
    pipe = godali.Pipeline(batch_size=n, num_threads=1, seed=3)
    with pipe:
        imgs = fn.external_source(source=lambda: list(frames_list), layout="HWC")
        pipe.set_outputs(op(imgs, **kw))
    pipe.build()
    (out,) = pipe.run()
    return [out[i].as_array() for i in range(n)]


@pytest.mark.parametrize("op,kw", [
    ("resize", dict(resize_x=40, resize_y=30, interp_type=types.INTERP_TRIANGULAR)),
    ("crop", dict(crop=(20, 24), crop_pos_x=0.3, crop_pos_y=0.7)),
    ("flip", dict(horizontal=1, vertical=1)),
    ("crop_mirror_normalize", dict(dtype=types.FLOAT, output_layout="CHW", crop=(32, 32), mirror=1,
                                   mean=[100.0, 110.0, 120.0], std=[50.0, 60.0, 70.0])),
    ("brightness_contrast", dict(brightness=1.3, contrast=0.7)),
    ("hsv", dict(hue=30.0, saturation=0.6)),
    ("rotate", dict(angle=17.0, fill_value=0)),
])
def test_sequence_ops_equal_frame_by_frame(tmp_path, op, kw):
    a = make_clip(tmp_path / "a.mp4", frames=8)
    L = 4
    pipe = godali.Pipeline(batch_size=2, num_threads=2, seed=1)
    with pipe:
        v = fn.readers.video(filenames=[a], sequence_length=L)
        pipe.set_outputs(v, getattr(fn, op)(v, **kw))
    pipe.build()
    video, out = pipe.run()
    for i in range(2):
        frames = list(video[i].as_array())
        ref = _frames_as_images(frames, getattr(fn, op), **kw)
        got = out[i].as_array()
        assert got.shape == (L,) + ref[0].shape
        want_layout = "FCHW" if op == "crop_mirror_normalize" else "FHWC"
        assert out[i].layout() == want_layout
        for k in range(L):
            np.testing.assert_array_equal(got[k], ref[k], err_msg="%s sample %d frame %d" % (op, i, k))


def test_random_choices_shared_by_a_sequences_frames(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=40)
    pipe = godali.Pipeline(batch_size=10, num_threads=2, seed=5)
    with pipe:
        v = fn.readers.video(filenames=[a], sequence_length=4)
        flipped = fn.flip(v, horizontal=fn.random.coin_flip(probability=0.5))
        crops = fn.random_resized_crop(v, size=(16, 16))
        pipe.set_outputs(v, flipped, crops)
    pipe.build()
    video, flipped, crops = pipe.run()
    n_flipped = 0
    for i in range(10):
        src, got = video[i].as_array(), flipped[i].as_array()
        same = [np.array_equal(got[k], src[k]) for k in range(4)]
        mirrored = [np.array_equal(got[k], src[k][:, ::-1]) for k in range(4)]
        assert all(same) or all(mirrored), "sample %d: frames flipped differently" % i
        n_flipped += all(mirrored)
        # One crop window for the whole sequence: the crop of frame k equals the crop the
        # window of frame 0 gives (checked through the frame differences' support).
        c = crops[i].as_array()
        assert c.shape == (4, 16, 16, 3)
    assert 0 < n_flipped < 10


def test_per_frame_argument_and_sequence_rearrange(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=8)
    angles = np.array([0.0, 10.0, -20.0, 35.0], np.float32)
    pipe = godali.Pipeline(batch_size=2, num_threads=2, seed=1)
    with pipe:
        v = fn.readers.video(filenames=[a], sequence_length=4)
        ang = fn.external_source(source=lambda: [angles, angles])
        rot = fn.rotate(v, angle=fn.per_frame(ang), fill_value=0, keep_size=True)
        rev = fn.sequence_rearrange(v, new_order=[3, 2, 2, 0, 1])
        pipe.set_outputs(v, rot, rev)
    pipe.build()
    video, rot, rev = pipe.run()
    for i in range(2):
        frames = video[i].as_array()
        for k in range(4):
            (ref,) = _frames_as_images([frames[k]], fn.rotate, angle=float(angles[k]), fill_value=0, keep_size=True)
            np.testing.assert_array_equal(rot[i].as_array()[k], ref, err_msg="frame %d" % k)
        np.testing.assert_array_equal(rev[i].as_array(), frames[[3, 2, 2, 0, 1]])
        assert rev[i].layout() == "FHWC"


def test_readers_sequence_against_pil(tmp_path):
    from PIL import Image
    rng = np.random.default_rng(0)
    streams = {"a": 7, "b": 5}
    frames = {}
    for name, n in streams.items():
        d = tmp_path / name
        d.mkdir()
        frames[name] = []
        for k in range(n):
            img = rng.integers(0, 256, (12, 20, 3), dtype=np.uint8)
            Image.fromarray(img).save(d / ("f%03d.png" % k))
            frames[name].append(np.asarray(Image.open(d / ("f%03d.png" % k)).convert("RGB")))
    L, step, stride = 3, 2, 2
    want = [(s, k) for s, n in sorted(streams.items()) for k in range(0, n, step) if k + (L - 1) * stride < n]
    pipe = godali.Pipeline(batch_size=len(want), num_threads=2, seed=1)
    with pipe:
        pipe.set_outputs(fn.readers.sequence(file_root=str(tmp_path), sequence_length=L, step=step,
                                             stride=stride, name="Reader"))
    pipe.build()
    assert pipe.epoch_size("Reader") == len(want)
    (out,) = pipe.run()
    for i, (s, k) in enumerate(want):
        assert out[i].layout() == "FHWC"
        np.testing.assert_array_equal(out[i].as_array(), np.stack([frames[s][k + j * stride] for j in range(L)]))


def test_resize_then_cmn_on_sequences_equals_frames(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=8)
    kw = dict(dtype=types.FLOAT, output_layout="CHW", crop=(24, 24), mean=[100.0, 110.0, 120.0], std=[50.0, 60.0, 70.0])

    def op(x, **_):
        return fn.crop_mirror_normalize(fn.resize(x, resize_x=40, resize_y=30), **kw)
    pipe = godali.Pipeline(batch_size=2, num_threads=2, seed=1)
    with pipe:
        v = fn.readers.video(filenames=[a], sequence_length=4)
        pipe.set_outputs(v, op(v))
    pipe.build()
    video, out = pipe.run()
    for i in range(2):
        ref = _frames_as_images(list(video[i].as_array()), op)
        np.testing.assert_array_equal(out[i].as_array(), np.stack(ref))


def test_skip_policy_replaces_undecodable_videos(tmp_path):
    good = [make_clip(tmp_path / ("g%d.mp4" % i), frames=6) for i in range(3)]
    bad = tmp_path / "bad.mp4"
    with open(good[0], "rb") as f:
        bad.write_bytes(f.read()[:200])  # cut inside the container header
    files = [good[0], str(bad), good[1], good[2]]
    pipe = godali.Pipeline(batch_size=4, num_threads=2, seed=1, on_error="skip")
    with pipe:
        data, labels = fn.readers.file(files=files)
        pipe.set_outputs(fn.experimental.decoders.video(data, sequence_length=4), labels)
    pipe.build()
    video, labels = pipe.run()
    refs = {i: pyav_frames(f) for i, f in enumerate(files) if i != 1}
    for i in range(4):
        lab = int(labels[i].as_array()[0])
        assert lab != 1, "the undecodable file was delivered"
        np.testing.assert_array_equal(video[i].as_array(), np.stack(refs[lab][:4]))
    skipped = pipe.skipped()
    assert len(skipped) == 1 and skipped[0]["file"].endswith("bad.mp4"), skipped


def test_video_resize_equals_video_then_resize(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=8)
    pipe = godali.Pipeline(batch_size=2, num_threads=2, seed=1)
    with pipe:
        v, fnum = fn.readers.video_resize(filenames=[a], sequence_length=4, resize_x=40, resize_y=30,
                                          enable_frame_num=True, name="R")
        ref = fn.resize(fn.readers.video(filenames=[a], sequence_length=4), resize_x=40, resize_y=30)
        vf = fn.readers.video_resize(filenames=[a], sequence_length=4, resize_shorter=24,
                                     dtype=types.FLOAT, normalized=True)
        pipe.set_outputs(v, fnum, ref, vf)
    pipe.build()
    v, fnum, ref, vf = pipe.run()
    for i in range(2):
        assert v[i].as_array().shape == (4, 30, 40, 3)
        np.testing.assert_array_equal(v[i].as_array(), ref[i].as_array())
        assert int(fnum[i].as_array()[0]) == 4 * i
        f = vf[i].as_array()
        assert f.dtype == np.float32 and f.shape == (4, 24, 32, 3) and 0 <= f.min() and f.max() <= 1


# --- fn.experimental.inputs.video -----------------------------------------------------------

def video_input_pipe(batch_size, L, policy="partial"):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=2, device_id=None, prefetch_queue_depth=2)
    with pipe:
        pipe.set_outputs(fn.experimental.inputs.video(name="VIN", sequence_length=L,
                                                      last_sequence_policy=policy))
    pipe.build()
    return pipe


@pytest.mark.parametrize("policy", ["partial", "pad"])
def test_inputs_video_streams_fed_videos_as_pyav(tmp_path, policy):
    # Two feeds queue two videos; each is cut into batches of batch_size sequences of L
    # frames, a video's last batch smaller, its last sequence partial or black-padded.
    a = make_clip(tmp_path / "a.mp4", frames=29)
    b = make_clip(tmp_path / "b.webm", frames=9, size="32x24", codec="libvpx-vp9")
    bs, L = 3, 4
    pipe = video_input_pipe(bs, L, policy)
    pipe.feed_input("VIN", np.array([[np.fromfile(a, dtype=np.uint8)]]))  # DALI's form
    pipe.feed_input("VIN", [np.fromfile(b, dtype=np.uint8)], no_copy=True)
    for path in (a, b):
        ref = np.stack(pyav_frames(path))
        n = len(ref)
        for first in range(0, n, bs * L):
            (out,) = pipe.run()
            starts = list(range(first, min(n, first + bs * L), L))
            assert len(out) == len(starts)
            for s, start in enumerate(starts):
                got = out[s].as_array()
                want = ref[start:start + L]
                if policy == "pad" and len(want) < L:
                    pad = np.zeros((L - len(want),) + ref.shape[1:], np.uint8)
                    want = np.concatenate([want, pad])
                assert got.shape == want.shape
                np.testing.assert_array_equal(got, want)
    with pytest.raises(Exception, match="feed"):
        pipe.run()


def test_inputs_video_refuses_two_samples_and_names_bad_video(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=5)
    pipe = video_input_pipe(2, 2)
    with pytest.raises(ValueError, match="one video per feed"):
        pipe.feed_input("VIN", [np.zeros(4, np.uint8), np.zeros(4, np.uint8)])
    pipe.feed_input("VIN", [np.frombuffer(b"not a video", np.uint8)])
    pipe.feed_input("VIN", [np.fromfile(a, dtype=np.uint8)])
    with pytest.raises(godali.DataError, match="VIN"):
        pipe.run()
    (out,) = pipe.run()
    assert [out[i].as_array().shape[0] for i in range(len(out))] == [2, 2]


# --- max_image_pixels on video (issue 24) ---------------------------------------------------

def craft_huge_avi(path, w=16000, h=16000):
    """A 16x16 MJPEG AVI of a few kilobytes whose headers (avih, strf) and JPEGs (SOF0) are
    rewritten to declare w x h frames: a decoder learns the size before any pixel."""
    import struct
    make_clip(path, frames=3, size="16x16", codec="mjpeg", extra=["-pix_fmt", "yuvj420p"])
    d = bytearray(open(path, "rb").read())
    i = d.find(b"avih")
    struct.pack_into("<II", d, i + 8 + 32, w, h)
    i = d.find(b"strf")
    struct.pack_into("<ii", d, i + 8 + 4, w, h)
    i, n = d.find(b"\xff\xc0"), 0
    while i >= 0:
        struct.pack_into(">HH", d, i + 5, h, w)
        i, n = d.find(b"\xff\xc0", i + 2), n + 1
    assert n == 3
    open(path, "wb").write(d)
    return str(path)


# The pipeline runs in a child process whose address space is capped: a regression that
# allocates what the file or the arguments declare fails there instead of swapping.
LIMITED = r"""
import resource, sys, numpy as np, godali
from godali import fn
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
case, path = sys.argv[1], sys.argv[2]
pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None, seed=1)
data = np.fromfile(path, dtype=np.uint8)
with pipe:
    if case == "reader":
        out = fn.readers.video(filenames=[path], sequence_length=2)
    elif case == "reader_pad":
        out = fn.readers.video(filenames=[path], sequence_length=10**6, pad_sequences=True)
    elif case == "decoder":
        out = fn.decoders.video(fn.readers.file(files=[path])[0])
    elif case == "decoder_pad":
        out = fn.decoders.video(fn.external_source(source=lambda: [data]), sequence_length=10**6)
    elif case == "input":
        out = fn.experimental.inputs.video(name="VIN", sequence_length=2)
    pipe.set_outputs(out)
pipe.build()
if case == "input":
    pipe.feed_input("VIN", [data])
try:
    pipe.run()
    print("NO ERROR")
except Exception as e:
    print("ERROR", type(e).__name__, e)
"""


def run_limited(case, path):
    r = subprocess.run([sys.executable, "-c", LIMITED, case, str(path)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.parametrize("case", ["reader", "decoder", "input"])
def test_max_image_pixels_bounds_video_frames(tmp_path, case):
    # a 7 KB file declaring 16000x16000 frames: refused from its header, nothing decoded
    path = craft_huge_avi(tmp_path / "huge.avi")
    out = run_limited(case, path)
    assert out.startswith("ERROR DataError"), out
    assert "16000x16000" in out and "max_image_pixels=178956970" in out, out
    if case != "input":  # a fed video has no file name
        assert "huge.avi" in out, out


@pytest.mark.parametrize("case", ["decoder_pad", "reader_pad"])
def test_padded_sequences_bounded(tmp_path, case):
    # 10**6 frames of 64x48 (9.2 GB) from a 2-second clip: refused before allocation
    path = make_clip(tmp_path / "clip.mp4", frames=50)
    out = run_limited(case, path)
    assert out.startswith("ERROR DataError"), out
    for part in ['argument "sequence_length"', "frames of 64x48", "max_image_pixels=178956970"]:
        assert part in out, out


def test_max_image_pixels_zero_and_raised_bounds(tmp_path):
    path = make_clip(tmp_path / "clip.mp4", frames=5)
    ref = np.stack(pyav_frames(path))
    data = np.fromfile(path, dtype=np.uint8)
    # 5 frames of 64x48 (3072 pixels) padded to L: the padding may hold one image's worth
    # of pixels, all frames together 8 (codec/video.SequencePixelsFactor)
    for mip, L, ok in [(64 * 48 * 3, 8, True), (64 * 48 * 3 - 1, 8, False), (0, 300, True),
                       (64 * 48, 5, True), (64 * 48, 6, True), (64 * 48, 7, False)]:
        pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None, max_image_pixels=mip)
        with pipe:
            pipe.set_outputs(fn.decoders.video(fn.external_source(source=lambda: [data]), sequence_length=L))
        pipe.build()
        if not ok:
            with pytest.raises(godali.DataError, match="sequence_length"):
                pipe.run()
            continue
        got = pipe.run()[0][0].as_array()
        assert got.shape == (L, 48, 64, 3)
        np.testing.assert_array_equal(got[:5], ref)
        assert not got[5:].any()  # padding: black frames


# --- rotation metadata -------------------------------------------------------------------

def test_rotation_metadata_is_not_applied_as_in_dali(tmp_path):
    # A display matrix of 90 degrees (phones' portrait clips): DALI's video operators
    # decode frames as coded and ignore it, and so does godali (readers.video,
    # decoders.video, inputs.video): frames equal PyAV's (which does not rotate either)
    # in the coded 64x48, where the ffmpeg command would autorotate to 48x64.
    src = make_clip(tmp_path / "a.mp4", frames=6)
    rot = str(tmp_path / "rot.mp4")
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-i", src, "-c", "copy",
                    "-metadata:s:v:0", "rotate=90", rot], check=True)
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream_side_data=rotation", "-of", "csv=p=0", rot],
                           check=True, capture_output=True, text=True).stdout
    assert probe.strip().lstrip("-") == "90", probe
    ref = np.stack(pyav_frames(rot))
    assert ref.shape[1:3] == (48, 64)
    upright = subprocess.run(["ffmpeg", "-v", "error", "-i", rot, "-frames:v", "1", "-f", "rawvideo",
                              "-pix_fmt", "rgb24", "-"], check=True, capture_output=True).stdout
    upright = np.frombuffer(upright, np.uint8).reshape(64, 48, 3)  # autorotated: 48 wide
    turned = [np.abs(np.rot90(ref[0], k).astype(int) - upright).max() for k in (1, 3)]
    assert min(turned) <= 2, turned  # what godali does not do: the frame turned a quarter
    _, (video,) = run_once(1, filenames=[rot], sequence_length=6)
    np.testing.assert_array_equal(video[0].as_array(), ref)
    pipe = video_input_pipe(1, 6)
    pipe.feed_input("VIN", [np.fromfile(rot, dtype=np.uint8)])
    (out,) = pipe.run()
    np.testing.assert_array_equal(out[0].as_array(), ref)


# --- NVDEC (the CUDA flavour; make test-cuda-emu runs these on the GPU emulator) ----------

from godali import _lib  # noqa: E402

cuda_flavour = pytest.mark.skipif(_lib.get().flavour != "cuda",
                                  reason="needs the CUDA flavour (a GPU, or tests/gpuemu)")
NVDEC_TOLERANCE = 3  # levels per channel: NVDEC + godali's NV12 kernel vs FFmpeg + swscale


def _gpu_array(t):
    """A GPU tensor copied to a numpy array with the driver API (cuMemcpyDtoH on the legacy
    stream, fenced after the batch): no torch with CUDA needed, so the emulator runs it."""
    import ctypes
    buf = t._buf
    buf.fence(1)  # the legacy default stream waits for the batch's work
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), buf.device_id) == 0
    assert cuda.cuCtxPushCurrent_v2(ctx) == 0
    try:
        out = np.empty(buf.shape, dtype=np.uint8 if buf.bits == 8 else np.int32)
        r = cuda.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(buf.data),
                                 ctypes.c_size_t(out.nbytes))
        assert r == 0, "cuMemcpyDtoH: CUDA error %d" % r
    finally:
        cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        cuda.cuDevicePrimaryCtxRelease_v2(buf.device_id)
    return out


def _close(got, want):
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    assert d.max() <= NVDEC_TOLERANCE, "max diff %d" % d.max()
    return d.mean()


@cuda_flavour
def test_gpu_video_reader_matches_pyav(tmp_path):
    a = make_clip(tmp_path / "a.mp4", frames=14)
    ref = pyav_frames(a)
    pipe = godali.Pipeline(batch_size=3, num_threads=2, device_id=0, seed=7)
    with pipe:
        video, labels = fn.readers.video(device="gpu", filenames=[a], labels=[5], sequence_length=4,
                                         name="Reader")
        pipe.set_outputs(video, labels)
    pipe.build()
    video, labels = pipe.run()
    assert video.device == "gpu" and labels.device == "gpu"
    for i in range(3):
        _close(_gpu_array(video[i]), np.stack(ref[4 * i:4 * i + 4]))
        assert int(_gpu_array(labels[i])[0]) == 5
    pipe.close()


@cuda_flavour
def test_mixed_video_decoder_matches_pyav(tmp_path):
    clips = [make_clip(tmp_path / "a.mp4", frames=9),
             make_clip(tmp_path / "b.mkv", frames=7, size="64x64", codec="libx265")]
    pipe = godali.Pipeline(batch_size=2, num_threads=2, device_id=0)
    with pipe:
        data = fn.external_source(name="src", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.decoders.video(data, device="mixed", sequence_length=8, pad_mode="edge"))
    pipe.build()
    pipe.feed_input("src", [np.fromfile(c, dtype=np.uint8) for c in clips])
    (out,) = pipe.run()
    assert out.device == "gpu"
    for i, c in enumerate(clips):
        ref = pyav_frames(c)[:8]
        ref = ref + [ref[-1]] * (8 - len(ref))
        _close(_gpu_array(out[i]), np.stack(ref))
    pipe.close()
