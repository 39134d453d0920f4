"""Video clip-sampling benchmark: random 16-frame clips, resized (shorter side 128),
randomly cropped to 112x112, randomly flipped, normalized to float (the input of a video
classifier such as R(2+1)D), delivered as torch tensors of [batch, 16, 3, 112, 112].

Contenders, each in a fresh process, on the same clips and the same cores:
  godali        fn.readers.video (random_shuffle, step 1) + resize + crop_mirror_normalize
  pyav          a torch Dataset decoding each clip with PyAV (seek to the key frame
                before it, decode 16 frames, to_ndarray rgb24), torch resize/crop/flip/
                normalize, in a DataLoader with workers
  torchvision   the same Dataset with torchvision.io.read_video(start_pts, end_pts)
  decord        the same Dataset with decord.VideoReader(...).get_batch(the clip's frames)
                (optional: skipped, saying why, when decord does not import)
  dali          NVIDIA DALI fn.experimental.readers.video(device="cpu") + resize +
                crop_mirror_normalize on the CPU (device_id=None), the godali pipeline's
                operators and arguments (optional: skipped, saying why, when DALI does not
                import or its CPU decoder cannot read the clips; DALI 2.4's CPU variant
                decodes VP8/VP9/MJPEG only, hence --codec vp9)

Figures: frames/s (output frames), CPU ms per frame (CPU time of the process tree over
the timed window), peak memory (PSS of the process tree, sampled every 0.2 s).

    PYTHONPATH=python /usr/local/lib/godali-venv/bin/python benchmarks/video_bench.py --videos 8 --batches 12
    PYTHONPATH=python:DALI_DIR /usr/local/lib/godali-venv/bin/python benchmarks/video_bench.py --codec vp9 \
        --contenders godali,dali,pyav,decord
"""

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

CLIP, SHORT, CROP = 16, 128, 112
MEAN = [0.43216 * 255, 0.394666 * 255, 0.37645 * 255]
STD = [0.22803 * 255, 0.22145 * 255, 0.216989 * 255]


ENCODERS = {
    "h264": ["-c:v", "libx264", "-preset", "fast", "-bf", "2", "-crf", "23"],
    "vp9": ["-c:v", "libvpx-vp9", "-deadline", "good", "-cpu-used", "4", "-b:v", "0", "-crf", "33"],
}


def make_videos(d, n, frames, size, gop, codec="h264"):
    os.makedirs(d, exist_ok=True)
    out = []
    for i in range(n):
        p = os.path.join(d, "v%03d.mp4" % i)
        if not os.path.exists(p):
            src = ["testsrc2", "mandelbrot", "life=s=%s:mold=10:r=25:ratio=0.1:death_color=#C83232:life_color=#00ff00" % size,
                   "smptehdbars"][i % 4]
            if not src.startswith("life"):
                src += "=size=%s:rate=25" % size
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", src,
                            "-frames:v", str(frames), "-vf", "scale=%s,format=yuv420p" % size.replace("x", ":"),
                            "-g", str(gop)] + ENCODERS[codec] + [p],
                           check=True)
        out.append(p)
    return out


def clip_list(files, frames):
    return [(f, s) for f in files for s in range(0, frames - CLIP + 1)]


# ---- contenders (run in the child process) ----

def run_godali(files, batch, threads, seed):
    import godali
    import torch
    from godali import fn, types
    pipe = godali.Pipeline(batch_size=batch, num_threads=threads, seed=seed, prefetch_queue_depth=2)
    with pipe:
        v = fn.readers.video(filenames=files, sequence_length=CLIP, step=1, random_shuffle=True,
                             initial_fill=1024, name="Reader")
        v = fn.resize(v, resize_shorter=SHORT, interp_type=types.INTERP_LINEAR, antialias=False)
        v = fn.crop_mirror_normalize(v, dtype=types.FLOAT, output_layout="CHW", crop=(CROP, CROP),
                                     crop_pos_x=fn.random.uniform(range=[0, 1]),
                                     crop_pos_y=fn.random.uniform(range=[0, 1]),
                                     mirror=fn.random.coin_flip(), mean=MEAN, std=STD)
        pipe.set_outputs(v)
    pipe.build()

    def batches():
        while True:
            (out,) = pipe.run()
            yield torch.from_dlpack(out.as_tensor())
    return batches()


class ClipDataset:
    def __init__(self, clips, reader):
        self.clips, self.reader = clips, reader

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        import torch
        import torch.nn.functional as F
        path, start = self.clips[i]
        frames = self.reader(path, start)  # uint8 [16, H, W, 3]
        x = torch.from_numpy(frames).permute(0, 3, 1, 2).float()
        h, w = x.shape[-2:]
        if h < w:
            size = (SHORT, int(w * SHORT / h))
        else:
            size = (int(h * SHORT / w), SHORT)
        x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
        y0 = random.randint(0, x.shape[-2] - CROP)
        x0 = random.randint(0, x.shape[-1] - CROP)
        x = x[..., y0:y0 + CROP, x0:x0 + CROP]
        if random.random() < 0.5:
            x = x.flip(-1)
        mean = torch.tensor(MEAN).view(1, 3, 1, 1)
        std = torch.tensor(STD).view(1, 3, 1, 1)
        return (x - mean) / std


def pyav_reader(path, start):
    import av
    import numpy as np
    with av.open(path) as c:
        s = c.streams.video[0]
        s.thread_type = "NONE"
        fps = s.average_rate
        tb = s.time_base
        first = s.start_time or 0
        target = first + int(round(start / (fps * tb)))
        c.seek(target, backward=True, any_frame=False, stream=s)
        out = []
        for f in c.decode(s):
            if f.pts < target:
                continue
            out.append(f.to_ndarray(format="rgb24"))
            if len(out) == CLIP:
                break
        return np.stack(out)


def tv_reader(path, start):
    import torchvision.io
    t0 = start / 25.0
    v, _, _ = torchvision.io.read_video(path, start_pts=t0, end_pts=t0 + (CLIP - 0.5) / 25.0, pts_unit="sec")
    return v[:CLIP].numpy()


def decord_reader(path, start):
    import decord
    vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=1)
    return vr.get_batch(list(range(start, start + CLIP))).asnumpy()


class Skip(Exception):
    """A contender that cannot run here; its message says why."""


DALI_DIR = "/usr/local/lib/godali-dali"  # scripts/setup.sh with GODALI_BENCH_DALI=1


def run_dali(files, batch, threads, seed):
    if os.path.isdir(DALI_DIR):
        sys.path.append(DALI_DIR)
    try:
        import numpy as np
        import torch
        from nvidia.dali import fn, pipeline_def, types
        import nvidia.dali
    except ImportError as e:
        raise Skip("NVIDIA DALI does not import: %s" % e)

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=seed, prefetch_queue_depth=2)
    def clips():
        v = fn.experimental.readers.video(device="cpu", filenames=files, sequence_length=CLIP, step=1,
                                          random_shuffle=True, initial_fill=1024, name="Reader")
        v = fn.resize(v, resize_shorter=SHORT, interp_type=types.INTERP_LINEAR, antialias=False)
        return fn.crop_mirror_normalize(v, dtype=types.FLOAT, output_layout="FCHW", crop=(CROP, CROP),
                                        crop_pos_x=fn.random.uniform(range=[0, 1]),
                                        crop_pos_y=fn.random.uniform(range=[0, 1]),
                                        mirror=fn.random.coin_flip(), mean=MEAN, std=STD)
    pipe = clips()
    try:
        pipe.build()
    except RuntimeError as e:
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        raise Skip("DALI %s fn.experimental.readers.video(device='cpu') does not build: %s" % (
            nvidia.dali.__version__, " / ".join(l for l in lines if "Assert" in l or "rror" in l)[:400]))

    def batches():
        while True:
            (out,) = pipe.run()
            yield torch.from_numpy(np.asarray(out.as_tensor()))
    return batches()


READERS = {"pyav": pyav_reader, "torchvision": tv_reader, "decord": decord_reader}


def run_loader(files, frames, batch, workers, seed, reader):
    import torch
    from torch.utils.data import DataLoader
    random.seed(seed)
    torch.manual_seed(seed)
    ds = ClipDataset(clip_list(files, frames), reader)

    def init(_):
        torch.set_num_threads(1)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, worker_init_fn=init,
                        persistent_workers=True, prefetch_factor=2)

    def batches():
        while True:
            for x in loader:
                yield x
    return batches()


def tree_stats():
    import psutil
    me = psutil.Process()
    cpu, pss = 0.0, 0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
            pss += p.memory_full_info().pss
        except psutil.Error:
            pass
    return cpu, pss


def child(args):
    import torch
    torch.set_num_threads(1)
    files = sorted(os.path.join(args.data, f) for f in os.listdir(args.data) if f.endswith(".mp4"))[:args.videos]
    try:
        if args.contender == "godali":
            it = run_godali(files, args.batch, args.cores, args.seed)
        elif args.contender == "dali":
            it = run_dali(files, args.batch, args.cores, args.seed)
        else:
            if args.contender == "decord":
                try:
                    import decord  # noqa: F401
                except ImportError as e:
                    raise Skip("decord does not import: %s" % e)
            it = run_loader(files, args.frames, args.batch, args.cores, args.seed, READERS[args.contender])
    except Skip as e:
        print(json.dumps({"contender": args.contender, "skipped": str(e)}))
        sys.stdout.flush()
        os._exit(0)
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], tree_stats()[1])
            time.sleep(0.2)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    for _ in range(args.warmup):
        x = next(it)
    assert tuple(x.shape) == (args.batch, CLIP, 3, CROP, CROP), x.shape
    cpu0, _ = tree_stats()
    t0 = time.perf_counter()
    for _ in range(args.batches):
        x = next(it)
        x.sum()  # touch the data as a trainer would
    wall = time.perf_counter() - t0
    cpu1, _ = tree_stats()
    stop.set()
    th.join()
    n = args.batches * args.batch * CLIP
    print(json.dumps({"contender": args.contender, "frames": n, "wall_s": wall, "frames_per_s": n / wall,
                      "cpu_ms_per_frame": 1000 * (cpu1 - cpu0) / n, "peak_pss_mb": peak[0] / 2**20}))
    sys.stdout.flush()
    os._exit(0)  # the DataLoader's workers and the pipeline go with the process


def child_argv(argv):
    """The parent's arguments without --contenders (as "--contenders X" or "--contenders=X")."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--contenders":
            skip = True
        elif not a.startswith("--contenders="):
            out.append(a)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="", help="clip directory (default /tmp/godali-video-bench, "
                    "with -vp9 appended for --codec vp9)")
    ap.add_argument("--codec", default="h264", choices=sorted(ENCODERS))
    ap.add_argument("--videos", type=int, default=8)
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--gop", type=int, default=25)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="godali num_threads and DataLoader num_workers")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contenders", default="godali,pyav,torchvision",
                    help="comma-separated, of godali, pyav, torchvision, decord, dali")
    ap.add_argument("--json", default="")
    ap.add_argument("--contender", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.data:
        args.data = "/tmp/godali-video-bench" + ("" if args.codec == "h264" else "-" + args.codec)
    if args.contender:
        return child(args)
    make_videos(args.data, args.videos, args.frames, args.size, args.gop, args.codec)
    names = args.contenders.split(",")
    unknown = [n for n in names if n not in ("godali", "dali") and n not in READERS]
    if unknown:
        ap.error("unknown contender(s) %s" % ",".join(unknown))
    results = {n: [] for n in names}
    skipped = {}
    for r in range(args.repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            if n in skipped:
                continue
            cmd = [sys.executable, __file__, "--contender", n] + child_argv(sys.argv[1:])
            out = subprocess.run(cmd, capture_output=True, text=True)
            line = [l for l in out.stdout.splitlines() if l.startswith("{")]
            if out.returncode != 0 or not line:
                print("%s failed:\n%s" % (n, out.stderr[-3000:]), file=sys.stderr)
                continue
            res = json.loads(line[-1])
            if "skipped" in res:
                # The library's own diagnostics (DALI logs unsupported codecs on stderr).
                said = sorted({l.strip() for l in out.stderr.splitlines() if "not supported" in l})
                skipped[n] = res["skipped"] + "".join("\n      " + l for l in said)
                print("  %s skipped: %s" % (n, skipped[n]), flush=True)
                continue
            results[n].append(res)
            print("  repeat %d %-12s %7.1f frames/s  %6.2f CPU ms/frame  %6.0f MB" % (
                r, n, res["frames_per_s"], res["cpu_ms_per_frame"], res["peak_pss_mb"]), flush=True)
    print("\n| contender | frames/s | CPU ms / frame | peak PSS (MB) |\n|---|---|---|---|")
    for n in names:
        rs = sorted(results[n], key=lambda x: x["frames_per_s"])
        if not rs:
            continue
        med = rs[len(rs) // 2]
        print("| %s | %.0f | %.2f | %.0f |" % (n, med["frames_per_s"], med["cpu_ms_per_frame"],
                                             max(x["peak_pss_mb"] for x in rs)))
    for n, why in skipped.items():
        print("%s: not run: %s" % (n, why))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results, "skipped": skipped}, f, indent=1)


if __name__ == "__main__":
    main()
