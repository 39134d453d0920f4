"""Peak RSS against batch_size on a large-image pipeline (issue 26 item 4, sub-batches):
generated 4000x3000 JPEGs, decoders.image -> resize to 3000x2250 -> crop 1000x1000.

    PYTHONPATH=python /usr/bin/python3 benchmarks/batch_memory_bench.py [--batches 2,4,8,16]
        [--threads 2] [--depth 2] [--repeats 2] [--images 64] [--data DIR]

godali's CPU executor runs every sample through the whole graph on one worker: the
decoded image and the resized one live in that worker's buffers, one sample at a time,
so they scale with num_threads and not with the batch; only the pipeline's outputs are
whole batches. Each trial is a fresh process; it prints the growth of the peak RSS over
the RSS before build, the memory plan's worst case, and what whole-batch intermediates
(every sample's decoded and resized image held at once, as an executor that runs each
operator over the whole batch holds them) would add.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 4000, 3000


def make_data(root, n):
    from PIL import Image
    import numpy as np
    d = os.path.join(root, "c")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        p = os.path.join(d, "img%03d.jpg" % i)
        if os.path.exists(p):
            continue
        # A smooth gradient with noise: a realistic JPEG size, quick to write.
        y, x = np.mgrid[0:H, 0:W]
        img = np.stack([(x * 255 // W), (y * 255 // H), ((x + y + i * 97) % 256)], -1).astype(np.uint8)
        img = np.clip(img.astype(np.int16) + rng.integers(-8, 8, img.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(p, quality=90)


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def trial(cfg):
    os.environ["GODALI_TUNING_LOG"] = "0"
    from godali import fn, pipeline_def, types

    @pipeline_def
    def big():
        jpegs, _ = fn.readers.file(file_root=cfg["data"], name="Reader")
        img = fn.decoders.image(jpegs, output_type=types.RGB)
        img = fn.resize(img, resize_x=3000, resize_y=2250)
        return fn.crop(img, crop=(1000, 1000))

    pipe = big(batch_size=cfg["batch_size"], num_threads=cfg["threads"], device_id=None,
               seed=1, prefetch_queue_depth=cfg["depth"])
    rss0 = status("VmRSS")
    pipe.build()
    plan = pipe.memory_plan()
    for _ in range(cfg["iters"]):
        out = pipe.run()  # the previous batch is held until the call returns, as a trainer's
    del out
    # VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork and exec.
    peak = status("VmHWM")
    pipe.close()
    return {"grown": peak - rss0, "plan": plan["host_bytes_worst"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/godali-batch-memory-bench")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--batches", default="2,4,8,16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--trial", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial:
        print(json.dumps(trial(json.loads(args.trial))))
        return
    make_data(args.data, args.images)
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "python"))
    batches = [int(b) for b in args.batches.split(",")]
    res = {b: [] for b in batches}
    for r in range(args.repeats):
        for b in batches:
            cfg = {"data": args.data, "batch_size": b, "threads": args.threads,
                   "depth": args.depth, "iters": max(args.depth + 4, 2 * args.images // b)}
            out = subprocess.run([sys.executable, __file__, "--trial", json.dumps(cfg)],
                                 env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("trial %d failed:\n%s" % (b, out.stderr[-3000:]))
            res[b].append(json.loads(out.stdout.strip().splitlines()[-1]))
    mib = 2 ** 20
    per_sample = (W * H * 3 + 3000 * 2250 * 3) / mib
    print("threads %d, depth %d, %d images of %dx%d, median of %d:" % (
        args.threads, args.depth, args.images, W, H, args.repeats))
    for b in batches:
        g = statistics.median(x["grown"] for x in res[b]) / mib
        print("  batch %3d: peak RSS +%7.1f MiB (plan worst %7.1f MiB); whole-batch "
              "intermediates would hold %7.1f MiB of decoded and resized images" % (
                  b, g, res[b][-1]["plan"] / mib, b * per_sample))


if __name__ == "__main__":
    main()
