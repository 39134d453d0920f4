"""Pipeline lifecycle: an unreachable pipeline stops at once (no cyclic garbage
collection needed), and Ctrl-C reaches a caller blocked in build() or run() on a stalled
data source, leaving the pipeline closable."""

import gc
import os
import select
import signal
import subprocess
import sys
import time

import pytest

import godali
from godali import fn

from conftest import PYTHON_DIR, sigint_default


def _pipe(root, **kw):
    pipe = godali.Pipeline(batch_size=2, num_threads=2, device_id=None, seed=1, **kw)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root)
        pipe.set_outputs(labels)
    return pipe


def test_dropped_pipeline_destroyed_without_gc(image_folder):
    # The graph's nodes refer back to their pipeline: they used to keep it alive until
    # the cyclic collector ran, with its worker threads.
    before = godali.live_pipelines()
    gc.disable()
    try:
        for _ in range(3):
            pipe = _pipe(image_folder)
            pipe.run()
            assert godali.live_pipelines() == before + 1
            del pipe
            assert godali.live_pipelines() == before
            # fn.external_source's group refers to its pipeline too.
            pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
            with pipe:
                pipe.set_outputs(fn.external_source(source=lambda: [b"ab", b"cd"],
                                                    batch=True, dtype=godali.types.UINT8, ndim=1))
            pipe.run()
            assert godali.live_pipelines() == before + 1
            del pipe
            assert godali.live_pipelines() == before
    finally:
        gc.enable()


_CHURN = r"""
import gc, os, sys, threading
import godali
from godali import fn
gc.disable()
root = sys.argv[1]

def tasks():
    return len(os.listdir("/proc/self/task"))

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def churn(n):
    for _ in range(n):
        pipe = godali.Pipeline(batch_size=2, num_threads=4, device_id=None, seed=1)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=root)
            pipe.set_outputs(labels)
        pipe.run()
        del pipe

peak = 0
for r in range(4):
    ts = [threading.Thread(target=churn, args=(15,)) for _ in range(4)]
    for t in ts:
        t.start()
    while any(t.is_alive() for t in ts):
        peak = max(peak, tasks())
        ts[0].join(0.01)
    for t in ts:
        t.join()
    if r == 0:
        rss0 = rss_mb()
    print("round", r, "live", godali.live_pipelines(), "threads", tasks(), "peak", peak,
          "rss", round(rss_mb()), flush=True)
print("RESULT", godali.live_pipelines(), peak, rss0, rss_mb())
"""


def test_threads_creating_and_dropping_pipelines_stay_bounded(image_folder):
    # 240 pipelines of 4 workers made and dropped by 4 threads, the cyclic collector off:
    # each is destroyed when dropped, so the OS threads stay bounded (they reached 571,
    # then pthread_create failed and aborted the process) and memory is given back.
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", _CHURN, image_folder], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    live, peak, rss0, rss1 = r.stdout.split("RESULT")[1].split()
    print(r.stdout)
    assert int(live) == 0
    assert int(peak) < 120, r.stdout
    assert float(rss1) - float(rss0) < 64, r.stdout


# A child blocked on a loopback server that accepts connections and never answers: in
# build() (its file_list is remote) or in run() (its files are).
_STALL = r"""
import socket, sys, threading, time
import godali
from godali import fn
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
port = srv.getsockname()[1]
held = []

def accept():
    while True:
        held.append(srv.accept()[0])

threading.Thread(target=accept, daemon=True).start()
mode = sys.argv[1]
pipe = godali.Pipeline(batch_size=2, num_threads=2, device_id=None, seed=1)
with pipe:
    if mode == "build":
        data, labels = fn.readers.file(file_list="http://127.0.0.1:%d/list.txt" % port)
    else:
        data, labels = fn.readers.file(
            files=["http://127.0.0.1:%d/a%d.jpg" % (port, i) for i in range(4)])
    pipe.set_outputs(data)
if mode == "run":
    pipe.build()
print("blocking", flush=True)
try:
    pipe.build() if mode == "build" else pipe.run()
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
t = time.monotonic()
pipe.close()
print("closed %.3f" % (time.monotonic() - t), flush=True)
"""


def _line(proc, timeout):
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if ready else None


@pytest.mark.parametrize("mode", ["build", "run"])
def test_ctrl_c_reaches_a_call_blocked_on_a_stalled_source(mode):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.Popen([sys.executable, "-c", _STALL, mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    try:
        assert _line(proc, 60) == "blocking", proc.stderr.read()
        time.sleep(0.5)
        assert proc.poll() is None
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = _line(proc, 5)
        took = time.monotonic() - t0
        assert line == "interrupted", (line, proc.stderr.read() if line is None else "")
        assert took < 1.0, "KeyboardInterrupt after %.2f s" % took
        line = _line(proc, 10)
        assert line is not None and line.startswith("closed"), line
        assert float(line.split()[1]) < 2.0
        assert proc.wait(10) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
