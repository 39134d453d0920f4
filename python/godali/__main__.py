"""Command line: python -m godali info [--ops] | bench ... | bench-remote ... | make_dataset ..."""

import argparse
import json
import sys


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


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m godali {info [--ops] | bench ... | bench-remote ... | make_dataset ...}\n"
             "  info          library version, path, flavour and devices (--ops: operators)\n"
             "  bench         throughput benchmarks (python -m godali bench --help)\n"
             "  bench-remote  webdataset shards local vs S3/HTTP with added latency\n"
             "  make_dataset  generate a synthetic ImageFolder data set")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(usage)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "info":
        return _info(rest)
    if cmd == "bench":
        from godali import bench
        return bench.main(rest)
    if cmd == "bench-remote":
        from godali import bench_remote
        return bench_remote.main(rest)
    if cmd == "make_dataset":
        from godali.tools import make_dataset
        return make_dataset.main(rest)
    print("godali: unknown command %r\n%s" % (cmd, usage), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main() or 0)
