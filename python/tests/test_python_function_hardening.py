"""python_function hardening (issue 24): one call at a time per node in iteration order
(a function that reuses its output buffer, or keeps state, sees its batches as DALI gives
them), calls into the function's own pipeline refused instead of deadlocking, and an
interpreter that exits or gets Ctrl-C while a function is blocked.

The deadlock and exit cases run in a child process with a timeout."""

import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from godali import fn, types
from godali.pipeline import Pipeline
from conftest import sigint_default

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
BS = 4


def _tagged_source():
    """A source whose batch k holds samples tagged k * BS + i (3 int64 each)."""
    counter = iter(range(10 ** 9))

    def src():
        k = next(counter)
        return [np.full(3, k * BS + i, np.int64) for i in range(BS)]
    return src


@pytest.mark.parametrize("depth", [2, 4])
def test_a_function_reusing_its_output_buffer_gets_every_batch_right(depth):
    # Before: the node's calls for the batches prepared ahead overlapped, out of order,
    # and 180/200 (depth 2) and 197/200 (depth 4) batches came out with another batch's
    # data. DALI runs the function one iteration at a time, in order.
    buf = np.zeros((BS, 8), np.int64)
    seen = []

    def f(xs):
        seen.append(int(xs[0][0]))
        for i, x in enumerate(xs):
            buf[i, :] = x[0]
            time.sleep(0.0002)  # releases the GIL: an overlapping call would run here
        return [buf[i] for i in range(len(xs))]

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None, prefetch_queue_depth=depth)
    with pipe:
        x = fn.external_source(source=_tagged_source(), dtype=types.INT64, ndim=1)
        pipe.set_outputs(fn.python_function(x, function=f, batch_processing=True))
    pipe.build()
    n = 200
    wrong = []
    for b in range(n):
        (ys,) = pipe.run()
        got = [np.array(ys.at(i)) for i in range(BS)]
        want = [np.full(8, b * BS + i, np.int64) for i in range(BS)]
        if not all(np.array_equal(g, w) for g, w in zip(got, want)):
            wrong.append(b)
    pipe.close()
    assert wrong == [], "%d of %d batches wrong: %s" % (len(wrong), n, wrong[:10])
    assert seen[:n] == [b * BS for b in range(n)], "calls out of iteration order"


def test_per_sample_function_sees_batch_b_before_batch_b_plus_1():
    # batch_processing=False: every sample of batch b before any of batch b+1, in order,
    # and the reused 0-d buffer is copied each time.
    order = []
    out = np.zeros((), np.int64)

    def f(x):
        order.append(int(x[0]))
        out[()] = x[0] * 10
        time.sleep(0.0002)
        return out

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None, prefetch_queue_depth=4)
    with pipe:
        x = fn.external_source(source=_tagged_source(), dtype=types.INT64, ndim=1)
        pipe.set_outputs(fn.python_function(x, function=f))
    pipe.build()
    n = 60
    for b in range(n):
        (ys,) = pipe.run()
        assert [int(np.array(ys.at(i))) for i in range(BS)] == \
            [(b * BS + i) * 10 for i in range(BS)], b
    pipe.close()
    assert order[:n * BS] == list(range(n * BS))


def test_two_functions_keep_their_own_order_and_their_data():
    # Two nodes, the second reading the first: each runs in order; the batch's values
    # go through both.
    first, second = [], []

    def a(xs):
        first.append(int(xs[0][0]))
        return [x + 1000 for x in xs]

    def b(xs):
        second.append(int(xs[0][0]) - 1000)
        return [x * 2 for x in xs]

    pipe = Pipeline(batch_size=BS, num_threads=3, device_id=None, prefetch_queue_depth=3)
    with pipe:
        x = fn.external_source(source=_tagged_source(), dtype=types.INT64, ndim=1)
        y = fn.python_function(x, function=a, batch_processing=True)
        pipe.set_outputs(fn.python_function(y, function=b, batch_processing=True))
    pipe.build()
    for k in range(40):
        (ys,) = pipe.run()
        for i in range(BS):
            np.testing.assert_array_equal(np.array(ys.at(i)),
                                          np.full(3, (k * BS + i + 1000) * 2, np.int64))
    pipe.close()
    assert first[:40] == [k * BS for k in range(40)]
    assert second[:40] == [k * BS for k in range(40)]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_failed_batches_do_not_starve_the_external_source(depth):
    # A batch whose function raised counts as taken; the source feeding ahead used not
    # to count it, and after `depth` failures run() said "has no data" for good.
    import godali

    def f(xs):
        tag = int(xs[0][0]) // BS
        if tag % 3 == 1:
            raise ValueError("tag %d" % tag)
        return xs

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None, prefetch_queue_depth=depth)
    with pipe:
        x = fn.external_source(source=_tagged_source(), dtype=types.INT64, ndim=1)
        pipe.set_outputs(fn.python_function(x, function=f, batch_processing=True))
    pipe.build()
    for k in range(30):
        if k % 3 == 1:
            with pytest.raises(godali.DataError, match="tag %d" % k):
                pipe.run()
            continue
        (ys,) = pipe.run()
        np.testing.assert_array_equal(np.array(ys.at(0)), np.full(3, k * BS, np.int64))
    pipe.close()


# --- child processes: calls into the own pipeline, exit and Ctrl-C --------------------

_PRELUDE = r"""
import sys, threading, time
import numpy as np
import godali
from godali import fn, types
from godali.pipeline import Pipeline

counter = iter(range(10 ** 9))
def src():
    return [np.full(3, next(counter), np.int64)] * 2

def make(f, depth=2):
    pipe = Pipeline(batch_size=2, num_threads=2, device_id=None, prefetch_queue_depth=depth)
    with pipe:
        x = fn.external_source(source=src, dtype=types.INT64, ndim=1)
        pipe.set_outputs(fn.python_function(x, function=f, batch_processing=True))
    pipe.build()
    return pipe
"""

_REENTRY = _PRELUDE + r"""
what = sys.argv[1]
holder = {}
caught = []

def f(xs):
    p = holder["pipe"]
    try:
        if what == "raw_next":
            p._lib.pipeline_next(p._handle)   # past the Python check: the library refuses
        elif what == "raw_reset":
            p._lib.pipeline_reset(p._handle)
        else:
            getattr(p, what)()
    except Exception as e:
        caught.append((type(e).__name__, isinstance(e, godali.StateError), str(e)))
    return xs

pipe = make(f, depth=1)
holder["pipe"] = pipe
(out,) = pipe.run()
assert int(np.array(out.at(0))[0]) == 0
name, is_state, msg = caught[0]
print("CAUGHT", name, is_state, flush=True)
print("MESSAGE", msg.replace("\n", " "), flush=True)
(out,) = pipe.run()    # the pipeline is still usable
print("NEXT", int(np.array(out.at(0))[0]), flush=True)
pipe.close()
print("DONE", flush=True)
"""


@pytest.mark.parametrize("what", ["run", "schedule_run", "outputs", "reset", "close",
                                  "raw_next", "raw_reset"])
def test_a_function_calling_into_its_own_pipeline_raises_instead_of_deadlocking(what):
    # Before: run() from inside the function deadlocked (the child timed out).
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", _REENTRY, what], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert lines["CAUGHT"] == "ReentrantCallError True", r.stdout
    if what.startswith("raw_"):
        # The library's own check: names the C call and the node.
        call = "godali_pipeline_" + what[4:]
        assert lines["MESSAGE"].startswith(call + " called from inside the host function "
                                           "of node"), lines["MESSAGE"]
    else:
        assert ("%s() called from inside a python_function" % what.split("_")[0]
                if what != "schedule_run" else "schedule_run() called") in lines["MESSAGE"]
    assert lines["NEXT"] == "1", r.stdout
    assert "DONE" in r.stdout


_BLOCKED = _PRELUDE + r"""
mode = sys.argv[1]
entered = threading.Event()
def f(xs):
    if xs[0][0] == 1:
        entered.set()
        threading.Event().wait()   # never returns
    return xs

pipe = make(f)
(out,) = pipe.run()
print("first", int(np.array(out.at(0))[0]), flush=True)
entered.wait(30)                   # batch 1, prepared ahead, is inside the function
if mode == "run":
    pipe.run()
print("exiting", flush=True)
"""


def _line(proc, timeout):
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if ready else None


def test_interpreter_exits_while_a_function_is_blocked():
    # Before: the pipeline's destroy at exit waited for the function forever (Ctrl-C
    # ignored). Now it waits 2 s, says so on stderr and the interpreter exits cleanly.
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", _BLOCKED, "exit"], env=env,
                       capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["first", "0", "exiting"], r.stdout
    assert 'python_function node "python_function_' in r.stderr, r.stderr
    assert "batch 1 of epoch 0" in r.stderr and "has not returned after 2.0 s" in r.stderr, \
        r.stderr
    assert "Traceback" not in r.stderr and "fatal" not in r.stderr.lower(), r.stderr
    assert took < 30, took


def test_ctrl_c_while_run_waits_for_a_blocked_function():
    # Ctrl-C reaches run() at once; then the interpreter exits (its destroy bounded).
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKED, "run"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    try:
        assert _line(proc, 60) == "first 0", proc.stderr.read()
        time.sleep(0.5)  # in run(), waiting for batch 1
        assert proc.poll() is None
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(20)
        took = time.monotonic() - t0
        err = proc.stderr.read()
        assert rc in (-signal.SIGINT, 128 + signal.SIGINT, 1), (rc, err)
        assert "KeyboardInterrupt" in err, err
        assert "exiting" not in proc.stdout.read()
        assert took < 10, took
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


_CLOSE = _PRELUDE + r"""
release = threading.Event()
entered = threading.Event()
def f(xs):
    if xs[0][0] == 1:
        entered.set()
        release.wait()
    return xs

pipe = make(f)
(out,) = pipe.run()
# batch 1 is prepared ahead; close only once its call is under way (on a loaded machine
# the prefetch may not have reached the function yet, and then close has nothing to wait on)
assert entered.wait(30), "batch 1's call never started"
t = time.monotonic()
pipe.close()
print("closed %.2f" % (time.monotonic() - t), flush=True)
release.set()           # the abandoned call returns: nothing breaks
time.sleep(0.5)
pipe2 = make(lambda xs: xs)
(out,) = pipe2.run()
print("second", int(np.array(out.at(0))[0]), godali.live_pipelines(), flush=True)
"""


def test_close_returns_while_a_function_is_blocked_and_survives_its_return():
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", _CLOSE], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    closed, second = r.stdout.splitlines()
    assert 1.5 < float(closed.split()[1]) < 10, closed
    assert second.split()[0] == "second" and second.split()[2] == "1", second
    assert "has not returned after" in r.stderr


_RESET = r"""
import sys, threading, time
from godali import fn
from godali.pipeline import Pipeline
calls = [0]
def f(xs):
    calls[0] += 1
    if calls[0] == 2:              # batch 1, prepared ahead, never returns
        threading.Event().wait()
    return xs
pipe = Pipeline(batch_size=2, num_threads=2, device_id=None, prefetch_queue_depth=2)
with pipe:
    data, labels = fn.readers.file(file_root=sys.argv[1])
    pipe.set_outputs(fn.python_function(labels, function=f, batch_processing=True))
pipe.build()
pipe.run()
print("blocking", flush=True)
try:
    pipe.reset()                   # waits for the batches prepared ahead
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_reaches_a_reset_waiting_for_a_blocked_function(tmp_path):
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for i in range(3):
            (tmp_path / c / ("%d.jpg" % i)).write_bytes(bytes([i]) * 8)  # never decoded
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.Popen([sys.executable, "-c", _RESET, str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    try:
        assert _line(proc, 60) == "blocking", proc.stderr.read()
        time.sleep(0.5)
        assert proc.poll() is None
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert _line(proc, 5) == "interrupted"
        assert time.monotonic() - t0 < 2.0
        assert proc.wait(20) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


_COLLECTED_INSIDE = _PRELUDE + r"""
import gc, weakref
holder = {}
gate = threading.Event()
def f(xs):
    if xs[0][0] == 2:
        gate.wait(10)            # the main thread drops its reference meanwhile
        del holder["p"]          # the last reference: collected here, on the callback thread
        gc.collect()
        print("collected inside", holder["ref"]() is None, flush=True)
    return xs

pipe = make(f, depth=1)
pipe.run()
pipe.run()
holder["p"], holder["ref"] = pipe, weakref.ref(pipe)
pipe.schedule_run()              # batch 2: the function waits for the gate
del pipe
gc.collect()
gate.set()
t = time.time()
while godali.live_pipelines() and time.time() - t < 20:
    time.sleep(0.05)
time.sleep(0.5)
print("live", godali.live_pipelines(), flush=True)
"""


def test_a_pipeline_collected_inside_its_own_function_is_destroyed_later():
    # The collector may run on the thread of a python function and collect that
    # function's pipeline: its destroy (which waits for the call) goes to another thread
    # instead of deadlocking the call (before, the call never returned).
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", _COLLECTED_INSIDE], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["collected inside True", "live 0"], r.stdout + r.stderr
    assert "Exception ignored" not in r.stderr, r.stderr
