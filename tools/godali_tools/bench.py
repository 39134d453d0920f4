"""godali bench: is the input pipeline starving the model, and how much does godali help?

    python -m godali_tools bench [--data DIR] [--batch-size N] [--device cpu|cuda|auto]
                           [--iters N] [--warmup N] [--repeats R] [--workers N]
                           [--model resnet50|resnet18|none|auto] [--contenders a,b,...]
                           [--out DIR] [--json PATH] [--chart PATH]

Every contender reads the same images with the same batch size on the same number of
CPU cores, in a fresh process of its own (so that no contender's threads, caches or
forked workers disturb another's, and the Go runtime inside godali never meets a
fork()). Trials alternate between contenders, rotating the order each repeat; each
trial excludes its warm-up batches, and the table shows the median over the repeats.

Contenders (those that need a GPU run only when one is present):

  torch            torch DataLoader(ImageFolder) with RandomResizedCrop(224),
                   RandomHorizontalFlip, ToTensor, Normalize; num_workers = cores,
                   pin_memory on CUDA
  godali-cpu       godali's ResNet-50 training pipeline, CPU flavour
  godali-cuda      the same with decoders on device="mixed" (CUDA flavour)
  torchvision-gpu  torchvision.io.decode_jpeg(device="cuda") + GPU crop/resize/flip
  decode-godali    decode-only ceiling: readers.file + decoders.image (libjpeg-turbo),
                   full resolution, nothing else, on `cores` threads
  decode-pil       decode-only ceiling: PIL's libjpeg-turbo decoding, full resolution,
                   nothing else, in a pool of `cores` processes
  godali-iter      godali-cpu through GodaliClassificationIterator (what a training
                   loop uses) instead of pipe.run(): the iterator's own cost
  dali-cpu         optional: NVIDIA DALI's own CPU pipeline, the same operators and
                   arguments as godali-cpu (runs from a source checkout, whose
                   benchmarks/dali_contender.py holds it, when `nvidia.dali` is
                   importable: DALI is a reference, not a godali dependency)
  decode-dali      optional: DALI's readers.file + decoders.image on the CPU (DALI
                   2.4 decodes with nvImageCodec: pip install nvidia-nvimgcodec-cu12;
                   the bench puts its folder on the DALI trials' LD_LIBRARY_PATH)
  val-torch        the validation pipeline in torch's DataLoader: Resize(256),
                   CenterCrop(224), ToTensor, Normalize
  val-godali       the validation pipeline in godali: decoders.image, resize shorter
                   side 256 triangular, crop_mirror_normalize centre crop 224, NCHW
  val-dali         optional: the same validation pipeline in DALI (as dali-cpu)
  decode-spdl      optional: SPDL (spdl.io.load_image, FFmpeg's decoder), full
                   resolution, RGB, in a pool of `cores` threads (when `spdl` is
                   importable)

Optional contenders run by default when their package can be imported, and are shown
as skipped (with the package to install) when named in --contenders but missing.

Without --data, the bench builds its data set once (1000 JPEGs cut from the photographs
shipped with godali, about 100 MB) into ~/.cache/godali/bench-data ($XDG_CACHE_HOME/godali
when set), reuses it in later runs, and says so in its output; `rm -r` that folder to
reclaim the space.

Each run writes results.json (and chart.png when matplotlib is installed) into a folder
of its own, named at the start of the run: --out DIR, or by default
build/bench/<date>-<time>-<device>[-N]/ (in the source checkout godali runs from, or
else in the current directory), so that no run overwrites another's results.

Each trial reads one long shuffled stream of samples (several passes over the data set
back to back), as a real ImageNet epoch would: a small data set must not make the
contenders pay epoch restarts that a 1.28M-image epoch never shows.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib.util
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# The tools' parent folder (tools/ in a checkout), which trials put on their PYTHONPATH.
TOOLS_PARENT = Path(__file__).resolve().parents[1]
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "godali"
DEFAULT_DATA = CACHE_DIR / "bench-data"
# Results go to build/bench/<run>/: the checkout's build/ when godali runs from one
# (tools/godali_tools beside go.mod), else ./build/ of the current directory.
_CHECKOUT = TOOLS_PARENT.parent
RESULTS_ROOT = (_CHECKOUT / "build" / "bench" if (_CHECKOUT / "go.mod").is_file()
                and TOOLS_PARENT.name == "tools" else Path("build") / "bench")
DEFAULT_IMAGES = 1000
# NVIDIA DALI's contenders run from the source checkout's benchmarks/ (DALI is a
# reference godali is measured against, never a dependency of the package).
DALI_WORKER = "benchmarks/dali_contender.py"

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff",
                    ".webp")
SEED = 12  # DALI's ResNet-50 example seeds its pipeline with 12 + local_rank


def godali_parent() -> Path:
    """The folder holding the godali package, found without importing it (a trial that
    does not use godali must not load its library); the checkout's python/ when godali
    is not importable."""
    spec = importlib.util.find_spec("godali")
    if spec is None or not spec.origin:
        return _CHECKOUT / "python"
    return Path(spec.origin).resolve().parents[1]


@dataclass(frozen=True)
class Contender:
    """Contender is one way of feeding images to a training loop."""

    key: str
    label: str
    gpu: bool  # needs a CUDA device
    doc: str
    module: str = ""  # an optional package the contender needs ("" = always available)
    install: str = ""  # what to install for it
    checkout_file: str = ""  # a file of the source checkout its worker needs


CONTENDERS = (
    Contender("torch", "torch DataLoader", False,
              "DataLoader(ImageFolder) + RandomResizedCrop(224), RandomHorizontalFlip, "
              "ToTensor, Normalize; num_workers = cores; pin_memory on CUDA"),
    Contender("godali-cpu", "godali cpu", False,
              "ResNet-50 training pipeline (image_random_crop, resize 224 triangular, "
              "coin_flip, crop_mirror_normalize to float NCHW), CPU flavour"),
    Contender("godali-cuda", "godali cuda (mixed)", True,
              "the same pipeline with decoders.image_random_crop(device='mixed') and "
              "resize/crop_mirror_normalize on the GPU"),
    Contender("torchvision-gpu", "torchvision GPU decode", True,
              "torchvision.io.decode_jpeg(device='cuda') + resized_crop/flip/normalize "
              "on the GPU, one Python thread"),
    Contender("decode-godali", "decode only: godali", False,
              "readers.file + decoders.image (libjpeg-turbo), full resolution, RGB, "
              "nothing else, num_threads = cores"),
    Contender("decode-pil", "decode only: PIL pool", False,
              "PIL Image.load (libjpeg-turbo), full resolution, RGB, nothing else, "
              "in a pool of `cores` processes"),
    Contender("godali-iter", "godali cpu (iterator)", False,
              "godali-cpu's pipeline through GodaliClassificationIterator instead of "
              "pipe.run()"),
    Contender("dali-cpu", "DALI cpu", False,
              "NVIDIA DALI's CPU pipeline with the same operators and arguments as "
              "godali-cpu", module="nvidia.dali", install="pip install nvidia-dali-cuda120",
              checkout_file=DALI_WORKER),
    Contender("decode-dali", "decode only: DALI", False,
              "DALI readers.file + decoders.image (device cpu), full resolution, RGB, "
              "num_threads = cores", module="nvidia.dali",
              install="pip install nvidia-dali-cuda120", checkout_file=DALI_WORKER),
    Contender("val-torch", "val: torch DataLoader", False,
              "validation: DataLoader(ImageFolder) + Resize(256), CenterCrop(224), "
              "ToTensor, Normalize; num_workers = cores"),
    Contender("val-godali", "val: godali cpu", False,
              "validation pipeline (decoders.image, resize shorter side 256 triangular, "
              "crop_mirror_normalize centre crop 224 to float NCHW), CPU flavour"),
    Contender("val-dali", "val: DALI cpu", False,
              "NVIDIA DALI's CPU pipeline with the same operators and arguments as "
              "val-godali", module="nvidia.dali", install="pip install nvidia-dali-cuda120",
              checkout_file=DALI_WORKER),
    Contender("decode-spdl", "decode only: SPDL", False,
              "spdl.io.load_image (FFmpeg), full resolution, RGB, nothing else, in a "
              "pool of `cores` threads", module="spdl.io", install="pip install spdl"),
)
BY_KEY = {c.key: c for c in CONTENDERS}


class BenchError(Exception):
    """BenchError reports a bad argument or a contender that could not run."""


class TrialError(BenchError):
    """TrialError is a trial process that failed; str() is its last error line."""

    def __init__(self, contender: str, code: int, stderr: str):
        lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
        self.contender, self.code, self.stderr = contender, code, stderr
        last = lines[-1] if lines else "no output"
        super().__init__(f"exit {code}: {last}")


# ---------------------------------------------------------------------------------------
# Process-tree accounting (Linux /proc). CPU time and memory are summed over the process
# and all its descendants, so that DataLoader workers and pool processes count.

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    return s[s.rfind(")") + 2:].split()


def process_tree(pid: int) -> list:
    """process_tree returns pid and the pids of all its live descendants."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [pid]
    for d in entries:
        if not d.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(d))[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, ()))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """tree_cpu_seconds is the user+system CPU time of pid and its live descendants."""
    ticks, own = 0, 0.0
    for p in process_tree(pid):
        if p == os.getpid():
            # getrusage has microsecond resolution where /proc counts 10 ms ticks.
            import resource
            ru = resource.getrusage(resource.RUSAGE_SELF)
            own = ru.ru_utime + ru.ru_stime
            continue
        try:
            f = _stat_fields(p)
            ticks += int(f[11]) + int(f[12])  # utime, stime: fields 14 and 15
        except (OSError, IndexError, ValueError):
            continue
    return own + ticks / _CLK_TCK


def _memory_kb(pid: int) -> int:
    # PSS splits pages shared between forked workers fairly; plain RSS would count the
    # parent's torch libraries once per DataLoader worker.
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def system_busy_seconds() -> float:
    """system_busy_seconds is the CPU time all processes have used since boot."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    # user nice system idle iowait irq softirq steal: everything but idle and iowait.
    return (sum(v[:8]) - v[3] - v[4]) / _CLK_TCK


def tree_memory_mb(pid: int) -> float:
    """tree_memory_mb is the proportional set size of pid and its descendants, in MB."""
    return sum(_memory_kb(p) for p in process_tree(pid)) / 1024


# ---------------------------------------------------------------------------------------
# NVML through ctypes: no Python package needed, and nothing happens without a driver.

class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class _NvmlUtilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class NVML:
    """NVML reads memory use and utilisation of GPU 0 from libnvidia-ml."""

    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        count = ctypes.c_uint()
        if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0 or count.value == 0:
            raise OSError("no NVIDIA GPU")
        self.count = count.value
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.handle)) != 0:
            raise OSError("nvmlDeviceGetHandleByIndex failed")

    @classmethod
    def open(cls):
        """open returns an NVML reader, or None when there is no NVIDIA GPU."""
        try:
            return cls()
        except (OSError, AttributeError):
            return None

    def name(self) -> str:
        buf = ctypes.create_string_buffer(96)
        self.lib.nvmlDeviceGetName(self.handle, buf, 96)
        return buf.value.decode(errors="replace")

    def memory_used_mb(self) -> float:
        m = _NvmlMemory()
        self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(m))
        return m.used / 2**20

    def utilization(self) -> int:
        u = _NvmlUtilization()
        self.lib.nvmlDeviceGetUtilizationRates(self.handle, ctypes.byref(u))
        return int(u.gpu)


# ---------------------------------------------------------------------------------------
# Worker side: one trial of one contender, in its own process. It talks to the parent on
# stdout: "P" after each batch, "W"/"E" around the timed window, "R <json>" at the end.

def _emit(line: str):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def list_image_folder(root) -> tuple:
    """list_image_folder returns (paths, labels) the way torchvision's ImageFolder does."""
    root = Path(root)
    classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
    paths, labels = [], []
    for label, cls in enumerate(classes):
        for dirpath, _, names in sorted(os.walk(root / cls, followlinks=True)):
            for name in sorted(names):
                if name.lower().endswith(IMAGE_EXTENSIONS):
                    paths.append(os.path.join(dirpath, name))
                    labels.append(label)
    if not paths:
        raise BenchError(f"--data {root}: no images in class subdirectories "
                         f"(expected ROOT/CLASS/*.JPEG, like torchvision's ImageFolder)")
    return paths, labels


def _sample_stream(n: int, total: int, seed: int) -> list:
    """_sample_stream returns total indices: shuffled passes over n samples, back to back."""
    rng = random.Random(seed)
    order = []
    while len(order) < total:
        perm = list(range(n))
        rng.shuffle(perm)
        order.extend(perm)
    return order[:total]


_setup_started = 0.0  # when the contender began building its loader (imports done)


def _timed(batches, cfg: dict, sync) -> dict:
    """_timed consumes warm-up batches, then times cfg['iters'] batches."""
    it = iter(batches)
    first = None
    for _ in range(cfg["warmup"]):
        next(it)
        sync()
        if first is None:
            first = time.perf_counter() - _setup_started
        _emit("P")
    _emit("W")
    pid = os.getpid()
    c0 = tree_cpu_seconds(pid)
    t0 = time.perf_counter()
    times = []
    last = t0
    for _ in range(cfg["iters"]):
        next(it)
        sync()
        now = time.perf_counter()
        times.append(now - last)
        last = now
        _emit("P")
    wall = time.perf_counter() - t0
    cpu = tree_cpu_seconds(pid) - c0
    _emit("E")
    if first is None:
        first = times[0] + t0 - _setup_started
    return {"wall_s": wall, "cpu_s": cpu, "images": cfg["iters"] * cfg["batch_size"],
            "batch_s": times, "first_batch_s": first}


def _stream_len(cfg: dict) -> int:
    # Enough samples that prefetching never reaches the end of the stream.
    return (cfg["warmup"] + cfg["iters"] + 8) * cfg["batch_size"]


def _cuda_sync(cfg: dict):
    if cfg["device"] != "cuda":
        return lambda: None
    import torch
    return torch.cuda.synchronize


def _worker_torch(cfg: dict) -> dict:
    import torch
    from torch.utils.data import DataLoader, RandomSampler
    from torchvision import datasets, transforms

    cuda = cfg["device"] == "cuda"
    if cfg["contender"] == "val-torch":
        head = [transforms.Resize(256), transforms.CenterCrop(224)]
    else:
        head = [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()]
    tf = transforms.Compose(head + [
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])
    ds = datasets.ImageFolder(cfg["data"], tf)
    gen = torch.Generator()
    gen.manual_seed(cfg["seed"])
    sampler = RandomSampler(ds, replacement=False, num_samples=_stream_len(cfg),
                            generator=gen)
    dl = DataLoader(ds, batch_size=cfg["batch_size"], sampler=sampler,
                    num_workers=cfg["cores"], pin_memory=cuda, drop_last=True)

    def batches():
        for images, labels in dl:
            if cuda:
                images = images.cuda(non_blocking=True)
                labels = labels.cuda(non_blocking=True)
            yield images, labels

    res = _timed(batches(), cfg, _cuda_sync(cfg))
    res["versions"] = {"torch": torch.__version__}
    return res


def _godali_torch(t, torch):
    """_godali_torch turns a godali pipeline output into a torch tensor without a copy."""
    return torch.utils.dlpack.from_dlpack(t)


def rn50_augment(jpegs, mixed: bool = False, fn=None, types=None):
    """rn50_augment is the ResNet-50 training augmentation of DALI's example, applied to
    encoded images inside a pipeline definition (python -m godali_tools bench and
    bench-remote share it). fn/types: godali's by default, or DALI's own."""
    if fn is None:
        from godali import fn, types

    extra = {}
    if mixed:
        extra = {"preallocate_width_hint": 5980, "preallocate_height_hint": 6430}
    images = fn.decoders.image_random_crop(
        jpegs, device="mixed" if mixed else "cpu", output_type=types.RGB,
        random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0], num_attempts=100,
        **extra)
    images = fn.resize(images, resize_x=224, resize_y=224,
                       interp_type=types.INTERP_TRIANGULAR)
    mirror = fn.random.coin_flip(probability=0.5)
    return fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224),
        mean=[m * 255 for m in IMAGENET_MEAN], std=[s * 255 for s in IMAGENET_STD],
        mirror=mirror)


def val_augment(jpegs, fn, types):
    """val_augment is the ResNet-50 validation preprocessing of DALI's example (resize
    the shorter side to 256, centre crop 224, normalize to float CHW)."""
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_shorter=256, interp_type=types.INTERP_TRIANGULAR)
    return fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224),
        mean=[m * 255 for m in IMAGENET_MEAN], std=[s * 255 for s in IMAGENET_STD])


def _rn50_pipeline(cfg: dict, decode_only: bool, fn, pipeline_def, types, mixed=False):
    """The contenders' pipeline, built with DALI's API: godali's or DALI's own (the same
    operators and arguments for both): the training pipeline, the validation pipeline
    (val-* contenders) or the decode alone."""
    paths, labels = list_image_folder(cfg["data"])
    order = _sample_stream(len(paths), _stream_len(cfg), cfg["seed"])
    files = [paths[i] for i in order]
    file_labels = [labels[i] for i in order]

    @pipeline_def
    def rn50_train():
        jpegs, lab = fn.readers.file(files=files, labels=file_labels, random_shuffle=True,
                                     pad_last_batch=True, name="Reader")
        return rn50_augment(jpegs, mixed, fn, types), lab

    @pipeline_def
    def decode():
        jpegs, lab = fn.readers.file(files=files, labels=file_labels, name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        return images, lab

    @pipeline_def
    def rn50_val():
        jpegs, lab = fn.readers.file(files=files, labels=file_labels, name="Reader")
        return val_augment(jpegs, fn, types), lab

    factory = decode if decode_only else rn50_train
    if cfg["contender"].startswith("val-"):
        factory = rn50_val
    pipe = factory(batch_size=cfg["batch_size"], num_threads=cfg["cores"],
                   device_id=0 if mixed else None, seed=cfg["seed"],
                   prefetch_queue_depth=2)
    pipe.build()
    return pipe


def _godali_pipeline(cfg: dict, decode_only: bool):
    # worker_main loaded the flavour this contender times: the CPU contenders must not
    # pick up the CUDA library on a GPU machine.
    import godali
    from godali import fn, pipeline_def, types
    mixed = cfg["contender"] == "godali-cuda"
    return godali, _rn50_pipeline(cfg, decode_only, fn, pipeline_def, types, mixed)


def _worker_godali(cfg: dict) -> dict:
    import torch

    decode_only = cfg["contender"] == "decode-godali"
    godali, pipe = _godali_pipeline(cfg, decode_only)
    cuda = cfg["device"] == "cuda"

    def batches():
        if cfg["contender"] == "godali-iter":
            from godali.plugin.pytorch import GodaliClassificationIterator
            it = GodaliClassificationIterator(pipe, reader_name="Reader")
            while True:
                b = next(it)[0]
                yield b["data"], b["label"]
        while True:
            out = pipe.run()
            if decode_only:
                # The ceiling: decoded pixels exist; nothing more is asked of them.
                yield out
                continue
            images = _godali_torch(out[0], torch)
            labels = _godali_torch(out[1], torch)
            if cuda and images.device.type != "cuda":
                images = images.cuda(non_blocking=True)
                labels = labels.cuda(non_blocking=True)
            yield images, labels

    res = _timed(batches(), cfg, _cuda_sync(cfg))
    info = godali.library_info()
    res["versions"] = {"godali": info.get("library_version"),
                       "godali_flavour": info.get("flavour"),
                       "godali_library": info.get("library_path")}
    pipe.close()
    return res


def _worker_torchvision_gpu(cfg: dict) -> dict:
    import torch
    import torchvision.transforms.functional as TF
    from torchvision.io import ImageReadMode, decode_image, decode_jpeg
    from torchvision.transforms import RandomResizedCrop

    paths, labels = list_image_folder(cfg["data"])
    order = _sample_stream(len(paths), _stream_len(cfg), cfg["seed"])
    rng = random.Random(cfg["seed"])
    torch.manual_seed(cfg["seed"])
    mean = torch.tensor(IMAGENET_MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device="cuda").view(1, 3, 1, 1)
    fallbacks = 0

    def read(path):
        with open(path, "rb") as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)

    def decode_one(data):
        # nvJPEG takes baseline and progressive RGB/gray JPEGs; the rest (the PNG, CMYK)
        # is decoded on the CPU, as a user of this recipe would have to.
        nonlocal fallbacks
        try:
            return decode_jpeg(data, mode=ImageReadMode.RGB, device="cuda")
        except RuntimeError:
            fallbacks += 1
            try:
                return decode_image(data, mode=ImageReadMode.RGB).cuda()
            except RuntimeError:
                import io as _io

                import numpy as np
                from PIL import Image
                im = Image.open(_io.BytesIO(data.numpy().tobytes())).convert("RGB")
                return torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1).cuda()

    def batches():
        bs = cfg["batch_size"]
        for start in range(0, len(order) - bs + 1, bs):
            idx = order[start:start + bs]
            datas = [read(paths[i]) for i in idx]
            # Only JPEGs go to the batched call: one PNG would make it fail whole.
            jpeg = [k for k, d in enumerate(datas) if d[:2].tolist() == [0xFF, 0xD8]]
            imgs = [None] * len(datas)
            try:  # torchvision >= 0.19 decodes a list in one batched call
                decoded = decode_jpeg([datas[k] for k in jpeg], mode=ImageReadMode.RGB,
                                      device="cuda")
                for k, img in zip(jpeg, decoded):
                    imgs[k] = img
            except (TypeError, RuntimeError):
                pass
            imgs = [img if img is not None else decode_one(d)
                    for img, d in zip(imgs, datas)]
            out = []
            for img in imgs:
                top, left, h, w = RandomResizedCrop.get_params(img, (0.08, 1.0),
                                                               (3 / 4, 4 / 3))
                img = TF.resized_crop(img, top, left, h, w, [224, 224], antialias=True)
                if rng.random() < 0.5:
                    img = img.flip(-1)
                out.append(img)
            x = torch.stack(out).float().div_(255).sub_(mean).div_(std)
            y = torch.tensor([labels[i] for i in idx], device="cuda")
            yield x, y

    res = _timed(batches(), cfg, torch.cuda.synchronize)
    res["cpu_fallbacks"] = fallbacks
    return res


def _worker_dali(cfg: dict) -> dict:
    # DALI is a reference, not a dependency: its worker lives in the source checkout.
    import importlib.util
    spec = importlib.util.spec_from_file_location("godali_bench_dali",
                                                  _CHECKOUT / DALI_WORKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.worker(cfg, _rn50_pipeline, _timed)


def _worker_decode_spdl(cfg: dict) -> dict:
    import collections
    import concurrent.futures

    import spdl.io

    paths, _ = list_image_folder(cfg["data"])
    order = _sample_stream(len(paths), _stream_len(cfg), cfg["seed"])
    bs = cfg["batch_size"]
    stream = iter([paths[i] for i in order])
    # SPDL's decoding releases the GIL: one thread per core, two batches in flight.
    pool = concurrent.futures.ThreadPoolExecutor(cfg["cores"])
    inflight = collections.deque()

    def load(path):
        return spdl.io.to_numpy(spdl.io.load_image(path)).shape

    def batches():
        while True:
            while len(inflight) < 2 * bs:
                path = next(stream, None)
                if path is None:
                    break
                inflight.append(pool.submit(load, path))
            for _ in range(bs):
                inflight.popleft().result(timeout=300)
            yield None

    try:
        res = _timed(batches(), cfg, lambda: None)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    version = getattr(spdl.io, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v
            version = _v("spdl_io")
        except Exception:  # noqa: BLE001 - the version is informative only
            version = "?"
    res["versions"] = {"spdl": version}
    return res


def _pil_decode(paths: list) -> int:
    from PIL import Image
    for path in paths:
        with Image.open(path) as im:
            im.load()  # full resolution: no draft(), no reduce
            if im.mode != "RGB":
                im.convert("RGB")
    return len(paths)


def _worker_decode_pil(cfg: dict) -> dict:
    import collections
    import concurrent.futures
    import multiprocessing

    import PIL

    paths, _ = list_image_folder(cfg["data"])
    order = _sample_stream(len(paths), _stream_len(cfg), cfg["seed"])
    bs, chunk = cfg["batch_size"], 4
    chunks = iter([[paths[i] for i in order[k:k + chunk]]
                   for k in range(0, len(order), chunk)])
    # concurrent.futures reports a worker that died (BrokenProcessPool) where
    # multiprocessing.Pool would wait for its lost task forever.
    pool = concurrent.futures.ProcessPoolExecutor(cfg["cores"], mp_context=multiprocessing.get_context("fork"))
    # Two batches in flight, like the other contenders' prefetch queues: an unbounded
    # imap would decode far ahead during the warm-up and flatter the timed window.
    inflight = collections.deque()

    def refill():
        while len(inflight) * chunk < 2 * bs:
            paths_chunk = next(chunks, None)
            if paths_chunk is None:
                return
            inflight.append(pool.submit(_pil_decode, paths_chunk))

    def batches():
        done = 0
        while True:
            refill()
            done += inflight.popleft().result(timeout=300)
            if done >= bs:
                done -= bs
                yield None

    try:
        res = _timed(batches(), cfg, lambda: None)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    res["versions"] = {"pil": PIL.__version__}
    return res


def _worker_model(cfg: dict) -> dict:
    import torch
    import torchvision

    cuda = cfg["device"] == "cuda"
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(cfg["seed"])
    model = getattr(torchvision.models, cfg["model"])(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    bs = cfg["model_batch"]
    x = torch.randn(bs, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (bs,), device=dev)
    if cuda:
        # What a GPU training script runs today: channels-last and mixed precision.
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    scaler = torch.cuda.amp.GradScaler(enabled=cuda)

    def steps():
        while True:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda" if cuda else "cpu", enabled=cuda):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            yield loss

    c = dict(cfg, batch_size=bs)
    res = _timed(steps(), c, torch.cuda.synchronize if cuda else (lambda: None))
    res["batch_size"] = bs
    res["precision"] = "amp fp16, channels_last" if cuda else "fp32"
    res["torch_threads"] = torch.get_num_threads()
    return res


WORKERS = {
    "torch": _worker_torch,
    "godali-cpu": _worker_godali,
    "godali-cuda": _worker_godali,
    "decode-godali": _worker_godali,
    "torchvision-gpu": _worker_torchvision_gpu,
    "decode-pil": _worker_decode_pil,
    "godali-iter": _worker_godali,
    "dali-cpu": _worker_dali,
    "decode-dali": _worker_dali,
    "val-torch": _worker_torch,
    "val-godali": _worker_godali,
    "val-dali": _worker_dali,
    "decode-spdl": _worker_decode_spdl,
    "model": _worker_model,
}


def worker_main(cfg_json: str) -> int:
    cfg = json.loads(cfg_json)
    if cfg.get("affinity"):
        os.sched_setaffinity(0, cfg["affinity"])
    if cfg["contender"] in ("godali-cpu", "godali-cuda", "decode-godali",
                            "godali-iter", "val-godali"):
        # Load the library before torch: a Go c-shared library needs glibc's static TLS
        # reserve, which torch's many libraries can use up when they are loaded first.
        os.environ["GODALI_FLAVOUR"] = "cuda" if cfg["contender"] == "godali-cuda" else "cpu"
        import godali
        godali.library_info()
    try:
        import torch
        # The loading contenders' main process only hands batches on; the model trial
        # gets all the cores it is given.
        torch.set_num_threads(cfg["cores"])
    except ImportError:
        pass
    global _setup_started
    _setup_started = time.perf_counter()
    res = WORKERS[cfg["contender"]](cfg)
    _emit("R " + json.dumps(res))
    return 0


# ---------------------------------------------------------------------------------------
# Parent side.

class Progress:
    """Progress draws a one-line bar on stderr; when stderr is not a terminal (make bench
    in a CI log) it writes a plain line whenever the label changes or another tenth of
    the work is done, at most every few seconds unless the label changed."""

    def __init__(self, total: int, tty: bool | None = None, min_interval: float = 5.0):
        self.total = max(1, total)
        self.done = 0
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.label = ""
        self.min_interval = min_interval
        self._last_line = None   # (tenths, label) of the last plain line
        self._last_time = 0.0

    def step(self, n: int = 1):
        self.done = min(self.total, self.done + n)
        self._draw()

    def set_label(self, label: str):
        self.label = label
        self._draw()

    def _draw(self):
        if not self.tty:
            self._plain()
            return
        width = 28
        fill = width * self.done // self.total
        pct = 100 * self.done / self.total
        line = f"[{'#' * fill}{'.' * (width - fill)}] {pct:3.0f}%  {self.label}"
        sys.stderr.write("\r" + line[:110].ljust(110))
        sys.stderr.flush()

    def _plain(self):
        tenths = 10 * self.done // self.total
        key = (tenths, self.label)
        if key == self._last_line:
            return
        now = time.monotonic()
        label_changed = self._last_line is None or self._last_line[1] != self.label
        if not label_changed and now - self._last_time < self.min_interval and \
                self.done < self.total:
            return
        self._last_line, self._last_time = key, now
        pct = 100 * self.done / self.total
        sys.stderr.write(f"progress: {pct:3.0f}% ({self.done}/{self.total})  {self.label}\n")
        sys.stderr.flush()

    def note(self, text: str):
        if self.tty:
            sys.stderr.write("\r" + " " * 110 + "\r")
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        self._draw()

    def close(self):
        if self.tty:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()


def run_trial(cfg: dict, progress: Progress | None = None, nvml: NVML | None = None,
              timeout: float = 1800, worker_file: str | None = None) -> dict:
    """run_trial runs one contender's trial in a fresh process and returns its figures.

    worker_file is the module whose worker_main(cfg_json) runs the trial (this file
    unless given); cfg["env"], if present, is added to the trial's environment."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(TOOLS_PARENT), str(godali_parent())] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    if BY_KEY.get(cfg["contender"]) and BY_KEY[cfg["contender"]].module == "nvidia.dali":
        _nvimgcodec_path(env)
    env.update(cfg.get("env") or {})
    # Load this file by path rather than `-m godali_tools.bench`, so that a contender that does
    # not use godali never imports the package (whose library's Go runtime must not meet
    # the DataLoader's fork()), and the package directory never shadows the stdlib.
    boot = ("import importlib.util as u, sys\n"
            "s = u.spec_from_file_location('godali_bench_worker', sys.argv[1])\n"
            "m = u.module_from_spec(s)\n"
            "sys.modules[s.name] = m\n"
            "s.loader.exec_module(m)\n"
            "sys.exit(m.worker_main(sys.argv[2]))\n")
    cmd = [sys.executable, "-c", boot, str(Path(worker_file or __file__).resolve()),
           json.dumps(cfg)]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        peak = {"mem": 0.0, "gpu_mem": 0.0}
        window = {"on": False, "util": [], "busy": [0.0, 0.0], "own": [0.0, 0.0]}
        gpu_base = nvml.memory_used_mb() if nvml else 0.0
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                if time.monotonic() > deadline:  # a contender that hangs silently
                    proc.kill()
                    return
                peak["mem"] = max(peak["mem"], tree_memory_mb(proc.pid))
                if nvml:
                    peak["gpu_mem"] = max(peak["gpu_mem"], nvml.memory_used_mb() - gpu_base)
                    if window["on"]:
                        window["util"].append(nvml.utilization())
                # Sparse enough that this process's /proc reading does not slow the
                # contender down on a 2-core machine.
                stop.wait(0.25)

        result = None
        deadline = time.monotonic() + timeout
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            for line in proc.stdout:
                if line.startswith("P"):
                    if progress:
                        progress.step()
                elif line.startswith("W"):
                    window["on"] = True
                    window["busy"][0] = system_busy_seconds()
                    window["own"][0] = time.process_time()
                elif line.startswith("E"):
                    window["on"] = False
                    window["busy"][1] = system_busy_seconds()
                    window["own"][1] = time.process_time()
                elif line.startswith("R "):
                    result = json.loads(line[2:])
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            proc.wait()
        finally:
            stop.set()
            sampler.join()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0 or result is None:
            err.seek(0)
            raise TrialError(cfg["contender"], proc.returncode, err.read()[-4000:])
    result["peak_mem_mb"] = peak["mem"]
    # CPU time other processes took while the trial was timed: on a shared machine the
    # figures mean little when this is large.
    busy = window["busy"][1] - window["busy"][0]
    own = window["own"][1] - window["own"][0]  # this process's sampling
    ncpu = os.cpu_count() or 1
    result["foreign_cpu"] = max(0.0, busy - own - result["cpu_s"]) / (result["wall_s"] * ncpu)
    if nvml:
        result["gpu_mem_mb"] = peak["gpu_mem"]
        result["gpu_util"] = statistics.fmean(window["util"]) if window["util"] else None
    return result


def _dali_version() -> str | None:
    """The installed NVIDIA DALI's version (any nvidia-dali-* distribution), without
    importing it (DALI takes seconds to import and initialises CUDA)."""
    try:
        from importlib import metadata
        for dist in metadata.distributions():
            name = (dist.metadata["Name"] or "").lower().replace("_", "-")
            if name.startswith("nvidia-dali"):
                return dist.version
    except Exception:
        pass
    return None


def _versions() -> dict:
    v = {"python": platform.python_version()}
    try:
        from godali import __version__ as godali_version
        v["godali"] = godali_version
    except Exception:
        v["godali"] = None
    for mod in ("torch", "torchvision", "PIL", "numpy"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception:
            v[mod] = None
    v["dali"] = _dali_version()
    return v


def versions_line(v: dict) -> str:
    """versions_line: "godali 0.1.0, torch 2.1.0, ..." for the chart (Pillow by its name;
    DALI only when installed)."""
    names = (("godali", "godali"), ("torch", "torch"), ("torchvision", "torchvision"),
             ("PIL", "Pillow"), ("dali", "DALI"), ("python", "Python"))
    return ", ".join(f"{label} {v[k]}" for k, label in names if v.get(k))


def dataset_line(stats: dict, data) -> str:
    """dataset_line describes the data set in one line for the chart."""
    if "mean_width" in stats:
        return (f"data: {stats['count']} JPEGs in {stats['classes']} classes, mean "
                f"{stats['mean_width']:.0f}x{stats['mean_height']:.0f} px, mean "
                f"{stats['mean_kb']:.0f} KB ({data})")
    return f"data: {stats.get('count', '?')} images ({data})"


def tree_size_mb(root) -> float:
    """The size of the files under root, in MiB as `du -sh` counts (0 when it does not
    exist)."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total / 2**20


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _memory_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def _godali_flavours() -> dict:
    """_godali_flavours says which godali libraries are built, without loading them."""
    repo = _CHECKOUT
    found = {}
    for flavour, name in (("cpu", "libgodali.so"), ("cuda", "libgodali_cuda.so")):
        explicit = os.environ.get("GODALI_LIBRARY", "")
        dirs = [Path(explicit)] if explicit and Path(explicit).is_dir() else []
        dirs += [godali_parent() / "godali" / "lib", repo / "build"]
        if explicit and Path(explicit).name == name:
            dirs.insert(0, Path(explicit).parent)
        for d in dirs:
            if (d / name).is_file():
                found[flavour] = str(d / name)
                break
    return found


def _resolve_device(requested: str, nvml: NVML | None) -> str:
    if requested == "cpu":
        return "cpu"
    try:
        import torch
        torch_cuda = torch.version.cuda is not None
    except ImportError:
        torch_cuda = False
    have = nvml is not None and torch_cuda
    if requested == "cuda" and not have:
        why = "no NVIDIA GPU found" if nvml is None else "this torch was built without CUDA"
        raise BenchError(f"--device cuda: {why}")
    return "cuda" if have else "cpu"


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(runs: list, cores: int, batch_size: int) -> dict:
    """summarize reduces one contender's trials to medians."""
    rates = [r["images"] / r["wall_s"] for r in runs]
    return {
        "images_per_s": statistics.median(rates),
        "images_per_s_runs": rates,
        "ms_per_batch": statistics.median(1000 * r["wall_s"] * batch_size / r["images"]
                                          for r in runs),
        "cpu_util": statistics.median(r["cpu_s"] / r["wall_s"] / cores for r in runs),
        "peak_mem_mb": max(r["peak_mem_mb"] for r in runs),
        "gpu_mem_mb": _median([r.get("gpu_mem_mb") for r in runs]),
        "gpu_util": _median([r.get("gpu_util") for r in runs]),
        "foreign_cpu": max(r.get("foreign_cpu", 0.0) for r in runs),
        "cpu_ms_per_image": statistics.median(1000 * r["cpu_s"] / r["images"] for r in runs),
        "first_batch_s": statistics.median(r["first_batch_s"] for r in runs),
    }


def end_to_end(loader: float, model: float, device: str) -> float:
    """end_to_end estimates training images/s from loader and model rates.

    On a GPU the loader runs on the CPU while the model runs on the GPU, so the slower
    of the two sets the pace. On a CPU both compete for the same cores, so their times
    per image add up.
    """
    if device == "cuda":
        return min(loader, model)
    return 1 / (1 / loader + 1 / model)


def verdict(results: dict, model: dict | None, device: str) -> dict | None:
    """verdict says whether the loader or the model is the bottleneck, and what godali buys."""
    torch_r = results.get("torch", {}).get("images_per_s")
    godali_key = "godali-cuda" if results.get("godali-cuda", {}).get("images_per_s") \
        else "godali-cpu"
    godali_r = results.get(godali_key, {}).get("images_per_s")
    if not model or not torch_r or not godali_r:
        return None
    m = model["images_per_s"]
    e_torch = end_to_end(torch_r, m, device)
    e_godali = end_to_end(godali_r, m, device)
    speedup = e_godali / e_torch
    bottleneck = "loader" if torch_r < m else "model"
    if speedup >= 1.2:
        worth = (f"worth it: expect about {speedup:.2f}x faster training "
                 f"({e_torch:,.0f} -> {e_godali:,.0f} images/s)")
    elif speedup >= 1.05:
        worth = (f"marginal: about {speedup:.2f}x ({e_torch:,.0f} -> {e_godali:,.0f} "
                 "images/s)")
    else:
        worth = (f"not worth it here: the model sets the pace ({m:,.0f} images/s), so "
                 f"a faster loader gains {100 * (speedup - 1):.0f}%")
    if device == "cuda":
        rule = "end to end = min(loader, model): the loader overlaps the GPU's work"
    else:
        rule = ("end to end = 1 / (1/loader + 1/model): on a CPU the loader and the model "
                "share the cores")
    return {"bottleneck": bottleneck, "godali_contender": godali_key,
            "model_images_per_s": m, "torch_end_to_end": e_torch,
            "godali_end_to_end": e_godali, "speedup": speedup, "judgement": worth,
            "rule": rule}


def _fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def format_table(rows: list, device: str) -> str:
    """format_table renders the results as an aligned text table."""
    gpu = device == "cuda"
    head = ["contender", "images/s", "spread", "vs torch", "ms/batch", "CPU util",
            "CPU ms/img", "peak mem MB", "1st batch s"]
    if gpu:
        head += ["GPU mem MB", "GPU util"]
    lines = []
    torch_r = next((r["images_per_s"] for r in rows
                    if r["key"] == "torch" and r.get("images_per_s")), None)
    for r in rows:
        if r["status"] != "ok":
            reason = r.get("reason", "")
            reason = reason if len(reason) <= 140 else reason[:137] + "..."
            lines.append([r["label"], f"{r['status']}: {reason}"])
            continue
        runs = r["images_per_s_runs"]
        spread = (max(runs) - min(runs)) / r["images_per_s"] if len(runs) > 1 else None
        cells = [r["label"], f"{r['images_per_s']:,.0f}",
                 _fmt(spread and 100 * spread, ".0f") + ("%" if spread is not None else ""),
                 f"{r['images_per_s'] / torch_r:.2f}x" if torch_r else "-",
                 f"{r['ms_per_batch']:.1f}", f"{100 * r['cpu_util']:.0f}%",
                 f"{r['cpu_ms_per_image']:.2f}", f"{r['peak_mem_mb']:,.0f}",
                 f"{r['first_batch_s']:.2f}"]
        if gpu:
            cells += [_fmt(r.get("gpu_mem_mb"), ",.0f"),
                      _fmt(r.get("gpu_util"), ".0f") + ("%" if r.get("gpu_util") is not None
                                                        else "")]
        lines.append(cells)
    # Every row may be a skipped or failed one (a run of optional contenders only).
    widths = [max([len(head[i])] + [len(c[i]) for c in lines if len(c) == len(head)])
              for i in range(len(head))]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                     for i, (h, w) in enumerate(zip(head, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for c in lines:
        if len(c) != len(head):
            out.append(c[0].ljust(widths[0]) + "  " + c[1])
        else:
            out.append("  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                                 for i, (x, w) in enumerate(zip(c, widths))))
    return "\n".join(out)


def chart_notes(rows: list, warnings: list) -> list:
    """chart_notes: the lines under the chart, so that it says what the text says: the
    run's warnings, then the contenders that failed or were skipped (the bars show only
    the ones that ran)."""
    lines = ["warning: " + w for w in warnings]
    for r in rows:
        if r["status"] != "ok":
            reason = r.get("reason", "")
            reason = reason if len(reason) <= 90 else reason[:87] + "..."
            lines.append(f"{r['label']}: {r['status']} ({reason})")
    return lines


# The bar colours and what they stand for (the chart's legend).
BAR_KINDS = (("godali", "#2a7", "godali"),
             ("other", "#48c", "other loaders (torch DataLoader, DALI, torchvision)"),
             ("decode", "#999", "decode-only ceilings (no augmentation)"))


def bar_kind(key: str) -> str:
    return ("godali" if key.startswith("godali") else
            "decode" if key.startswith("decode") else "other")


MEASURES = ("measures loading alone: reading, decoding and augmenting into batches, "
            "no model")

CHART_NO_MATPLOTLIB = ("chart: not drawn: matplotlib is not installed. Install it "
                       "(`pip install matplotlib` in the Python that runs the bench, or "
                       "Debian's python3-matplotlib) and run the bench again; the "
                       "figures are in the results file meanwhile.")


def draw_chart(path, rows: list, model: dict | None, title: str,
               warnings: list = (), info: list = ()) -> bool:
    """draw_chart writes a bar chart of images/s when matplotlib is installed (False
    otherwise, or when no contender ran), with a colour legend, the lines of info
    (data set, versions, date) under the title, what it measures, and the run's warnings
    printed under it and kept in the PNG's "Warnings" text field."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        return False
    import textwrap
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return False
    notes = [part for line in chart_notes(rows, list(warnings))
             for part in textwrap.wrap(line, 110)]
    measures = MEASURES + ("; the dashed line is a model's training step alone, for "
                           "comparison" if model else "")
    head = [part for line in [*info, measures] for part in textwrap.wrap(line, 120)]
    note_h = 0.18 * len(notes) + (0.2 if notes else 0.0)
    head_h = 0.16 * len(head)
    kinds = [k for k in BAR_KINDS if any(bar_kind(r["key"]) == k[0] for r in ok)]
    legend_h = 0.2 * (len(kinds) + bool(model))
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(ok) + 1.9 + note_h + head_h + legend_h))
    names = [r["label"] for r in ok][::-1]
    vals = [r["images_per_s"] for r in ok][::-1]
    lo = [v - min(r["images_per_s_runs"]) for v, r in zip(vals, ok[::-1])]
    hi = [max(r["images_per_s_runs"]) - v for v, r in zip(vals, ok[::-1])]
    colour = {k: c for k, c, _ in BAR_KINDS}
    colors = [colour[bar_kind(r["key"])] for r in ok][::-1]
    ax.barh(names, vals, xerr=[lo, hi], color=colors)
    handles = [Patch(color=c, label=text) for _, c, text in kinds]
    if model:
        ax.axvline(model["images_per_s"], color="#c33", linestyle="--")
        handles.append(Line2D([], [], color="#c33", linestyle="--",
                              label=f"{model['name']} training step alone (no loading): "
                                    f"{model['images_per_s']:,.0f} images/s"))
    # Below the axis, so that it never hides a bar.
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.16), fontsize=7,
              frameon=False)
    ax.set_xlabel("images/s (median; error bars: min-max over repeats)")
    ax.set_title(title + "\n" + "\n".join(head), fontsize=7, loc="left")
    fig.tight_layout()
    if notes:
        total_h = fig.get_figheight()
        fig.subplots_adjust(bottom=fig.subplotpars.bottom + note_h / total_h)
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=7, va="bottom", ha="left",
                 color="#b00", family="monospace")
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={
        "Title": title, "Description": "\n".join([*info, measures]),
        "Warnings": "\n".join(chart_notes(rows, list(warnings)))})
    plt.close(fig)
    return True


def cache_note(data, built: bool | None) -> str:
    """cache_note says where the generated data set lies, how big it is and how to remove
    it: the bench keeps it (in the user's cache folder) so that later runs reuse it.
    built: True when this run wrote it, False when it reused it, None when unknown."""
    verb = {True: "wrote", False: "keeps"}.get(built, "holds")
    return (f"  cache: {verb} {tree_size_mb(data):.0f} MiB in {data} "
            f"(reused by later runs; --data DIR reads your own images instead); remove it "
            f"with: rm -r '{data}'")


def new_run_dir(root: Path, device: str, now=None) -> Path:
    """new_run_dir creates and returns root/<date>-<time>-<device>, with -2, -3...
    appended when a run started in the same second took the name."""
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        d = root / (f"{stamp}-{device}" + (f"-{n}" if n > 1 else ""))
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise BenchError(f"{root}: could not create a results folder for this run")


def _installed(module: str) -> bool:
    """Whether an optional contender's package can be imported (without importing it)."""
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _nvimgcodec_path(env: dict) -> None:
    """DALI 2.4's CPU image decoders dlopen libnvimgcodec.so by its bare name: when the
    pip package nvidia-nvimgcodec-cu12 is importable (not on the loader's path), its
    folder goes on the trial's LD_LIBRARY_PATH."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("nvidia.nvimgcodec")
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    for d in spec.submodule_search_locations:
        if (Path(d) / "libnvimgcodec.so.0").exists():
            old = env.get("LD_LIBRARY_PATH", "")
            env["LD_LIBRARY_PATH"] = d + (os.pathsep + old if old else "")
            return


def _in_checkout(path: str) -> bool:
    """Whether a contender's file of the source checkout is there ("" needs none)."""
    return not path or (_CHECKOUT / path).is_file()


def _default_contenders(device: str) -> list:
    keys = ["torch", "godali-cpu", "godali-iter"]
    if device == "cuda":
        keys += ["godali-cuda", "torchvision-gpu"]
    keys += ["decode-godali", "decode-pil", "val-torch", "val-godali"]
    # The optional contenders when their packages are there.
    keys += [c.key for c in CONTENDERS if c.module and not c.gpu and _installed(c.module)
             and _in_checkout(c.checkout_file)]
    return keys


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="python -m godali_tools bench",
        description="Compare godali with torch's DataLoader (and the decode-only ceiling) "
                    "on the same images, batch size and CPU cores; optionally time a "
                    "training step to see which one is the bottleneck.")
    ap.add_argument("--data", help="ImageFolder tree (ROOT/CLASS/*.JPEG); default: build "
                    f"{DEFAULT_IMAGES} ImageNet-like images into {DEFAULT_DATA} once")
    ap.add_argument("--batch-size", type=int,
                    help="images per batch (default: 256 on cuda, as in DALI's ResNet-50 "
                         "example; 64 on cpu, where 256-image batches would make each "
                         "timed window a handful of batches)")
    ap.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                    help="cuda adds the GPU contenders and delivers every batch on the GPU "
                         "(default: auto, cuda when an NVIDIA GPU and a CUDA torch exist)")
    ap.add_argument("--iters", type=int, help="timed batches per trial "
                    "(default: 32 on cpu, 20 on cuda)")
    ap.add_argument("--warmup", type=int, help="batches per trial before timing starts "
                    "(default: 4 on cpu, 5 on cuda)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="trials per contender; the median is reported (3)")
    ap.add_argument("--workers", type=int,
                    help="CPU cores each contender gets: DataLoader workers, godali "
                         "threads, pool processes (default: all available; fewer pins "
                         "every contender to that many cores)")
    ap.add_argument("--model", choices=("resnet50", "resnet18", "none", "auto"),
                    default="auto",
                    help="also time a training step of this torchvision model on synthetic "
                         "inputs and say which side is the bottleneck (default: auto, "
                         "resnet50 on cuda and none on cpu, where it takes minutes)")
    ap.add_argument("--model-batch", type=int,
                    help="batch size of the model timing (default: the batch size on cuda, "
                         "16 on cpu; images/s barely depends on it there)")
    ap.add_argument("--contenders",
                    help="comma-separated subset of: " + ", ".join(BY_KEY) + " (dali-cpu and "
                    "decode-dali need nvidia-dali-cuda120, decode-spdl needs spdl; without "
                    "this option they run when installed)")
    ap.add_argument("--images", type=int, default=DEFAULT_IMAGES,
                    help=f"size of the default data set ({DEFAULT_IMAGES})")
    ap.add_argument("--out", help="folder for this run's results.json and chart.png "
                    f"(default: a new folder under {RESULTS_ROOT} named after the date, "
                    "time and device)")
    ap.add_argument("--json", help="write the results to this file instead of "
                    "OUT/results.json")
    ap.add_argument("--chart", help="PNG chart path (default: next to the JSON file; "
                    "drawn only when matplotlib is installed)")
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    for name in ("batch_size", "iters", "warmup", "workers", "model_batch"):
        v = getattr(args, name)
        if v is not None and v < (0 if name == "warmup" else 1):
            raise BenchError(f"--{name.replace('_', '-')}: expected a positive number, "
                             f"got {v}")
    if args.repeats < 1:
        raise BenchError(f"--repeats: expected a positive number, got {args.repeats}")
    if args.out and args.json:
        raise BenchError("--out and --json: give one (--json names the file itself)")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise BenchError(f"--out {args.out}: exists and is not a directory")
    return args


def _results_path(args, device: str) -> Path:
    """Where this run writes results.json: --json, --out/results.json, or a new folder
    of its own under RESULTS_ROOT."""
    if args.json:
        return Path(args.json)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        return out / "results.json"
    return new_run_dir(RESULTS_ROOT, device) / "results.json"


def main(argv=None) -> int:
    """main runs the benchmark; argv excludes the program name."""
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except BenchError as e:
        print(f"godali bench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ngodali bench: interrupted", file=sys.stderr)
        return 130


def _main(argv) -> int:
    args = parse_args(argv)
    nvml = NVML.open()
    device = _resolve_device(args.device, nvml)
    if device != "cuda":
        nvml = None
    gpu = device == "cuda"
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else list(range(os.cpu_count() or 1))
    cores = args.workers or len(available)
    if cores > len(available):
        raise BenchError(f"--workers {cores}: only {len(available)} cores are available")
    affinity = available[:cores] if cores < len(available) else None
    batch = args.batch_size or (256 if gpu else 64)
    iters = args.iters or (20 if gpu else 32)
    warmup = args.warmup if args.warmup is not None else (5 if gpu else 4)
    model_name = args.model if args.model != "auto" else ("resnet50" if gpu else "none")
    model_batch = args.model_batch or (batch if gpu else min(batch, 16))

    if args.contenders:
        keys = [k.strip() for k in args.contenders.split(",") if k.strip()]
        bad = [k for k in keys if k not in BY_KEY]
        if bad:
            raise BenchError(f"--contenders: unknown {', '.join(bad)}; valid: "
                             f"{', '.join(BY_KEY)}")
    else:
        keys = _default_contenders(device)

    # The data set.
    from godali_tools import make_dataset

    if args.data:
        data = Path(args.data)
        if not data.is_dir():
            raise BenchError(f"--data {data}: not a directory")
        stamp = make_dataset.read_stamp(data)
        n_files = len(list_image_folder(data)[0])
        stats = {"count": n_files}
        if stamp:
            stats = stamp["stats"]
        elif n_files <= 20000:  # reading every header of a big tree takes too long
            try:
                stats = make_dataset.measure(data)
            except Exception as e:  # a file PIL cannot open: the contenders will say so
                print(f"data set: statistics not available ({e})")
        print(f"data set: {data}")
    else:
        data = DEFAULT_DATA
        data.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        building = Progress(args.images)
        building.set_label(f"building the data set ({args.images} images)")
        try:
            stats, built = make_dataset.ensure(
                data, n=args.images, progress=lambda done, total: building.step())
        except make_dataset.DatasetError as e:
            raise BenchError(str(e)) from e
        finally:
            building.close()
        how = (f"built in {time.perf_counter() - t0:.1f} s" if built else "reused")
        print(f"data set: {data} ({how}; cut from the photographs in "
              f"{make_dataset.DEFAULT_PHOTOS})")
        print(cache_note(data, built))
    if "mean_width" in stats:
        print(make_dataset.format_stats(stats))

    flavours = _godali_flavours()
    skipped = {}
    for k in keys:
        c = BY_KEY[k]
        if c.gpu and not gpu:
            skipped[k] = "needs a CUDA GPU"
        elif k == "godali-cuda" and "cuda" not in flavours:
            skipped[k] = "build/libgodali_cuda.so not built (make cuda)"
        elif c.module and not _installed(c.module):
            skipped[k] = f"{c.module} not installed ({c.install})"
        elif not _in_checkout(c.checkout_file):
            skipped[k] = f"runs from a godali source checkout only ({c.checkout_file})"
    run_keys = [k for k in keys if k not in skipped]

    cfg_base = {"data": str(data), "batch_size": batch, "iters": iters, "warmup": warmup,
                "device": device, "cores": cores, "seed": args.seed, "affinity": affinity}
    machine = {"cpu": _cpu_model(), "cores_available": len(available),
               "memory_gb": round(_memory_gb(), 1), "gpu": nvml.name() if nvml else None,
               "os": platform.platform(), "versions": _versions(),
               "godali_libraries": flavours}
    json_path = _results_path(args, device)
    chart = Path(args.chart) if args.chart else json_path.with_name(
        json_path.stem + ".png" if json_path.name != "results.json" else "chart.png")
    print(f"results will be written to {json_path}")
    print(f"machine: {machine['cpu']}, {len(available)} cores, {machine['memory_gb']} GB"
          + (f", {machine['gpu']}" if machine["gpu"] else ", no GPU"))
    print(f"setup: device {device}, batch {batch}, {cores} cores per contender, "
          f"{warmup} warm-up + {iters} timed batches per trial, {args.repeats} repeats "
          f"alternating, median reported")

    model_steps = 0
    if model_name != "none":
        model_steps = (2 if gpu else 1) + (20 if gpu else 3)
    total = len(run_keys) * args.repeats * (warmup + iters) + model_steps
    progress = Progress(total)
    runs = {k: [] for k in run_keys}
    failed, logs = {}, {}
    for rep in range(args.repeats):
        order = run_keys[rep % len(run_keys):] + run_keys[:rep % len(run_keys)] \
            if run_keys else []
        for k in order:
            if k in failed:
                progress.step(warmup + iters)
                continue
            progress.set_label(f"{k}  repeat {rep + 1}/{args.repeats}")
            try:
                r = run_trial(dict(cfg_base, contender=k), progress, nvml)
            except TrialError as e:
                failed[k] = str(e)
                logs[k] = e.stderr
                progress.note(f"  {k}: FAILED ({e})")
                continue
            runs[k].append(r)
            if not progress.tty:
                progress.note(f"  {k} repeat {rep + 1}: "
                              f"{r['images'] / r['wall_s']:,.0f} images/s")

    model = None
    if model_name != "none":
        progress.set_label(f"{model_name} training step ({model_batch} images)")
        mcfg = dict(cfg_base, contender="model", model=model_name, model_batch=model_batch,
                    warmup=2 if gpu else 1, iters=20 if gpu else 3)
        try:
            r = run_trial(mcfg, progress, nvml)
            model = {"name": model_name, "batch_size": model_batch,
                     "images_per_s": r["images"] / r["wall_s"],
                     "ms_per_step": 1000 * statistics.median(r["batch_s"]),
                     "precision": r["precision"], "peak_mem_mb": r["peak_mem_mb"],
                     "gpu_mem_mb": r.get("gpu_mem_mb")}
        except TrialError as e:
            failed["model"] = str(e)
            logs["model"] = e.stderr
            progress.note(f"  model: FAILED ({e})")
    progress.close()

    rows, results = [], {}
    for k in keys:
        c = BY_KEY[k]
        row = {"key": k, "label": c.label, "description": c.doc}
        if k in skipped:
            row.update(status="skipped", reason=skipped[k])
        elif k in failed:
            row.update(status="failed", reason=failed[k], log=logs.get(k, ""))
        else:
            row.update(status="ok", **summarize(runs[k], cores, batch))
            results[k] = row
            for r in runs[k]:
                if "versions" in r:
                    row["versions"] = r["versions"]
                if "cpu_fallbacks" in r:
                    row["cpu_fallbacks"] = r["cpu_fallbacks"]
        rows.append(row)

    print()
    print(format_table(rows, device))
    notes = []
    for k in ("godali-cpu", "godali-cuda"):
        if k not in results:
            continue
        g = results[k]["images_per_s"]
        parts = [f"{g / results[t]['images_per_s']:.2f}x {BY_KEY[t].label}"
                 for t in ("torch", "decode-godali", "decode-pil") if t in results]
        if parts:
            notes.append(f"{BY_KEY[k].label}: " + ", ".join(parts))
    if notes:
        print()
        print("\n".join(notes))
    print("CPU util: process + children CPU time / wall time / cores; CPU ms/img: that "
          "CPU time per image; peak mem: PSS of the contender's process tree; 1st batch: "
          "seconds from creating the loader to its first batch.")
    warnings = []
    busy = max((r.get("foreign_cpu", 0.0) for r in results.values()), default=0.0)
    if busy > 0.1:
        warnings.append(f"other processes used up to {100 * busy:.0f}% of the CPUs during "
                        "timed windows; these figures are unreliable. Run again on a "
                        "quiet machine.")
    if failed:
        warnings.append(f"{len(failed)} of {len(run_keys) + ('model' in failed)} runs "
                        f"failed: {', '.join(sorted(failed))} (their logs are in the "
                        "results file)")
    for w in warnings:
        print(f"warning: {w}")
    if model:
        print()
        print(f"model: {model_name} training step (forward, backward, SGD), batch "
              f"{model_batch}, {model['precision']}: {model['images_per_s']:,.1f} images/s "
              f"({model['ms_per_step']:.0f} ms/step)")
    v = verdict(results, model, device)
    if v:
        side = ("the input pipeline starves the model" if v["bottleneck"] == "loader"
                else "the model is the bottleneck")
        print(f"with torch DataLoader: {side}. godali is {v['judgement']}.")
        print(f"  ({v['rule']})")
    elif model_name == "none":
        print()
        print("add --model resnet50 (or resnet18) to see whether the loader or the model "
              "is the bottleneck, and what end-to-end speed-up to expect.")

    doc = {
        "godali_bench": 1,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": "python -m godali_tools bench " + " ".join(argv),
        "machine": machine,
        "config": {"device": device, "batch_size": batch, "cores": cores, "iters": iters,
                   "warmup": warmup, "repeats": args.repeats, "seed": args.seed,
                   "data": str(data), "model": model_name, "model_batch": model_batch},
        "dataset": stats,
        "contenders": rows,
        "model": model,
        "verdict": v,
        "warnings": warnings,
    }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(doc, indent=1))
    print()
    print(f"results: {json_path}")
    title = (f"{machine['cpu']}, {cores} cores" + (f", {machine['gpu']}" if gpu else "")
             + f"; batch {batch}")
    info = [dataset_line(stats, data),
            versions_line(machine["versions"]) + "; " + doc["date"]]
    if draw_chart(chart, rows, model, title, warnings, info):
        print(f"chart: {chart}")
    elif not _installed("matplotlib"):
        print(CHART_NO_MATPLOTLIB)
    else:
        print("chart: not drawn (no contender ran)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
