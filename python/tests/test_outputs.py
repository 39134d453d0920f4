"""Pipeline outputs against independent references (PIL, numpy) with DALI's tolerances,
ragged outputs, and zero-copy ownership of the engine's buffers."""

import gc
import os

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

import godali, torch
from godali import fn, types

from conftest import corpus_jpegs, make_jpeg, run_python


def _pil_rgb(path):
    # godali applies the EXIF orientation by default (adjust_orientation=True).
    return np.asarray(ImageOps.exif_transpose(Image.open(path)).convert("RGB"))


def _run_once(files, build_outputs, batch_size=None, **pipe_kw):
    pipe = godali.Pipeline(batch_size=batch_size or len(files), num_threads=2, seed=7,
                           **pipe_kw)
    with pipe:
        jpegs, labels = fn.readers.file(files=files)
        outs = build_outputs(jpegs)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    res = pipe.run()
    pipe.close()
    return res


def test_decoder_matches_pil_on_the_corpus(corpus_dir):
    files = corpus_jpegs(corpus_dir)
    assert len(files) >= 20
    (images,) = _run_once(files, lambda j: fn.decoders.image(j, output_type=types.RGB))
    assert not images.is_dense_tensor()
    worst = 0
    for i, path in enumerate(files):
        got = images[i].as_array()
        want = _pil_rgb(path)
        assert got.shape == want.shape, path
        diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
        worst = max(worst, int(diff.max()))
        # Same libjpeg-turbo, accurate IDCT and fancy upsampling as PIL: DALI's one-level
        # tolerance (in practice the outputs are identical).
        assert diff.max() <= 1, (path, diff.max())
    print("decoder vs PIL: worst difference %d over %d files" % (worst, len(files)))


def test_decoder_gray_and_bgr(tmp_path):
    path = make_jpeg(str(tmp_path / "g.jpg"), 33, 47, seed=1)
    gray, bgr = _run_once([path], lambda j: (fn.decoders.image(j, output_type=types.GRAY),
                                             fn.decoders.image(j, output_type=types.BGR)))
    rgb = _pil_rgb(path)
    np.testing.assert_array_equal(bgr[0].as_array(), rgb[:, :, ::-1])
    g = gray[0].as_array()
    assert g.shape == (33, 47, 1)
    # DALI's GRAY of a JPEG is libjpeg's grayscale output, the stored luma as decoded:
    # PIL's draft("L"), bit for bit (not the 601 luma of the RGB decode, convert("L"),
    # which differs where the chroma's upsampling and rounding do).
    im = Image.open(path)
    im.draft("L", im.size)
    np.testing.assert_array_equal(g[:, :, 0], np.asarray(im.convert("L")))
    # like_pil=True: torchvision's loader's convert("L") of the RGB decode, within rounding.
    (pil_gray,) = _run_once([path], lambda j: (fn.decoders.image(j, output_type=types.GRAY, like_pil=True),))
    want = np.asarray(Image.open(path).convert("L")).astype(np.int16)
    assert np.abs(pil_gray[0].as_array()[:, :, 0].astype(np.int16) - want).max() <= 1


def _resize_errors(got, ref, border=2):
    d = np.abs(got.astype(np.int16) - ref.astype(np.int16))[border:-border, border:-border]
    return d.mean(), d.max()


@pytest.mark.parametrize("size", [(80, 60), (200, 150), (37, 91), (100, 90)])
def test_resize_triangular_matches_pil_bilinear(tmp_path, size):
    """The resize kernel alone: its input is the decoded image the pipeline also
    returns."""
    out_w, out_h = size
    files = [make_jpeg(str(tmp_path / ("r%d.jpg" % i)), h, w, seed=10 + i)
             for i, (h, w) in enumerate([(120, 160), (97, 131), (64, 48)])]

    def graph(j):
        img = fn.decoders.image(j)
        return fn.resize(img, resize_x=out_w, resize_y=out_h,
                         interp_type=types.INTERP_TRIANGULAR), img

    resized, decoded = _run_once(files, graph)
    t = torch.from_dlpack(resized)
    assert tuple(t.shape) == (3, out_h, out_w, 3)
    for i, path in enumerate(files):
        ref = np.asarray(Image.fromarray(decoded[i].as_array()).resize((out_w, out_h),
                                                                        Image.BILINEAR))
        mean, mx = _resize_errors(t[i].numpy(), ref)
        # DALI's resize test: interior pixels, mean abs error <= 0.4, max <= 10.
        assert mean <= 0.4 and mx <= 10, (path, mean, mx)


@pytest.mark.parametrize("size", [(80, 60), (40, 30), (64, 64), (37, 91)])
def test_fused_decode_resize_matches_pil(tmp_path, size):
    """decoders.image -> resize as users write it: the engine may fuse the two (decoding
    at a reduced scale); the result must still be within DALI's tolerance of PIL's
    decode + BILINEAR resize."""
    out_w, out_h = size
    files = [make_jpeg(str(tmp_path / ("f%d.jpg" % i)), h, w, seed=30 + i)
             for i, (h, w) in enumerate([(120, 160), (240, 320), (97, 131)])]
    (resized,) = _run_once(files, lambda j: fn.resize(
        fn.decoders.image(j), resize_x=out_w, resize_y=out_h,
        interp_type=types.INTERP_TRIANGULAR))
    t = torch.from_dlpack(resized)
    for i, path in enumerate(files):
        ref = np.asarray(Image.open(path).convert("RGB").resize((out_w, out_h),
                                                                 Image.BILINEAR))
        mean, mx = _resize_errors(t[i].numpy(), ref)
        assert mean <= 0.4 and mx <= 10, (path, Image.open(path).size, mean, mx)


def test_resize_shorter_size(tmp_path):
    files = [make_jpeg(str(tmp_path / "a.jpg"), 90, 130, seed=3),
             make_jpeg(str(tmp_path / "b.jpg"), 131, 70, seed=4)]
    (out,) = _run_once(files, lambda j: fn.resize(fn.decoders.image(j), resize_shorter=64))
    for (h, w), got in zip([(90, 130), (131, 70)], out.shape()):
        short, long_ = (h, w) if h < w else (w, h)
        exact_long = long_ * 64 / short
        gh, gw = got[:2]
        g_short, g_long = (gh, gw) if h < w else (gw, gh)
        assert g_short == 64
        assert abs(g_long - exact_long) <= 0.6  # DALI: output size within 0.6 px


def _cmn_reference(img, crop, pos, mirror, mean, std, layout="CHW"):
    h, w = img.shape[:2]
    ch, cw = crop
    y0 = int(pos[1] * (h - ch) + 0.5)
    x0 = int(pos[0] * (w - cw) + 0.5)
    out = img[y0:y0 + ch, x0:x0 + cw].astype(np.float64)
    if mirror:
        out = out[:, ::-1]
    out = (out - np.asarray(mean)) / np.asarray(std)
    if layout == "CHW":
        out = out.transpose(2, 0, 1)
    return out


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_crop_mirror_normalize_matches_numpy(tmp_path, layout):
    files = [make_jpeg(str(tmp_path / ("c%d.jpg" % i)), 40 + 7 * i, 50 + 5 * i, seed=20 + i)
             for i in range(6)]
    mean = [123.675, 116.28, 103.53]
    std = [58.395, 57.12, 57.375]

    def graph(j):
        img = fn.decoders.image(j)
        flip = fn.random.coin_flip(probability=0.5)
        out = fn.crop_mirror_normalize(img, crop=(32, 24), crop_pos_x=0.3, crop_pos_y=0.8,
                                       mirror=flip, mean=mean, std=std, dtype=types.FLOAT,
                                       output_layout=layout)
        return out, img, flip

    out, img, flip = _run_once(files, graph)
    t = torch.from_dlpack(out)
    assert t.dtype == torch.float32
    assert tuple(t.shape) == ((6, 3, 32, 24) if layout == "CHW" else (6, 32, 24, 3))
    flips = flip.as_array().ravel().tolist()
    assert set(flips) <= {0, 1}
    for i in range(6):
        want = _cmn_reference(img[i].as_array(), (32, 24), (0.3, 0.8), flips[i], mean, std,
                              layout)
        np.testing.assert_allclose(t[i].numpy(), want, atol=1e-5, rtol=1e-5)


def test_crop_mirror_normalize_float16_and_uint8(tmp_path):
    files = [make_jpeg(str(tmp_path / "h.jpg"), 30, 30, seed=5)]

    def graph(j):
        img = fn.decoders.image(j)
        return (fn.crop_mirror_normalize(img, crop=(16, 16), mean=[10, 20, 30],
                                         std=[2, 3, 4], dtype=types.FLOAT16), img,
                fn.crop_mirror_normalize(img, crop=(16, 16), dtype=types.UINT8,
                                         output_layout="HWC", mirror=1))

    half, img, u8 = _run_once(files, graph)
    ref = _cmn_reference(img[0].as_array(), (16, 16), (0.5, 0.5), 0, [10, 20, 30], [2, 3, 4])
    assert torch.from_dlpack(half).dtype == torch.float16
    np.testing.assert_allclose(torch.from_dlpack(half)[0].float().numpy(), ref, rtol=1e-3, atol=1e-2)
    want = _cmn_reference(img[0].as_array(), (16, 16), (0.5, 0.5), 1, 0, 1, "HWC")
    np.testing.assert_array_equal(u8.as_array()[0], want.astype(np.uint8))


def test_validation_pipeline_matches_torchvision(image_folder):
    """decode -> resize(shorter) -> centre crop + normalise, against PIL + numpy."""
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(image_folder) for f in fs)
    mean = [0.485 * 255, 0.456 * 255, 0.406 * 255]
    std = [0.229 * 255, 0.224 * 255, 0.225 * 255]
    (out,) = _run_once(files, lambda j: fn.crop_mirror_normalize(
        fn.resize(fn.decoders.image(j), resize_shorter=40,
                  interp_type=types.INTERP_TRIANGULAR),
        crop=(32, 32), mean=mean, std=std, dtype=types.FLOAT))
    t = torch.from_dlpack(out)
    for i, path in enumerate(files):
        im = Image.open(path).convert("RGB")
        w, h = im.size
        # DALI rounds the longer side; the crop offset is int(0.5 * (in - crop) + 0.5).
        nw, nh = (40, round(h * 40 / w)) if w < h else (round(w * 40 / h), 40)
        ref = np.asarray(im.resize((nw, nh), Image.BILINEAR))
        want = _cmn_reference(ref, (32, 32), (0.5, 0.5), 0, mean, std)
        err = np.abs(t[i].numpy() - want)[:, 2:-2, 2:-2] * (std[0])
        assert err.mean() <= 0.4 * 1.2, (path, err.mean())
        assert err.max() <= 10 * 1.2, (path, err.max())


def test_ragged_samples_zero_copy(image_folder):
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(image_folder) for f in fs)[:4]
    (images,) = _run_once(files, lambda j: fn.decoders.image(j))
    assert len(images) == 4
    assert not images.is_dense_tensor()
    shapes = images.shape()
    for i, path in enumerate(files):
        want = _pil_rgb(path)
        assert shapes[i] == want.shape
        s = images[i]
        t = torch.from_dlpack(s)
        assert t.data_ptr() == s.data_ptr()
        np.testing.assert_array_equal(t.numpy(), want)
        assert torch.utils.dlpack.from_dlpack(s.__dlpack__()).data_ptr() == s.data_ptr()
    assert tuple(images[-1].shape()) == shapes[-1]
    with pytest.raises(IndexError):
        images[4]
    with pytest.raises(ValueError, match="ragged"):
        torch.from_dlpack(images)


def _stats(pipe=None):
    return pipe.pool_stats() if pipe is not None else godali.memory_stats()


def test_zero_copy_and_buffers_return_when_tensors_die(image_folder):
    pipe = godali.Pipeline(batch_size=4, num_threads=1, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        img = fn.resize(fn.decoders.image(jpegs), resize_x=20, resize_y=20)
        pipe.set_outputs(img, labels)
    pipe.build()
    images, labels = pipe.run()
    base = _stats(pipe)
    assert base["exported"] >= 2
    t = torch.from_dlpack(images)
    # The tensor's memory is the engine's buffer, as written in the DLTensor.
    assert t.data_ptr() == images.data_ptr()
    lease = images._dense
    assert lease.data == t.data_ptr()
    assert t.shape == (4, 20, 20, 3) and t.dtype == torch.uint8
    view = torch.from_dlpack(images[2])
    assert view.data_ptr() == t.data_ptr() + 2 * 20 * 20 * 3
    del images, lease
    gc.collect()
    # The tensors still hold the image buffer.
    assert _stats(pipe)["exported"] == base["exported"]
    del t
    gc.collect()
    assert _stats(pipe)["exported"] == base["exported"]  # view still alive
    del view
    gc.collect()
    assert _stats(pipe)["exported"] == base["exported"] - 1
    del labels
    gc.collect()
    released = _stats(pipe)
    assert released["exported"] == base["exported"] - 2
    # The pipeline's current batch holds its buffers until the next one replaces it;
    # then they go back to the pool, and steady state allocates nothing new.
    for _ in range(2):  # 10 samples, batch 4: three batches in the epoch
        pipe.run()
    steady = _stats(pipe)
    assert steady["returns"] >= released["returns"] + 2
    assert steady["allocations"] == released["allocations"]
    pipe.close()


def test_tensors_outlive_the_pipeline(image_folder):
    gc.collect()
    base = godali.memory_stats()
    pipe = godali.Pipeline(batch_size=3, num_threads=1, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        pipe.set_outputs(fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8))
    (images,) = pipe.run()
    live = godali.live_pipelines()
    t = torch.from_dlpack(images)
    expected = t.clone()
    del images
    pipe.close()
    del pipe
    gc.collect()
    assert godali.live_pipelines() == live - 1
    held = godali.memory_stats()
    assert held["exported"] == base["exported"] + 1
    # Still readable after the pipeline is gone.
    assert torch.equal(t, expected)
    del t
    gc.collect()
    after = godali.memory_stats()
    assert after["exported"] == base["exported"]
    assert after["outstanding"] <= held["outstanding"] - 1


def test_tensors_alive_at_interpreter_exit(image_folder):
    code = r"""
import atexit, gc, sys
import godali, torch
from godali import fn
pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
with pipe:
    jpegs, labels = fn.readers.file(file_root=%r)
    pipe.set_outputs(fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8), labels)
images, labels = pipe.run()
KEEP = [torch.from_dlpack(images), labels]   # held until the interpreter tears down
LATE = [torch.from_dlpack(images[1])]
pipe.close()

def at_exit():
    s = godali.memory_stats()
    print("exported at exit", s["exported"])
    LATE.clear()
    gc.collect()
    print("after releasing", godali.memory_stats()["exported"])
atexit.register(at_exit)
""" % image_folder
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "exported at exit 2"
    # KEEP still holds both buffers: releasing the view alone gives nothing back.
    assert lines[1] == "after releasing 2"
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_release_at_exit_reaches_the_engine(image_folder):
    code = r"""
import atexit, gc
import godali, torch
from godali import fn
pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
with pipe:
    jpegs, labels = fn.readers.file(file_root=%r)
    pipe.set_outputs(labels)
(labels,) = pipe.run()
T = [torch.from_dlpack(labels)]
del labels
def at_exit():
    print(godali.memory_stats()["exported"])
    T.clear(); gc.collect()
    print(godali.memory_stats()["exported"])
atexit.register(at_exit)
""" % image_folder
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "0"], r.stdout + r.stderr


@pytest.mark.gpu
def test_gpu_outputs_are_zero_copy_cuda_tensors(image_folder):
    pipe = godali.Pipeline(batch_size=4, num_threads=2, device_id=0, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        images = fn.decoders.image(jpegs, device="mixed")
        pipe.set_outputs(fn.resize(images, resize_x=16, resize_y=16), labels.gpu())
    images, labels = pipe.run()
    assert images.device == "gpu"
    assert images.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    t = torch.from_dlpack(images)
    assert t.is_cuda and t.data_ptr() == images.data_ptr()
    assert torch.from_dlpack(labels).is_cuda
    assert pipe.pool_stats("gpu")["exported"] >= 2
    host = images.as_cpu().as_array()
    assert host.shape == (4, 16, 16, 3)


def test_output_layouts_come_from_the_engine(tmp_path):
    # godali_output_info_t.layout is the engine's layout of each output (no Python copy
    # of the rules): decoders give HWC, crop_mirror_normalize its output_layout, a
    # reshape its layout argument, labels none.
    files = [str(tmp_path / ("%d.jpg" % i)) for i in range(2)]
    for i, f in enumerate(files):
        make_jpeg(f, 20 + i, 16, seed=i)
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=3)
    with pipe:
        jpegs, labels = fn.readers.file(files=files)
        img = fn.decoders.image(jpegs)
        chw = fn.crop_mirror_normalize(img, crop=(8, 8), output_layout="CHW")
        flat = fn.reshape(chw, shape=[3, 64], layout="CX")
        pipe.set_outputs(img, chw, flat, labels)
    with pipe:
        res = pipe.run()
    assert [o.layout() for o in res] == ["HWC", "CHW", "CX", ""]


def test_output_info_struct_matches_header():
    import ctypes
    from godali import _lib
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "godali.h")
    with open(header) as f:
        assert "#define GODALI_MAX_LAYOUT 16" in f.read()
    assert _lib.OutputInfo.num_samples.offset == 24  # the 0.1 fields keep their offsets
    assert _lib.OutputInfo.layout.offset == 32
    assert ctypes.sizeof(_lib.OutputInfo) == 48


# Progressive JPEGs whose scans leave AC coefficients unrefined: libjpeg's block smoothing
# runs, and a window decoded alone must still equal the full decode's (tests/data/sampling).
SMOOTHED = ["prog_smooth420_211x157.jpg", "prog_smooth444_170x131.jpg"]


def _sampling(name):
    from conftest import REPO
    return os.path.join(REPO, "tests", "data", "sampling", name)


@pytest.mark.parametrize("name", SMOOTHED)
def test_crop_decoders_equal_pil_on_smoothed_progressive(name):
    """decoders.image_crop and decoders.image_slice decode only their window: bit-exact with
    the whole decode, then that window (tolerance 0), at the corners and inside; and so
    with PIL's where PIL's libjpeg smooths as godali's does (Pillow's wheels bundle
    libjpeg-turbo 3, whose block smoothing differs by 1 on such files from Debian's 2.1
    that godali links: there the window is checked against godali's whole decode only)."""
    path = _sampling(name)
    (whole,) = _run_once([path], lambda j: fn.decoders.image(j, output_type=types.RGB))
    ref = whole.as_array()[0]
    pil = _pil_rgb(path)
    if np.array_equal(ref, pil):
        ref = pil  # the same pixels: the windows below are PIL's too
    h, w = ref.shape[:2]
    cases = [(37, 61, 0.0, 0.0), (37, 61, 1.0, 1.0), (90, 23, 1.0, 0.0), (h, 17, 0.0, 1.0)]
    for ch, cw, px, py in cases:
        (out,) = _run_once([path], lambda j: fn.decoders.image_crop(
            j, crop=(ch, cw), crop_pos_x=px, crop_pos_y=py, output_type=types.RGB))
        x, y = int(px * (w - cw) + 0.5), int(py * (h - ch) + 0.5)
        np.testing.assert_array_equal(out.as_array()[0], ref[y:y + ch, x:x + cw],
                                      err_msg="%s crop %dx%d at %g,%g" % (name, ch, cw, px, py))
    (out,) = _run_once([path], lambda j: fn.decoders.image_slice(
        j, np.array([19, 7], np.float32), np.array([41, 29], np.float32), normalized_anchor=False,
        normalized_shape=False, axis_names="WH", output_type=types.RGB))
    np.testing.assert_array_equal(out.as_array()[0], ref[7:7 + 29, 19:19 + 41])


@pytest.mark.parametrize("name", ["corpus/pillow/flower.jpg", "sampling/prog_smooth420_211x157.jpg"])
def test_crop_decoder_fails_on_data_cut_below_the_window(tmp_path, name):
    """A file cut short below the window fails in decoders.image_crop as in decoders.image
    (and PIL): the rows below are read, not dropped."""
    from conftest import REPO
    data = open(os.path.join(REPO, "tests", "data", name), "rb").read()
    path = str(tmp_path / "cut.jpg")
    with open(path, "wb") as f:
        f.write(data[: len(data) * 9 // 10])
    with pytest.raises(OSError):
        Image.open(path).load()
    errors = []
    for build in (lambda j: fn.decoders.image(j, output_type=types.RGB),
                  lambda j: fn.decoders.image_crop(j, crop=(16, 32), crop_pos_x=0.5, crop_pos_y=0.0,
                                                   output_type=types.RGB)):
        with pytest.raises(godali.DataError) as e:
            _run_once([path], build)
        errors.append(str(e.value))
    # "<file>: node "<name>": <the decoder's error>": the same file and error, another node.
    assert errors[1].startswith(path + ": ") and "Premature end" in errors[1], errors[1]
    assert errors[1].split('": ', 1)[1] == errors[0].split('": ', 1)[1], errors
