"""DALI 2.4's CPU image decoders as the oracle of godali's: real-world files through both.

Not part of the shipped package; the companion of oracle.py (same protocol: each
implementation runs every case in a process of its own and pickles what it got, then
`compare` matches them). A case is one decoding configuration (an operator and its
arguments: output_type, dtype, use_fast_idct, jpeg_fancy_upsampling, adjust_orientation,
crop windows, slice anchors/shapes, peek_image_shape's) applied to one file: every image
of the real-world corpus (/work/shared/testdata/images, GODALI_TESTDATA_IMAGES moves it:
Pillow's and libjpeg-turbo's test images, broken ones included) and a few of the bench's
photographs (~/.cache/godali/bench-data, where present). Each file goes through its own
pipeline run (batch 1), so that a file one side refuses only costs that case.

DALI's decoders need nvImageCodec on the loader path (sidebyside.dali_env gives it):

    LD_LIBRARY_PATH=/usr/local/lib/godali-dali/nvidia/nvimgcodec \\
      PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/decsweep.py run dali OUT_D [--quick]
    PYTHONPATH=python python3 tests/compat/decsweep.py run godali OUT_G [--quick]
    python3 tests/compat/decsweep.py compare OUT_D OUT_G [--quick] [--all]

Per case `compare` says:

  same        same shape, dtype and values
  differs     same shape and dtype, values differ (max |difference|, % of values that do)
  shape       the shape or dtype differs
  both-fail   both refuse the file (the messages are printed with --all)
  dali-fails / godali-fails   one refuses what the other decodes (with the message)

The random-crop case with DALI's default distribution draws from each side's own random
stream, so there only the type, the channels and that the window lies inside the image are
compared ("same" when they hold). `make oracle-decoders` runs the full sweep;
tests/compat/test_decsweep.py runs the `--quick` one (a few files and configurations) in
`make test`.
"""

import glob
import json
import os
import sys

import numpy as np

import records

IMAGES = os.environ.get("GODALI_TESTDATA_IMAGES", "/work/shared/testdata/images")
BENCH = os.environ.get("GODALI_BENCH_DATA", os.path.expanduser("~/.cache/godali/bench-data"))
N_PHOTOS = 6  # bench photographs: one from each of the first classes
CHUNK_TIMEOUT = 300  # seconds one child process may take over its files

T = "types."  # a value that names a member of DALI's/godali's types module

# (id, operator, arguments, extra inputs (anchor, shape) or None)
CONFIGS = [
    ("image", "decoders.image", {}, None),
    ("image-bgr", "decoders.image", {"output_type": T + "BGR"}, None),
    ("image-gray", "decoders.image", {"output_type": T + "GRAY"}, None),
    ("image-ycbcr", "decoders.image", {"output_type": T + "YCbCr"}, None),
    ("image-any", "decoders.image", {"output_type": T + "ANY_DATA"}, None),
    ("image-u16", "decoders.image", {"dtype": T + "UINT16"}, None),
    ("image-any-u16", "decoders.image", {"output_type": T + "ANY_DATA", "dtype": T + "UINT16"}, None),
    ("image-f32", "decoders.image", {"dtype": T + "FLOAT"}, None),
    ("image-gray-f32", "decoders.image", {"output_type": T + "GRAY", "dtype": T + "FLOAT"}, None),
    ("image-i16", "decoders.image", {"dtype": T + "INT16"}, None),
    ("image-fastidct", "decoders.image", {"use_fast_idct": True}, None),
    ("image-fancy", "decoders.image", {"jpeg_fancy_upsampling": True}, None),
    ("image-noorient", "decoders.image", {"adjust_orientation": False}, None),
    ("exp-image", "experimental.decoders.image", {}, None),
    ("exp-image-u16", "experimental.decoders.image", {"dtype": T + "UINT16"}, None),
    ("crop", "decoders.image_crop", {"crop": (8, 10), "crop_pos_x": 0.3, "crop_pos_y": 0.7}, None),
    ("crop-hw", "decoders.image_crop", {"crop_h": 5, "crop_w": 3, "crop_pos_x": 1.0, "crop_pos_y": 0.0}, None),
    ("crop-noorient", "decoders.image_crop", {"crop": (8, 10), "crop_pos_x": 0.3, "crop_pos_y": 0.7,
                                              "adjust_orientation": False}, None),
    ("crop-gray", "decoders.image_crop", {"crop": (8, 10), "output_type": T + "GRAY"}, None),
    ("slice-rel", "decoders.image_slice", {"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.6)}, None),
    ("slice-in-norm", "decoders.image_slice", {}, ((0.25, 0.1), (0.5, 0.5))),
    ("slice-in-abs", "decoders.image_slice", {"normalized_anchor": False, "normalized_shape": False},
     ((1, 2), (3, 4))),
    ("slice-pad", "decoders.image_slice", {"rel_start": (-0.1, -0.1), "rel_shape": (1.2, 1.2),
                                           "out_of_bounds_policy": "pad", "fill_values": 7}, None),
    ("slice-gray", "decoders.image_slice", {"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.6),
                                            "output_type": T + "GRAY"}, None),
    # area 1 and an aspect ratio no image has (9.9..10): every attempt fails and both fall
    # back to the whole width at the range's edge: the size is DALI's rule, the position
    # is drawn (sizes compared, and each side's pixels found in its own whole decode)
    ("rcrop-full", "decoders.image_random_crop", {"random_area": (1.0, 1.0),
                                                  "random_aspect_ratio": (9.9, 10.0), "seed": 7}, None),
    ("rcrop-seeded", "decoders.image_random_crop", {"seed": 42}, None),  # windows compared only
    ("peek", "peek_image_shape", {}, None),
    ("peek-noorient", "peek_image_shape", {"adjust_orientation": False}, None),
    ("peek-gray-i32", "peek_image_shape", {"image_type": T + "GRAY", "dtype": T + "INT32"}, None),
]
RANDOM_WINDOWS = {"rcrop-seeded"}
RANDOM_PLACES = {"rcrop-full"}
QUICK_CONFIGS = ["image", "image-gray", "image-u16", "image-fastidct", "image-noorient", "crop",
                 "slice-rel", "rcrop-full", "peek"]
QUICK_FILES = ["pillow/hopper.jpg", "pillow/hopper_orientation_6.jpg", "pillow/hopper_gray.jpg",
               "pillow/pil_sample_cmyk.jpg", "pillow/hopper.png", "pillow/hopper_rle8.bmp",
               "pillow/truncated_jpeg.jpg", "libjpeg-turbo/testimgari.jpg"]


def _png16(path, samples):
    """A 16-bit PNG (grey, RGB or RGBA by the last axis) written by hand (PIL writes
    16-bit grey only)."""
    import struct
    import zlib
    h, w, c = samples.shape
    raw = b"".join(b"\0" + samples[y].astype(">u2").tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, {1: 0, 3: 2, 4: 6}[c], 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def generated(out_dir):
    """What the corpus lacks, made here (the same bytes in both runs): 16-bit PNGs,
    alpha, grey+alpha, palette, and EXIF orientation 6 in PNG, TIFF, JPEG and WebP."""
    from PIL import Image
    d = os.path.join(out_dir, "gen")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:24, 0:40]
    rgb = np.stack([x * 6, y * 10, (x + y) * 4], -1).astype(np.uint8)
    out = []

    def add(name, save):
        path = os.path.join(d, name)
        save(path)
        out.append(("gen/" + name, path))
    for c in (1, 3, 4):
        add("png16-%d.png" % c, lambda p, c=c: _png16(p, rng.integers(0, 65536, (24, 40, c), dtype=np.uint16)))
    add("rgba.png", lambda p: Image.fromarray(np.dstack([rgb, rgb[..., 0]])).save(p))
    add("la.png", lambda p: Image.fromarray(np.dstack([rgb[..., 1], rgb[..., 0]])).convert("LA").save(p))
    add("palette.png", lambda p: Image.fromarray(rgb).convert("P").save(p))
    add("gray16.tif", lambda p: Image.fromarray((rgb[..., 0].astype(np.uint16) * 211)).save(p))
    exif = Image.Exif()
    exif[0x0112] = 6
    for ext, kw in (("png", {}), ("tif", {}), ("jpg", {"quality": 90}), ("webp", {"quality": 90})):
        add("orient6." + ext, lambda p, kw=kw: Image.fromarray(rgb).save(p, exif=exif, **kw))
    return out


def files(quick=False, out_dir=None):
    """The files of the sweep: (name, path), names relative to the corpus (bench photos
    as bench/<class>/<file>, generated ones as gen/<file>, made under out_dir)."""
    if quick:
        names = QUICK_FILES
    else:
        names = sorted(os.path.relpath(p, IMAGES) for p in glob.glob(os.path.join(IMAGES, "*", "*"))
                       if os.path.isfile(p) and not os.path.basename(p).startswith(("LICENSE", "README")))
    out = [(n, os.path.join(IMAGES, n)) for n in names if os.path.isfile(os.path.join(IMAGES, n))]
    if not quick:
        for cls in sorted(glob.glob(os.path.join(BENCH, "class_*")))[:N_PHOTOS]:
            photos = sorted(glob.glob(os.path.join(cls, "*")))
            if photos:
                out.append(("bench/" + os.path.relpath(photos[0], BENCH), photos[0]))
    if out_dir is not None:
        out += generated(out_dir)
    return out


def configs(quick=False):
    return [c for c in CONFIGS if not quick or c[0] in QUICK_CONFIGS]


def _resolve(types, v):
    if isinstance(v, str) and v.startswith(T):
        return getattr(types, v[len(T):])
    return v


# --- running -------------------------------------------------------------------------------

def run(impl, out_dir, quick=False):
    """Runs every configuration in child processes (run_chunk), each file's result
    streamed to disk as it comes: a file that kills the process (DALI 2.4 segfaults on
    some) is recorded as a crash, and the next child goes on after it."""
    import subprocess
    os.makedirs(out_dir, exist_ok=True)
    fl = files(quick, out_dir)
    n = len(fl)
    results = {}
    for cid, _, _, _ in configs(quick):
        start = 0
        while start < n:
            stream = os.path.join(out_dir, "stream-%s-%d.pkl" % (cid, start))
            argv = [sys.executable, os.path.abspath(__file__), "chunk", impl, stream, cid, str(start)]
            try:
                p = subprocess.run(argv + (["--quick"] if quick else []), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, timeout=CHUNK_TIMEOUT)
            except subprocess.TimeoutExpired as e:  # a decode that hangs: recorded as a crash
                p = subprocess.CompletedProcess(argv, -9, stderr="timed out after %ds %s" % (
                    CHUNK_TIMEOUT, (e.stderr or b"").decode(errors="replace")))
            got = _read_stream(stream)
            results.update(got)
            done = max([i for i, (nm, _) in enumerate(fl) if (cid, nm) in got] + [start - 1])
            if p.returncode == 0 and done == n - 1:
                break
            if done + 1 < n:  # the file after the last one recorded killed the process
                name = fl[done + 1][0]
                results[(cid, name)] = {"error": "Crash", "message": "the %s process died (exit status %d) "
                                        "decoding it: %s" % (impl, p.returncode, " ".join(p.stderr.split()[-30:]))}
            start = done + 2
    records.save_results(out_dir, results)
    print("decsweep: %s ran %d cases -> %s" % (impl, len(results), out_dir))


def _read_stream(path):
    import pickle
    out = {}
    if os.path.exists(path):
        with open(path, "rb") as fh:
            while True:
                try:
                    k, v = pickle.load(fh)
                except (EOFError, pickle.UnpicklingError):
                    break
                out[k] = v
        os.remove(path)
    return out


def run_chunk(impl, stream, cid, start, quick=False):
    """One configuration over the files from start on, each result appended to stream."""
    import pickle
    if impl == "dali":
        import nvidia.dali as lib
        from nvidia.dali import fn, types
    else:
        import godali as lib
        from godali import fn, types
    _, op, args, extra = [c for c in configs(quick) if c[0] == cid][0]
    kw = {k: _resolve(types, v) for k, v in args.items()}
    f = fn
    for part in op.split("."):
        f = getattr(f, part)
    with open(stream, "wb") as out:
        for name, path in files(quick, os.path.dirname(stream))[start:]:
            with open(path, "rb") as fh:
                data = np.frombuffer(fh.read(), np.uint8)
            if os.environ.get("GODALI_DECSWEEP_TRACE"):
                print("decsweep: %s %s" % (cid, name), file=sys.stderr, flush=True)
            pipe = None
            try:
                pipe = lib.Pipeline(batch_size=1, num_threads=1, device_id=None, seed=11,
                                    prefetch_queue_depth=1)
                with pipe:
                    src = fn.external_source(source=(lambda d: (lambda: [d]))(data), batch=True)
                    ins = [src]
                    for v in extra or ():
                        arr = np.array(v, np.float32)
                        ins.append(fn.external_source(source=(lambda a: (lambda: [a]))(arr), batch=True))
                    pipe.set_outputs(f(*ins, **kw))
                pipe.build()
                got = pipe.run()
                rec = {"ok": np.array(got[0].as_cpu()[0])}
            except Exception as e:
                rec = records.error_record(e)
            finally:
                del pipe
            pickle.dump(((cid, name), rec), out)
            out.flush()


# --- comparing -----------------------------------------------------------------------------

def _window_ok(x, full):
    """A random crop's output x against the same side's whole decode full."""
    if full is None or "ok" not in full:
        return "the whole image did not decode"
    h, w = full["ok"].shape[:2]
    if x.ndim != 3 or x.shape[2] != full["ok"].shape[2] or x.dtype != full["ok"].dtype:
        return "shape %s %s vs whole image %s %s" % (x.shape, x.dtype, full["ok"].shape, full["ok"].dtype)
    if not (1 <= x.shape[0] <= h and 1 <= x.shape[1] <= w):
        return "window %dx%d outside the %dx%d image" % (x.shape[0], x.shape[1], h, w)
    return None


def _placed(x, full):
    """Whether x is a window of the same side's whole decode full (at some position)."""
    if full is None or "ok" not in full:
        return False
    f = full["ok"]
    h, w = x.shape[:2]
    for y0 in range(f.shape[0] - h + 1):
        for x0 in range(f.shape[1] - w + 1):
            if np.array_equal(f[y0:y0 + h, x0:x0 + w], x):
                return True
    return False


def _short(rec):
    """The error's type and its own words (what follows the pipeline's frame)."""
    msg = rec["message"]
    for mark in ("encountered: ", "Current pipeline object is no longer valid. "):
        if mark in msg:
            msg = msg.split(mark, 1)[1]
    return "%s: %s" % (rec["error"], msg[:300])


def compare(dali_dir, godali_dir, quick=False):
    """Rows (config, file, status, detail), in the sweep's order."""
    a, b = records.load_results(dali_dir, godali_dir)
    rows = []
    for cid, op, args, extra in configs(quick):
        for name, _ in files(quick, godali_dir):
            x, y = a.get((cid, name)), b.get((cid, name))
            if x is None or y is None:
                continue
            if "error" in x or "error" in y:
                if "error" in x and "error" in y:
                    rows.append((cid, name, "both-fail", "DALI %s | godali %s" % (_short(x), _short(y))))
                elif "error" in x:
                    rows.append((cid, name, "dali-fails", _short(x)))
                else:
                    rows.append((cid, name, "godali-fails", _short(y)))
                continue
            p, q = x["ok"], y["ok"]
            if cid in RANDOM_WINDOWS:
                why = _window_ok(p, a.get(("image", name))) or _window_ok(q, b.get(("image", name)))
                rows.append((cid, name, "shape" if why else "same", why or ""))
                continue
            if cid in RANDOM_PLACES and p.shape == q.shape and p.dtype == q.dtype:
                bad = [who for who, v, r in (("DALI", p, a), ("godali", q, b)) if not _placed(v, r.get(("image", name)))]
                rows.append((cid, name, "differs" if bad else "same",
                             "%s window not found in its whole decode" % " and ".join(bad) if bad else ""))
                continue
            if p.shape != q.shape or p.dtype != q.dtype:
                rows.append((cid, name, "shape", "DALI %s %s, godali %s %s" % (p.shape, p.dtype, q.shape, q.dtype)))
                continue
            d = np.abs(p.astype(np.float64) - q.astype(np.float64))
            if d.size == 0 or d.max() == 0:
                rows.append((cid, name, "same", ""))
            else:
                rows.append((cid, name, "differs", "%s: max |difference| %.4g, mean %.3g, %.2f%% of values differ" % (
                    p.shape, d.max(), d.mean(), 100 * (d > 0).mean())))
    return rows


STATUSES = ("same", "differs", "shape", "both-fail", "dali-fails", "godali-fails")


def summary(rows):
    return {s: sum(1 for r in rows if r[2] == s) for s in STATUSES}


def report(rows, all_rows=False):
    for cid, name, status, why in rows:
        if status != "same" and (all_rows or status != "both-fail"):
            print("%-15s %-44s %-12s %s" % (cid, name, status, " ".join(why.split())[:300]))
    by_cfg = {}
    for cid, _, status, _ in rows:
        by_cfg.setdefault(cid, dict.fromkeys(STATUSES, 0))[status] += 1
    print("\n%-15s %s" % ("config", " ".join("%12s" % s for s in STATUSES)))
    for cid, n in by_cfg.items():
        print("%-15s %s" % (cid, " ".join("%12d" % n[s] for s in STATUSES)))
    n = summary(rows)
    print("decsweep: %d cases: %s" % (len(rows), ", ".join("%d %s" % (n[s], s) for s in STATUSES)))


def main(argv):
    quick = "--quick" in argv
    all_rows = "--all" in argv
    argv = [a for a in argv if a not in ("--quick", "--all")]
    if len(argv) == 5 and argv[0] == "chunk":
        run_chunk(argv[1], argv[2], argv[3], int(argv[4]), quick)
    elif len(argv) == 3 and argv[0] == "run":
        run(argv[1], argv[2], quick)
    elif len(argv) == 3 and argv[0] == "compare":
        rows = compare(argv[1], argv[2], quick)
        report(rows, all_rows)
        with open(os.path.join(argv[2], "..", "decsweep.json"), "w") as fh:
            json.dump({"summary": summary(rows), "rows": rows}, fh, indent=0)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
