"""DALI's public Python surface against godali's: a parity report and its regression test.

Not part of the shipped package. Three steps, each its own process (DALI and godali are
never imported together):

    # with DALI importable (scripts/setup.sh with GODALI_DALI_ORACLE=1 or GODALI_BENCH_DALI=1 installs it into
    # /usr/local/lib/godali-dali):
    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/surface.py dump-dali \\
        tests/compat/dali_surface.json
    # with godali importable:
    PYTHONPATH=python python3 tests/compat/surface.py report tests/compat/dali_surface.json \\
        docs/dali-parity.md tests/compat/parity_baseline.json

`dump-dali` walks nvidia.dali's public modules (and the private ones DALI's tests read at
import: _autograph, _conditionals) and writes every attribute with its kind and, for
callables, its signature; for every operator it also records the schema's arguments and
defaults (backend.GetSchema). `report` looks each of those names up in godali (the same
path under `godali`), writes the markdown report and the list of names that are present,
which tests/compat/test_surface.py keeps from shrinking.

What is compared is presence, for callables parameter names, and for operators the
arguments and their defaults (as DALI's OpSchema prints them, which godali.backend's
OpSchema reproduces); behaviour is the oracle's job.
"""

import importlib
import inspect
import json
import re
import sys
import types

# DALI's modules whose names user code and DALI's tests reach (recursively below them:
# fn.*, ops.*, plugin.pytorch.*, auto_aug.*). Framework plugins other than PyTorch and
# DALI's own build/debug helpers are left out.
ROOT_MODULES = [
    "", "fn", "ops", "types", "backend", "backend_impl", "tensors", "pipeline",
    "pipeline.experimental", "data_node", "external_source", "math", "plugin",
    "plugin.base_iterator", "plugin.pytorch", "plugin_manager", "auto_aug",
    "auto_aug.core", "auto_aug.augmentations", "auto_aug.auto_augment",
    "auto_aug.rand_augment", "auto_aug.trivial_augment", "_autograph", "_conditionals",
    "tfrecord", "experimental", "reducers", "sysconfig",
]
SKIP_MODULES = ("plugin.jax", "plugin.numba", "plugin.paddle", "plugin.tf", "plugin.triton",
                "_autograph.", "_utils", "_multiproc", "_debug", "_backend_enums",
                "_tensor_formatting", "_typing", "internal", "pickling", "ops.hidden",
                "ops.experimental.hidden")
# The operators godali leaves out on purpose, and why (the report lists them apart).
LEFT_OUT = {
    "audio": "a speech/audio operator",
}

_OPERATOR_SKIP_PREFIXES = ("_",)
_STDLIB = ("typing", "contextlib", "functools", "collections", "abc", "enum", "warnings",
           "inspect", "builtins", "copy", "math", "os", "sys", "threading", "logging")


def _sig(obj):
    try:
        # (default values' reprs lose their memory addresses: the dump stays the same
        # from one run to the next)
        return re.sub(r" at 0x[0-9a-fA-F]+", "", str(inspect.signature(obj)))
    except (TypeError, ValueError):
        return None


def _kind(obj):
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "callable"
    return "value"


def _public(name, allow_private=()):
    return not name.startswith("_") or name in allow_private


def _class_members(cls):
    out = {}
    for name, value in vars(cls).items():
        if not _public(name, ("__init__", "__call__", "__iter__", "__next__", "__len__")):
            continue
        out[name] = {"kind": _kind(value), "sig": _sig(value) if callable(value) else None}
    return out


def _walk(root_name, rel, seen, out):
    full = root_name + ("." + rel if rel else "")
    if rel in seen or any(rel == s or rel.startswith(s) for s in SKIP_MODULES):
        return
    seen.add(rel)
    try:
        mod = importlib.import_module(full)
    except Exception as e:  # a module that does not import is itself a finding
        out[rel] = {"error": "%s: %s" % (type(e).__name__, e)}
        return
    names = {}
    allow = ("_autograph", "_conditionals") if rel == "" else ()
    for name in sorted(dir(mod)):
        if not _public(name, allow):
            continue
        try:
            value = getattr(mod, name)
        except Exception:
            continue
        kind = _kind(value)
        entry = {"kind": kind}
        if kind == "module":
            sub = getattr(value, "__name__", "")
            if not sub.startswith(root_name + "."):
                continue  # a re-exported third-party module (numpy, ...)
            subrel = sub[len(root_name) + 1:]
            entry["target"] = subrel
            _walk(root_name, subrel, seen, out)
        elif kind == "class":
            if not getattr(value, "__module__", "").startswith(root_name):
                continue  # typing, enum, ... re-exported
            entry["members"] = _class_members(value)
            entry["sig"] = _sig(value)
        elif kind == "callable":
            owner = getattr(value, "__module__", None)
            if isinstance(owner, str) and not owner.startswith(root_name) and \
                    owner.split(".")[0] in _STDLIB:
                continue  # typing.List, contextlib.contextmanager, ... re-exported
            entry["sig"] = _sig(value)
        names[name] = entry
    out[rel] = {"names": names}


def _schemas(backend):
    out = {}
    for name in sorted(backend.RegisteredCPUOps()):
        if name.startswith(_OPERATOR_SKIP_PREFIXES):
            continue
        try:
            s = backend.GetSchema(name)
        except Exception:
            continue
        args = {}
        for a in s.GetArgumentNames():
            try:
                default = s.GetArgumentDefaultValueString(a) if s.HasArgumentDefaultValue(a) else None
            except Exception:
                default = None
            args[a] = {"optional": bool(s.IsArgumentOptional(a)), "default": default,
                       "deprecated": bool(s.IsDeprecatedArg(a))}
        out[name] = {"args": args, "min_inputs": s.MinNumInput(), "max_inputs": s.MaxNumInput(),
                     "sequences": bool(s.AllowsSequences()),
                     "volumetric": bool(s.SupportsVolumetric()),
                     "deprecated": bool(s.IsDeprecated())}
    return out


def policy_table(policy):
    """A Policy (DALI's or godali's) as plain data: name, bins, and per sub-policy the
    stages (augmentation name, magnitude range, randomly negated, probability, bin)."""
    subs = []
    for sp in policy.sub_policies:
        subs.append([[aug.name, list(aug.mag_range) if aug.mag_range is not None else None,
                      bool(aug.randomly_negate), float(prob), mbin] for aug, prob, mbin in sp])
    return {"name": policy.name, "bins": policy.num_magnitude_bins, "sub_policies": subs}


POLICY_CASES = [("get_image_net_policy", {}), ("get_image_net_policy", {"use_shape": True}),
                ("get_reduced_image_net_policy", {}), ("get_svhn_policy", {}),
                ("get_svhn_policy", {"max_translate_abs": 100}),
                ("get_reduced_cifar10_policy", {}),
                ("get_reduced_cifar10_policy", {"use_shape": True, "max_translate_rel": 0.3})]


def _policies():
    from nvidia.dali.auto_aug import auto_augment
    return [[name, kw, policy_table(getattr(auto_augment, name)(**kw))]
            for name, kw in POLICY_CASES]


def dump_dali(path):
    import nvidia.dali as dali
    import nvidia.dali.backend as backend
    out = {}
    seen = set()
    for rel in ROOT_MODULES:
        _walk("nvidia.dali", rel, seen, out)
    fn_schemas = {}
    for rel, mod in out.items():
        if rel != "fn" and not rel.startswith("fn."):
            continue
        m = importlib.import_module("nvidia.dali." + rel)
        for name in mod.get("names", {}):
            schema = getattr(getattr(m, name, None), "_schema_name", None)
            if isinstance(schema, str):
                fn_schemas[(rel[3:] + "." if rel != "fn" else "") + name] = schema
    doc = {"dali_version": dali.__version__, "modules": out, "schemas": _schemas(backend),
           "fn_schemas": fn_schemas, "policies": _policies()}
    with open(path, "w") as f:
        json.dump(doc, f, indent=0, sort_keys=True)
    print("surface: %d modules, %d names, %d CPU operator schemas -> %s" % (
        len(out), sum(len(m.get("names", ())) for m in out.values()), len(doc["schemas"]), path))


def _params(sig):
    """Parameter names of a signature string, without self/*args/**kwargs."""
    if not sig or not sig.startswith("("):
        return None
    inner = sig[1:sig.rfind(")")]
    names = []
    depth = 0
    cur = ""
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
        else:
            cur += ch
    names.append(cur)
    if any(n.strip() == "/" for n in names):
        # positional-only parameters are matched by place, not by name
        names = names[[n.strip() for n in names].index("/") + 1:]
    out = []
    for n in names:
        n = n.strip().split(":")[0].split("=")[0].strip()
        if not n or n in ("self", "/", "*") or n.startswith("*"):
            continue
        out.append(n)
    return out


def _godali_lookup(rel, name):
    """godali's object for DALI's <rel>.<name>, or raises."""
    base = "godali" + ("." + rel if rel else "")
    mod = importlib.import_module(base)
    try:
        return getattr(mod, name)
    except AttributeError:
        # `from nvidia.dali import backend_impl` imports a submodule not yet loaded
        if isinstance(mod, types.ModuleType) and hasattr(mod, "__path__"):
            try:
                return importlib.import_module(base + "." + name)
            except ImportError:
                pass
        raise


def compare(dali_doc):
    """Rows (module, name, status, detail) for every DALI name."""
    import godali  # noqa: F401  (godali's package: every lookup below goes through it)
    rows = []
    for rel, mod in sorted(dali_doc["modules"].items()):
        if "error" in mod:
            continue
        for name, entry in sorted(mod["names"].items()):
            path = (rel + "." if rel else "") + name
            try:
                obj = _godali_lookup(rel, name)
            except Exception as e:  # ImportError, AttributeError, NotImplementedError...
                why = next((w for k, w in LEFT_OUT.items() if k in path.split(".")), None)
                rows.append((rel, name, "left out" if why else "missing",
                             why or "%s: %s" % (type(e).__name__, str(e)[:120])))
                continue
            doc = (getattr(obj, "__doc__", "") or "")
            if callable(obj) and "not implemented in godali" in doc:
                rows.append((rel, name, "stub", doc.split(":", 1)[-1].strip()[:120]))
                continue
            detail = ""
            status = "present"
            if entry.get("kind") in ("callable", "class") and entry.get("sig"):
                want = _params(entry["sig"]) or []
                have = _params(_sig(obj)) if callable(obj) else None
                if have is not None and want and "args" not in (_sig(obj) or "") and \
                        "kwargs" not in (_sig(obj) or ""):
                    lacking = [p for p in want if p not in have]
                    if lacking:
                        status = "differs"
                        detail = "lacks parameters " + ", ".join(lacking)
            if entry.get("kind") == "class" and inspect.isclass(obj):
                lacking = [m for m in entry.get("members", {}) if not hasattr(obj, m)]
                if lacking:
                    status = "differs"
                    detail = (detail + "; " if detail else "") + "lacks members " + \
                        ", ".join(sorted(lacking)[:12]) + (" ..." if len(lacking) > 12 else "")
            rows.append((rel, name, status, detail))
    return rows


# Arguments every godali operator takes from DALI's schemas without a schema entry (the
# Python layer consumes them: _graph._RESERVED).
_RESERVED_ARGS = ("device", "name", "preserve", "bytes_per_sample_hint", "tensor_init_bytes",
                  "temp_buffer_hint", "minibatch_size")


def compare_schemas(dali_doc):
    """Rows (fn name, DALI schema, status, detail) for every fn.* function DALI has."""
    from godali import _graph, backend, fn as gfn
    sch = _graph.schemas()
    rows = []
    for path, schema in sorted(dali_doc["fn_schemas"].items()):
        s = dali_doc["schemas"].get(schema)
        if s is None:
            continue  # a GPU-only or internal operator: not in the CPU schemas
        if s.get("deprecated"):
            continue  # legacy names (FileReader, CoinFlip, ...): the Names table covers them
        op = sch.ops.get(path)
        if op is None:
            obj = gfn
            try:
                for part in path.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                obj = None
            why = next((w for k, w in LEFT_OUT.items() if k in path.split(".")), None)
            if obj is None:
                rows.append((path, schema, "left out" if why else "missing", why or ""))
            elif "not implemented in godali" in (getattr(obj, "__doc__", "") or ""):
                rows.append((path, schema, "stub", why or "raises NotImplementedError"))
            else:
                rows.append((path, schema, "present", "Python-level in godali"))
            continue
        have = set(_op_arg_names(op)) | set(_RESERVED_ARGS)
        lacking = sorted(a for a, v in s["args"].items() if a not in have and not v["deprecated"])
        gs = backend.TryGetSchema(schema)
        defaults = []
        for a, v in sorted(s["args"].items()):
            if v["default"] is None or gs is None or not gs.HasArgument(a):
                continue
            try:
                mine = gs.GetArgumentDefaultValueString(a)
            except RuntimeError:
                mine = None
            if mine != v["default"]:
                defaults.append("%s (DALI %s, godali %s)" % (a, v["default"], mine))
        detail = "; ".join(x for x in (
            ("lacks arguments " + ", ".join(lacking)) if lacking else "",
            ("defaults differ: " + ", ".join(defaults)) if defaults else "") if x)
        rows.append((path, schema, "differs" if detail else "present", detail))
    return rows


def _op_arg_names(op):
    args = getattr(op, "args", None) or getattr(op, "arguments", None) or {}
    if isinstance(args, dict):
        return list(args)
    return [getattr(a, "name", a) for a in args]


def report(dali_json, md_path, baseline_path):
    with open(dali_json) as f:
        dali_doc = json.load(f)
    rows = compare(dali_doc)
    srows = compare_schemas(dali_doc)
    count = {}
    for r in rows:
        count[r[2]] = count.get(r[2], 0) + 1
    scount = {}
    for r in srows:
        scount[r[2]] = scount.get(r[2], 0) + 1
    lines = ["# DALI %s's Python surface in godali" % dali_doc["dali_version"], "",
             "Generated by `tests/compat/surface.py report` from DALI's own modules and "
             "operator schemas (`tests/compat/dali_surface.json`, written by `surface.py "
             "dump-dali` with DALI installed); `tests/compat/test_surface.py` fails when a "
             "name listed as present here goes missing. Regenerate after a change: "
             "`make compat-report`.", "",
             "## Names", "",
             "| status | count |", "|---|---|"]
    for k in ("present", "differs", "stub", "left out", "missing"):
        lines.append("| %s | %d |" % (k, count.get(k, 0)))
    lines += ["", "`present`: the name exists in godali at the same path (callables: with every "
              "parameter name DALI's signature has, or a `**kwargs`); `differs`: present, with "
              "the differences listed; `stub`: present, raises NotImplementedError when called; "
              "`left out`: not provided, for the reason given; `missing`: not yet provided.", ""]
    for status in ("missing", "differs", "stub", "left out"):
        sel = [r for r in rows if r[2] == status]
        if not sel:
            continue
        lines += ["### %s (%d)" % (status, len(sel)), "", "| name | detail |", "|---|---|"]
        for rel, name, _, detail in sel:
            lines.append("| `%s` | %s |" % ((rel + "." if rel else "") + name,
                                            detail.replace("|", "\\|").replace("\n", " ")))
        lines.append("")
    lines += ["## CPU operator schemas", "", "| status | count |", "|---|---|"]
    for k in ("present", "differs", "stub", "left out", "missing"):
        lines.append("| %s | %d |" % (k, scount.get(k, 0)))
    lines.append("")
    for status in ("missing", "differs", "stub", "left out"):
        sel = [r for r in srows if r[2] == status]
        if not sel:
            continue
        lines += ["### operators %s (%d)" % (status, len(sel)), "",
                  "| fn name | DALI schema | detail |", "|---|---|---|"]
        for py, name, _, detail in sel:
            lines.append("| `fn.%s` | `%s` | %s |" % (py, name, detail))
        lines.append("")
    with open(md_path, "w") as f:
        f.write("\n".join(lines))
    present = sorted(((r[0] + "." if r[0] else "") + r[1]) for r in rows if r[2] in ("present", "differs"))
    spresent = sorted(r[0] for r in srows if r[2] in ("present", "differs"))
    full = sorted(((r[0] + "." if r[0] else "") + r[1]) for r in rows if r[2] == "present")
    sfull = sorted(r[0] for r in srows if r[2] == "present")
    with open(baseline_path, "w") as f:
        json.dump({"names": present, "present": full, "operators": spresent,
                   "operators_present": sfull}, f, indent=0)
    print("report: names %s; operators %s -> %s" % (count, scount, md_path))


def main(argv):
    if len(argv) >= 2 and argv[0] == "dump-dali":
        dump_dali(argv[1])
    elif len(argv) >= 4 and argv[0] == "report":
        report(argv[1], argv[2], argv[3])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
