"""Shared fixtures: generated image trees, the corpus, and GPU skipping.

Tests build their own data with PIL in temporary folders. The real-world JPEG corpus is
read from the repo's tests/data/corpus (or the shared corpus when the repo copy is
missing).
"""

import functools
import importlib
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


def sigint_default():
    """preexec_fn for a child a test interrupts with SIGINT: SIGINT at its default, as in
    a terminal. A test run started in the background inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
REPO = os.path.dirname(PYTHON_DIR)

if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
# godali_tools (tools/, not in the wheel): make_dataset and the cloud emulators, which
# some library tests use for their data and servers.
TOOLS_DIR = os.path.join(REPO, "tools")
if TOOLS_DIR not in sys.path:
    sys.path.append(TOOLS_DIR)

from godali import _lib  # noqa: E402

# A test whose independent reference (PIL, cv2, scipy, torch, PyAV, ffmpeg, lmdb, the
# image corpus...) is missing is skipped; with GODALI_STRICT_REFERENCES=1 (`make test`,
# CI: scripts/setup.sh installs every reference) it fails instead, so that a broken setup
# cannot turn the comparisons into silent skips. Go's twin: internal/testref.
STRICT_ENV = "GODALI_STRICT_REFERENCES"


def strict_references():
    """Whether a missing reference fails the test (GODALI_STRICT_REFERENCES set, not 0)."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def missing_reference(reason):
    """Ends the test (or module) because a reference is absent: a skip naming it, or
    under GODALI_STRICT_REFERENCES=1 a failure naming it and the switch."""
    if strict_references():
        pytest.fail("reference missing (%s=1 makes this a failure): %s" % (STRICT_ENV, reason),
                    pytrace=False)
    pytest.skip("reference missing: " + reason, allow_module_level=True)


def need(module, reason=None):
    """Imports and returns a reference module (pytest.importorskip through
    missing_reference)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        missing_reference("%s (%s)" % (reason or "needs %s" % module, e))


def feature_of_version(module, what):
    """Imports a module that only some versions of a dependency have (torchvision's
    transforms.v2 from 0.15 on): without it the test does not apply to the installed
    version and skips, also under GODALI_STRICT_REFERENCES (make test runs such tests on
    the torch 2.x venv, where it exists)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip("%s: not in the installed version (%s)" % (module, what))


def _flavour():
    try:
        return _lib.get().flavour
    except ImportError:
        return None


def pytest_sessionstart(session):
    # Without the library every test would fail on the same ImportError: say it once.
    try:
        _lib.get()
    except ImportError as e:
        pytest.exit("godali tests need the library: %s" % e, returncode=1)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# The test files of each family, for `make check FAMILY=x` (pytest -m family_x): the
# operator families of ops/ (the Go tests of ops/x run with them), plus api (Pipeline,
# fn, DALI's surface), torch (godali.torch and the iterators) and tools (bench, the CLI,
# packaging). A file may be in several; every test file is in one (test_suite_rules.py).
FAMILIES = {
    "image": ["test_augment", "test_auto_aug", "test_autoaug_ops", "test_color_dtypes",
              "test_equalize", "test_image_filters", "test_jpeg_distortion", "test_more_ops",
              "test_nd_ops", "test_ops_more", "test_outputs", "test_warp_affine",
              "test_multipaste_objbbox", "test_ops_dali29", "test_oracle_regressions",
              "test_val_window", "test_auto_aug_dali_api"],
    "decoders": ["test_numpy_decoder", "test_bad_inputs", "test_bad_inputs_hwm", "test_errors",
                 "test_outputs", "test_ops_dali29", "test_val_window"],
    "readers": ["test_readers_formats", "test_readers_shards", "test_multi_reader", "test_video",
                "test_coco", "test_remote_secrets", "test_checkpoint", "test_checkpoint_dali_rules", "test_remote_cloud",
                "test_ops_dali29", "test_oracle_regressions"],
    "bbox": ["test_detection_ops", "test_random_bbox_crop_3d", "test_coco", "test_ops_dali29"],
    "math": ["test_arith"],
    "tensor": ["test_tensor_ops", "test_tensor_ops2", "test_sequence_rearrange",
               "test_oracle_regressions", "test_auto_aug_dali_api"],
    "random": ["test_noise_ops", "test_multipaste_objbbox"],
    "transforms": ["test_sequence_args"],
    "external": ["test_external_source", "test_python_function",
                 "test_python_function_hardening", "test_oracle_regressions"],
    "api": ["test_api", "test_arg_inputs", "test_conditionals", "test_dali_compat",
            "test_dali_cpu_only_surface", "test_dali_port_ops", "test_dali_surface",
            "test_examples_surface", "test_doc_snippets", "test_lib", "test_lifecycle",
            "test_variable_batch", "test_dlpack", "test_cuda", "test_cuda_streams", "test_schema_facts", "test_operator_reference",
            "test_suite_rules", "test_tensor_api", "test_hardening3", "test_tuning", "test_subbatch",
            "test_dali_testfile_parity"],
    "torch": ["test_pytorch", "test_torch_dropin", "test_torch_epochs", "test_torch_gpu",
              "test_torch_install", "test_tv_autoaug", "test_tv_exact", "test_proxy",
              "test_dali_iterators_port", "test_distributed", "test_torch_faithful",
              "test_torch_presets"],
    # bench, bench-remote and make_dataset have their tests beside them (tools/tests).
    "tools": ["test_profile", "test_cli", "test_examples", "test_packaging", "test_wheel_check"],
}


def pytest_configure(config):
    for fam in FAMILIES:
        config.addinivalue_line("markers", "family_%s: a test of the %s family (make check FAMILY=%s)"
                                % (fam, fam, fam))


def _family_marks(items):
    by_file = {}
    for fam, files in FAMILIES.items():
        for f in files:
            by_file.setdefault(f, []).append(fam)
    for item in items:
        mod = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        for fam in by_file.get(mod, ()):
            item.add_marker(getattr(pytest.mark, "family_" + fam))


def pytest_collection_modifyitems(config, items):
    _family_marks(items)
    # GPU tests hand kDLCUDA tensors to torch: they need the CUDA flavour and a torch
    # built with CUDA (the GPU emulator of tests/gpuemu gives the first, never the second).
    if _flavour() == "cuda" and _torch_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device, the CUDA flavour of godali and "
                                   "torch with CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def lib():
    """The loaded library (fails loudly when it is not built)."""
    return _lib.get()


def make_jpeg(path, h, w, seed, quality=90, mode="RGB"):
    """Writes a smooth, photo-like JPEG (gradients plus mild noise) of h x w pixels."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, h)[:, None]
    x = np.linspace(0, 1, w)[None, :]
    base = np.stack([
        128 + 100 * np.sin(6.28 * (x * rng.uniform(0.5, 2) + y * rng.uniform(0.1, 1))),
        128 + 100 * np.cos(6.28 * (y * rng.uniform(0.5, 2))) * np.ones_like(x),
        255 * x * y,
    ], axis=-1)
    img = np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)
    im = Image.fromarray(img)
    if mode != "RGB":
        im = im.convert(mode)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    im.save(path, quality=quality)
    return path


@pytest.fixture(scope="session")
def image_folder(tmp_path_factory):
    """An ImageFolder tree: 3 classes, 10 JPEGs of varied sizes (at least 48 px)."""
    root = tmp_path_factory.mktemp("imagefolder")
    sizes = [(64, 80), (72, 96), (96, 72), (50, 120), (88, 88), (120, 60), (64, 64),
             (100, 76), (48, 56), (80, 100)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("class_%d" % (i % 3)) / ("img_%02d.jpg" % i)), h, w, seed=i)
    return str(root)


@pytest.fixture(scope="session")
def seven_files(tmp_path_factory):
    """7 tiny JPEGs; labels 1..7 identify them (DALI's LastBatchPolicy example)."""
    root = tmp_path_factory.mktemp("seven")
    files = []
    for i in range(7):
        files.append(make_jpeg(str(root / ("s%d.jpg" % (i + 1))), 8, 8, seed=100 + i))
    return files, list(range(1, 8))


@pytest.fixture(scope="session")
def unique_folder(tmp_path_factory):
    """An ImageFolder of 11 classes with one image each: the label identifies the sample."""
    root = tmp_path_factory.mktemp("unique")
    for i in range(11):
        make_jpeg(str(root / ("c%02d" % i) / "x.jpg"), 40 + 2 * i, 48, seed=200 + i)
    return str(root)


@pytest.fixture(scope="session")
def corpus_dir():
    for d in (os.path.join(REPO, "tests", "data", "corpus"), "/work/shared/testdata/images"):
        if os.path.isdir(d):
            return d
    missing_reference("no image corpus (tests/data/corpus)")


def corpus_jpegs(corpus_dir):
    """JPEG files of the corpus that PIL decodes as RGB or L, per its MANIFEST.tsv when
    present."""
    out = []
    manifest = os.path.join(corpus_dir, "MANIFEST.tsv")
    if os.path.exists(manifest):
        with open(manifest) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4 and parts[2].startswith("JPEG ") and parts[3] == "ok":
                    mode = parts[2].split()[1]
                    if mode in ("RGB", "L"):
                        out.append(os.path.join(corpus_dir, parts[0]))
    else:
        for dp, _, fns in os.walk(corpus_dir):
            for fn in fns:
                if fn.lower().endswith((".jpg", ".jpeg")):
                    out.append(os.path.join(dp, fn))
    return sorted(p for p in out if os.path.exists(p))


def run_python(code, env=None, timeout=120):
    """Runs code in a fresh interpreter (this one's sys.executable) with this package on
    the path; returns the CompletedProcess."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHON_DIR + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                          text=True, timeout=timeout)


# --- Pillow's resize: the order of its two passes ---------------------------------------
# Pillow before 13 (9.4 here) resamples a resize on both axes horizontally first, then
# vertically, and so does godali. Pillow 13.0 takes the vertical pass first when the
# height shrinks significantly more than the width (Pillow's pull request 9549), which
# moves the result by up to 1 level on some pixels. Tests that compare godali bit-exactly
# with torchvision's PIL path under such a Pillow take their references with the
# horizontal pass first (pillow_horizontal_first); test_tv_exact.py bounds godali's
# difference from the installed Pillow itself.

def _horizontal_first_resize(orig):
    def resize(self, size, resample=None, box=None, reducing_gap=None):
        size = tuple(size)
        if (box is None and reducing_gap is None and resample != Image.NEAREST
                and size[0] != self.size[0] and size[1] != self.size[1]):
            return orig(orig(self, (size[0], self.size[1]), resample), size, resample)
        return orig(self, size, resample, box, reducing_gap)
    return resize


@functools.lru_cache(maxsize=None)
def pil_resizes_vertically_first():
    """True when the installed Pillow takes the vertical pass of a resize first for some
    sizes (probed on a 60x120 image resized to 40x36 and 36x40)."""
    rng = np.random.default_rng(0)
    im = Image.fromarray(rng.integers(0, 256, (120, 60, 3), dtype=np.uint8))
    two_pass = _horizontal_first_resize(Image.Image.resize)
    for size in ((40, 36), (36, 40)):
        if not np.array_equal(np.asarray(im.resize(size, Image.BILINEAR)),
                              np.asarray(two_pass(im, size, Image.BILINEAR))):
            return True
    return False


@pytest.fixture
def pillow_horizontal_first(monkeypatch):
    """Under a Pillow that resizes vertically first for some sizes, makes PIL's bilinear
    and bicubic resizes on both axes take the horizontal pass first (as Pillow 9.4 does):
    the rest of torchvision's PIL path stays the installed one."""
    if pil_resizes_vertically_first():
        monkeypatch.setattr(Image.Image, "resize", _horizontal_first_resize(Image.Image.resize))
