"""DALI 2.4 as a differential oracle: the same pipelines through DALI and godali.

Not part of the shipped package. Each case is one operator call on generated data, fed
through external_source: its arguments are drawn (with a fixed seed) from per-operator
argument spaces written from DALI's documentation, around DALI's defaults. Each
implementation runs every case in a process of its own (DALI and godali are never
imported together) and writes what it got (the outputs, or the exception's type and
message); `compare` then matches them with the case's tolerance and says, per case:

  same       both gave the same outputs (within the tolerance)
  differs    both gave outputs, and they differ (max difference given)
  error      one refused what the other ran (both refusing is "same")

    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/oracle.py run dali OUT_DALI
    PYTHONPATH=python python3 tests/compat/oracle.py run godali OUT_GODALI
    python3 tests/compat/oracle.py compare OUT_DALI OUT_GODALI

`tests/compat/test_oracle.py` runs a bounded sweep (the `quick` cases) in `make test`
when DALI is installed; `make oracle` runs every case.
"""

import json
import os
import sys

import numpy as np

import records

SEED = 2024


# --- inputs ------------------------------------------------------------------------------

def _images(rng, n=3, channels=3, dtype=np.uint8):
    out = []
    for i in range(n):
        h, w = int(rng.integers(9, 40)), int(rng.integers(9, 40))
        if dtype == np.uint8:
            out.append(rng.integers(0, 256, (h, w, channels), dtype=np.uint8))
        else:
            out.append(rng.random((h, w, channels), dtype=np.float32) * 255)
    return out


def _smooth_images(rng, n=3):
    """Photograph-like (smooth gradients plus a little noise): filters with rounding at
    exact halves would disagree on pure noise for reasons of no interest."""
    out = []
    for i in range(n):
        h, w = int(rng.integers(12, 40)), int(rng.integers(12, 40))
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 / max(w - 1, 1)), (y * 255 / max(h - 1, 1)),
                         ((x + y) * 127 / max(h + w - 2, 1))], -1)
        img = np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)
        out.append(img)
    return out


INPUTS = {
    "img": lambda rng: (_images(rng), "HWC"),
    "smooth": lambda rng: (_smooth_images(rng), "HWC"),
    "gray": lambda rng: (_images(rng, channels=1), "HWC"),
    "imgf": lambda rng: (_images(rng, dtype=np.float32), "HWC"),
    "mat": lambda rng: ([rng.random((int(rng.integers(2, 7)), int(rng.integers(2, 7))),
                                    dtype=np.float32) * 10 - 5 for _ in range(3)], None),
    "vec": lambda rng: ([rng.random((int(rng.integers(1, 9)),), dtype=np.float32) * 10 - 5
                         for _ in range(3)], None),
    "ints": lambda rng: ([rng.integers(0, 10, (int(rng.integers(1, 9)),), dtype=np.int32)
                          for _ in range(3)], None),
    "boxes": lambda rng: ([np.sort(rng.random((int(rng.integers(1, 5)), 4), dtype=np.float32)
                                   .reshape(-1, 2, 2), axis=1).reshape(-1, 4)
                           for _ in range(3)], None),
    "bayer": lambda rng: ([rng.integers(0, 256, (2 * int(rng.integers(1, 20)),
                                                 2 * int(rng.integers(1, 20))), dtype=np.uint8)
                           for _ in range(3)], "HW"),
    "bayer16": lambda rng: ([rng.integers(0, 65536, (2 * int(rng.integers(1, 20)),
                                                     2 * int(rng.integers(1, 20))),
                                          dtype=np.uint16) for _ in range(3)], "HW"),
    "none": lambda rng: (None, None),
}


# --- the cases ---------------------------------------------------------------------------
# (operator, input kind, {argument: [values]}, tolerance in the output's units). The sweep
# takes the call with no argument, then each argument's values one at a time, then a few
# random combinations of all of them.

T = "types."  # a value "types.X" is DALI's/godali's types.X
# DALI's own resize tests against PIL allow a mean of 0.4 and a maximum of 10 levels
# (godali's linear/triangular resize follows PIL's): the same here.
RESIZE_TOL = (10, 0.4)

SPACES = [
    ("brightness", "img", {"brightness": [0.5, 1.7], "brightness_shift": [0.1, -0.2],
                           "dtype": [T + "FLOAT", T + "INT16"]}, 1),
    ("contrast", "img", {"contrast": [0.3, 1.8], "contrast_center": [64.0, 200.0]}, 1),
    ("brightness_contrast", "img", {"brightness": [0.8], "contrast": [1.5],
                                    "brightness_shift": [0.1]}, 1),
    ("hue", "img", {"hue": [30.0, -75.0, 180.0]}, 1),
    ("saturation", "img", {"saturation": [0.0, 0.4, 1.6]}, 1),
    ("hsv", "img", {"hue": [20.0], "saturation": [0.5, 1.3], "value": [0.7, 1.2]}, 1),
    ("color_twist", "img", {"hue": [45.0], "saturation": [0.5], "contrast": [1.2],
                            "brightness": [0.9]}, 1),
    ("flip", "img", {"horizontal": [0, 1], "vertical": [0, 1]}, 0),
    ("crop", "img", {"crop": [[8, 6], [5, 5]], "crop_pos_x": [0.0, 0.3, 1.0],
                     "crop_pos_y": [0.0, 0.7, 1.0]}, 0),
    ("crop", "img", {"crop": [[60, 50]], "out_of_bounds_policy": ["pad", "trim_to_shape"],
                     "fill_values": [0, 77]}, 0),
    ("crop_mirror_normalize", "img", {
        "crop": [[8, 8], [7, 9]], "mirror": [0, 1], "output_layout": ["CHW", "HWC"],
        "mean": [[10.0, 20.0, 30.0], 100.0], "std": [[2.0, 3.0, 4.0], 50.0],
        "dtype": [T + "FLOAT", T + "UINT8", T + "FLOAT16"], "pad_output": [True],
        "scale": [2.0], "shift": [10.0]}, 0.01),
    ("resize", "smooth", {
        "resize_x": [20.0, 7.0], "resize_y": [15.0, 33.0], "interp_type": [
            T + "INTERP_NN", T + "INTERP_LINEAR", T + "INTERP_CUBIC", T + "INTERP_LANCZOS3",
            T + "INTERP_TRIANGULAR"], "antialias": [False]}, RESIZE_TOL),
    ("resize", "smooth", {"resize_shorter": [16.0, 50.0], "max_size": [30.0],
                          "mode": ["not_larger", "not_smaller", "stretch"]}, RESIZE_TOL),
    ("resize", "smooth", {"size": [[20, 10]], "mode": ["not_larger", "not_smaller"]},
     RESIZE_TOL),
    ("rotate", "smooth", {"angle": [30.0, 90.0, -45.0, 180.0], "keep_size": [True],
                          "fill_value": [0.0, 200.0],
                          "interp_type": [T + "INTERP_NN", T + "INTERP_LINEAR"]}, 1),
    ("warp_affine", "smooth", {"matrix": [[1.0, 0.2, 1.0, 0.1, 0.9, -2.0]],
                               "size": [[20.0, 25.0]], "fill_value": [0.0, 50.0],
                               "inverse_map": [False],
                               "interp_type": [T + "INTERP_NN", T + "INTERP_LINEAR"]}, 1),
    ("gaussian_blur", "img", {"sigma": [0.8, 2.0], "window_size": [3, 7]}, 1),
    ("laplacian", "imgf", {"window_size": [3, 5], "normalized_kernel": [True],
                           "scale": [0.5]}, 0.01),
    ("erase", "img", {"anchor": [[2.0, 3.0]], "shape": [[4.0, 5.0]],
                      "axis_names": ["HW"], "fill_value": [0.0, 128.0]}, 0),
    ("pad", "img", {"fill_value": [0.0, 9.0], "axes": [[0, 1]], "shape": [[50, 50]],
                    "align": [[8, 8]]}, 0),
    ("slice", "img", {"rel_start": [[0.1, 0.2]], "rel_shape": [[0.5, 0.5]],
                      "axis_names": ["HW"], "out_of_bounds_policy": ["error", "pad"]}, 0),
    ("transpose", "img", {"perm": [[2, 0, 1], [1, 0, 2]], "transpose_layout": [False]}, 0),
    ("normalize", "imgf", {"axes": [[0, 1], [2]], "scale": [2.0], "shift": [5.0],
                           "epsilon": [0.5]}, 1e-3),
    ("normalize", "mat", {"mean": [1.0], "stddev": [2.0], "batch": [True]}, 1e-4),
    ("cast", "imgf", {"dtype": [T + "UINT8", T + "INT16", T + "FLOAT16", T + "INT32"]}, 0),
    ("color_space_conversion", "img", {"image_type": [T + "RGB"], "output_type": [
        T + "BGR", T + "GRAY", T + "YCbCr"]}, 1),
    ("water", "smooth", {"ampl_x": [4.0], "freq_y": [0.5], "phase_x": [1.0],
                         "interp_type": [T + "INTERP_NN"]}, 1),
    ("sphere", "smooth", {"interp_type": [T + "INTERP_NN", T + "INTERP_LINEAR"]}, 1),
    ("equalize", "img", {}, 0),
    ("reductions.sum", "imgf", {"axes": [[0], [0, 1], [2]], "keep_dims": [True]}, 0.5),
    ("reductions.mean", "imgf", {"axes": [[0], [0, 1]], "keep_dims": [True]}, 1e-3),
    ("reductions.max", "imgf", {"axes": [[1], [0, 1]]}, 0),
    ("reductions.min", "mat", {"axes": [[0], [1]]}, 0),
    ("reductions.std_dev", "mat", {"axes": [[0], [1]], "ddof": [1]}, 1e-4),
    ("reductions.variance", "mat", {"axes": [[1]], "keep_dims": [True]}, 1e-4),
    ("reductions.rms", "mat", {"axes": [[0]]}, 1e-4),
    ("reductions.mean_square", "mat", {"axes": [[1]]}, 1e-4),
    ("one_hot", "ints", {"num_classes": [10, 12], "on_value": [2.0], "off_value": [-1.0],
                         "axis": [0, -1]}, 0),
    ("lookup_table", "ints", {"keys": [[1, 3, 5]], "values": [[10.0, 30.0, 50.0]],
                              "default_value": [-1.0]}, 0),
    ("reshape", "mat", {"rel_shape": [[-1]]}, 0),
    ("expand_dims", "mat", {"axes": [[0], [2]], "new_axis_names": ["A"]}, 0),
    ("grid_mask", "img", {"ratio": [0.3, 0.6], "tile": [8, 13], "angle": [0.0, 0.5],
                          "shift_x": [3.0], "shift_y": [2.0]}, 1),
    ("coord_flip", "boxes", {"flip_x": [0, 1], "flip_y": [1], "center_x": [0.3]}, 1e-5),
    ("bb_flip", "boxes", {"horizontal": [0, 1], "vertical": [1], "ltrb": [True]}, 1e-5),
    ("coord_transform", "mat", {"M": [[1.0, 2.0, -1.0, 0.5]], "T": [[1.0, 2.0]]}, 1e-4),
    ("debayer", "bayer", {"blue_position": [[0, 0], [0, 1], [1, 0], [1, 1]],
                          "algorithm": ["bilinear_ocv", "gray_ocv", "edgeaware_ocv"]}, 0),
    ("debayer", "bayer16", {"blue_position": [[1, 0]]}, 0),
    ("clahe", "gray", {"tiles_x": [1, 3, 8], "tiles_y": [2, 5], "clip_limit": [0.0, 1.0, 2.1, 40.0]},
     0),
    # luma_only: godali's 8-bit L*a*b* -> RGB is computed in float, OpenCV's in fixed point
    ("clahe", "img", {"luma_only": [True, False], "tiles_x": [4], "clip_limit": [3.0]}, (4, 0.2)),
    ("bbox_rotate", "boxes", {"angle": [30.0, 90.0, -45.0, 180.0], "mode": ["fixed", "halfway"],
                              "keep_size": [True], "remove_threshold": [0.0, 0.5],
                              "bbox_layout": ["xyWH"], "bbox_normalized": [False]}, 1e-5),
    ("transforms.rotation", "none", {"angle": [30.0, -90.0], "center": [[2.0, 3.0]]}, 1e-5),
    ("transforms.scale", "none", {"scale": [[2.0, 3.0]], "center": [[1.0, 1.0]]}, 1e-5),
    ("transforms.translation", "none", {"offset": [[2.0, -3.0]]}, 1e-5),
    ("transforms.shear", "none", {"shear": [[0.2, 0.1]], "angles": [[10.0, 5.0]]}, 1e-5),
    ("transforms.crop", "none", {"from_start": [[0.0, 0.0]], "from_end": [[1.0, 1.0]],
                                 "to_start": [[0.2, 0.2]], "to_end": [[0.5, 0.8]]}, 1e-5),
]

# Not compared: median_blur, dilate and erode (DALI has them for the GPU only; godali's
# CPU ones are compared with OpenCV in python/tests/test_ops_more.py), experimental.remap
# and decoders.inflate (GPU only in DALI; compared with cv2.remap and LZ4 in
# python/tests/test_ops_dali29.py), filter (a second input, the filter: compared with SciPy
# there), experimental.readers.video (needs video files: its sequences and padding are
# checked there against DALI 2.4's rule), and jpeg_compression_distortion (DALI's CPU one
# needs nvImageCodec, absent here).

# Arguments that must come together (without the first the second is an error in both).
REQUIRED = {
    "transforms.rotation": {"angle": 45.0},
    "transforms.scale": {"scale": [2.0, 2.0]},
    "transforms.translation": {"offset": [1.0, 1.0]},
    "one_hot": {"num_classes": 10},
    "lookup_table": {"keys": [1], "values": [5.0]},
    "reshape": {"rel_shape": [-1]},
    "expand_dims": {"axes": [0]},
    "coord_transform": {"M": [1.0, 0.0, 0.0, 1.0]},
    "crop": {"crop": [8, 8]},
    "erase": {"anchor": [1.0, 1.0], "shape": [2.0, 2.0], "axis_names": "HW"},
    "cast": {"dtype": T + "FLOAT"},
    "rotate": {"angle": 10.0},
    "warp_affine": {"matrix": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]},
    "color_space_conversion": {"image_type": T + "RGB", "output_type": T + "BGR"},
    "transpose": {"perm": [1, 0, 2]},
    "debayer": {"blue_position": [0, 0]},
    "clahe": {"tiles_x": 2, "tiles_y": 2, "clip_limit": 2.0},
    "bbox_rotate": {"angle": 10.0, "input_shape": [40, 60]},
}

# With a sigma and no window both compute the window; both give the same call.
QUICK_PER_OP = 4


def cases(quick=False):
    """Every case: (id, op, input kind, args, tolerance)."""
    rng = np.random.default_rng(SEED)
    out = []
    for k, (op, kind, space, tol) in enumerate(SPACES):
        base = dict(REQUIRED.get(op, {}))
        calls = [dict(base)]
        for arg, values in space.items():
            for v in values:
                c = dict(base)
                c[arg] = v
                calls.append(c)
        for _ in range(3):
            c = dict(base)
            for arg, values in space.items():
                if rng.random() < 0.5:
                    c[arg] = values[int(rng.integers(len(values)))]
            calls.append(c)
        seen = set()
        uniq = []
        for c in calls:
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                uniq.append(c)
        if quick:
            uniq = uniq[:QUICK_PER_OP]
        for i, c in enumerate(uniq):
            out.append(("%s/%d#%d" % (op, k, i), op, kind, c, tol))
    return out


# --- running -------------------------------------------------------------------------------

def _resolve(mod, types, v):
    if isinstance(v, str) and v.startswith(T):
        return getattr(types, v[len(T):])
    if isinstance(v, list):
        return [_resolve(mod, types, x) for x in v]
    return v


def run(impl, out_dir, quick=False):
    if impl == "dali":
        import nvidia.dali as lib
        from nvidia.dali import fn, types
    else:
        import godali as lib
        from godali import fn, types
    os.makedirs(out_dir, exist_ok=True)
    results = {}
    for cid, op, kind, args, tol in cases(quick):
        rng = np.random.default_rng(sum(map(ord, cid)) + SEED)
        data, layout = INPUTS[kind](rng)
        kw = {k: _resolve(lib, types, v) for k, v in args.items()}
        try:
            f = fn
            for part in op.split("."):
                f = getattr(f, part)
            pipe = lib.Pipeline(batch_size=3, num_threads=1, device_id=None, seed=SEED,
                                prefetch_queue_depth=1)
            with pipe:
                if data is None:
                    node = f(**kw)
                else:
                    src = fn.external_source(source=(lambda d: (lambda: d))(data),
                                             layout=layout, batch=True)
                    node = f(src, **kw)
                outs = node if isinstance(node, (list, tuple)) else [node]
                pipe.set_outputs(*outs)
            pipe.build()
            got = pipe.run()
            results[cid] = {"ok": [[np.array(t.as_cpu()[i]) for i in range(len(t))]
                                   for t in got]}
        except Exception as e:
            results[cid] = records.error_record(e)
        finally:
            try:
                del pipe
            except NameError:
                pass
    records.save_results(out_dir, results)
    print("oracle: %s ran %d cases -> %s" % (impl, len(results), out_dir))


def compare(dali_dir, godali_dir, quick=False, verbose=True):
    a, b = records.load_results(dali_dir, godali_dir)
    rows = []
    for cid, op, kind, args, tol in cases(quick):
        x, y = a.get(cid), b.get(cid)
        if x is None or y is None:
            continue
        if "error" in x or "error" in y:
            if "error" in x and "error" in y:
                rows.append((cid, "refused", "both refuse: DALI %s: %s | godali %s: %s" % (
                    x["error"], x["message"][:100], y["error"], y["message"][:100])))
            else:
                who = "godali refuses" if "error" in y else "DALI refuses"
                msg = (y if "error" in y else x)
                rows.append((cid, "error", "%s: %s: %s" % (who, msg["error"], msg["message"])))
            continue
        why = _diff(x["ok"], y["ok"], tol)
        rows.append((cid, "differs" if why else "same", why or ""))
    if verbose:
        for cid, status, why in rows:
            if status != "same":
                print("%-34s %-8s %s" % (cid, status, " ".join(why.split())[:260]))
        n = {s: sum(1 for r in rows if r[1] == s) for s in ("same", "differs", "error",
                                                            "refused")}
        print("oracle: %d cases: %d same, %d differ, %d refused by one side, %d by both" % (
            len(rows), n["same"], n["differs"], n["error"], n["refused"]))
    return rows


def _diff(xs, ys, tol):
    if len(xs) != len(ys):
        return "%d outputs vs %d" % (len(xs), len(ys))
    for k, (xo, yo) in enumerate(zip(xs, ys)):
        for i, (p, q) in enumerate(zip(xo, yo)):
            if p.shape != q.shape:
                return "output %d sample %d: shape %s vs %s" % (k, i, p.shape, q.shape)
            if p.dtype != q.dtype:
                return "output %d sample %d: dtype %s vs %s" % (k, i, p.dtype, q.dtype)
            if p.size == 0:
                continue
            d = np.abs(p.astype(np.float64) - q.astype(np.float64))
            tmax, tmean = tol if isinstance(tol, tuple) else (tol, None)
            if np.isnan(d).any() or d.max() > tmax or (tmean is not None and d.mean() > tmean):
                return "output %d sample %d: max difference %.4g, mean %.3g (tolerance %s), " \
                       "%.2f%% of values differ" % (k, i, np.nanmax(d), np.nanmean(d), tol,
                                                    100 * (d > 0).mean())
    return None


def main(argv):
    quick = "--quick" in argv
    argv = [a for a in argv if a != "--quick"]
    if len(argv) == 3 and argv[0] == "run":
        run(argv[1], argv[2], quick)
    elif len(argv) == 3 and argv[0] == "compare":
        rows = compare(argv[1], argv[2], quick)
        return 0 if all(r[1] in ("same", "refused") for r in rows) else 1
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
