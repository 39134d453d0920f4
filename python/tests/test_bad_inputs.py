"""Issue 9: a corpus of bad inputs run in a child process under an address-space limit
(ulimit -v), in on_error raise and skip modes: no crash, bounded peak RSS, every error
names its file; and the memory of one huge image is given back on close()."""

import json
import os
import resource
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import make_jpeg

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, "tests", "data", "corpus")
AS_LIMIT = 3 << 30  # bytes of address space the child may map

CHILD = r"""
import json, os, sys
import godali
from godali import fn, types

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1

files, mode = json.loads(sys.argv[1]), sys.argv[2]
out = {"errors": [], "batches": 0, "skipped": 0}
def pipe(batch, on_error):
    p = godali.Pipeline(batch_size=batch, num_threads=2, seed=1, on_error=on_error)
    with p:
        jpegs, labels = fn.readers.file(files=files)
        p.set_outputs(fn.resize(fn.decoders.image(jpegs, output_type=types.RGB),
                                resize_x=16, resize_y=16), labels)
    p.build()
    return p
if mode == "raise":
    p = pipe(1, "raise")
    for i in range(len(files)):
        try:
            p.run()
            out["batches"] += 1
        except godali.DataError as e:
            out["errors"].append([i, str(e)])
    p.close()
elif mode == "skip":
    p = pipe(len(files), "skip")
    p.run()
    out["batches"] += 1
    out["skipped"] = -1
    p.close()
else:  # "big": one huge image, RSS after close
    base = status("VmRSS")
    p = pipe(1, "raise")
    p.run()
    out["rss_running"] = status("VmRSS") - base
    p.close()
    out["rss_after_close"] = status("VmRSS") - base
out["VmHWM"] = status("VmHWM")
print("RESULT " + json.dumps(out))
"""


def _png_header(w, h, depth, ctype):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(
        ">I", zlib.crc32(chunk))


def _bad_corpus(tmp):
    """Good images and every kind of bad input, in a fixed order."""
    d = str(tmp)
    files = []
    good = make_jpeg(os.path.join(d, "good.jpg"), 40, 30, seed=1)
    with open(good, "rb") as f:
        data = f.read()

    def put(name, content):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(content)
        files.append(p)

    files.append(good)
    put("zero.jpg", b"")
    put("garbage.jpg", os.urandom(4096))
    put("truncated.jpg", data[: len(data) // 3])
    put("png16_12000x14000.png", _png_header(12000, 14000, 16, 6))  # case 3
    put("png8_12000x14000.png", _png_header(12000, 14000, 8, 6))
    put("pnm_huge.ppm", b"P6\n12000 14000\n255\n")
    put("bmp_huge.bmp", b"BM" + struct.pack("<IIII", 54, 0, 54, 40) +
        struct.pack("<iiHH", 12000, 14000, 1, 24) + bytes(24))
    put("gif_huge.gif", b"GIF89a" + struct.pack("<HH", 12000, 14000) + b"\x00\x00\x00\x3b")
    sparse = os.path.join(d, "sparse_100g.jpg")  # case 2
    with open(sparse, "wb") as f:
        f.truncate(100 << 30)
    files.append(sparse)
    fifo = os.path.join(d, "fifo.jpg")  # case 7
    os.mkfifo(fifo)
    files.append(fifo)
    with open(os.path.join(CORPUS, "MANIFEST.tsv")) as f:
        for line in f:
            path, _size, desc = line.rstrip("\n").split("\t")[:3]
            if line.rstrip("\n").split("\t")[-1] != "ok":
                files.append(os.path.join(CORPUS, path))
    files.append(good)
    return files


def _run_child(tmp_path, files, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    r = subprocess.run([sys.executable, str(script), json.dumps(files), mode],
                       capture_output=True, text=True, timeout=300, preexec_fn=limit, env=env)
    assert r.returncode == 0, "child exited with %d (negative: signal)\n%s" % (
        r.returncode, r.stderr[-3000:])
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    print(mode, "VmHWM %.0f MiB" % (res["VmHWM"] / 2**20), res.get("batches"),
          "errors", len(res.get("errors", [])))
    return res


@pytest.mark.parametrize("mode", ["raise", "skip"])
def test_bad_input_corpus_under_ulimit(tmp_path, mode):
    files = _bad_corpus(tmp_path)
    res = _run_child(tmp_path, files, mode)
    assert res["VmHWM"] < 1 << 30, "peak RSS %d bytes" % res["VmHWM"]
    if mode == "raise":
        bad = [i for i, _ in res["errors"]]
        assert 0 not in bad and len(files) - 1 not in bad  # the good images decode
        # every synthetic bad input fails, each error naming its own file
        for i in range(1, 11):
            assert i in bad, files[i]
        for i, msg in res["errors"]:
            assert files[i] in msg, (files[i], msg)
        assert res["batches"] + len(res["errors"]) == len(files)


def test_huge_image_memory_returned_on_close(tmp_path):
    """Case 4: one 12000x12000 JPEG; the process's RSS after close() is near where it
    started (it was 880 MB above)."""
    from PIL import Image
    path = str(tmp_path / "big.jpg")
    Image.new("RGB", (12000, 12000), (90, 120, 200)).save(path, quality=80)
    res = _run_child(tmp_path, [path], "big")
    print("RSS while running %+.0f MiB, after close %+.0f MiB" % (
        res["rss_running"] / 2**20, res["rss_after_close"] / 2**20))
    assert res["rss_after_close"] < 100 << 20
