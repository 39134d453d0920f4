"""Command line: python -m godali info [--ops] | plan PIPELINE.json | --version

The benchmarks and the data set generator are godali_tools (tools/ in the checkout):
python -m godali_tools {bench | bench-remote | make_dataset}.

Also installed as the `godali` command (pyproject.toml's console script).
"""

import argparse
import json
import os
import sys

# Former commands, now godali_tools' (tools/): they point there.
TOOLS = ("bench", "bench-remote", "make_dataset")


def _info(argv):
    ap = argparse.ArgumentParser(prog="python -m godali info",
                                 description="Describe the godali library this Python uses.")
    ap.add_argument("--ops", action="store_true", help="also list the operators")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)

    import godali
    from godali import _graph
    info = godali.library_info()
    sch = _graph.schemas()
    ops = [op for name, op in sorted(sch.ops.items()) if not name.startswith("_")]
    if args.json:
        if args.ops:
            info["operators"] = [{"name": op.name, "devices": op.devices} for op in ops]
        print(json.dumps(info, indent=2))
        return 0
    print("godali %s (library %s)" % (info["package_version"], info["library_version"]))
    print("library: %s" % info["library_path"])
    print("flavour: %s" % info["flavour"])
    if info["flavour"] == "cuda":
        devs = info["cuda_devices"]
        print("CUDA devices: %d" % len(devs))
        for i, name in enumerate(devs):
            print("  %d: %s" % (i, name))
    else:
        print("CUDA devices: none used (CPU flavour)")
    if info.get("note"):
        print("note: %s" % info["note"])
    if args.ops:
        print("operators (%d):" % len(ops))
        width = max(len(op.name) for op in ops) if ops else 0
        for op in ops:
            first = (op.doc.strip().splitlines() or [""])[0]
            print("  %-*s  [%s]  %s" % (width, op.name, ",".join(op.devices), first))
    return 0


def _plan(argv):
    ap = argparse.ArgumentParser(
        prog="python -m godali plan",
        description="Build a pipeline description (the C ABI's JSON) and print its memory "
                    "plan and tuning (docs/pipeline.md, \"Memory plan\"), without running it.")
    ap.add_argument("pipeline", help="pipeline description, a JSON file")
    ap.add_argument("--json", action="store_true", help="print the plan and tuning as JSON")
    args = ap.parse_args(argv)
    from ctypes import byref, c_uint64

    from godali import _lib
    try:
        with open(args.pipeline, "rb") as f:
            text = f.read()
    except OSError as e:
        print("godali plan: %s: %s" % (args.pipeline, e.strerror or e), file=sys.stderr)
        return 2
    lib = _lib.get()
    h = c_uint64(0)
    try:
        lib.pipeline_create(text, len(text), byref(h))
        lib.pipeline_build(h.value)
        plan = json.loads(lib.tuning_text(h.value, "pipeline_memory_plan"))
        tuning = json.loads(lib.tuning_text(h.value))
    except Exception as e:  # the library's error names the key, node or file
        print("godali plan: %s: %s" % (args.pipeline, e), file=sys.stderr)
        return 1
    finally:
        if h.value:
            lib.pipeline_destroy(h.value)
    if args.json:
        print(json.dumps({"memory_plan": plan, "tuning": tuning}, indent=2))
        return 0
    mib = lambda n: "%.1f MiB" % (n / 2**20)
    print("host memory, worst case: %s (expected %s)" % (mib(plan["host_bytes_worst"]),
                                                          mib(plan["host_bytes_expected"])))
    print("  outputs: %s (%d batches of %d, one prefetch slot %s)" % (
        mib(plan["output_bytes"]), plan["batches"], plan["batch_size"], mib(plan["slot_bytes"])))
    for v in plan["outputs"]:
        print("    %-40s %12s  (%s)" % (v["name"], mib(v["bytes_worst"]), v["source"]))
    print("  workers' buffers: %s (%d threads)" % (mib(plan["intermediate_bytes"]),
                                                   plan["num_threads"]))
    for v in plan["intermediates"]:
        print("    %-40s %12s  (%s)" % (v["name"], mib(v["bytes_worst"]), v["source"]))
    if plan.get("crossing"):
        print("  host-batch nodes' data: %s (%s)" % (
            mib(plan["crossing_bytes"]), "sub_batch_size %d" % plan["sub_batch_size"]
            if plan["sub_batch_size"] else "whole batches"))
        for v in plan["crossing"]:
            print("    %-40s %12s  (%s)" % (v["name"], mib(v["bytes_worst"]), v["source"]))
    print("  decoders' work memory: %s" % mib(plan["decoder_work_bytes"]))
    print("  runtime (measured): %s" % mib(plan["runtime_bytes"]))
    for sc in plan["scans"]:
        print("  %s: largest image %dx%d of %d files scanned (of %d%s)" % (
            sc["decoder"], sc["max_width"], sc["max_height"], sc["scanned"], sc["files"],
            ", a sample" if sc["sampled"] else ""))
    if plan.get("warning"):
        print("warning: %s" % plan["warning"])
    print("num_threads %d, prefetch_queue_depth %d (%s: %s)" % (
        tuning["num_threads"], tuning["prefetch_queue_depth"], tuning["state"], tuning["reason"]))
    return 0


def _version_line():
    """`godali 0.1.0 (library 0.1.0, cpu flavour, /path/libgodali.so)`; the package
    version alone, with the reason, when the library cannot be loaded."""
    import godali
    try:
        info = godali.library_info()
    except Exception as e:  # ImportError, OSError: --version still answers
        return "godali %s (library not loaded: %s)" % (godali.__version__, e)
    return "godali %s (library %s, %s flavour, %s)" % (
        info["package_version"], info["library_version"], info["flavour"],
        info["library_path"])


def _quiet_broken_pipe():
    """The reader of our output went away (`godali info | head -1`): point stdout at
    /dev/null so that the interpreter's final flush does not fail again, and exit
    without a traceback, as Python's documentation on SIGPIPE recommends."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 1


def main(argv=None):
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here for short outputs
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: godali {info [--ops] | plan PIPELINE.json | --version}\n"
             "       (or python -m godali ...)\n"
             "  info          library version, path, flavour and devices (--ops: operators)\n"
             "  plan          a pipeline description's memory plan and tuning\n"
             "  --version     package and library versions\n"
             "bench, bench-remote and make_dataset: python -m godali_tools (tools/)")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(usage)
        return 0
    if argv[0] in ("-V", "--version", "version"):
        print(_version_line())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "info":
        return _info(rest)
    if cmd == "plan":
        return _plan(rest)
    if cmd in TOOLS:
        print("godali: %s is in the godali tools package, not in godali: run python -m "
              "godali_tools %s (from a checkout: PYTHONPATH=python:tools; or pip install "
              "./tools)" % (cmd, cmd), file=sys.stderr)
        return 2
    print("godali: unknown command %r\n%s" % (cmd, usage), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main() or 0)
