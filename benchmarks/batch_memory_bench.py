"""Peak RSS against batch_size on a large-image pipeline (issue 26 item 4, sub-batches):
generated 4000x3000 JPEGs, decoders.image -> resize to 3000x2250 -> crop 1000x1000.

    PYTHONPATH=python /usr/bin/python3 benchmarks/batch_memory_bench.py [--batches 2,4,8,16]
        [--threads 2] [--depth 2] [--repeats 2] [--images 64] [--data DIR]
    ... benchmarks/batch_memory_bench.py --python-function --batches 8 --subs 0,1,2,4

--python-function: decoders.image -> a batch python_function (each image halved in size
by taking every other pixel and darkened, per sample) -> the pipeline's output, with
sub_batch_size each of --subs (0: the whole batch). The function's input, every decoded
image of the batch (or of the part), is held while the function runs: that is what
sub_batch_size bounds. It also checks the outputs are identical to the whole-batch run's.

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

    def halve(images):
        import numpy as np
        return [np.ascontiguousarray(np.asarray(im)[::2, ::2] // 2) for im in images]

    @pipeline_def
    def pyfunc():
        jpegs, _ = fn.readers.file(file_root=cfg["data"], name="Reader")
        img = fn.decoders.image(jpegs, output_type=types.RGB)
        return fn.python_function(img, function=halve, batch_processing=True)

    import hashlib
    import numpy as np
    factory = pyfunc if cfg.get("pyfunc") else big
    extra = {"sub_batch_size": cfg["sub"]} if cfg.get("sub") else {}
    pipe = factory(batch_size=cfg["batch_size"], num_threads=cfg["threads"], device_id=None,
                   seed=1, prefetch_queue_depth=cfg["depth"], **extra)
    rss0 = status("VmRSS")
    pipe.build()
    plan = pipe.memory_plan()
    digest = hashlib.sha256()
    for _ in range(cfg["iters"]):
        out = pipe.run()  # the previous batch is held until the call returns, as a trainer's
        if cfg.get("pyfunc"):
            for i in range(len(out[0])):
                digest.update(np.asarray(out[0][i]).tobytes())
    del out
    # VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork and exec.
    peak = status("VmHWM")
    pipe.close()
    return {"grown": peak - rss0, "plan": plan["host_bytes_worst"], "digest": digest.hexdigest()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/godali-batch-memory-bench")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--batches", default="2,4,8,16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--python-function", action="store_true",
                    help="decode -> batch python_function, with sub_batch_size in --subs")
    ap.add_argument("--subs", default="0,1,2,4", help="sub_batch_size values (0: none)")
    ap.add_argument("--trial", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trial:
        print(json.dumps(trial(json.loads(args.trial))))
        return
    make_data(args.data, args.images)
    if args.python_function:
        return python_function_runs(args)
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


def python_function_runs(args):
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "python"))
    subs = [int(x) for x in args.subs.split(",")]
    mib = 2 ** 20
    for b in [int(x) for x in args.batches.split(",")]:
        res = {s: [] for s in subs}
        for r in range(args.repeats):
            order = subs[r % len(subs):] + subs[:r % len(subs)]
            for s in order:
                cfg = {"data": args.data, "batch_size": b, "threads": args.threads,
                       "depth": args.depth, "iters": max(args.depth + 4, 2 * args.images // b),
                       "pyfunc": True, "sub": s}
                out = subprocess.run([sys.executable, __file__, "--trial", json.dumps(cfg)],
                                     env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit("trial batch %d sub %d failed:\n%s" % (b, s, out.stderr[-3000:]))
                res[s].append(json.loads(out.stdout.strip().splitlines()[-1]))
        base = res[subs[0]][0]["digest"]
        print("python_function, batch %d, threads %d, depth %d, %d images of %dx%d, "
              "median of %d:" % (b, args.threads, args.depth, args.images, W, H, args.repeats))
        for s in subs:
            g = statistics.median(x["grown"] for x in res[s]) / mib
            same = all(x["digest"] == base for x in res[s])
            print("  sub_batch_size %-5s peak RSS +%7.1f MiB (plan worst %7.1f MiB); outputs %s" % (
                s or "none", g, res[s][-1]["plan"] / mib,
                "identical to sub_batch_size %s's" % (subs[0] or "none") if same else "DIFFER"))


if __name__ == "__main__":
    main()
