"""Per-batch host cost of GodaliClassificationIterator against pipe.run() + DLPack.

    PYTHONPATH=$PWD/python python3 benchmarks/iterator_overhead.py [--batches N] [--repeats R]

The pipeline makes almost nothing (two tiny random outputs, batch 64), so what each
batch costs is the Python and C-API work around it: what the iterator adds on top of
a raw loop. Each trial is a fresh process; trials alternate between the two loops and
the medians are printed, as process CPU time per batch (load-independent enough on a
shared machine, unlike wall time).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TRIAL = r"""
import json, sys, time, warnings
import torch
from godali import fn, pipeline_def
from godali.plugin.pytorch import GodaliClassificationIterator
mode, n = sys.argv[1], int(sys.argv[2])

@pipeline_def
def tiny():
    return fn.random.uniform(range=[0.0, 1.0], shape=[4]), fn.random.coin_flip()

pipe = tiny(batch_size=64, num_threads=2, device_id=None, seed=12, prefetch_queue_depth=2)
pipe.build()
if mode == "iterator":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = GodaliClassificationIterator(pipe, size=10 ** 12)
    def step():
        b = next(it)[0]
        return b["data"], b["label"]
else:
    def step():
        out = pipe.run()
        return (torch.utils.dlpack.from_dlpack(out[0]),
                torch.utils.dlpack.from_dlpack(out[1]))
for _ in range(200):
    step()
c0 = time.process_time()
for _ in range(n):
    step()
print(json.dumps({"us_per_batch": (time.process_time() - c0) / n * 1e6}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    res = {"raw": [], "iterator": []}
    for r in range(args.repeats):
        for mode in (("raw", "iterator") if r % 2 == 0 else ("iterator", "raw")):
            out = subprocess.run([sys.executable, "-c", TRIAL, mode, str(args.batches)],
                                 check=True, capture_output=True, text=True)
            res[mode].append(json.loads(out.stdout.strip().splitlines()[-1])["us_per_batch"])
    raw, itr = statistics.median(res["raw"]), statistics.median(res["iterator"])
    print(f"date {time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f}, "
          f"{args.repeats} repeats x {args.batches} batches of 64")
    print(f"raw pipe.run() + 2x from_dlpack: {raw:7.1f} us/batch (process CPU, median; "
          f"runs {', '.join(f'{x:.0f}' for x in res['raw'])})")
    print(f"GodaliClassificationIterator:   {itr:7.1f} us/batch (runs "
          f"{', '.join(f'{x:.0f}' for x in res['iterator'])})")
    print(f"iterator adds {itr - raw:.1f} us per batch")


if __name__ == "__main__":
    main()
