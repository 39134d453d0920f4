"""Tests of godali_tools.make_dataset: statistics, rare kinds, determinism, errors.

The references are independent of the generator: PIL reads every written file back, and
the quality estimate is checked against files PIL encodes at known qualities.
"""

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
TOOLS_DIR = REPO / "tools"
for _d in (TOOLS_DIR, PYTHON_DIR):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

from godali_tools import make_dataset as md  # noqa: E402


def _photo_sizes():
    return [p.size for p in md.load_photos(md.DEFAULT_PHOTOS)]


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.JPEG"))}


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "tree"
    stats = md.build(out, n=60, classes=4, seed=3, jobs=2)
    return out, stats


def test_shipped_photos_are_real_photographs_with_a_licence():
    photos = md.load_photos(md.DEFAULT_PHOTOS)
    assert len(photos) >= 6
    assert (md.DEFAULT_PHOTOS / "LICENSE").is_file()
    readme = (md.DEFAULT_PHOTOS / "README.md").read_text()
    shipped = sum(p.stat().st_size for p in md.DEFAULT_PHOTOS.iterdir())
    assert shipped < 4_000_000
    for p in md.DEFAULT_PHOTOS.glob("*.jpg"):
        assert p.name in readme, f"{p.name} has no provenance line in README.md"
    for im in photos:
        a = np.asarray(im.convert("L"), dtype=np.float64)
        # Real photographs: neighbouring pixels are strongly correlated (noise: ~0),
        # yet there is texture (a gradient or flat fill has almost no residual).
        h = a[:, 1:] - a[:, :-1]
        corr = np.corrcoef(a[:, 1:].ravel(), a[:, :-1].ravel())[0, 1]
        assert corr > 0.8
        assert np.abs(h).mean() > 1.0


@pytest.mark.parametrize("quality", [30, 50, 75, 90, 93, 96, 100])
def test_estimate_quality_reads_back_what_pil_wrote(quality):
    rng = np.random.default_rng(quality)
    img = Image.fromarray(rng.integers(0, 255, (32, 48, 3), dtype=np.uint8))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        assert md.estimate_quality(im.quantization[0]) == (quality, True)


def test_plan_statistics_follow_imagenet():
    specs = md.plan(3000, 10, 0, _photo_sizes())
    normal = [s for s in specs if max(s.width, s.height) < md.HUGE_MIN_SIDE]
    mean_w = np.mean([s.width for s in normal])
    mean_h = np.mean([s.height for s in normal])
    assert 360 <= mean_w <= 440 and 310 <= mean_h <= 390, (mean_w, mean_h)
    jpegs = [s for s in specs if s.fmt == "JPEG"]
    in_band = np.mean([90 <= s.quality <= 96 for s in jpegs])
    assert 0.75 <= in_band <= 0.87
    colour = [s for s in jpegs if s.mode == "RGB"]
    share = {k: np.mean([s.subsampling == k for s in colour]) for k in (0, 1, 2)}
    assert 0.6 <= share[2] <= 0.8 and 0.15 <= share[0] <= 0.35 and share[1] < 0.1
    assert sum(s.fmt == "PNG" for s in specs) == 1
    assert sum(s.mode == "L" for s in specs) == 90
    assert sum(s.progressive for s in specs) == 90
    assert sum(s.mode == "CMYK" for s in specs) == 6
    assert sum(max(s.width, s.height) >= md.HUGE_MIN_SIDE for s in specs) == 9
    aspects = {round(s.width / s.height, 1) for s in normal}
    assert len(aspects) > 10  # varied shapes, not one size


@pytest.mark.slow  # builds a data set
def test_built_tree_matches_its_plan(small_tree):
    out, stats = small_tree
    specs = {s.relpath: s for s in md.plan(60, 4, 3, _photo_sizes())}
    files = sorted(out.rglob("*.JPEG"))
    assert len(files) == 60 == stats["count"]
    assert sorted(str(p.relative_to(out)) for p in files) == sorted(specs)
    assert stats["classes"] == 4
    pngs = 0
    for p in files:
        spec = specs[str(p.relative_to(out))]
        with Image.open(p) as im:
            assert im.size == (spec.width, spec.height)
            if im.format == "PNG":
                pngs += 1
                assert p.suffix == ".JPEG"
                continue
            assert im.format == "JPEG"
            assert im.mode == spec.mode
            assert md.estimate_quality(im.quantization[0]) == (spec.quality, True)
            assert bool(im.info.get("progressive")) == spec.progressive
            if im.mode == "RGB":
                from PIL import JpegImagePlugin
                assert JpegImagePlugin.get_sampling(im) == spec.subsampling
            im.load()  # every file decodes
    assert pngs == 1 == stats["png"]
    assert stats["cmyk"] >= 1 and stats["huge"] >= 1
    assert stats["gray"] == 2 and stats["progressive"] == 2


def test_images_are_photographic_not_noise(small_tree):
    out, _ = small_tree
    corrs, sizes = [], []
    for p in sorted(out.rglob("*.JPEG"))[:30]:
        with Image.open(p) as im:
            if max(im.size) >= md.HUGE_MIN_SIDE:
                continue
            a = np.asarray(im.convert("L"), dtype=np.float64)
        corrs.append(np.corrcoef(a[:, 1:].ravel(), a[:, :-1].ravel())[0, 1])
        sizes.append(p.stat().st_size / (a.shape[0] * a.shape[1]))
    # Grain lowers the neighbour correlation a little; noise would put it near 0.
    assert np.median(corrs) > 0.8
    # ImageNet's ~110 KB for ~400x350 is ~0.8 bytes per pixel.
    assert 0.4 < np.mean(sizes) < 1.3


@pytest.mark.slow  # builds the tree three times
def test_same_seed_same_bytes_whatever_the_jobs(tmp_path, small_tree):
    out, _ = small_tree
    again = tmp_path / "again"
    md.build(again, n=60, classes=4, seed=3, jobs=1)
    assert _digest(again) == _digest(out)
    other = tmp_path / "other"
    md.build(other, n=60, classes=4, seed=4, jobs=2)
    assert _digest(other) != _digest(out)


@pytest.mark.slow  # builds a data set
def test_ensure_reuses_a_matching_tree(tmp_path):
    out = tmp_path / "cache"
    stats, built = md.ensure(out, n=8, classes=2, seed=1, scale=0.3)
    assert built and stats["count"] == 8
    before = _digest(out)
    stats2, built2 = md.ensure(out, n=8, classes=2, seed=1, scale=0.3)
    assert not built2 and stats2 == stats and _digest(out) == before
    _, built3 = md.ensure(out, n=9, classes=2, seed=1, scale=0.3)
    assert built3 and len(_digest(out)) == 9


def test_scale_changes_every_size():
    sizes = _photo_sizes()
    small = md.plan(400, 10, 0, sizes, scale=0.3)
    normal = md.plan(400, 10, 0, sizes, scale=1.0)
    large = md.plan(400, 10, 0, sizes, scale=4.0)
    for a, b in zip(small, normal):
        assert abs(max(a.width, a.height) - 0.3 * max(b.width, b.height)) <= 1 or \
            max(a.width, a.height) == 16
    # Huge images shrink with the rest but never grow past HUGE_MAX_SIDE.
    assert max(max(s.width, s.height) for s in small) < md.HUGE_MIN_SIDE
    assert max(max(s.width, s.height) for s in large) == md.HUGE_MAX_SIDE


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TOOLS_DIR), str(PYTHON_DIR)]))
    return subprocess.run([sys.executable, "-m", "godali_tools.make_dataset", *args],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow  # builds a data set in a subprocess
def test_cli_prints_statistics(tmp_path):
    r = _cli(str(tmp_path / "t"), "--n", "25", "--classes", "3", "--scale", "0.5")
    assert r.returncode == 0, r.stderr
    for word in ("images      25 in 3 classes", "mean", "KB", "quality", "4:2:0", "4:4:4",
                 "gray", "progressive", "CMYK 1", "PNG named .JPEG 1", "huge"):
        assert word in r.stdout, (word, r.stdout)


def test_cli_errors_name_the_argument(tmp_path):
    r = _cli(str(tmp_path / "a"), "--n", "0")
    assert r.returncode == 2 and "--n" in r.stderr
    r = _cli(str(tmp_path / "b"), "--photos", str(tmp_path / "missing"))
    assert r.returncode == 2 and "--photos" in r.stderr and "not a directory" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _cli(str(tmp_path / "c"), "--photos", str(empty))
    assert r.returncode == 2 and "no photographs" in r.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep me")
    r = _cli(str(full), "--n", "3")
    assert r.returncode == 2 and "--force" in r.stderr
    assert (full / "x").read_text() == "keep me"
