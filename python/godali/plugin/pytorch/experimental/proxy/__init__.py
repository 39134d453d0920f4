"""DALI's nvidia.dali.plugin.pytorch.experimental.proxy: a pipeline behind a torch Dataset.

A torch Dataset keeps its own logic (file lists, labels, anything else it returns) and hands
the part of each sample that the pipeline should process to ``server.proxy`` (typically as
its ``transform``). The proxy never runs the pipeline: it returns a placeholder that carries
the raw inputs, so DataLoader workers (forked processes, which must not enter godali's
library) do no more than read bytes. ``proxy.DataLoader`` collates the placeholders of a batch
into one, and, in the main process, feeds the collated raw inputs to the pipeline's
``fn.external_source`` nodes, runs it on the server's thread, and yields the batch with each
placeholder replaced by the pipeline's output (torch tensors).

    server = DALIServer(pipe)             # pipe: fn.external_source(name="images") -> ...
    ds = ImageFolder(root, loader=read_bytes, transform=server.proxy)
    loader = DataLoader(server, ds, batch_size=64, num_workers=4)
    with server:                          # or server.start_thread() / server.stop_thread()
        for images, labels in loader:
            ...

The pipeline has one ``fn.external_source(name=...)`` (no ``source``) per proxy argument; the
proxy takes them positionally, in the order the pipeline defines them, or by name. Batches
come out in the DataLoader's order whatever the number of workers, and they are fed to the
pipeline in that order (so ``deterministic`` changes nothing here: the order is always
deterministic). The DataLoader's batch_size may be at most the pipeline's; a smaller batch
(the last partial one) is padded with copies of its last sample and the outputs are trimmed.
An output whose samples all have one shape is one tensor (batch first); otherwise a list
of per-sample tensors. An error in the pipeline is raised by the DataLoader's iterator, in
the main process, at the batch it belongs to.
"""

import itertools
import os
import queue
import threading

import torch
from torch.utils.data import DataLoader as _TorchDataLoader
from torch.utils.data._utils.collate import collate as _collate
from torch.utils.data._utils.collate import default_collate_fn_map as _default_map

from ..... import external_source as _ext
from .....tensors import TensorList as _TensorList
from .....tensors import _torch_from

__all__ = ["DALIServer", "DataLoader", "DALIOutputSampleRef", "DALIOutputBatchRef"]

_call_ids = itertools.count()


class _Call:
    """One proxy call: the raw inputs of one sample, in the pipeline's input order."""

    __slots__ = ("inputs", "key")

    def __init__(self, inputs):
        self.inputs = inputs
        # Unique across processes (a worker's counter starts where the parent's stood).
        self.key = (os.getpid(), next(_call_ids))


class DALIOutputSampleRef:
    """The placeholder the proxy returns for one pipeline output of one sample."""

    __slots__ = ("call", "output", "server_id")

    def __init__(self, call, output, server_id):
        self.call = call
        self.output = output
        self.server_id = server_id

    def __repr__(self):
        return "DALIOutputSampleRef(output=%d)" % self.output


class DALIOutputBatchRef:
    """The collated placeholders of one pipeline output: replaced by the output's batch."""

    __slots__ = ("calls", "output", "server_id")

    def __init__(self, calls, output, server_id):
        self.calls = calls
        self.output = output
        self.server_id = server_id

    def __repr__(self):
        return "DALIOutputBatchRef(output=%d, samples=%d)" % (self.output, len(self.calls))


def _collate_refs(batch, *, collate_fn_map=None):
    first = batch[0]
    for r in batch:
        if r.output != first.output or r.server_id != first.server_id:
            raise TypeError("godali: proxy.DataLoader: one field of the batch holds outputs "
                            "of different pipelines or different outputs of one pipeline")
    return DALIOutputBatchRef([r.call for r in batch], first.output, first.server_id)


_COLLATE_MAP = dict(_default_map)
_COLLATE_MAP[DALIOutputSampleRef] = _collate_refs


def default_collate(batch):
    """torch's default_collate that also collates the proxy's placeholders."""
    return _collate(batch, collate_fn_map=_COLLATE_MAP)


class _Proxy:
    """server.proxy: picklable, holds no pipeline; safe to call in any process."""

    def __init__(self, names, num_outputs, server_id):
        self._names = tuple(names)
        self._num_outputs = num_outputs
        self._server_id = server_id

    def __call__(self, *args, **kwargs):
        names = self._names
        if len(args) > len(names):
            raise TypeError("godali: DALIServer.proxy takes %d input(s) (%s), got %d "
                            "positional" % (len(names), ", ".join(names), len(args)))
        values = list(args) + [None] * (len(names) - len(args))
        given = [True] * len(args) + [False] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError("godali: DALIServer.proxy got an unknown input %r; the "
                                "pipeline's external sources are %s"
                                % (k, ", ".join(map(repr, names))))
            i = names.index(k)
            if given[i]:
                raise TypeError("godali: DALIServer.proxy got input %r twice" % k)
            values[i], given[i] = v, True
        missing = [n for n, g in zip(names, given) if not g]
        if missing:
            raise TypeError("godali: DALIServer.proxy: missing input(s) %s"
                            % ", ".join(map(repr, missing)))
        call = _Call(values)
        refs = tuple(DALIOutputSampleRef(call, j, self._server_id)
                     for j in range(self._num_outputs))
        return refs[0] if len(refs) == 1 else refs


class _Job:
    __slots__ = ("calls", "done", "result", "error")

    def __init__(self, calls):
        self.calls = calls
        self.done = threading.Event()
        self.result = None
        self.error = None

    def wait(self):
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result


_server_ids = itertools.count()
_STOP = object()


class DALIServer:
    """Runs a pipeline for proxy.DataLoader on a thread of the main process (DALI's
    DALIServer(pipeline, deterministic=False)).

    The pipeline's inputs are its fn.external_source nodes, each with a name and without
    a source. ``proxy`` is the callable to give the Dataset. Start the thread with
    ``with server:`` or start_thread() before iterating a DataLoader, stop it with
    stop_thread() (or leaving the with block).
    """

    def __init__(self, pipeline, deterministic=False):
        from .....pipeline import Pipeline
        if not isinstance(pipeline, Pipeline):
            raise TypeError("godali: DALIServer expects a godali Pipeline (with one named "
                            "fn.external_source per proxy input), got %s"
                            % type(pipeline).__name__)
        self._pipe = pipeline
        self._deterministic = bool(deterministic)
        pipeline.description()  # defines the graph (Python only; the library is not used)
        groups = _ext.groups(pipeline, pipeline._reachable_nodes())
        names = []
        for g in groups:
            for n in g.nodes:
                if g.source is not None:
                    raise ValueError("godali: DALIServer: external source %r has a source; "
                                     "the proxy feeds the pipeline's external sources, so "
                                     "they must have none" % (n.name,))
                if not n.name:
                    raise ValueError("godali: DALIServer: every fn.external_source of the "
                                     "pipeline needs a name= (the proxy's argument names)")
                names.append(n.name)
        if not names:
            raise ValueError("godali: DALIServer: the pipeline has no fn.external_source "
                             "input; the proxy feeds its inputs through them")
        if pipeline.batch_size <= 0:
            raise ValueError("godali: DALIServer: the pipeline needs a batch_size")
        self._names = names
        self._num_outputs = len(pipeline._outputs)
        self._id = (os.getpid(), next(_server_ids))
        self._proxy = _Proxy(names, self._num_outputs, self._id)
        self._queue = None
        self._thread = None
        self._lock = threading.Lock()

    @property
    def proxy(self):
        """The picklable callable for the Dataset: proxy(*inputs) or proxy(name=input)
        returns one placeholder per pipeline output (one, or a tuple)."""
        return self._proxy

    @property
    def batch_size(self):
        return self._pipe.batch_size

    # -- thread -------------------------------------------------------------------------

    def start_thread(self):
        """Builds the pipeline if needed and starts the thread that runs it."""
        if self._thread is not None:
            return
        if os.getpid() != self._id[0]:
            raise RuntimeError("godali: DALIServer.start_thread() was called in process %d, "
                               "but the server was created in %d: run the server in the "
                               "main process" % (os.getpid(), self._id[0]))
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="godali-dali-server",
                                        daemon=True)
        self._thread.start()

    def stop_thread(self):
        """Stops the thread once the batches already submitted are done."""
        t = self._thread
        if t is None:
            return
        self._queue.put(_STOP)
        t.join()
        self._thread = None
        self._queue = None

    def __enter__(self):
        self.start_thread()
        return self

    def __exit__(self, *exc):
        self.stop_thread()
        return False

    def __del__(self):
        try:
            if self._thread is not None and self._queue is not None:
                self._queue.put(_STOP)
        except Exception:
            pass

    def _loop(self):
        q = self._queue
        while True:
            job = q.get()
            if job is _STOP:
                return
            try:
                job.result = self._run(job.calls)
            except BaseException as e:  # handed to the consumer, never lost on the thread
                job.error = e
            job.done.set()

    def _submit(self, calls):
        if self._thread is None:
            raise RuntimeError("godali: the DALIServer's thread is not running: iterate "
                               "the proxy.DataLoader inside `with server:` or after "
                               "server.start_thread()")
        job = _Job(calls)
        self._queue.put(job)
        return job

    def _run(self, calls):
        """Feeds one batch of proxy calls and runs the pipeline: a tuple of outputs, each a
        tensor (batch first) or a list of per-sample tensors, trimmed to len(calls)."""
        pipe = self._pipe
        bs = pipe.batch_size
        n = len(calls)
        if n > bs:
            raise ValueError("godali: proxy.DataLoader: a batch of %d samples is larger than "
                             "the pipeline's batch_size (%d); give the DataLoader a "
                             "batch_size of at most %d" % (n, bs, bs))
        padded = list(calls) + [calls[-1]] * (bs - n)
        with self._lock:
            for i, name in enumerate(self._names):
                pipe.feed_input(name, [_as_sample(c.inputs[i], name) for c in padded])
            outs = pipe.run()
        return tuple(_to_torch(tl, n) for tl in outs)

    def _replace(self, batch):
        """Runs the pipeline for every group of placeholders in a collated batch; returns
        a function that waits for the outputs and rebuilds the batch with them."""
        refs = []
        _find_refs(batch, refs)
        jobs = {}
        for r in refs:
            if r.server_id != self._id:
                raise ValueError("godali: proxy.DataLoader: the batch holds placeholders "
                                 "of another DALIServer's proxy")
            key = tuple(c.key for c in r.calls)
            if key not in jobs:
                jobs[key] = self._submit(r.calls)

        def finish():
            results = {k: j.wait() for k, j in jobs.items()}
            return _rebuild(batch, lambda r: results[tuple(c.key for c in r.calls)][r.output])

        return finish


def _as_sample(x, name):
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise TypeError("godali: DALIServer: input %r must be on the CPU, got a tensor "
                            "on %s" % (name, x.device))
        return x.contiguous().numpy()
    return x


def _to_torch(tl, n):
    if not isinstance(tl, _TensorList):
        raise TypeError("godali: DALIServer: unexpected pipeline output %r" % (tl,))
    if tl.is_dense_tensor():
        t = tl._as_torch()
        return t if n == len(tl) else t[:n]
    return [_torch_from(tl[i]._buf) for i in range(n)]


def _find_refs(obj, out):
    if isinstance(obj, DALIOutputBatchRef):
        out.append(obj)
    elif isinstance(obj, DALIOutputSampleRef):
        raise TypeError("godali: proxy.DataLoader: the batch holds an uncollated "
                        "placeholder; a custom collate_fn must collate DALIOutputSampleRef "
                        "(use godali.plugin.pytorch.experimental.proxy.default_collate)")
    elif isinstance(obj, dict):
        for v in obj.values():
            _find_refs(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _find_refs(v, out)


def _rebuild(obj, value):
    if isinstance(obj, DALIOutputBatchRef):
        return value(obj)
    if isinstance(obj, dict):
        return {k: _rebuild(v, value) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_rebuild(v, value) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_rebuild(v, value) for v in obj)
    return obj


class DataLoader(_TorchDataLoader):
    """torch's DataLoader over a Dataset that uses server.proxy (DALI's
    proxy.DataLoader(dali_server, dataset, ...)): every argument after the server is
    torch's. Each batch is collated in the workers (placeholders included), then the
    main process runs the pipeline on the collated inputs and yields the batch with the
    pipeline's outputs in place of the placeholders. Up to two batches are run ahead.
    """

    def __init__(self, dali_server, *args, **kwargs):
        if not isinstance(dali_server, DALIServer):
            raise TypeError("godali: proxy.DataLoader's first argument is the DALIServer, "
                            "got %s" % type(dali_server).__name__)
        if kwargs.get("collate_fn") is None and len(args) < 7:  # collate_fn: torch's 7th
            kwargs["collate_fn"] = default_collate
        super().__init__(*args, **kwargs)
        self.dali_server = dali_server

    def __iter__(self):
        server = self.dali_server
        it = super().__iter__()
        pending = []
        ahead = 2
        exhausted = False
        while True:
            while not exhausted and len(pending) < ahead:
                try:
                    batch = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending.append(server._replace(batch))
            if not pending:
                return
            yield pending.pop(0)()
