"""num_threads="auto" / prefetch_queue_depth="auto" against fixed values, on the bench's
ResNet-50 training pipeline (godali_tools.bench.rn50_augment) and a validation pipeline
(decode, resize 256, center crop 224, normalize).

    PYTHONPATH=python:tools /usr/bin/python3 benchmarks/tuning_bench.py [--data DIR]
        [--batch-size 32] [--warmup 12] [--iters 20] [--repeats 2] [--cpus 0,1]
        [--pipelines train,val] [--configs 1x2,2x2,3x2,4x2,autoxauto]

Each trial runs in a fresh process (pinned to --cpus with sched_setaffinity before
godali loads, to play a container or a restricted mask), times --iters batches after
--warmup (the warm-up covers "auto"'s measuring window: 2 + 8 batches) and prints
images/s, the tuning the engine ended with, and the process's peak RSS. Trials alternate
between configurations, the order rotating each repeat; the table shows the median.
"""

import argparse
import json

import numpy as np
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def trial(cfg):
    if cfg["cpus"]:
        os.sched_setaffinity(0, cfg["cpus"])
    os.environ["GODALI_TUNING_LOG"] = "0"
    from godali import fn, pipeline_def, types
    from godali_tools.bench import list_image_folder, rn50_augment

    paths, labels = list_image_folder(cfg["data"])
    threads, depth = cfg["threads"], cfg["depth"]

    @pipeline_def
    def train():
        jpegs, lab = fn.readers.file(files=paths, labels=labels, random_shuffle=True,
                                     name="Reader")
        return rn50_augment(jpegs, False, fn, types), lab

    @pipeline_def
    def val():
        jpegs, lab = fn.readers.file(files=paths, labels=labels, name="Reader")
        img = fn.decoders.image(jpegs, output_type=types.RGB)
        img = fn.resize(img, resize_shorter=256)
        img = fn.crop_mirror_normalize(img, crop=(224, 224), dtype=types.FLOAT,
                                       output_layout="CHW",
                                       mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                       std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        return img, lab

    @pipeline_def
    def decode():
        jpegs, lab = fn.readers.file(files=paths, labels=labels, name="Reader")
        return fn.decoders.image(jpegs, output_type=types.RGB), lab

    factory = {"train": train, "val": val, "decode": decode}[cfg["pipeline"]]
    pipe = factory(batch_size=cfg["batch_size"], num_threads=threads, device_id=None,
                   seed=12, prefetch_queue_depth=depth, preallocate=cfg["preallocate"])
    rss0 = vm_rss()
    pipe.build()
    plan = pipe.memory_plan()
    for _ in range(cfg["warmup"]):
        pipe.run()
    t0 = time.perf_counter()
    for _ in range(cfg["iters"]):
        out = pipe.run()
        if not cfg["copy"]:
            pass  # memory runs: only the pipeline's own memory grows
        elif cfg["pipeline"] == "decode":  # ragged: the samples one by one
            for i in range(len(out[0])):
                np.asarray(out[0][i])
        else:
            out[0].as_array()  # the consumer looks at the batch (a copy out, as a trainer's)
    secs = time.perf_counter() - t0
    tn = pipe.tuning()
    # The peak as VmHWM: ru_maxrss keeps the parent's peak across fork and exec.
    rss = vm_status("VmHWM")
    pipe.close()
    return {"ips": cfg["iters"] * cfg["batch_size"] / secs, "tuning": tn, "peak_rss": rss,
            "rss_before_build": rss0, "plan": plan}


def vm_status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def vm_rss():
    return vm_status("VmRSS")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/godali/bench-data"))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=12)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--cpus", default="", help="CPU list for sched_setaffinity, e.g. 0")
    ap.add_argument("--pipelines", default="train,val")
    ap.add_argument("--configs", default="1x2,2x2,3x2,4x2,2x4,autoxauto",
                    help="THREADSxDEPTH, each an int or auto")
    ap.add_argument("--no-copy", action="store_true",
                    help="the consumer takes the batches without copying them out (the "
                         "memory comparisons: RSS then grows by the pipeline's memory only)")
    ap.add_argument("--preallocate", default="auto", choices=("auto", "off"))
    ap.add_argument("--verbose", action="store_true", help="print every trial's img/s")
    ap.add_argument("--trial", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial:
        print(json.dumps(trial(json.loads(args.trial))))
        return
    cpus = [int(c) for c in args.cpus.split(",") if c.strip()]
    configs = []
    for c in args.configs.split(","):
        t, d = c.split("x")
        configs.append((t if t == "auto" else int(t), d if d == "auto" else int(d)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "tools")]))
    for pipeline in args.pipelines.split(","):
        results = {c: [] for c in configs}
        for r in range(args.repeats):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for c in order:
                cfg = {"data": args.data, "batch_size": args.batch_size,
                       "warmup": args.warmup, "iters": args.iters, "cpus": cpus,
                       "pipeline": pipeline, "threads": c[0], "depth": c[1],
                       "copy": not args.no_copy, "preallocate": args.preallocate}
                out = subprocess.run([sys.executable, __file__, "--trial", json.dumps(cfg)],
                                     env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit("trial %s %s failed:\n%s" % (pipeline, c, out.stderr[-3000:]))
                results[c].append(json.loads(out.stdout.strip().splitlines()[-1]))
                if args.verbose:
                    print("    trial %s %s: %.1f img/s" % (pipeline, c, results[c][-1]["ips"]),
                          flush=True)
        print("\n%s pipeline, batch %d, affinity %s (%d CPUs), median of %d:" % (
            pipeline, args.batch_size, cpus or "all", len(cpus) or os.cpu_count(),
            args.repeats))
        best = max(statistics.median(x["ips"] for x in v) for v in results.values())
        for c, runs in results.items():
            ips = statistics.median(x["ips"] for x in runs)
            tn = runs[-1]["tuning"]
            rss = max(x["peak_rss"] for x in runs) / 2**20
            grown = max(x["peak_rss"] - x["rss_before_build"] for x in runs) / 2**20
            plan = runs[-1]["plan"]
            line = ("  threads=%-4s depth=%-4s %7.1f img/s (%5.1f%% of best)  peak RSS %6.0f MiB, "
                    "%6.1f MiB above the RSS before build; plan %6.1f MiB worst, %6.1f expected") % (
                c[0], c[1], ips, 100 * ips / best, rss, grown,
                plan["host_bytes_worst"] / 2**20, plan["host_bytes_expected"] / 2**20)
            if "auto" in c:
                line += "\n      -> num_threads=%d prefetch_queue_depth=%d (%s: %s)" % (
                    tn["num_threads"], tn["prefetch_queue_depth"], tn["state"], tn["reason"])
            print(line, flush=True)


if __name__ == "__main__":
    main()
