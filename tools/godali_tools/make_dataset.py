"""Build a benchmark ImageFolder tree whose statistics follow ImageNet's.

    python -m godali_tools.make_dataset OUT [--photos DIR] [--n 1000] [--classes 10]
                                            [--seed 0] [--scale 1.0] [--jobs N] [--force]

Every image is cut from a real photograph (random crop, scale, flip, colour change,
sharpening and sensor-like grain), because noise and gradients decode at speeds no real
training set has. The mix follows ImageNet's training set: about 400x350 pixels and
110 KB on average with varied sizes and aspects, JPEG qualities mostly 90-96, 4:2:0 and
4:4:4 chroma subsampling (a few 4:2:2), a few percent grayscale and progressive files,
rare CMYK files, rare huge (3000-6000 px) images, and exactly one PNG file named .JPEG.

The output depends only on the photographs, ``--n``, ``--classes``, ``--seed`` and
``--scale``: each image draws from its own random stream seeded by (seed, index), so
the number of jobs does not change a byte. The statistics printed at the end are
measured from the files written, not from the plan.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing
import os
import shutil
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

# Bump when a change to the generator changes its output, so cached trees are rebuilt.
GENERATOR_VERSION = 1

DEFAULT_PHOTOS = Path(__file__).resolve().with_name("photos")
STAMP_NAME = ".godali-dataset.json"
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".bmp")

# Shares of the data set, after ImageNet's training set (1.28M images: about 2% gray,
# a few percent progressive, 22 CMYK files, one PNG, a thin tail of very large images).
GRAY_SHARE = 0.03
PROGRESSIVE_SHARE = 0.03
CMYK_SHARE = 0.002
HUGE_SHARE = 0.003
HUGE_MIN_SIDE = 3000
HUGE_MAX_SIDE = 6000

# (width / height, probability): ImageNet is mostly 4:3 and 3:2 landscapes and
# their portrait twins, with some squares and odd shapes.
ASPECTS = ((4 / 3, 0.40), (3 / 2, 0.15), (1.0, 0.08), (3 / 4, 0.17), (2 / 3, 0.07),
           (16 / 9, 0.05), (None, 0.08))

# JPEG Annex K luminance table, natural order: libjpeg scales it by quality, which is
# how the quality of a written file is read back from its quantisation table.
_STD_LUMA = (
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
)

SUBSAMPLING_NAMES = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


class DatasetError(Exception):
    """DatasetError reports bad arguments or unreadable photographs."""


@dataclass(frozen=True)
class ImageSpec:
    """ImageSpec is everything needed to render one image of the data set."""

    index: int
    label: int
    fmt: str  # "JPEG" or "PNG" (written under a .JPEG name all the same)
    mode: str  # "RGB", "L" or "CMYK"
    width: int
    height: int
    quality: int
    subsampling: int  # PIL's code: 0 = 4:4:4, 1 = 4:2:2, 2 = 4:2:0
    progressive: bool
    photo: int
    box: tuple  # crop window in the photograph, floats (x0, y0, x1, y1)
    flip: bool
    brightness: float
    contrast: float
    saturation: float
    sharpen_radius: float
    sharpen_percent: int
    grain: float  # standard deviation of the luma grain, in 8-bit levels

    @property
    def relpath(self) -> str:
        return f"class_{self.label:03d}/img_{self.index:06d}.JPEG"


def _role_counts(n: int) -> dict:
    """_role_counts says how many images of each rare kind a tree of n images gets.

    Rare kinds get at least one image once n is large enough for them to be rare, so
    that every default tree exercises the code paths they need.
    """
    rare = n >= 20
    return {
        "png": 1 if n >= 1 else 0,
        "cmyk": max(1, round(n * CMYK_SHARE)) if rare else 0,
        "huge": max(1, round(n * HUGE_SHARE)) if rare else 0,
        "gray": round(n * GRAY_SHARE),
        "progressive": round(n * PROGRESSIVE_SHARE),
    }


def _pick_aspect(rng) -> float:
    u = rng.random()
    acc = 0.0
    for ratio, p in ASPECTS:
        acc += p
        if u < acc:
            if ratio is None:
                # Odd shapes: log-uniform between 1:2 and 2:1.
                return math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
            return ratio
    return 4 / 3


def _pick_long_side(rng, huge: bool, scale: float) -> int:
    if huge:
        # Scaled like the rest (thumbnails mean no huge photographs either), but never
        # past HUGE_MAX_SIDE: the point is a rare decoding burden, not a refused file.
        side = int(rng.integers(HUGE_MIN_SIDE, HUGE_MAX_SIDE + 1))
        return max(16, min(HUGE_MAX_SIDE, int(round(side * scale))))
    u = rng.random()
    if u < 0.47:
        side = 500.0  # ImageNet's most common long side by far
    elif u < 0.93:
        side = rng.uniform(120, 500)
    else:
        side = rng.uniform(500, 900)
    return max(16, int(round(side * scale)))


def _pick_quality(rng) -> int:
    u = rng.random()
    if u < 0.80:
        return int(rng.integers(90, 97))
    if u < 0.90:
        return int(rng.integers(75, 90))
    return int(rng.integers(97, 99))


def _pick_subsampling(rng) -> int:
    u = rng.random()
    if u < 0.70:
        return 2
    if u < 0.95:
        return 0
    return 1


def plan(n: int, classes: int, seed: int, photo_sizes: list, scale: float = 1.0) -> list:
    """plan returns the ImageSpec of every image, from the seed alone."""
    import numpy as np

    if n < 1:
        raise DatasetError(f"--n: expected a positive number of images, got {n}")
    if classes < 1:
        raise DatasetError(f"--classes: expected a positive number of classes, got {classes}")
    if not photo_sizes:
        raise DatasetError("no photographs to cut images from")
    if not (0.05 <= scale <= 20):
        raise DatasetError(f"--scale: expected a factor between 0.05 and 20, got {scale}")

    counts = _role_counts(n)
    order = np.random.default_rng([seed, 0x5EED]).permutation(n)
    roles = {}
    at = 0
    for role in ("png", "cmyk", "huge", "gray", "progressive"):
        for i in order[at:at + counts[role]]:
            roles[int(i)] = role
        at += counts[role]

    specs = []
    for i in range(n):
        rng = np.random.default_rng([seed, i])
        role = roles.get(i, "")
        huge = role == "huge"
        aspect = _pick_aspect(rng)
        long_side = _pick_long_side(rng, huge, scale)
        if aspect >= 1:
            width, height = long_side, max(16, int(round(long_side / aspect)))
        else:
            width, height = max(16, int(round(long_side * aspect))), long_side

        photo = int(rng.integers(len(photo_sizes)))
        pw, ph = photo_sizes[photo]
        # The largest window of the target aspect that fits the photograph, shrunk
        # by a random linear factor and placed anywhere inside it.
        cw = min(pw, ph * width / height)
        ch = cw * height / width
        frac = rng.uniform(0.6, 1.0)
        cw, ch = cw * frac, ch * frac
        x0 = rng.uniform(0, pw - cw)
        y0 = rng.uniform(0, ph - ch)

        specs.append(ImageSpec(
            index=i,
            label=i % classes,
            fmt="PNG" if role == "png" else "JPEG",
            mode={"gray": "L", "cmyk": "CMYK"}.get(role, "RGB"),
            width=width,
            height=height,
            quality=_pick_quality(rng),
            subsampling=_pick_subsampling(rng),
            progressive=role == "progressive",
            photo=photo,
            box=(round(x0, 3), round(y0, 3), round(x0 + cw, 3), round(y0 + ch, 3)),
            flip=bool(rng.random() < 0.5),
            brightness=round(rng.uniform(0.85, 1.15), 4),
            contrast=round(rng.uniform(0.9, 1.1), 4),
            saturation=round(rng.uniform(0.8, 1.2), 4),
            sharpen_radius=round(rng.uniform(0.6, 1.6), 3),
            sharpen_percent=int(rng.integers(50, 150)),
            grain=round(rng.uniform(6.0, 12.0), 3),
        ))
    return specs


def load_photos(photos_dir: Path) -> list:
    """load_photos opens every photograph in photos_dir as an RGB PIL image."""
    from PIL import Image

    photos_dir = Path(photos_dir)
    if not photos_dir.is_dir():
        raise DatasetError(f"--photos {photos_dir}: not a directory")
    paths = sorted(p for p in photos_dir.iterdir()
                   if p.suffix.lower() in PHOTO_SUFFIXES and p.is_file())
    if not paths:
        raise DatasetError(f"--photos {photos_dir}: no photographs "
                           f"(expected files ending in {', '.join(PHOTO_SUFFIXES)})")
    photos = []
    warnings.filterwarnings("ignore", message=".*malformed MPO.*")
    for p in paths:
        try:
            with Image.open(p) as im:
                im.load()
                rgb = im.convert("RGB")
        except Exception as e:  # PIL raises many types for bad files
            raise DatasetError(f"--photos: cannot read {p}: {e}") from e
        if min(rgb.size) < 64:
            raise DatasetError(f"--photos: {p} is {rgb.size[0]}x{rgb.size[1]}; "
                               "expected photographs of at least 64x64 pixels")
        photos.append(rgb)
    return photos


def _add_grain(img, sigma: float, rng):
    """_add_grain adds camera-like noise: mostly luma, a little chroma.

    Downscaled camera photographs, ImageNet's bulk, carry far more fine detail than
    these small re-compressed sources; without grain the files come out at half
    ImageNet's size and decode faster than real data. Rows are done in strips so that
    a 6000 px image does not need gigabytes of float noise.
    """
    import numpy as np
    from PIL import Image

    a = np.asarray(img, dtype=np.uint8)
    out = np.empty_like(a)
    h, w, _ = a.shape
    strip = 256
    for y in range(0, h, strip):
        rows = min(strip, h - y)
        luma = rng.standard_normal((rows, w, 1), dtype=np.float32) * sigma
        chroma = rng.standard_normal((rows, w, 3), dtype=np.float32) * (sigma * 0.4)
        v = a[y:y + rows].astype(np.float32) + luma + chroma
        np.clip(v + 0.5, 0, 255, out=v)
        out[y:y + rows] = v.astype(np.uint8)
    return Image.fromarray(out, "RGB")


def render(spec: ImageSpec, photos: list) -> bytes:
    """render returns the encoded bytes of one image."""
    import numpy as np
    from PIL import Image, ImageEnhance, ImageFilter

    src = photos[spec.photo]
    box_w = spec.box[2] - spec.box[0]
    resample = Image.LANCZOS if box_w >= spec.width else Image.BICUBIC
    img = src.resize((spec.width, spec.height), resample, box=spec.box)
    if spec.flip:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    img = ImageEnhance.Brightness(img).enhance(spec.brightness)
    img = ImageEnhance.Contrast(img).enhance(spec.contrast)
    img = ImageEnhance.Color(img).enhance(spec.saturation)
    img = img.filter(ImageFilter.UnsharpMask(spec.sharpen_radius, spec.sharpen_percent, 2))
    # A stream of its own, so the grain does not shift when the plan above changes.
    img = _add_grain(img, spec.grain, np.random.default_rng([spec.index, 0x6A1, spec.photo]))
    if spec.mode != "RGB":
        img = img.convert(spec.mode)

    buf = io.BytesIO()
    if spec.fmt == "PNG":
        img.save(buf, "PNG")
    else:
        kw = {"quality": spec.quality, "progressive": spec.progressive}
        if spec.mode != "L":
            kw["subsampling"] = spec.subsampling
        img.save(buf, "JPEG", **kw)
    return buf.getvalue()


_worker_photos = None


def _init_worker(photos_dir: str):
    global _worker_photos
    _worker_photos = load_photos(Path(photos_dir))


def _write_one(args):
    spec, out = args
    data = render(spec, _worker_photos)
    path = Path(out) / spec.relpath
    path.write_bytes(data)
    return spec.index


def estimate_quality(qtable) -> tuple:
    """estimate_quality returns (quality, exact) for a JPEG luminance table.

    The table is compared as a sorted multiset against libjpeg's Annex K table scaled
    for each quality, so the zigzag-or-natural order PIL reports does not matter.
    """
    got = sorted(int(v) for v in qtable)
    best, best_err = 0, None
    for q in range(1, 101):
        scale = 5000 // q if q < 50 else 200 - 2 * q
        want = sorted(min(255, max(1, (b * scale + 50) // 100)) for b in _STD_LUMA)
        err = sum(abs(a - b) for a, b in zip(got, want))
        if best_err is None or err < best_err:
            best, best_err = q, err
    return best, best_err == 0


def _image_files(root: Path) -> list:
    return sorted(p for d in sorted(root.iterdir()) if d.is_dir()
                  for p in sorted(d.iterdir()) if p.is_file())


def measure(root) -> dict:
    """measure reads back every file under root and returns the tree's statistics."""
    from PIL import Image, JpegImagePlugin

    root = Path(root)
    files = _image_files(root)
    if not files:
        raise DatasetError(f"{root}: no images found in its class directories")
    widths, heights, sizes = [], [], []
    quality = {}
    sampling = {name: 0 for name in SUBSAMPLING_NAMES.values()}
    counts = {"gray": 0, "progressive": 0, "cmyk": 0, "huge": 0, "png": 0,
              "nonstandard_tables": 0}
    for p in files:
        sizes.append(p.stat().st_size)
        with Image.open(p) as im:
            w, h = im.size
            widths.append(w)
            heights.append(h)
            if max(w, h) >= HUGE_MIN_SIDE:
                counts["huge"] += 1
            if im.format == "PNG":
                counts["png"] += 1
                continue
            if im.mode == "L":
                counts["gray"] += 1
            elif im.mode == "CMYK":
                counts["cmyk"] += 1
            if im.info.get("progressive") or im.info.get("progression"):
                counts["progressive"] += 1
            ss = JpegImagePlugin.get_sampling(im)
            if ss in SUBSAMPLING_NAMES and im.mode == "RGB":
                sampling[SUBSAMPLING_NAMES[ss]] += 1
            q, exact = estimate_quality(im.quantization[0])
            if not exact:
                counts["nonstandard_tables"] += 1
            quality[q] = quality.get(q, 0) + 1
    n = len(files)
    return {
        "count": n,
        "classes": sum(1 for d in root.iterdir() if d.is_dir()),
        "mean_width": statistics.fmean(widths),
        "mean_height": statistics.fmean(heights),
        "median_width": statistics.median(widths),
        "median_height": statistics.median(heights),
        "mean_kb": statistics.fmean(sizes) / 1000,
        "median_kb": statistics.median(sizes) / 1000,
        "total_mb": sum(sizes) / 1e6,
        "quality": {str(q): quality[q] for q in sorted(quality)},
        "subsampling": sampling,
        **counts,
    }


def format_stats(s: dict) -> str:
    """format_stats renders measure()'s statistics as a few aligned lines."""
    q = {int(k): v for k, v in s["quality"].items()}
    jpegs = sum(q.values()) or 1
    in_band = sum(v for k, v in q.items() if 90 <= k <= 96)
    hist = "  ".join(f"{k}:{v}" for k, v in sorted(q.items()) if 90 <= k <= 96)
    low = sum(v for k, v in q.items() if k < 90)
    high = sum(v for k, v in q.items() if k > 96)
    colour = sum(s["subsampling"].values()) or 1
    chroma = "  ".join(f"{name} {100 * v / colour:.1f}%"
                       for name, v in s["subsampling"].items())
    return "\n".join([
        f"  images      {s['count']} in {s['classes']} classes",
        f"  size        mean {s['mean_width']:.0f}x{s['mean_height']:.0f}, "
        f"median {s['median_width']:.0f}x{s['median_height']:.0f}, "
        f"{s['huge']} huge (>= {HUGE_MIN_SIDE} px)",
        f"  file size   mean {s['mean_kb']:.1f} KB, median {s['median_kb']:.1f} KB, "
        f"total {s['total_mb']:.1f} MB",
        f"  quality     {100 * in_band / jpegs:.0f}% in 90-96 ({hist}); "
        f"<90: {low}, >96: {high}",
        f"  chroma      {chroma} (of colour JPEGs)",
        f"  kinds       gray {s['gray']}, progressive {s['progressive']}, "
        f"CMYK {s['cmyk']}, PNG named .JPEG {s['png']}",
    ])


def _params(photos_dir: Path, n: int, classes: int, seed: int, scale: float) -> dict:
    photos = sorted((p.name, p.stat().st_size) for p in Path(photos_dir).iterdir()
                    if p.suffix.lower() in PHOTO_SUFFIXES)
    return {"version": GENERATOR_VERSION, "n": n, "classes": classes, "seed": seed,
            "scale": scale, "photos": photos}


def read_stamp(out) -> dict | None:
    """read_stamp returns the parameters and statistics a finished tree was built with."""
    try:
        return json.loads((Path(out) / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return None


def build(out, photos_dir=None, n: int = 1000, classes: int = 10, seed: int = 0,
          scale: float = 1.0, jobs: int | None = None, force: bool = False,
          progress=None) -> dict:
    """build writes the tree under out and returns its measured statistics.

    The tree is written next to out and renamed into place when complete, so an
    interrupted run never leaves a half-built tree that looks finished.
    """
    out = Path(out)
    photos_dir = Path(photos_dir) if photos_dir else DEFAULT_PHOTOS
    photos = load_photos(photos_dir)
    specs = plan(n, classes, seed, [p.size for p in photos], scale)
    if out.exists() and not force and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(f"{out}: exists and is not empty; pass --force to replace it")

    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        for c in range(classes):
            (tmp / f"class_{c:03d}").mkdir(parents=True)
        jobs = max(1, jobs or os.cpu_count() or 1)
        # Huge images first: they take longest, so they should not be the stragglers.
        work = sorted(specs, key=lambda s: -s.width * s.height)
        done = 0
        if jobs == 1:
            _init_worker(str(photos_dir))
            results = map(_write_one, ((s, str(tmp)) for s in work))
            pool = None
        else:
            # spawn, not fork: a caller may have loaded godali, whose Go runtime does not
            # survive fork().
            pool = multiprocessing.get_context("spawn").Pool(
                jobs, initializer=_init_worker, initargs=(str(photos_dir),))
            results = pool.imap_unordered(_write_one, ((s, str(tmp)) for s in work),
                                          chunksize=4)
        try:
            for _ in results:
                done += 1
                if progress:
                    progress(done, n)
        finally:
            if pool is not None:
                pool.close()
                pool.join()
        stats = measure(tmp)
        stamp = {"params": _params(photos_dir, n, classes, seed, scale), "stats": stats,
                 "specs": [asdict(s) for s in specs]}
        (tmp / STAMP_NAME).write_text(json.dumps(stamp, indent=1))
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return stats


def ensure(out, photos_dir=None, n: int = 1000, classes: int = 10, seed: int = 0,
           scale: float = 1.0, jobs: int | None = None, progress=None) -> tuple:
    """ensure builds the tree unless out already holds one built with these parameters.

    Returns (stats, built) where built says whether it had to be (re)built.
    """
    photos_dir = Path(photos_dir) if photos_dir else DEFAULT_PHOTOS
    stamp = read_stamp(out)
    if stamp and stamp.get("params") == json.loads(
            json.dumps(_params(photos_dir, n, classes, seed, scale))):
        return stamp["stats"], False
    stats = build(out, photos_dir, n, classes, seed, scale, jobs, force=True,
                  progress=progress)
    return stats, True


def _progress_bar(done: int, total: int):
    width = 30
    fill = width * done // total
    sys.stderr.write(f"\r  [{'#' * fill}{'.' * (width - fill)}] {done}/{total}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m godali_tools.make_dataset",
        description="Build an ImageFolder tree (OUT/class_xxx/*.JPEG) whose statistics "
                    "follow ImageNet's, cut from real photographs.")
    ap.add_argument("out", help="directory to create")
    ap.add_argument("--photos", help="directory of source photographs "
                    f"(default: the ones shipped in {DEFAULT_PHOTOS})")
    ap.add_argument("--n", type=int, default=1000, help="number of images (1000)")
    ap.add_argument("--classes", type=int, default=10, help="number of classes (10)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (0)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every image's size by this (huge ones stay at most "
                         f"{HUGE_MAX_SIDE} px): 0.3 gives thumbnails, 4 large photographs "
                         "(1.0)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="processes to encode with (all cores); does not change the output")
    ap.add_argument("--force", action="store_true", help="replace OUT if it exists")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    try:
        stats = build(args.out, args.photos, args.n, args.classes, args.seed, args.scale,
                      args.jobs, args.force,
                      progress=_progress_bar if sys.stderr.isatty() else None)
    except DatasetError as e:
        print(f"make_dataset: {e}", file=sys.stderr)
        return 2
    print(f"built {args.out} in {time.perf_counter() - t0:.1f} s")
    print(format_stats(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
