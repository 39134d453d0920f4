"""godali.torch on the GPU: DataLoader(device="cuda") and ImageFolderLoader(device="cuda")
decode with nvJPEG ("mixed") and run the translated transform's GPU operators, with the
CPU path's semantics.

Where this runs: with the CPU flavour, the placement and the fallback (decode on the CPU,
copy from pinned memory, said once in the log); with the CUDA flavour on the GPU emulator
(`make test-cuda-emu`: torch without CUDA), the GPU pipelines themselves, read back
through the CUDA driver; the `gpu`-marked tests need a real device and a torch with CUDA.

Tolerances: on the emulator nvJPEG is libjpeg-turbo, so the GPU pipeline equals the CPU
one bit for bit wherever the CPU path decodes the whole image (the kernels compute what the
CPU operators do, from the same random draws). RandomResizedCrop as the first step is the
exception: the CPU decoder downscales in the DCT domain and the GPU decodes the window at
full size, so it is compared with torchvision's resize of a known window (exact up to
float32 rounding, 1e-5). On a real GPU nvJPEG's IDCT and chroma upsampling differ from
libjpeg-turbo's: within 4 uint8 levels (DALI's cpu-vs-mixed decoder tolerance).
"""

import ctypes
import logging
import os

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import godali.torch as gt
from godali import _dlpack, _lib

from conftest import make_jpeg

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CUDA_FLAVOUR = _lib.get().flavour == "cuda"
needs_cuda_flavour = pytest.mark.skipif(not CUDA_FLAVOUR, reason="needs the CUDA flavour "
                                        "(a GPU, or the emulator: make test-cuda-emu)")
# nvJPEG proper (not the emulator's libjpeg-turbo): DALI's cpu-vs-mixed tolerance.
EMULATED = "nvjpeg_emu" in os.environ.get("GODALI_NVJPEG_LIBRARY", "")
LEVELS = 0 if EMULATED else 4

TRAIN = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
                   T.Normalize(MEAN, STD)])
VAL = T.Compose([T.Resize(36), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])
# ColorJitter has no GPU operator: decode and jitter on the CPU, the rest on the GPU.
JITTER = T.Compose([T.Resize((40, 44)), T.ColorJitter(0.3, 0.3, 0.3, 0.05), T.RandomCrop(30),
                    T.RandomGrayscale(0.5), T.RandomVerticalFlip(), T.PILToTensor()])
# Varying sizes: crop(random_offset) and random_resized_crop (not the first step).
VARYING = T.Compose([T.Resize(40), T.RandomCrop(36), T.RandomResizedCrop(24),
                     T.RandomHorizontalFlip(), T.PILToTensor()])
PAD_F16 = T.Compose([T.Resize((40, 41)), T.CenterCrop((47, 44)), T.PILToTensor(),
                     T.ConvertImageDtype(torch.float16)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("torch_gpu")
    sizes = [(64, 80), (72, 96), (96, 72), (50, 120), (88, 88), (120, 60), (64, 64),
             (100, 76)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("c%d" % (i % 3)) / ("im%02d.jpg" % i)), h, w, seed=60 + i)
    return str(root)


def test_gpu_placement_of_the_translation():
    used, gpu_from = gt.gpu_placement(TRAIN)
    assert used == ["decoders.image_random_crop", "resize", "crop_mirror_normalize"]
    used_v, from_v = gt.gpu_placement(VAL)
    # the CenterCrop folds into crop_mirror_normalize
    assert used_v == ["decoders.image", "resize", "crop_mirror_normalize"]
    assert gt.gpu_placement(VARYING)[0] == ["decoders.image", "resize", "crop",
                                            "random_resized_crop", "crop_mirror_normalize"]
    used_j, from_j = gt.gpu_placement(JITTER)
    assert used_j == ["decoders.image", "resize", "_tv_color_jitter", "crop", "hsv", "flip",
                      "crop_mirror_normalize"]
    if not CUDA_FLAVOUR:
        assert gpu_from is None and from_v is None and from_j is None
        return
    # The standard ImageNet transforms run on the GPU from the decoder on; a step without
    # a GPU operator keeps itself and what comes before it on the CPU.
    assert gpu_from == 0 and from_v == 0
    assert from_j == used_j.index("_tv_color_jitter") + 1


def test_device_cuda_needs_a_torch_with_cuda(folder):
    if torch.cuda.is_available():
        pytest.skip("torch has CUDA here")
    ds = gt.ImageFolder(folder, transform=VAL)
    with pytest.raises(RuntimeError, match="device='cuda', but torch sees no CUDA device"):
        gt.DataLoader(ds, batch_size=2, device="cuda")
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda"):
        gt.DataLoader(ds, batch_size=2, device="tpu")
    assert gt.DataLoader(ds, batch_size=2, device="cpu").device == torch.device("cpu")


def test_cpu_flavour_falls_back_to_pinned_copies_and_says_so_once(folder, monkeypatch,
                                                                   caplog):
    if CUDA_FLAVOUR:
        pytest.skip("the fallback is the CPU flavour's")
    # torch here has no CUDA: pretend it has, to construct (not iterate) the loaders.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(gt, "_cpu_fallback_said", False)
    ds = gt.ImageFolder(folder, transform=VAL)
    with caplog.at_level(logging.WARNING, logger="godali.torch"):
        a = gt.DataLoader(ds, batch_size=2, device="cuda")
        b = gt.DataLoader(ds, batch_size=3, device="cuda:0")
    assert a._gpu is None and b._gpu is None
    assert a.device == torch.device("cuda", 0) and b.device == torch.device("cuda", 0)
    said = [r.getMessage() for r in caplog.records if r.name == "godali.torch"]
    assert len(said) == 1, said
    assert "cpu flavour" in said[0] and "pinned memory" in said[0]


# --- the GPU pipelines (CUDA flavour: a GPU or the emulator) ------------------------------

def _to_host(tl):
    """A dense GPU output of a pipeline in host memory, through the CUDA driver
    (libcuda.so.1, the one godali loaded: the emulator's under make test-cuda-emu), as
    torch without CUDA cannot copy it."""
    buf = tl._dense_buffer()
    assert buf.device_type == _dlpack.kDLCUDA
    dtype = np.dtype(_dlpack.typestr(_dlpack.dtype_name(buf.code, buf.bits, buf.lanes)))
    out = np.empty(buf.shape, dtype)
    cu = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cu.cuDeviceGet(ctypes.byref(dev), buf.device_id) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxPushCurrent_v2(ctx) == 0
    try:
        buf.fence(1)  # the legacy stream after the batch's work
        assert cu.cuCtxSynchronize() == 0
        assert cu.cuMemcpyDtoH_v2(ctypes.c_void_p(out.ctypes.data), ctypes.c_uint64(buf.data),
                                  ctypes.c_size_t(out.nbytes)) == 0
    finally:
        cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        cu.cuDevicePrimaryCtxRelease_v2(dev)
    return out


def _batches(loader, gpu, n=3, checkpoint=None):
    """n batches of the loader's epoch 0 pipeline, on the CPU or (gpu) on device 0."""
    place = None
    if gpu:
        _, gpu_from = gt.gpu_placement(loader._transform, loader._approx)
        place = (0, gpu_from)
    pipe = loader._make_pipeline(0, checkpoint, gpu=place)
    if gpu:
        # the placement as built: CPU up to gpu_from, then the GPU (nvJPEG when 0)
        ops = [o for o in pipe.description()["ops"] if o.get("device") != "cpu"]
        want = "mixed" if place[1] == 0 else "gpu"
        assert ops and all(o["device"] in ("mixed", "gpu") for o in ops), ops
        assert ops[0]["device"] == want or ops[0]["op"] == "_to_gpu", ops[0]
    out = []
    try:
        for _ in range(n):
            images, labels = pipe.run()
            assert images.device == ("gpu" if gpu else "cpu")
            x = _to_host(images) if gpu else np.array(images.as_array())
            out.append((x, np.array(labels.as_array()).reshape(-1)))
        ckpt = pipe.checkpoint()
    finally:
        pipe.close()
    return out, ckpt


def _levels(x, tf):
    """x in uint8 levels: undoes ToTensor's /255 and Normalize."""
    names = [type(t).__name__ for t in tf.transforms]
    x = x.astype(np.float64)
    if "Normalize" in names:
        x = x * np.array(STD).reshape(1, 3, 1, 1) + np.array(MEAN).reshape(1, 3, 1, 1)
    if "ToTensor" in names or "ConvertImageDtype" in names:
        x = x * 255
    return x


@needs_cuda_flavour
@pytest.mark.parametrize("name,tf", [("val", VAL), ("jitter", JITTER), ("varying", VARYING),
                                     ("pad_f16", PAD_F16)])
def test_gpu_pipeline_matches_the_cpu_one(folder, name, tf):
    ds = gt.ImageFolder(folder, transform=tf)
    loader = gt.DataLoader(ds, batch_size=3, shuffle=True, seed=11)
    cpu, _ = _batches(loader, gpu=False)
    gpu, _ = _batches(loader, gpu=True)
    for (a, la), (b, lb) in zip(cpu, gpu):
        assert a.dtype == b.dtype and a.shape == b.shape, (name, a.shape, b.shape)
        np.testing.assert_array_equal(la, lb)
        d = np.abs(_levels(a, tf) - _levels(b, tf))
        # float16 outputs: half a unit in the last place (1/2048 relative) of 255 levels
        tol = LEVELS + (0.07 if a.dtype == np.float16 else 1e-3)
        assert d.max() <= tol, (name, float(d.max()))


@needs_cuda_flavour
def test_gpu_random_resized_crop_of_a_known_window_is_torchvisions_resize(tmp_path):
    # All images 96 x 72 (aspect 4/3): scale=(1, 1), ratio=(4/3, 4/3) draws the whole
    # image, so the GPU decoder's window + resize must be torchvision's Resize((32, 32)).
    for i in range(5):
        make_jpeg(str(tmp_path / "a" / ("%d.jpg" % i)), 72, 96, seed=80 + i)
    tf = T.Compose([T.RandomResizedCrop(32, scale=(1.0, 1.0), ratio=(4 / 3, 4 / 3)),
                    T.RandomHorizontalFlip(1.0), T.ToTensor(), T.Normalize(MEAN, STD)])
    ref_tf = T.Compose([T.Resize((32, 32)), T.RandomHorizontalFlip(1.0), T.ToTensor(),
                        T.Normalize(MEAN, STD)])
    ds = gt.ImageFolder(str(tmp_path), transform=tf)
    ref = gt.ImageFolder(str(tmp_path), transform=ref_tf)
    assert gt.gpu_placement(tf)[1] == 0
    loader = gt.DataLoader(ds, batch_size=5)
    (x, labels), = _batches(loader, gpu=True, n=1)[0]
    want = np.stack([ref[i][0].numpy() for i in range(5)])
    d = np.abs(_levels(x, tf) - _levels(want, tf))
    assert d.max() <= LEVELS + 1e-3, float(d.max())


@needs_cuda_flavour
def test_gpu_training_pipeline_checkpoint_resumes_the_same_batches(folder):
    # TRAIN on the GPU end to end: its batches are the same after a restore from the
    # checkpoint the loader's state_dict() carries, and close to the CPU path's in
    # distribution (the CPU decoder's DCT downscaling differs pixel by pixel).
    ds = gt.ImageFolder(folder, transform=TRAIN)
    loader = gt.DataLoader(ds, batch_size=3, shuffle=True, seed=7)
    first, _ = _batches(loader, gpu=True, n=1)
    ref, _ = _batches(loader, gpu=True, n=3)
    _, ckpt = _batches(loader, gpu=True, n=1)
    rest, _ = _batches(loader, gpu=True, n=2, checkpoint=ckpt)
    np.testing.assert_array_equal(first[0][0], ref[0][0])
    for (a, la), (b, lb) in zip(ref[1:], rest):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    cpu, _ = _batches(loader, gpu=False, n=3)
    for (a, la), (b, lb) in zip(cpu, ref):
        np.testing.assert_array_equal(la, lb)
        assert a.shape == b.shape == (3, 3, 32, 32)
        d = np.abs(_levels(a, TRAIN) - _levels(b, TRAIN))
        assert d.mean() < 3, float(d.mean())  # same windows and flips: close everywhere


# --- a real GPU with torch CUDA -------------------------------------------------------------

@pytest.mark.gpu
def test_image_folder_loader_cuda_decodes_on_the_gpu(folder):
    from godali.plugin.pytorch import ImageFolderLoader
    gpu = ImageFolderLoader(folder, batch_size=4, train=False, image_size=32, device="cuda",
                            num_workers=2, seed=3)
    cpu = ImageFolderLoader(folder, batch_size=4, train=False, image_size=32, device="cpu",
                            num_workers=2, seed=3)
    assert gpu._loader._gpu == (torch.cuda.current_device(), 0)
    for (x, y), (xc, yc) in zip(gpu, cpu):
        assert x.is_cuda and y.is_cuda and x.dtype == torch.float32 and y.dtype == torch.int64
        assert torch.equal(y.cpu(), yc)
        std = torch.tensor(STD).view(1, 3, 1, 1)
        d = ((x.cpu() - xc) * std * 255).abs().max().item()
        assert d <= LEVELS + 1e-3, d
