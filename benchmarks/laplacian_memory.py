"""Peak memory of decode -> laplacian on one large generated photograph.

    PYTHONPATH=python python3 benchmarks/laplacian_memory.py [SIDE] [THREADS]

Writes a SIDE x SIDE RGB JPEG (default 5240, the size of the photograph that exposed the
whole-sample float64 scratch) into a temporary folder, runs a pipeline of
readers.file -> decoders.image -> laplacian (uint8 output, window 3) for two iterations
of batch 1, and prints the process's peak resident set (VmHWM) and the output's checksum.
Run it once per build to compare; the figure includes the Python interpreter, the
library, the decoded image and the reader's file.
"""

import os
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image


def vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    side = int(sys.argv[1]) if len(sys.argv) > 1 else 5240
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    from godali import fn, pipeline_def

    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "c0"))
        ramp = (np.arange(side) * 239 // max(side - 1, 1)).astype(np.uint8)
        noise = np.random.default_rng(0).integers(0, 16, (side, side), dtype=np.uint8)
        img = np.empty((side, side, 3), np.uint8)  # built in place: a small peak here
        img[..., 0] = ramp[None, :]
        img[..., 1] = ramp[:, None]
        img[..., 2] = ramp[None, :] // 2
        img[..., 2] += ramp[:, None] // 2
        for c in range(3):
            img[..., c] += noise
        Image.fromarray(img).save(os.path.join(d, "c0", "big.jpg"), quality=90)
        del img, noise
        base = vm_hwm_mb()

        @pipeline_def(batch_size=1, num_threads=threads, device_id=None, prefetch_queue_depth=1)
        def pipe():
            enc, _ = fn.readers.file(file_root=d)
            return fn.laplacian(fn.decoders.image(enc), window_size=3)

        p = pipe()
        p.build()
        crc = 0
        for _ in range(2):
            (out,) = p.run()
            a = np.array(out[0])
            crc = zlib.crc32(a.tobytes(), crc)
        print("side %d, threads %d: VmHWM %.0f MB (%.0f MB before the pipeline), output %s crc32 %08x"
              % (side, threads, vm_hwm_mb(), base, a.shape, crc))


if __name__ == "__main__":
    main()
