"""python -m godali_tools {bench | bench-remote | make_dataset} ..."""

import sys

USAGE = ("usage: python -m godali_tools {bench | bench-remote | make_dataset} ...\n"
         "  bench         throughput benchmarks (python -m godali_tools bench --help)\n"
         "  bench-remote  webdataset shards local vs S3/HTTP with added latency\n"
         "  make_dataset  generate a synthetic ImageFolder data set")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if cmd == "bench":
        from godali_tools import bench
        return bench.main(rest)
    if cmd == "bench-remote":
        from godali_tools import bench_remote
        return bench_remote.main(rest)
    if cmd == "make_dataset":
        from godali_tools import make_dataset
        return make_dataset.main(rest)
    print("godali_tools: unknown command %r\n%s" % (cmd, USAGE), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main() or 0)
