"""Issue 9: memory high-water over many bad inputs. 480 generated corrupt, truncated
and odd images (JPEG, PNG, BMP, GIF, PPM; small to 40-megapixel headers) go through a
pipeline with on_error="skip" in a child process, which prints its peak RSS (VmHWM).
The peak must stay bounded and must not grow with the number of bad files: the peak
after the first quarter of the files and after all of them are compared. Before the
fix 480 files were enough to reach 2.8 GiB (2000: 3.0 GiB): JPEG bodies under headers
of up to 13000x13000 were decoded as grey 500 MB images, and the host pool kept a
buffer for each size class met (benchmarks/RESULTS.md)."""

import io
import json
import os
import random
import struct
import subprocess
import sys
import zlib

import pytest
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
N_FILES = 480
PEAK_BOUND = 256 << 20      # bytes of peak RSS for the whole child (measured 48 MiB)
GROWTH_BOUND = 64 << 20     # peak after all files minus peak after the first quarter

CHILD = r"""
import json, sys
import godali
from godali import fn, types

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1

files = json.load(open(sys.argv[1]))
bs = 16
out = {"base": status("VmHWM"), "batches": 0, "failed": 0, "skipped": 0}
p = godali.Pipeline(batch_size=bs, num_threads=2, seed=1, on_error="skip", prefetch_queue_depth=2)
with p:
    jpegs, labels = fn.readers.file(files=files)
    p.set_outputs(fn.resize(fn.decoders.image(jpegs, output_type=types.RGB),
                            resize_x=32, resize_y=32), labels)
p.build()
steps = -(-len(files) // bs)
for i in range(steps):
    try:
        p.run()
        out["batches"] += 1
        out["skipped"] += p.batch_info.skipped
    except godali.DataError:
        out["failed"] += 1  # no good sample could stand in for a bad one
    if i == steps // 4:
        out["quarter"] = status("VmHWM")
p.close()
out["VmHWM"] = status("VmHWM")
print("RESULT " + json.dumps(out))
"""


def _png_header(w, h, depth, ctype):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(
        ">I", zlib.crc32(chunk))


def _encoded(rng, fmt):
    w, h = rng.randint(8, 700), rng.randint(8, 700)
    img = Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3) if rng.random() < 0.3
                          else bytes((x * 7) % 256 for x in range(w * h * 3)))
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


def corpus(d, n=N_FILES, seed=9):
    """n files: one in six good, the rest bad in a dozen ways, in a fixed order."""
    rng = random.Random(seed)
    files = []
    cache = {}
    for i in range(n):
        kind = i % 12
        if kind in (0, 6):
            fmt = "JPEG" if kind == 0 else "PNG"
            data = _encoded(rng, fmt)  # good
        else:
            fmt = rng.choice(["JPEG", "PNG", "BMP", "GIF"])
            if fmt not in cache or rng.random() < 0.2:
                cache[fmt] = _encoded(rng, fmt)
            enc = cache[fmt]
            W, H = rng.randint(1000, 40000), rng.randint(1000, 40000)
            if kind == 1:    # truncated at any point
                data = enc[: rng.randint(0, len(enc) - 1)]
            elif kind == 2:  # bytes flipped in the body
                b = bytearray(enc)
                for _ in range(rng.randint(1, 40)):
                    b[rng.randint(min(20, len(b) - 1), len(b) - 1)] = rng.randint(0, 255)
                data = bytes(b)
            elif kind == 3:  # PNG header of a huge image, no data
                data = _png_header(W, H, rng.choice([8, 16]), rng.choice([2, 6]))
            elif kind == 4:  # BMP header of a huge image
                data = b"BM" + struct.pack("<IIII", 54, 0, 54, 40) + \
                    struct.pack("<iiHH", W, H, 1, 24) + bytes(24)
            elif kind == 5:  # GIF screen of a huge image
                data = b"GIF89a" + struct.pack("<HH", W % 65536, H % 65536) + b"\x00\x00\x00\x3b"
            elif kind == 7:  # PPM header of a huge image, a little data
                data = b"P6\n%d %d\n255\n" % (W, H) + rng.randbytes(rng.randint(0, 5000))
            elif kind == 8:  # JPEG SOI then garbage
                data = b"\xff\xd8\xff" + rng.randbytes(rng.randint(0, 20000))
            elif kind == 9:  # garbage
                data = rng.randbytes(rng.randint(0, 8000))
            elif kind == 10:  # JPEG SOF of a huge image on a real JPEG's body
                b = bytearray(enc if fmt == "JPEG" else _encoded(rng, "JPEG"))
                k = b.find(b"\xff\xc0")
                if k > 0:
                    b[k + 5:k + 9] = struct.pack(">HH", H % 65536, W % 65536)
                data = bytes(b)
            else:            # empty
                data = b""
        path = os.path.join(d, "f%04d.%s" % (i, {"JPEG": "jpg", "PNG": "png", "BMP": "bmp",
                                                  "GIF": "gif"}.get(fmt, "jpg")))
        with open(path, "wb") as f:
            f.write(data)
        files.append(path)
    return files


def run_child(tmp_path, files):
    lst = tmp_path / "files.json"
    lst.write_text(json.dumps(files))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    r = subprocess.run([sys.executable, str(script), str(lst)], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, "child exited with %d\n%s" % (r.returncode, r.stderr[-3000:])
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow  # 480 bad inputs in a child process
def test_bad_inputs_peak_rss_is_bounded(tmp_path):
    d = tmp_path / "imgs"
    d.mkdir()
    files = corpus(str(d))
    res = run_child(tmp_path, files)
    mib = 2 ** 20
    print("files %d: VmHWM %.0f MiB (interpreter and library %.0f MiB, after a quarter "
          "%.0f MiB); batches %d, failed %d, skipped %d" % (
              len(files), res["VmHWM"] / mib, res["base"] / mib, res["quarter"] / mib,
              res["batches"], res["failed"], res["skipped"]))
    assert res["batches"] + res["failed"] == -(-len(files) // 16)
    assert res["skipped"] > len(files) // 4  # the bad files were met, and skipped
    assert res["VmHWM"] < PEAK_BOUND, res
    assert res["VmHWM"] - res["quarter"] < GROWTH_BOUND, res
