"""DALI 2.4 as a differential oracle, property-based: cases generated from the schemas.

Not part of the shipped package. Where oracle.py lists its cases by hand, this sweep
draws them from DALI's own operator schemas (argument names, types, defaults, whether an
argument may be a per-sample tensor, the input layouts, sequences and volumes), stored in
tests/compat/oracle_schemas.json by `dump` (so that generating a case needs neither
library). Every case is one operator call on generated data fed through external_source:

  - the operator: each CPU operator both DALI and godali have (SKIP says why the others
    are left out: readers and decoders, random and audio operators, GPU-only ones, ...);
  - the input: a dtype (uint8, int16, int32, float32, float16), a layout among the ones
    the schema accepts (HWC, CHW, HW, sequences FHWC, volumes DHWC), samples of random
    size, of one pixel, or empty, values spread over the dtype's range with its edge
    values (min, max, 0) planted in;
  - the arguments: zero to three of the schema's arguments, each drawn around its default
    by its type (plus the hand-written values of oracle.py's spaces), given as a constant
    or, where the schema takes a tensor argument, per sample through an argument input.

Both implementations run every case in processes of their own and record the outputs or
the exception (type and message); `compare` says per case: same (within the tolerance),
refused by both (with the same exception type or not), differs, error (refused by one
side only), or crash (the process died). Hypothesis is not used: a seeded generator (the
seed and the case number give the case) keeps the two processes' cases identical without
sharing state, and a failing case is replayed by its id alone.

    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/propsweep.py dump dali S.json
    PYTHONPATH=python python3 tests/compat/propsweep.py dump godali S.json
    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/propsweep.py run dali OUT_D N
    PYTHONPATH=python python3 tests/compat/propsweep.py run godali OUT_G N
    python3 tests/compat/propsweep.py compare OUT_D OUT_G N

`run` restarts itself after a crash (the crashed case is recorded) when given --driver.
tests/compat/test_propsweep.py runs QUICK_N cases in `make test`; `make oracle-long` runs
LONG_N (ORACLE_N=... sets another count, ORACLE_SEED another seed).
"""

import json
import os
import pickle
import subprocess
import sys
import traceback

import numpy as np

import records

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "oracle_schemas.json")
SEED = 2029
QUICK_N = 400
LONG_N = 4000

# Operators left out of the sweep, by name or prefix, and why.
SKIP_PREFIX = {
    "readers.": "a reader: pipeline semantics are compared by pipesweep.py on generated data sets",
    "decoders.": "a decoder: takes encoded data (DALI's image decoders need nvImageCodec, "
                 "absent here)",
    "experimental.decoders.": "a decoder",
    "experimental.readers.": "a reader",
    "experimental.inputs.": "an input operator",
    "random.": "random: the streams differ by design (distributions tested elsewhere)",
    "noise.": "random: the streams differ by design",
    "segmentation.random": "random",
    "hidden.": "an alias of another name",
    "experimental.hidden.": "an alias of another name",
}
SKIP = {
    "audio_decoder": "audio/speech", "audio_resample": "audio/speech",
    "experimental.audio_resample": "audio/speech", "mel_filter_bank": "audio/speech",
    "mfcc": "audio/speech", "nonsilent_region": "audio/speech",
    "power_spectrum": "audio/speech", "preemphasis_filter": "audio/speech",
    "spectrogram": "audio/speech", "to_decibels": "audio/speech",
    "external_source": "the sweep's own input", "python_function": "runs Python",
    "dl_tensor_python_function": "runs Python", "dump_image": "writes files",
    "io.file.read": "reads files", "peek_image_shape": "needs encoded images",
    "experimental.peek_image_shape": "needs encoded images",
    "image_decoder": "a decoder", "image_decoder_crop": "a decoder",
    "image_decoder_random_crop": "a decoder", "image_decoder_slice": "a decoder",
    "jpeg_compression_distortion": "DALI's CPU operator needs nvImageCodec",
    "batch_permutation": "random", "uniform": "random", "normal_distribution": "random",
    "coin_flip": "random", "jitter": "random and GPU only",
    "file_reader": "a reader", "caffe_reader": "a reader", "caffe2_reader": "a reader",
    "coco_reader": "a reader", "mxnet_reader": "a reader", "numpy_reader": "a reader",
    "sequence_reader": "a reader", "tfrecord_reader": "a reader", "video_reader": "a reader",
    "video_reader_resize": "a reader", "nemo_asr_reader": "a reader",
    "transform_translation": "a deprecated alias of transforms.translation",
    "get_property": "source info of readers/decoders",
    "per_frame": "marks an argument input per frame: covered through the sequences",
}
# More than one input of a specific kind: compared by oracle.py's hand-written cases
# or the tests named in docs/operators.md.
MULTI_INPUT = "needs a second input of a specific kind (hand-written cases elsewhere)"

# Arguments never drawn: performance hints, and the ones that only name outputs.
NO_DRAW = {"bytes_per_sample_hint", "preserve", "seed", "minibatch_size",
           "temp_buffer_hint", "save_attrs", "dont_use_mmap", "use_o_direct",
           "lazy_init", "read_ahead", "prefetch_queue_depth", "num_shards", "shard_id",
           "name", "device", "_module", "_display_name"}

COLOUR_TWIST = {"hue", "saturation", "hsv", "color_twist"}
DTYPES = ["uint8", "int16", "int32", "float32", "float16"]
T = "types."

# Input kinds for operators whose input is not an image (as oracle.py's INPUTS).
COORD_OPS = {"bb_flip": "boxes", "coord_flip": "boxes", "bbox_rotate": "boxes",
             "bbox_paste": "boxes", "coord_transform": "mat", "one_hot": "ints",
             "lookup_table": "ints", "element_extract": "seq", "sequence_rearrange": "seq",
             "debayer": "bayer", "experimental.debayer": "bayer"}


# --- the schemas ---------------------------------------------------------------------------

def dump(impl, path):
    """dali: every operator's schema facts; godali: which of them godali has, with its
    argument names. Both into one JSON file (read, updated, written)."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except OSError:
        data = {}
    with open(os.path.join(HERE, "dali_surface.json")) as fh:
        fn_names = json.load(fh)["fn_schemas"]
    if impl == "dali":
        from nvidia.dali import backend as b
        ops = {}
        for name, sname in sorted(fn_names.items()):
            s = b.GetSchema(sname)
            args = {}
            for a in s.GetArgumentNames():
                if s.IsDeprecatedArg(a):
                    continue
                args[a] = {
                    "type": str(s.GetArgumentType(a)).split(".")[-1],
                    "tensor": bool(s.IsTensorArgument(a)),
                    "per_frame": bool(s.ArgSupportsPerFrameInput(a)),
                    "default": (s.GetArgumentDefaultValueString(a)
                                if s.HasArgumentDefaultValue(a) else None),
                    "optional": bool(s.IsArgumentOptional(a)),
                }
            try:
                layouts = ([str(x) for x in s.GetSupportedLayouts(0)]
                           if s.MaxNumInput() > 0 else [])
            except Exception:
                layouts = []
            ops[name] = {"schema": sname, "backends": list(s.GetSupportedBackends()),
                         "min_inputs": s.MinNumInput(), "max_inputs": s.MaxNumInput(),
                         "sequences": bool(s.AllowsSequences()),
                         "volumetric": bool(s.SupportsVolumetric()),
                         "random": bool(s.HasRandomSeedArg()), "layouts": layouts,
                         "args": args}
        import nvidia.dali as dali
        data["dali_version"] = dali.__version__
        data["ops"] = ops
    else:
        import godali
        from godali import fn
        from godali import backend as b
        for name, info in data["ops"].items():
            f = fn
            try:
                for part in name.split("."):
                    f = getattr(f, part)
                info["godali"] = True
                s = b.GetSchema(info["schema"])
                info["godali_args"] = sorted(s.GetArgumentNames())
            except Exception:
                info["godali"] = False
                info.pop("godali_args", None)
        data["godali_version"] = godali.__version__
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print("propsweep: %s schemas -> %s" % (impl, path))


def load_schemas():
    with open(SCHEMAS) as fh:
        return json.load(fh)["ops"]


def skip_reason(name, info):
    if name in SKIP:
        return SKIP[name]
    for p, why in SKIP_PREFIX.items():
        if name.startswith(p):
            return why
    if "cpu" not in info["backends"]:
        return "GPU only in DALI"
    if info["random"]:
        return "random: the streams differ by design"
    if not info.get("godali"):
        return "godali has no such operator (docs/not-supported.md)"
    if info["min_inputs"] > 1:
        return MULTI_INPUT
    return None


def swept_operators():
    """(name, schema facts) of every operator the sweep covers, and {name: why} of the
    others."""
    ops, skipped = [], {}
    for name, info in sorted(load_schemas().items()):
        why = skip_reason(name, info)
        if why:
            skipped[name] = why
        else:
            ops.append((name, info))
    return ops, skipped


# --- drawing a case ----------------------------------------------------------------------

def _hand_values():
    """{op: {arg: [values]}} from oracle.py's hand-written spaces, and its required
    arguments."""
    import oracle
    vals = {}
    for op, _kind, space, _tol in oracle.SPACES:
        for a, vs in space.items():
            vals.setdefault(op, {}).setdefault(a, []).extend(vs)
    return vals, oracle.REQUIRED, oracle.SPACES


def _parse_default(s):
    if s is None:
        return None
    s = s.strip()
    if s.startswith("[") and s.endswith("]"):
        items = [x.strip() for x in s[1:-1].split(",") if x.strip()]
        try:
            return [float(x) for x in items]
        except ValueError:
            return None
    if s in ("True", "False"):
        return s == "True"
    if s.startswith("'") and s.endswith("'"):
        return s[1:-1]
    try:
        return float(s) if any(c in s for c in ".e") else int(s)
    except ValueError:
        return None


def _draw_value(rng, op, arg, info, hand):
    """A value for the argument, or None when the sweep knows none."""
    typ = info["type"]
    d = _parse_default(info["default"])
    cands = list(hand.get(op, {}).get(arg, []))
    if typ == "BOOL":
        cands += [True, False]
    elif typ in ("INT32", "INT64", "UINT8", "INT8", "UINT32", "UINT64"):
        base = int(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 1
        cands += [base, base + 1, max(base - 1, 0), 0, 1, 2]
    elif typ in ("FLOAT", "FLOAT64"):
        base = float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 1.0
        cands += [base, base * 0.5, base * 1.5 + 0.25, base - 0.3, 0.0, 2.0]
    elif typ.endswith("_VEC") and typ != "_STRING_VEC":
        if isinstance(d, list) and d:
            isint = "INT" in typ
            for k in (0.5, 1.5):
                v = [x * k + 1 for x in d]
                cands.append([int(round(x)) for x in v] if isint else v)
    elif typ == "STRING":
        if isinstance(d, str):
            cands.append(d)
    elif typ == "DATA_TYPE":
        cands += [T + "UINT8", T + "INT16", T + "INT32", T + "FLOAT", T + "FLOAT16"]
    elif typ == "INTERP_TYPE":
        cands += [T + "INTERP_NN", T + "INTERP_LINEAR", T + "INTERP_CUBIC"]
    elif typ == "IMAGE_TYPE":
        cands += [T + "RGB", T + "BGR", T + "GRAY", T + "YCbCr"]
    if not cands:
        return None
    return cands[int(rng.integers(len(cands)))]


def _layouts(name, info):
    want = ["HWC", "CHW", "HW"]
    if info["sequences"]:
        want.append("FHWC")
    if info["volumetric"]:
        want.append("DHWC")
    if info["layouts"]:
        got = [lt for lt in want if lt in info["layouts"]]
        return got or [info["layouts"][0]]
    return want


def draw_case(k, seed=SEED):
    """Case k of the sweep: a dict with everything both runs need (the data included)."""
    ops, _ = swept_operators()
    hand, required, _spaces = _hand_values()
    rng = np.random.default_rng([seed, k])
    name, info = ops[int(rng.integers(len(ops)))]
    case = {"id": "%s@%d" % (name, k), "op": name}
    if info["max_inputs"] == 0 or name.startswith("transforms."):
        case["input"] = None
    else:
        case["input"] = _draw_input(rng, name, info)
    args = dict(required.get(name, {}))
    drawable = [a for a in sorted(info["args"]) if a not in NO_DRAW]
    n = int(rng.integers(0, 4))
    per_sample = {}
    for a in (rng.permutation(drawable)[:n] if drawable else []):
        a = str(a)
        v = _draw_value(rng, name, a, info["args"][a], hand)
        if v is None:
            continue
        ai = info["args"][a]
        if (ai["tensor"] and case["input"] is not None and rng.random() < 0.4
                and ai["type"] in ("FLOAT", "INT32", "BOOL", "_FLOAT_VEC", "_INT32_VEC")
                and not isinstance(v, str)):
            per_sample[a] = _per_sample(rng, ai["type"], v, len(case["input"]["data"]))
            args.pop(a, None)
        else:
            args[a] = v
    case["args"] = args
    case["arg_inputs"] = per_sample
    case["tol"] = _tolerance(name, case)
    return case


def _per_sample(rng, typ, v, n):
    out = []
    for i in range(n):
        if typ == "BOOL":
            out.append(np.array(bool(v) if i == 0 else bool(rng.integers(2)), dtype=bool))
        elif typ == "INT32":
            out.append(np.array(int(v) + (0 if i == 0 else int(rng.integers(0, 2))),
                                dtype=np.int32))
        elif typ == "FLOAT":
            out.append(np.array(float(v) * (1 if i == 0 else float(rng.uniform(0.7, 1.3))),
                                dtype=np.float32))
        else:
            dt = np.int32 if "INT" in typ else np.float32
            out.append(np.array(v, dtype=dt))
    return out


def _edge_fill(rng, a, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0]
    else:
        edges = [0.0, 1.0, -1.0, 255.0, 1000.0]
    flat = a.reshape(-1)
    if flat.size:
        m = rng.random(flat.size) < 0.1
        flat[m] = np.array(edges, dtype=dtype)[rng.integers(len(edges), size=int(m.sum()))]
    return a


def _random_array(rng, shape, dtype):
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.integer):
        lo, hi = (0, 256) if dt == np.uint8 else (-300, 300)
        a = rng.integers(lo, hi, shape).astype(dt)
    else:
        a = (rng.random(shape) * 255).astype(dt)
    return a


def _draw_input(rng, name, info):
    kind = COORD_OPS.get(name)
    n = int(rng.integers(1, 4))
    if kind is not None:
        import oracle
        data, layout = oracle.INPUTS[kind if kind != "seq" else "img"](rng)
        if kind == "seq":
            data = [np.stack([d[:5, :5]] * int(rng.integers(1, 4))) for d in data]
            layout = "FHWC"
        return {"data": data, "layout": layout, "dtype": str(data[0].dtype), "shape": kind}
    layout = _layouts(name, info)
    layout = layout[int(rng.integers(len(layout)))]
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    shape_kind = rng.choice(["random", "random", "random", "random", "pixel", "empty"])
    channels = 3 if rng.random() < 0.75 else 1
    data = []
    for i in range(n):
        h, w = int(rng.integers(2, 24)), int(rng.integers(2, 24))
        if shape_kind == "pixel":
            h = w = 1
        elif shape_kind == "empty" and i == 0:
            h = 0
        dims = {"H": h, "W": w, "C": channels, "F": int(rng.integers(1, 4)),
                "D": int(rng.integers(1, 5))}
        shape = tuple(dims[c] for c in layout)
        a = _random_array(rng, shape, dtype)
        if rng.random() < 0.3:
            a = _edge_fill(rng, a, a.dtype)
        data.append(a)
    return {"data": data, "layout": layout, "dtype": dtype, "shape": str(shape_kind)}


def _tolerance(name, case):
    """(absolute, relative) per output value. oracle.py's tolerance for the operator where
    it states one (DALI's own, e.g. resize against PIL), else: integer outputs 1 level
    (rounding of halves), float outputs 1e-3 relative, float16 1e-2."""
    import oracle
    if name in COLOUR_TWIST:
        # DALI's YIQ constants are rounded otherwise than godali's: float outputs differ
        # by up to 2.5e-3 relative, uint8 ones (hsv's default) by up to 2 levels
        return {"abs": 2.0, "rel": 3e-3}
    hand = [tol for op, _k, _s, tol in oracle.SPACES if op == name]
    if hand:
        t = max(hand, key=lambda x: x[0] if isinstance(x, tuple) else x)
        if isinstance(t, tuple):
            return {"abs": float(t[0]), "mean": float(t[1]), "rel": 1e-3}
        return {"abs": max(float(t), 1e-4), "rel": 1e-3}
    return {"abs": 1.0 if name != "cast" else 0.0, "rel": 1e-3}


# --- running -----------------------------------------------------------------------------

def _resolve(types, v):
    if isinstance(v, str) and v.startswith(T):
        return getattr(types, v[len(T):])
    if isinstance(v, list):
        return [_resolve(types, x) for x in v]
    return v


def run_case(case, lib, fn, types):
    kw = {k: _resolve(types, v) for k, v in case["args"].items()}
    f = fn
    for part in case["op"].split("."):
        f = getattr(f, part)
    pipe = lib.Pipeline(batch_size=len(case["input"]["data"]) if case["input"] else 2,
                        num_threads=1, device_id=None, seed=SEED, prefetch_queue_depth=1)
    try:
        with pipe:
            for a, vals in case["arg_inputs"].items():
                kw[a] = fn.external_source(source=(lambda d: (lambda: d))(vals), batch=True)
            if case["input"] is None:
                node = f(**kw)
            else:
                inp = case["input"]
                src = fn.external_source(source=(lambda d: (lambda: d))(inp["data"]),
                                         layout=inp["layout"], batch=True)
                node = f(src, **kw)
            outs = node if isinstance(node, (list, tuple)) else [node]
            pipe.set_outputs(*outs)
        pipe.build()
        got = pipe.run()
        return {"ok": [[np.array(t.as_cpu()[i]) for i in range(len(t))] for t in got]}
    finally:
        del pipe


def run(impl, out_dir, n, start=0, seed=SEED):
    if impl == "dali":
        import nvidia.dali as lib
        from nvidia.dali import fn, types
    else:
        import godali as lib
        from godali import fn, types
    os.makedirs(out_dir, exist_ok=True)
    progress = os.path.join(out_dir, "progress")
    out = open(os.path.join(out_dir, "results-%d.pkl" % start), "wb")
    for k in range(start, n):
        case = draw_case(k, seed)
        with open(progress, "w") as fh:
            fh.write("%d\n" % k)
        try:
            res = run_case(case, lib, fn, types)
        except Exception as e:
            res = records.error_record(e, mro=True)
        pickle.dump((case["id"], res), out)  # one record a case: a crash keeps the others
        out.flush()
    out.close()
    os.remove(progress)


def drive(impl, out_dir, n, seed=SEED, env=None, timeout=1800):
    """run() in child processes; a child that dies (a crash of the library) has its case
    recorded as a crash and the run goes on after it."""
    os.makedirs(out_dir, exist_ok=True)
    start, crashes = 0, {}
    while start < n:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "run", impl, out_dir,
                            str(n), "--start", str(start), "--seed", str(seed)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        if p.returncode == 0:
            break
        try:
            with open(os.path.join(out_dir, "progress")) as fh:
                k = int(fh.read())
        except (OSError, ValueError):
            raise RuntimeError("propsweep: %s run failed:\n%s" % (impl, p.stdout[-3000:]))
        crashes[draw_case(k, seed)["id"]] = {"error": "crash", "message":
                                             "exit %d: %s" % (p.returncode, p.stdout[-300:])}
        start = k + 1
    with open(os.path.join(out_dir, "crashes.pkl"), "wb") as fh:
        pickle.dump(crashes, fh)


def _load(out_dir):
    res = {}
    for f in sorted(os.listdir(out_dir)):
        if f.startswith("results-") and f.endswith(".pkl"):
            with open(os.path.join(out_dir, f), "rb") as fh:
                while True:
                    try:
                        cid, r = pickle.load(fh)
                    except (EOFError, pickle.UnpicklingError):
                        break
                    res[cid] = r
        elif f == "crashes.pkl":
            with open(os.path.join(out_dir, f), "rb") as fh:
                res.update(pickle.load(fh))
    return res


def compare(dali_dir, godali_dir, n, seed=SEED):
    """[(case id, status, detail)]: status same, refused (both refuse, the same exception
    type), refused-other-type, differs, error (one side refuses), crash."""
    a, b = _load(dali_dir), _load(godali_dir)
    rows = []
    for k in range(n):
        case = draw_case(k, seed)
        cid = case["id"]
        x, y = a.get(cid), b.get(cid)
        if x is None or y is None:
            rows.append((cid, "missing", "no result from %s" % ("DALI" if x is None else "godali")))
            continue
        if y.get("error") == "crash":
            rows.append((cid, "crash", y["message"]))
            continue
        if x.get("error") == "crash":
            rows.append((cid, "dali-crash", "DALI crashed: %s | godali %s" % (
                x["message"][:200], y.get("error", "ran it"))))
            continue
        if "error" in x or "error" in y:
            if "error" in x and "error" in y:
                # godali's errors derive from RuntimeError (and ValueError for a bad
                # argument or pipeline): "except DALI's type" catches them
                st = ("refused" if x["error"] in y.get("mro", [y["error"]])
                      else "refused-other-type")
                rows.append((cid, st, "DALI %s: %s | godali %s: %s" % (
                    x["error"], x["message"], y["error"], y["message"])))
            else:
                who, e = ("godali refuses", y) if "error" in y else ("DALI refuses", x)
                rows.append((cid, "error", "%s: %s: %s" % (who, e["error"], e["message"])))
            continue
        why = diff(x["ok"], y["ok"], case["tol"])
        rows.append((cid, "differs" if why else "same", why or ""))
    return rows


def diff(xs, ys, tol):
    if len(xs) != len(ys):
        return "%d outputs vs %d" % (len(xs), len(ys))
    for k, (xo, yo) in enumerate(zip(xs, ys)):
        if len(xo) != len(yo):
            return "output %d: %d samples vs %d" % (k, len(xo), len(yo))
        for i, (p, q) in enumerate(zip(xo, yo)):
            if p.shape != q.shape:
                return "output %d sample %d: shape %s vs %s" % (k, i, p.shape, q.shape)
            if p.dtype != q.dtype:
                return "output %d sample %d: dtype %s vs %s" % (k, i, p.dtype, q.dtype)
            if p.size == 0:
                continue
            pf, qf = p.astype(np.float64), q.astype(np.float64)
            nan = np.isnan(pf) != np.isnan(qf)
            if nan.any():
                return "output %d sample %d: NaN in one only" % (k, i)
            both = ~np.isnan(pf)
            with np.errstate(invalid="ignore"):
                d = np.abs(pf - qf)[both]
            rel = tol["rel"] * (10 if p.dtype == np.float16 else 1)
            lim = tol["abs"] + rel * np.abs(pf[both])
            inf = np.isinf(pf[both]) | np.isinf(qf[both])
            bad = (d > lim) & ~(inf & (pf[both] == qf[both]))
            if bad.any() or ("mean" in tol and d.size and np.nanmean(d) > tol["mean"]):
                return "output %d sample %d: max difference %.4g, mean %.3g (tolerance %s), " \
                       "%.2f%% of values differ" % (k, i, np.nanmax(d), np.nanmean(d), tol,
                                                    100 * (d > 0).mean())
    return None


def describe(case):
    inp = case["input"]
    s = "none" if inp is None else "%s %s %s %s" % (
        inp["layout"], inp["dtype"], inp["shape"], [tuple(x.shape) for x in inp["data"]])
    return "%s(%s; args %s; per-sample %s)" % (case["op"], s, case["args"],
                                               sorted(case["arg_inputs"]))


def summary(rows):
    n = {}
    for _cid, st, _why in rows:
        n[st] = n.get(st, 0) + 1
    return n


def main(argv):
    opts = {}
    pos = []
    it = iter(argv)
    for a in it:
        if a.startswith("--"):
            opts[a[2:]] = next(it)
        else:
            pos.append(a)
    seed = int(opts.get("seed", SEED))
    if len(pos) == 3 and pos[0] == "dump":
        dump(pos[1], pos[2])
    elif len(pos) == 4 and pos[0] == "run":
        run(pos[1], pos[2], int(pos[3]), int(opts.get("start", 0)), seed)
    elif len(pos) == 4 and pos[0] == "drive":
        drive(pos[1], pos[2], int(pos[3]), seed)
    elif len(pos) == 4 and pos[0] == "compare":
        rows = compare(pos[1], pos[2], int(pos[3]), seed)
        for cid, st, why in rows:
            if st not in ("same", "refused"):
                k = int(cid.rsplit("@", 1)[1])
                print("%-28s %-18s %s\n    %s" % (cid, st, " ".join(why.split())[:300],
                                                 describe(draw_case(k, seed))[:300]))
        ops, skipped = swept_operators()
        print("propsweep: %d operators swept, %d left out; %s" % (len(ops), len(skipped),
                                                                 summary(rows)))
        return 0 if all(r[1] in ("same", "refused", "refused-other-type") for r in rows) else 1
    elif len(pos) == 1 and pos[0] == "operators":
        ops, skipped = swept_operators()
        print("swept:", " ".join(n for n, _ in ops))
        for n, why in sorted(skipped.items()):
            print("  left out %s: %s" % (n, why))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(3)
