"""Pipeline and pipeline_def, with DALI's names, defaults and behaviour.

A Pipeline records fn.* calls made while it is current (`with pipe:` or inside a
@pipeline_def function), turns the graph reachable from its outputs into the JSON
description of docs/pipeline.md, and drives the library through ctypes.
"""

import contextlib
import enum
import functools
import inspect
import json
import operator
import os
import re
import threading
import weakref
from collections import namedtuple
from ctypes import byref, c_char_p, c_int, c_int64, c_uint64, c_void_p

from .. import _dlpack, _graph, _lib, _pyfunc
from .. import types as _types
from .. import external_source as _ext
from ..tensors import TensorList, _Lease
from .._graph import DataNode  # noqa: F401  (DALI's nvidia.dali.pipeline exports it too)
from .. import tensors, types  # noqa: F401  (DALI's module exposes them)

# DALI's nvidia.dali.pipeline.DataNode (tests check isinstance(x, pipeline.DataNode)).
DataNode = _graph.DataNode

class StreamPolicy(enum.Enum):
    """DALI's stream policy for GPU work. godali uses one CUDA stream per pipeline; the
    value is kept (Pipeline.stream_policy) and otherwise has no effect."""
    SINGLE = 1
    PER_BACKEND = 2
    PER_OPERATOR = 3
    UNSPECIFIED = 0


class OperatorConcurrency(enum.Enum):
    """DALI's operator concurrency policy. godali runs every sample of every CPU operator in
    parallel on num_threads workers; the value is kept (Pipeline.concurrency) and otherwise
    has no effect."""
    NONE = 1
    BACKEND = 2
    FULL = 3
    UNSPECIFIED = 0


def do_not_convert(func=None):
    """DALI's marker for a function that enable_conditionals must not rewrite. godali
    rewrites only the @pipeline_def function's own `if` statements, never the functions
    it calls, so this returns the function unchanged (marked as DALI marks it)."""
    def mark(f):
        try:
            f.__dali_do_not_convert__ = True
        except (AttributeError, TypeError):
            pass
        return f
    return mark if func is None else mark(func)


BatchInfo = namedtuple("BatchInfo", "batch_size valid epoch iteration last_in_epoch skipped")
BatchInfo.__doc__ = """Facts about the current batch.

valid: the leading samples that belong to this epoch; the rest of the batch is padding
(the last sample repeated when the reader pads, otherwise the shard wrapping around).
skipped: samples replaced because they failed to decode (on_error="skip")."""

_DEVICE_TYPES = {"cpu": _dlpack.kDLCPU, "gpu": _dlpack.kDLCUDA, "cuda": _dlpack.kDLCUDA}


def _is_constant_like(o):
    """A value set_outputs turns into a constant node (as DALI's types.Constant)."""
    from .. import types
    if isinstance(o, (bool, int, float, types.ScalarConstant)):
        return True
    if isinstance(o, (list, tuple)) and o and all(
            isinstance(x, (bool, int, float)) or _is_constant_like(x) for x in o):
        return True  # a (nested) list of numbers: one constant
    mod = type(o).__module__ or ""
    return mod == "numpy" or (mod.startswith("numpy") and hasattr(o, "dtype"))


def _device_type(device):
    if isinstance(device, int):
        return device
    try:
        return _DEVICE_TYPES[device]
    except KeyError:
        raise ValueError("godali: device must be 'cpu' or 'gpu', not %r" % (device,)) from None


def _sub_batch_size(v):
    """sub_batch_size checked: None (the whole batch) or an integer >= 1."""
    if v is None:
        return None
    try:
        n = None if isinstance(v, bool) else operator.index(v)
    except TypeError:
        n = None
    if n is None or n < 1:
        raise ValueError("godali: sub_batch_size must be None (the whole batch) or an "
                         "integer >= 1, got %r" % (v,))
    return n


class Pipeline:
    """A data pipeline (DALI's nvidia.dali.Pipeline).

    Arguments follow DALI: batch_size (required, > 0), num_threads (-1: the library's
    default, 4), device_id (-1: the GPU 0 if the graph has GPU operators, else none;
    None: CPU only), seed (-1: random; any other value makes outputs reproducible),
    prefetch_queue_depth (batches prepared ahead; an int, or DALI's
    {"cpu_size": a, "gpu_size": b}). num_threads="auto" and prefetch_queue_depth="auto"
    (godali's): the library chooses them from the CPUs the process may use (affinity
    mask, cgroup CPU quota) and adjusts them once from the first batches' stage times;
    tuning() says what it chose and why (docs/pipeline.md, "Automatic tuning").
    preallocate ("auto", the default, or "off"): build scans the image headers of the
    decoders' local files in the background and sizes their buffers from the largest.
    max_host_bytes: build fails, naming what to lower, when memory_plan()'s worst case
    is above it. sub_batch_size (None: the whole batch): the whole-batch host stages
    (python_function with batch_processing=True, and the nodes before and after it) run
    on parts of this many samples, one part after the other, and only the outputs are
    assembled whole, so that the data the function reads and makes scales with the
    part. A batch python_function is then called once per part with that part's
    samples, not once with the whole batch as in DALI; operators that need the whole
    batch (pad, permute_batch, ...) refuse it; the GPU stage of the CUDA flavour still
    runs over the whole batch (docs/pipeline.md, "Sub-batches").
    exec_pipelined and exec_async are accepted for
    compatibility: godali always runs ahead of the consumer.

    godali extras: max_image_pixels (refuse images, and video frames, whose header
    declares more pixels, video samples whose frames together hold 8 times more or whose
    padding holds more; None: the
    library's default, 0: no limit), max_file_bytes (readers refuse larger
    files before reading them; None: the library's default, 256 MiB; 0: no limit),
    on_error ("raise": a bad sample raises
    DataError naming the file, and the next run() goes on; "skip": it is replaced and
    counted in batch_info.skipped), first_epoch (the epoch number the pipeline starts at:
    resuming at epoch n gives epoch n's shuffle and shard). skipped() names the files
    replaced in the current batch.

    Checkpoints (DALI's): with enable_checkpointing=True, checkpoint() returns the
    pipeline's state after the batches returned so far, and a pipeline created with the
    same graph and checkpoint=<that text> continues exactly where it was, mid-epoch
    included (docs/pipeline.md, "Checkpoints").
    """

    def __init__(self, batch_size=-1, num_threads=-1, device_id=-1, seed=-1,
                 exec_pipelined=True, prefetch_queue_depth=2, exec_async=True,
                 bytes_per_sample=0, set_affinity=False, max_streams=-1,
                 default_cuda_stream_priority=0, *, enable_memory_stats=False,
                 enable_checkpointing=False, checkpoint=None, py_num_workers=1,
                 py_start_method="fork", py_callback_pickler=None, output_dtype=None,
                 output_ndim=None, exec_dynamic=None, experimental_exec_dynamic=None,
                 exec_separated=False, stream=None, enable_conditionals=False,
                 max_image_pixels=None, on_error="raise", first_epoch=0,
                 max_file_bytes=None, output_layout=None, stream_policy=None,
                 concurrency=None, preallocate="auto", max_host_bytes=None,
                 sub_batch_size=None):
        # bytes_per_sample, set_affinity, max_streams, default_cuda_stream_priority,
        # enable_memory_stats, py_num_workers, py_start_method, py_callback_pickler,
        # exec_dynamic, exec_separated and stream are DALI tuning knobs godali has no use
        # for (its executor is always asynchronous and pipelined, and has no Python
        # workers); they are accepted so DALI code runs unchanged.
        self._build_deferred = False  # build() waits for the first batch (external sources)
        # As DALI: `enable_conditionals` takes effect through @pipeline_def, which sets
        # this once it has rewritten the function (_conditionals.conditionals_enabled).
        self._conditionals_enabled = False
        self._max_streams = max_streams  # DALI's attribute (its tests read it)
        self._output_dtype = output_dtype
        self._output_ndim = output_ndim
        if isinstance(output_layout, (list, tuple)):
            if not all(isinstance(x, (str, type(None))) for x in output_layout):
                raise TypeError("`output_layout` must be either: a string, a list of strings "
                                "or None. Found: %r" % (output_layout,))
        elif not isinstance(output_layout, (str, type(None))):
            raise TypeError("`output_layout` must be either: a string, a list of strings or "
                            "None. Found type: %s." % type(output_layout))
        self._output_layout = output_layout
        # DALI's executor settings (the pipeline's properties echo them): godali's executor
        # runs every CPU operator sample-parallel and has one stream per pipeline.
        self._stream_policy = stream_policy
        self._concurrency = concurrency
        self._tuning = {"bytes_per_sample": bytes_per_sample, "set_affinity": set_affinity,
                        "max_streams": max_streams,
                        "default_cuda_stream_priority": default_cuda_stream_priority,
                        "enable_memory_stats": enable_memory_stats,
                        "py_num_workers": py_num_workers, "py_start_method": py_start_method,
                        # DALI 2.4: None is its default, the dynamic executor
                        "exec_dynamic": True if (exec_dynamic is None and
                                                 experimental_exec_dynamic is None)
                        else bool(exec_dynamic or experimental_exec_dynamic),
                        "exec_separated": exec_separated}
        self._batch_size = int(batch_size) if batch_size is not None else -1
        self._auto_threads = num_threads == "auto"
        self._auto_prefetch = prefetch_queue_depth == "auto"
        if self._auto_threads:
            num_threads = -1
        elif isinstance(num_threads, str):
            raise ValueError("godali: num_threads must be an int or \"auto\", got %r"
                             % (num_threads,))
        if self._auto_prefetch:
            prefetch_queue_depth = 2  # the engine's starting value
        elif isinstance(prefetch_queue_depth, str):
            raise ValueError("godali: prefetch_queue_depth must be an int, a dict or "
                             "\"auto\", got %r" % (prefetch_queue_depth,))
        self._num_threads = int(num_threads) if num_threads is not None else -1
        if self._num_threads != -1 and not 1 <= self._num_threads <= 256:
            # DALI refuses a thread pool of no threads; -1 is "not given" (the library's
            # default, 4), and any other value outside 1..256 was a mistake.
            raise ValueError("godali: num_threads must be 1 to 256, or -1 for the default "
                             "(4), got %r" % (num_threads,))
        self._device_id = device_id
        self._seed = int(seed) if seed is not None else -1
        self._exec_pipelined = bool(exec_pipelined)
        self._exec_async = bool(exec_async)
        if isinstance(prefetch_queue_depth, dict):
            depth = max(int(prefetch_queue_depth.get("cpu_size", 2)),
                        int(prefetch_queue_depth.get("gpu_size", 2)))
        else:
            depth = int(prefetch_queue_depth)
        if depth <= 0:
            raise ValueError("godali: prefetch_queue_depth must be > 0, got %r"
                             % (prefetch_queue_depth,))
        self._prefetch_queue_depth = depth
        if on_error not in ("raise", "skip"):
            raise ValueError("godali: on_error must be 'raise' or 'skip', not %r"
                             % (on_error,))
        self._on_error = on_error
        if preallocate not in ("auto", "off"):
            raise ValueError("godali: preallocate must be 'auto' or 'off', not %r"
                             % (preallocate,))
        self._preallocate = preallocate
        if max_host_bytes is not None and int(max_host_bytes) < 0:
            raise ValueError("godali: max_host_bytes must be >= 0, got %r" % (max_host_bytes,))
        self._max_host_bytes = None if max_host_bytes is None else int(max_host_bytes)
        self._sub_batch_size = _sub_batch_size(sub_batch_size)
        if max_image_pixels is not None and int(max_image_pixels) < 0:
            raise ValueError("godali: max_image_pixels must be >= 0 (0: no limit)")
        self._max_image_pixels = None if max_image_pixels is None else int(max_image_pixels)
        if max_file_bytes is not None and int(max_file_bytes) < 0:
            raise ValueError("godali: max_file_bytes must be >= 0 (0: no limit)")
        self._max_file_bytes = None if max_file_bytes is None else int(max_file_bytes)
        self._first_epoch = int(first_epoch)
        if self._first_epoch < 0:
            raise ValueError("godali: first_epoch must be >= 0")

        self._enable_checkpointing = bool(enable_checkpointing)
        if isinstance(checkpoint, (bytes, bytearray)):
            checkpoint = bytes(checkpoint).decode("utf-8", errors="replace")
        if checkpoint is not None and not isinstance(checkpoint, str):
            raise TypeError("godali: checkpoint must be the text that Pipeline.checkpoint() "
                            "returned (str or bytes), not %s" % type(checkpoint).__name__)
        if checkpoint is not None and not self._enable_checkpointing:
            raise ValueError("godali: a checkpoint was given but checkpointing is not "
                             "enabled: pass enable_checkpointing=True as well")
        self._checkpoint = checkpoint
        # The iterator counters a framework iterator stored in the checkpoint, if any (the
        # engine checks the rest when the pipeline is built).
        self._iterator_state = None
        # The external sources' positions (external_source.checkpoint_state).
        self._ext_state = None
        if checkpoint is not None:
            try:
                doc = json.loads(checkpoint)
                if isinstance(doc, dict) and isinstance(doc.get("iterator"), dict):
                    self._iterator_state = doc["iterator"]
                if isinstance(doc, dict):
                    self._ext_state = doc.get("external_sources")
            except ValueError:
                pass

        self._nodes = []
        self._ext_groups = []   # fn.external_source calls (external_source.py)
        self._ext_epoch_over = False
        self._names = set()
        self._outputs = None
        self._handle = 0
        self._lib = None
        self._built = False
        self._closed = False
        self._num_outputs = 0
        self._batch_seq = 0
        self._info_seq = -1
        self._info_cache = None
        self._skip_seq = -1
        self._skip_cache = None
        self._finalizer = None
        # Reused ctypes out-parameters: no allocation per batch for them.
        self._out_info = _lib.OutputInfo()
        self._out_info_ref = byref(self._out_info)
        self._out_ptr = c_void_p()
        self._out_ptr_ref = byref(self._out_ptr)
        self._binfo = _lib.BatchInfo()
        self._binfo_ref = byref(self._binfo)
        self._ready = c_int(0)
        self._ready_ref = byref(self._ready)
        # A build a KeyboardInterrupt left running in its thread (_interruptible).
        self._stalled_call = None

    # -- DALI's properties --------------------------------------------------------------

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def max_batch_size(self):
        return self._batch_size

    @property
    def num_threads(self):
        if self._auto_threads:
            return self.tuning()["num_threads"] if self._handle else "auto"
        return self._num_threads

    @property
    def device_id(self):
        return self._device_id

    @property
    def seed(self):
        return self._seed

    @property
    def exec_pipelined(self):
        return self._exec_pipelined

    @property
    def exec_async(self):
        return self._exec_async

    @property
    def prefetch_queue_depth(self):
        if self._auto_prefetch:
            return self.tuning()["prefetch_queue_depth"] if self._handle else "auto"
        return self._prefetch_queue_depth

    @property
    def first_epoch(self):
        return self._first_epoch

    @property
    def cpu_queue_size(self):
        return self._prefetch_queue_depth

    @property
    def gpu_queue_size(self):
        return self._prefetch_queue_depth

    @property
    def max_streams(self):
        return self._max_streams

    @property
    def default_cuda_stream_priority(self):
        return self._tuning["default_cuda_stream_priority"]

    @property
    def enable_memory_stats(self):
        return self._tuning["enable_memory_stats"]

    @property
    def set_affinity(self):
        return self._tuning["set_affinity"]

    @property
    def py_num_workers(self):
        return self._tuning["py_num_workers"]

    @property
    def py_start_method(self):
        return self._tuning["py_start_method"]

    @property
    def exec_dynamic(self):
        return self._tuning["exec_dynamic"]

    @property
    def exec_separated(self):
        return self._tuning["exec_separated"]

    @property
    def stream_policy(self):
        return self._stream_policy

    @property
    def concurrency(self):
        return self._concurrency

    @property
    def num_outputs(self):
        """The number of outputs (after build, or once the outputs are set)."""
        if self._num_outputs:
            return self._num_outputs
        return len(self._outputs) if self._outputs is not None else 0

    def output_dtype(self):
        """The output_dtype given to the pipeline (DALI's method)."""
        return self._output_dtype

    def output_ndim(self):
        """The output_ndim given to the pipeline (DALI's method)."""
        return self._output_ndim

    # -- graph definition ---------------------------------------------------------------

    @staticmethod
    def current():
        """The pipeline that fn.* calls are recorded into, or None."""
        return _graph.current_pipeline()

    def __enter__(self):
        _graph.push_pipeline(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        _graph.pop_pipeline(self)
        return False

    def _register_node(self, node, name):
        if self._handle:
            raise RuntimeError("godali: operators cannot be added to a pipeline that is "
                               "already built")
        seq = len(self._nodes)
        if name is None:
            base = node.op
            i = seq
            name = "%s_%d" % (base, i)
            while name in self._names:
                i += 1
                name = "%s_%d" % (base, i)
        elif name in self._names:
            raise ValueError("godali: fn.%s: a node named %r already exists in this "
                             "pipeline; node names must be unique" % (node.op, name))
        self._names.add(name)
        self._nodes.append(node)
        return seq, name

    def set_outputs(self, *outputs):
        """Sets the DataNodes the pipeline returns, in order."""
        flat = list(outputs)
        self._outputs_error = None
        for i, o in enumerate(flat):
            # DALI refuses an output that is not a DataNode or a constant when the
            # pipeline is built (not here): a list or tuple holding DataNodes is a
            # missing `*`; a list of numbers is one constant output
            # (pipe.set_outputs(node, [35, 35])).
            if isinstance(o, (list, tuple)) and any(isinstance(x, _graph.DataNode)
                                                    for x in o):
                self._outputs_error = TypeError(
                    "godali: set_outputs: Illegal pipeline output type. The output %d "
                    "contains a nested `DataNode`. Missing list/tuple expansion (*) is the "
                    "likely cause." % i)
                break
            if not isinstance(o, _graph.DataNode):
                from .. import _conditionals
                _conditionals.check_assigned(o)
            if not isinstance(o, _graph.DataNode) and _is_constant_like(o):
                # DALI: an output that is not a DataNode becomes a constant node.
                o = flat[i] = _graph.constant_node(o, self)
            if not isinstance(o, _graph.DataNode):
                self._outputs_error = TypeError(
                    "godali: set_outputs: Illegal output type. The output %d is a `%s`. "
                    "An output must be a DataNode (an operator's result) or a constant."
                    % (i, type(o)))
                break
            o = flat[i] = _graph.bind(o, self, "set_outputs: output %d" % i)
            if any(o is p for p in flat[:i]) and "copy" in _graph.schemas().ops:
                # DALI returns one node twice (`return a, a`); the engine names each
                # output once: the repeat is a copy.
                flat[i] = _graph.OpNode(_graph.schemas().ops["copy"], o.device, [o], {}, {},
                                        self, None, False).outputs[0]
        if not flat:
            raise ValueError("godali: set_outputs needs at least one output")
        self._outputs = flat

    def define_graph(self):
        """Override in a subclass (DALI's legacy API): call fn.* and return the outputs."""
        raise NotImplementedError

    def _ensure_outputs(self):
        """Runs define_graph (DALI's legacy API) if the outputs are not set yet."""
        if self._outputs is not None:
            return
        if type(self).define_graph is not Pipeline.define_graph:
            with self:
                outs = self.define_graph()
            if not isinstance(outs, (list, tuple)):
                outs = (outs,)
            self.set_outputs(*outs)
        else:
            raise RuntimeError("godali: the pipeline has no outputs: call "
                               "pipe.set_outputs(...) inside `with pipe:`, or use "
                               "@pipeline_def")

    def _reachable_nodes(self):
        seen = set()
        stack = [o.source for o in self._outputs]
        stack.extend(n for n in self._nodes if n.preserve)
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            stack.extend(x.source for x in n.inputs)
            stack.extend(x.source for x in n.arg_inputs.values())
        return [n for n in self._nodes if id(n) in seen]

    def _uses_gpu(self, nodes):
        return any(n.device != "cpu" for n in nodes)

    def description(self):
        """The pipeline as the dict that docs/pipeline.md describes."""
        if self._batch_size <= 0:
            raise ValueError("godali: batch_size must be a positive int, got %r"
                             % self._batch_size)
        self._ensure_outputs()
        nodes = self._reachable_nodes()
        lib = _lib.get()
        uses_gpu = self._uses_gpu(nodes)
        device_id = self._device_id
        if device_id == _types.CPU_ONLY_DEVICE_ID:
            device_id = None
        if device_id is None:
            _check_cpu_only(nodes)
        _check_available(nodes)
        if device_id is not None:
            device_id = int(device_id)
            if device_id < 0:
                device_id = 0 if uses_gpu else None
            elif lib.flavour != "cuda" and not uses_gpu:
                # DALI scripts pass device_id=0 to CPU-only pipelines as a habit.
                device_id = None
        if uses_gpu and device_id is None:
            raise ValueError("godali: the pipeline has GPU operators but device_id=None")
        d = {"batch_size": self._batch_size}
        if self._auto_threads:
            d["num_threads"] = "auto"
        elif self._num_threads > 0:
            d["num_threads"] = self._num_threads
        d["device_id"] = device_id
        d["prefetch_queue_depth"] = "auto" if self._auto_prefetch else self._prefetch_queue_depth
        d["seed"] = self._seed
        if self._max_image_pixels is not None:
            d["max_image_pixels"] = self._max_image_pixels
        if self._max_file_bytes is not None:
            d["max_file_bytes"] = self._max_file_bytes
        d["on_error"] = self._on_error
        if self._preallocate != "auto":
            d["preallocate"] = self._preallocate
        if self._max_host_bytes:
            d["max_host_bytes"] = self._max_host_bytes
        if self._sub_batch_size is not None:
            d["sub_batch_size"] = self._sub_batch_size
        if not self._exec_pipelined:
            d["exec_pipelined"] = False
        if not self._exec_async:
            d["exec_async"] = False
        if self._first_epoch:
            d["first_epoch"] = self._first_epoch
        if self._enable_checkpointing:
            d["enable_checkpointing"] = True
            feeds = _ext.checkpointed_feeds(self, nodes)
            if feeds:
                d["checkpointed_feeds"] = feeds
        d["ops"] = [n.to_json() for n in nodes]
        d["outputs"] = [o.name for o in self._outputs]
        return d

    def to_json(self, indent=None):
        """The pipeline's JSON description (what a C or C++ trainer would pass to
        godali_pipeline_create)."""
        d = self.description()
        try:
            return json.dumps(d, indent=indent, allow_nan=False)
        except ValueError:
            # JSON has no NaN or infinity (json.dumps would write them anyway, and the
            # library would refuse the text without knowing which argument it was).
            raise ValueError(_non_finite_message(d)) from None

    serialize = to_json

    # -- lifecycle ----------------------------------------------------------------------

    def build(self):
        """Validates the graph and starts the pipeline (implicit in run())."""
        if self._handle and self._built:
            return
        lib = _lib.get()
        if getattr(self, "_outputs_error", None) is not None:
            raise self._outputs_error
        if not self._handle:
            if self._outputs is None:
                self.description()  # runs define_graph / checks the outputs
            if self._enable_checkpointing:
                self._require_no_foreign_ops("The pipeline does not support checkpointing")
                _ext.warn_unrecorded(self)
                if self._checkpoint is not None:
                    # Before prepare() polls a source for its dtype.
                    _ext.restore_state(self, self._ext_state)
            if not _ext.prepare(self, self._reachable_nodes()):
                # An external_source fed with feed_input and without dtype/ndim: the
                # pipeline is created at the first run, after the first feed_input.
                self._build_deferred = True
                return
            text = self.to_json().encode("utf-8")
            h = c_uint64(0)
            with self._naming_sites():
                lib.pipeline_create(text, len(text), byref(h))
            self._handle = h.value
            self._lib = lib
            # Destroys the handle when the Pipeline is collected, or at interpreter exit.
            self._finalizer = weakref.finalize(self, _destroy, lib, self._handle)
            if profiling_requested():
                lib.pipeline_set_profiling(self._handle, 1)
            n = c_int(0)
            lib.pipeline_num_outputs(self._handle, byref(n))
            self._num_outputs = n.value
            if self._checkpoint is not None:
                text = self._checkpoint.encode("utf-8")
                try:
                    lib.pipeline_restore(self._handle, text, len(text))
                except Exception:
                    # Never leave behind a pipeline that a later build() would start
                    # from the beginning.
                    self._finalizer()
                    self._finalizer = None
                    self._handle = 0
                    raise
        if self._stalled_call is not None:
            raise RuntimeError("godali: an interrupted build of this pipeline is still "
                               "waiting on its data source; close the pipeline")
        with self._naming_sites():
            self._interruptible(lib.pipeline_build, self._handle)
        self._built = True
        _ext.after_build(self)

    def _require_no_foreign_ops(self, message):
        """DALI's check: operators made outside the pipeline's scope (fn calls outside
        `with pipe:` / @pipeline_def, adopted when the pipeline used their outputs)."""
        foreign = [n.name for n in self._reachable_nodes() if getattr(n, "floating", False)]
        if foreign:
            raise RuntimeError(
                "%s because it contains operator(s) that were defined outside the pipeline "
                "scope:\n%s\nAll operators should be defined while the pipeline is set as the "
                "current pipeline. This happens automatically when defining the pipeline in a "
                "function decorated with `@pipeline_def`." % (message, foreign))

    @contextlib.contextmanager
    def _naming_sites(self):
        """Build-time errors the library raises about a node (DALI reports them at build()
        too) also name the line of the user's code that made the node."""
        try:
            yield
        except _lib.GodaliError as e:
            msg = str(e)
            m = re.search(r'node "([^"]+)"', msg)
            node = self._node_by_name(m.group(1)) if m else None
            if node is None or not node.site or " (made at " in msg:
                raise
            raise type(e)("%s (node %r made at %s)" % (msg, node.name, node.site),
                          e.status) from None

    def _node_by_name(self, name):
        for n in self._nodes:
            if n.name == name:
                return n
        return None

    def _interruptible(self, call, *args):
        """call(*args), a library call that may block on a stalled data source, made so
        that Ctrl-C still reaches the caller at once: in the main thread (where Python
        handles signals), the call runs in a helper thread while this one waits in short
        slices. On KeyboardInterrupt the library is told to interrupt the pipeline's I/O,
        the pipeline is left to be closed (close() returns without waiting for the
        stalled call), and the KeyboardInterrupt propagates."""
        if threading.current_thread() is not threading.main_thread():
            return call(*args)
        out = []
        done = threading.Event()

        def target():
            try:
                out.append((call(*args), None))
            except BaseException as e:  # handed to the waiting thread
                out.append((None, e))
            finally:
                done.set()

        t = threading.Thread(target=target, name="godali-" + call.__name__, daemon=True)
        t.start()
        try:
            while not done.wait(_WAIT_SLICE_S):
                pass
        except KeyboardInterrupt:
            self._interrupted(t)
            raise
        value, err = out[0]
        if err is not None:
            raise err
        return value

    def _next(self, lib, h):
        """lib.pipeline_next(h), waiting for the batch in short slices
        (godali_pipeline_wait) so that Ctrl-C reaches the caller while a batch is late."""
        ready = self._ready
        try:
            while True:
                lib.pipeline_wait(h, _WAIT_SLICE_MS, self._ready_ref)
                if ready.value:
                    break
        except KeyboardInterrupt:
            self._interrupted(None)
            raise
        try:
            return lib.pipeline_next(h)
        except (_lib.DataError, _lib.OutOfMemoryError):
            # The failed batch counts as taken (godali_pipeline_next): the external
            # sources' next batch is one fewer ahead, or they would stop being fed.
            if self._ext_groups:
                _ext.took(self)
            raise

    def _interrupted(self, stalled):
        """A KeyboardInterrupt arrived while the library was busy: interrupt the
        pipeline's I/O, and make close() (or collection) destroy the pipeline without
        waiting for a call that may still be blocked (stalled: its thread)."""
        lib, h = self._lib, self._handle
        if not h or self._finalizer is None:
            return
        self._stalled_call = stalled
        try:
            lib.pipeline_interrupt(h)
        except _lib.GodaliError:
            pass
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _destroy_later, stalled, lib, h)

    def close(self):
        """Destroys the pipeline now. Outputs handed out earlier stay valid. A
        python_function that does not return is not waited for longer than 2 s (the
        library says so on stderr); its batches are dropped."""
        _pyfunc.check_not_inside(self._handle, "close()")
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._handle = 0
        self._built = False
        self._closed = True

    destroy = close

    # -- running ------------------------------------------------------------------------

    def schedule_run(self):
        """Asks the pipeline to prepare batches ahead (up to prefetch_queue_depth); the
        external sources' sources are polled first."""
        _pyfunc.check_not_inside(self._handle, "schedule_run()")
        lib = self._lib_or_build()
        _ext.top_up(self)
        lib.pipeline_run(self._handle)

    def feed_input(self, data_node, data, layout=None, cuda_stream=None,
                   use_copy_kernel=False, no_copy=None):
        """Queues one batch for the fn.external_source named data_node (a name or its
        DataNode): a list of samples or an array whose first dimension is the batch
        (DALI's Pipeline.feed_input). Feed before each run; each run takes the next
        batch fed. no_copy: None/False: the data is copied now; True: it is read in
        place, referenced until the batch that used it is released (do not modify it
        meanwhile)."""
        name = data_node.source.name if isinstance(data_node, _graph.DataNode) else data_node
        if not isinstance(name, str):
            raise TypeError("godali: feed_input: expected the external source's name or "
                            "DataNode, got %s" % type(data_node).__name__)
        if self._handle == 0 and not self._build_deferred and \
                not self._closed:
            try:
                self.build()
            except Exception:
                if not self._build_deferred:
                    raise
        _ext.feed_input(self, name, data, layout, no_copy)

    def _lib_or_build(self):
        if not self._built:
            if self._closed:
                raise RuntimeError("godali: this pipeline was closed; create a new one")
            self.build()
            if not self._built:
                names = [n.name for g in _ext.groups(self) for n in g.nodes
                         if "dtype" not in n.args or "ndim" not in n.args]
                raise RuntimeError("godali: external source %s has no dtype/ndim and nothing "
                                   "was fed: call pipe.feed_input(name, data) before running, "
                                   "or give dtype= and ndim=" % ", ".join(map(repr, names)))
        return self._lib

    def outputs(self):
        """Waits for the next batch and returns one TensorList per output.

        As DALI's readers, godali's go on across epoch boundaries: after the last batch
        of an epoch the next call returns the first batch of the next epoch (the next
        shard unless stick_to_shard); batch_info tells which epoch a batch belongs to,
        and the iterators count epochs from the reader's metadata. Raises DataError when
        a sample could not be read (the next call goes on).
        """
        _pyfunc.check_not_inside(self._handle, "outputs()")
        lib = self._lib_or_build()
        h = self._handle
        if self._ext_groups:
            _ext.top_up(self)
        if self._next(lib, h) == _lib.END_OF_EPOCH:
            if _ext.has_sources(self):
                # DALI: a source's StopIteration ends the epoch; reset() starts the next.
                self._ext_epoch_over = True
                raise StopIteration
            lib.pipeline_reset(h)
            if self._next(lib, h) == _lib.END_OF_EPOCH:
                raise StopIteration  # an epoch without batches: nothing to read
        if self._ext_groups:
            _ext.took(self)
        return self._take(lib, h)

    share_outputs = outputs

    def _epoch_outputs(self):
        """outputs() within one epoch: raises StopIteration after the epoch's last batch
        (reset() starts the next one). The iterators use this."""
        _pyfunc.check_not_inside(self._handle, "outputs()")
        lib = self._lib_or_build()
        h = self._handle
        if self._ext_groups:
            _ext.top_up(self)
        if self._next(lib, h) == _lib.END_OF_EPOCH:
            self._ext_epoch_over = True
            raise StopIteration
        if self._ext_groups:
            _ext.took(self)
        return self._take(lib, h)

    def _take(self, lib, h):
        self._batch_seq += 1
        outs = tuple(self._fetch(lib, h, i) for i in range(self._num_outputs))
        if self._output_dtype is not None or self._output_ndim is not None or \
                self._output_layout is not None:
            self._check_outputs(outs)
        return outs

    def _check_outputs(self, outs):
        def per_output(value, what):
            if isinstance(value, (list, tuple)):
                if len(value) != len(outs):
                    raise ValueError("godali: %s has %d entries but the pipeline has %d "
                                     "outputs" % (what, len(value), len(outs)))
                return list(value)
            return [value] * len(outs)

        if self._output_dtype is not None:
            for i, (want, tl) in enumerate(zip(per_output(self._output_dtype,
                                                          "output_dtype"), outs)):
                if want is not None and tl.dtype != want:
                    raise TypeError("godali: output %d has type %s, but output_dtype "
                                    "expects %s" % (i, tl.dtype.name, getattr(want, "name",
                                                                              want)))
        if self._output_layout is not None:
            for i, (want, tl) in enumerate(zip(per_output(self._output_layout,
                                                          "output_layout"), outs)):
                if want and tl.layout() != want:
                    raise RuntimeError("godali: layout of output %d does not match. Expected: "
                                       "%s. Received: %s." % (i, want, tl.layout()))
        if self._output_ndim is not None:
            for i, (want, tl) in enumerate(zip(per_output(self._output_ndim,
                                                          "output_ndim"), outs)):
                shapes = tl.shape()
                if want is not None and shapes and len(shapes[0]) != want:
                    raise ValueError("godali: output %d has %d dimensions, but output_ndim "
                                     "expects %d" % (i, len(shapes[0]), want))

    def release_outputs(self):
        """DALI API; godali outputs are released when the TensorLists are freed."""

    def iter_setup(self):
        """DALI's legacy hook, called before each run(); override to prepare inputs."""

    def empty(self):
        """DALI API: whether no batch is prepared ahead. A started godali pipeline
        always prepares ahead (False); True before build()."""
        return not self._built

    @property
    def is_restored_from_checkpoint(self):
        """True when the pipeline was created with checkpoint=..."""
        return self._checkpoint is not None

    def run(self):
        """iter_setup(), schedule_run() then outputs(): returns one TensorList per output.

        As in DALI, iter_setup() runs first, also before the first build: external
        sources without dtype/ndim are typed from what it feeds."""
        _pyfunc.check_not_inside(self._handle, "run()")
        if not self._built and not self._closed:
            self._ensure_outputs()
        self.iter_setup()
        lib = self._lib_or_build()
        lib.pipeline_run(self._handle)
        return self.outputs()

    def _fetch(self, lib, h, index):
        lib.pipeline_output_info(h, index, self._out_info_ref)
        info = self._out_info
        layout = info.layout.decode("ascii")  # the engine's layout (godali_output_info_t)
        if info.device_type == _dlpack.kDLCUDA:
            # No host wait here: each consumer's stream waits for the batch when it takes
            # the tensor (__dlpack__(stream=...), tensors.py).
            return self._fetch_cuda(lib, h, index, info, layout)
        if info.uniform:
            lib.pipeline_output(h, index, self._out_ptr_ref)
            return TensorList._wrap(dense=_Lease(lib, self._out_ptr.value), layout=layout)
        samples = []
        for s in range(info.num_samples):
            lib.pipeline_output_sample(h, index, s, self._out_ptr_ref)
            samples.append(_Lease(lib, self._out_ptr.value))
        return TensorList._wrap(samples=samples, layout=layout)

    def _fetch_cuda(self, lib, h, index, info, layout):
        if info.uniform:
            lib.pipeline_output_cuda(h, index, -1, self._out_ptr_ref)
            return TensorList._wrap(dense=_Lease(lib, self._out_ptr.value), layout=layout)
        samples = []
        for s in range(info.num_samples):
            lib.pipeline_output_sample_cuda(h, index, s, -1, self._out_ptr_ref)
            samples.append(_Lease(lib, self._out_ptr.value))
        return TensorList._wrap(samples=samples, layout=layout)

    def reset(self):
        """Starts the next epoch (readers move to their next shard unless
        stick_to_shard). Batches already handed out stay valid."""
        _pyfunc.check_not_inside(self._handle, "reset()")
        lib = self._lib_or_build()
        if _ext.has_sources(self):
            if not self._ext_epoch_over:
                return  # DALI: a reset before a source ended the epoch does nothing
            self._interruptible(lib.pipeline_reset, self._handle)
            _ext.restart(self)
            self._ext_epoch_over = False
            return
        # Interruptible: the reset waits for the batches prepared ahead, which a blocked
        # python_function may hold.
        self._interruptible(lib.pipeline_reset, self._handle)

    def checkpoint(self, filename=None):
        """Returns the pipeline's state after the batches returned so far (not those
        prepared ahead), serialized as JSON text, and writes it to `filename` when given
        (DALI's Pipeline.checkpoint). Create the pipeline again with checkpoint=<text> to
        resume: it returns exactly the batches this one would have returned next.
        Needs enable_checkpointing=True."""
        if not self._enable_checkpointing:
            raise RuntimeError("godali: checkpointing is not enabled for this pipeline: "
                               "create it with enable_checkpointing=True")
        text = self._lib_or_build().checkpoint_text(self._handle)
        state = _ext.checkpoint_state(self)
        if state:
            doc = json.loads(text)
            doc["external_sources"] = state
            text = json.dumps(doc, indent=1)
        if filename is not None:
            with open(filename, "w") as f:
                f.write(text)
        return text

    @property
    def batch_info(self):
        """BatchInfo of the current batch (the one outputs()/run() returned last)."""
        if self._info_seq != self._batch_seq or self._info_cache is None:
            self._lib_or_build().pipeline_batch_info(self._handle, self._binfo_ref)
            b = self._binfo
            self._info_cache = BatchInfo(b.batch_size, b.valid, b.epoch, b.iteration,
                                         bool(b.last_in_epoch), b.skipped)
            self._info_seq = self._batch_seq
        return self._info_cache

    def skipped(self):
        """The samples of the current batch that failed and were replaced
        (on_error="skip"): a list of dicts {"sample": index in the batch, "file": the file
        that failed, "node": the node that failed, "error": the message}, in sample
        order; [] when none. batch_info.skipped counts them."""
        if self._skip_seq != self._batch_seq or self._skip_cache is None:
            text = self._lib_or_build().skipped_json(self._handle)
            self._skip_cache = json.loads(text)
            self._skip_seq = self._batch_seq
        return [dict(d) for d in self._skip_cache]

    def profile(self):
        """Per-operator times so far, when profiling is on (GODALI_PROFILE=1 in the
        environment when the pipeline is built; docs/pipeline.md, "Profiling"): a dict
        {"enabled", "num_threads", "wall_s": seconds since build, "nodes": [{"name", "op",
        "device", "calls": samples, "total_s": Setup+Run time summed over the threads,
        "mean_us": per sample, "share": of the total, "fused": nodes fused into it}, ...]},
        the most expensive node first; "nodes" is [] with profiling off."""
        return json.loads(self._lib_or_build().profile_json(self._handle))

    def profile_table(self):
        """profile() as aligned text, one line per node."""
        return format_profile(self.profile())

    # -- readers and memory -------------------------------------------------------------

    def reader_names(self):
        """Names of the reader nodes in the graph."""
        nodes = self._reachable_nodes() if self._outputs else self._nodes
        return [n.name for n in nodes if n.schema.is_reader]

    def _reader_name(self, name):
        if name is None:
            return None
        if not isinstance(name, str):
            raise TypeError("godali: reader name must be a string")
        return name

    def _set_epoch_reader(self, name):
        """Makes the reader `name` define the epochs _epoch_outputs() and batch_info
        follow (the first reader by default; the others go on across epochs by
        themselves, as DALI's readers do). The iterators call it with their
        reader_name."""
        self._lib_or_build().pipeline_set_epoch_reader(self._handle,
                                                       self._reader_name(name).encode())

    def _set_last_batch_policy(self, policy):
        """Sets the engine's last_batch_policy ("fill", "partial" or "drop"), before the
        epoch's first batch: the iterators call it with theirs. Over a reader without
        pad_last_batch it decides the epochs, as DALI's iterators count them."""
        self._lib_or_build().pipeline_set_last_batch_policy(self._handle, policy.encode())

    def _epoch_batches(self):
        """Batches of the current epoch under the engine's last_batch_policy (-1 without
        a reader)."""
        out = c_int64()
        self._lib_or_build().pipeline_epoch_batches(self._handle, byref(out))
        return out.value

    def epoch_size(self, name=None):
        """Samples in the data set of the reader `name` (all shards), counted as DALI's
        epoch_size does: padded (epoch_size_padded of reader_meta) when pad_last_batch
        makes every shard as long as the longest. Without a name: a dict of every
        reader's epoch size."""
        self._lib_or_build()
        if name is None:
            return {n: self.epoch_size(n) for n in self.reader_names()}
        return self.reader_meta(name)["epoch_size_padded"]

    def reader_meta(self, name=None):
        """DALI's reader metadata of `name` as a dict: epoch_size, epoch_size_padded,
        shard_size, shard_id, number_of_shards, pad_last_batch, stick_to_shard. Without a
        name: a dict of every reader's metadata."""
        self._lib_or_build()
        if name is None:
            return {n: self.reader_meta(n) for n in self.reader_names()}
        m = _lib.ReaderMeta()
        self._lib.pipeline_reader_meta(self._handle, self._reader_name(name).encode(),
                                       byref(m))
        d = _lib.struct_dict(m)
        d["pad_last_batch"] = bool(d["pad_last_batch"])
        d["stick_to_shard"] = bool(d["stick_to_shard"])
        return d

    def tuning(self):
        """num_threads and prefetch_queue_depth as the engine runs them, and why, as a
        dict (godali_pipeline_tuning): with "auto", chosen from the CPU budget ("cpu":
        affinity CPUs, cgroup CPU quota, usable CPUs; "reserved_cpus" left to the
        trainer), then adjusted once from the stage times of the first batches
        ("state": "initial", then "adjusted" or "kept"; "measured": the figures it
        read; "reason": why). "fixed" when neither is "auto". When the workers are
        pinned, "worker_cpus" (by worker) and "affinity" (GODALI_AFFINITY_MASK, or on
        the CUDA flavour the CPUs NVML reports near the GPU). Builds the pipeline."""
        self._lib_or_build()
        return json.loads(self._lib.tuning_text(self._handle))

    def memory_plan(self):
        """The pipeline's host memory, estimated before it is spent, as a dict
        (godali_pipeline_memory_plan): "outputs" and "intermediates" per value
        (sample_bytes_worst / _expected, bytes_worst, source), "slot_bytes" (one
        prefetch slot), "output_bytes", "intermediate_bytes", "decoder_work_bytes",
        "host_bytes_worst", "host_bytes_expected", "available" (cgroup limit,
        MemAvailable), "scans" (the decoders' image header scans) and "warning" when
        the worst case exceeds the available memory. Builds the pipeline and waits for
        the header scan (docs/pipeline.md, "Memory plan")."""
        self._lib_or_build()
        return json.loads(self._lib.tuning_text(self._handle, "pipeline_memory_plan"))

    def pool_stats(self, device="cpu"):
        """The pipeline's buffer pool counters (host pool, or device="gpu")."""
        s = _lib.PoolStats()
        self._lib_or_build().pipeline_pool_stats(self._handle, _device_type(device), byref(s))
        return _lib.struct_dict(s)

    def output_names(self):
        """Names of the outputs, as the library reports them."""
        lib = self._lib_or_build()
        out = c_char_p()
        names = []
        for i in range(self._num_outputs):
            lib.pipeline_output_name(self._handle, i, byref(out))
            names.append(out.value.decode("utf-8"))
        return names

    def __repr__(self):
        return "godali.Pipeline(batch_size=%d, num_threads=%d, device_id=%r, seed=%d%s)" % (
            self._batch_size, self._num_threads, self._device_id, self._seed,
            ", built" if self._built else "")


def _site(n):
    return " (made at %s)" % n.site if n.site else ""


def _check_cpu_only(nodes):
    """DALI's refusals of GPU work in a CPU-only pipeline (device_id None), raised at
    build() with its messages; godali adds where the node was made."""
    order = sorted(nodes, key=lambda n: n.seq)
    for n in order:
        if n.op == "_to_gpu" and n.dali_name is None:
            continue
        name = n.dali_name or _graph.dali_op_name(n.op)
        if n.device == "gpu" or (n.op == "_to_gpu"):
            raise _lib.InvalidPipelineError(
                "Cannot add a GPU operator %s, device_id should not be equal "
                "CPU_ONLY_DEVICE_ID.%s" % (name, _site(n)), _lib.ERROR_INVALID_PIPELINE)
        if n.device == "mixed":
            raise _lib.InvalidPipelineError(
                "Cannot add a mixed operator %s with a GPU output, device_id should not be "
                "CPU_ONLY_DEVICE_ID.%s" % (name, _site(n)), _lib.ERROR_INVALID_PIPELINE)
    for n in order:
        if n.op == "_to_gpu":
            src = n.inputs[0].source
            raise _lib.InvalidPipelineError(
                "Cannot move the data node __%s_%d to the GPU in a CPU-only pipeline. The "
                "`device_id` parameter is set to `CPU_ONLY_DEVICE_ID`. Set `device_id` to a "
                "valid GPU identifier to enable GPU features in the pipeline.%s"
                % (src.dali_name or _graph.dali_op_name(src.op), src.seq, _site(n)),
                _lib.ERROR_INVALID_PIPELINE)


def _check_available(nodes):
    """Nodes with argument errors DALI reports at build(), and nodes the loaded library
    cannot run (GPU work in the cpu flavour): refused at build(), as DALI does, naming the
    line that made the node."""
    for n in sorted(nodes, key=lambda n: n.seq):
        if n.invalid:
            raise _lib.InvalidPipelineError("godali: fn.%s (node %r): %s%s"
                                            % (n.op, n.name, n.invalid, _site(n)),
                                            _lib.ERROR_INVALID_PIPELINE)
        if n.unavailable:
            raise _lib.NoCUDAError("godali: node %r: %s%s" % (n.name, n.unavailable, _site(n)),
                                   _lib.ERROR_NO_CUDA)


def _non_finite_message(d):
    """Names the argument of the description d that holds a NaN or an infinity."""
    def bad(v):
        if isinstance(v, float):
            return v != v or v in (float("inf"), float("-inf"))
        if isinstance(v, (list, tuple)):
            return any(bad(x) for x in v)
        if isinstance(v, dict):
            return any(bad(x) for x in v.values())
        return False

    for op in d.get("ops", []):
        for key, value in (op.get("args") or {}).items():
            if bad(value):
                return ("godali: fn.%s (node %r): argument %r must be finite, got %r"
                        % (op.get("op"), op.get("name"), key, value))
    for key, value in d.items():
        if key != "ops" and bad(value):
            return "godali: Pipeline argument %r must be finite, got %r" % (key, value)
    return "godali: the pipeline description holds a NaN or an infinity"


# Ctrl-C reaches the caller within this much of a blocked build or next.
_WAIT_SLICE_S = 0.1
_WAIT_SLICE_MS = 100
# close() after an interrupt waits this long for the pipeline to stop, then returns and
# lets it finish stopping in the background.
_CLOSE_GRACE_S = 1.0


def _destroy_later(stalled, lib, handle):
    # A pipeline whose call was interrupted: destroying it waits for that call (the
    # library serialises the calls on a handle), so a daemon thread does it, and close()
    # or the collector waits only a grace period.
    def destroy():
        if stalled is not None:
            stalled.join()
        _destroy(lib, handle)

    t = threading.Thread(target=destroy, name="godali-close", daemon=True)
    t.start()
    t.join(_CLOSE_GRACE_S)


def _destroy(lib, handle):
    # Runs at garbage collection or interpreter exit. In a forked child the library
    # cannot be entered; the parent still owns the pipeline.
    if not lib.in_owner_process():
        return
    if _pyfunc.inside(handle):
        # Collected by a collection that ran inside one of its own python functions: the
        # destroy waits for that call, so another thread does it once the call returns.
        threading.Thread(target=_destroy, args=(lib, handle), name="godali-destroy",
                         daemon=True).start()
        return
    try:
        lib.pipeline_destroy(handle)
    except _lib.InvalidHandleError:
        pass


def profiling_requested(environ=None):
    """Whether GODALI_PROFILE asks for per-operator times ("1", "true", "yes", "on"). Read
    by Python when a pipeline is built, so that setting os.environ in the program works
    (the library itself sees only the environment the process started with)."""
    v = (os.environ if environ is None else environ).get("GODALI_PROFILE", "")
    return v.strip().lower() in ("1", "true", "yes", "on")


def format_profile(prof):
    """A Pipeline.profile() dict as aligned text: one line per node, the most expensive
    first."""
    if not prof.get("enabled"):
        return "profiling is off: set GODALI_PROFILE=1 before the pipeline is built"
    rows = [("node", "op", "device", "samples", "total s", "us/sample", "share")]
    for n in prof["nodes"]:
        name = n["name"] + (" (+%s)" % ", ".join(n["fused"]) if n.get("fused") else "")
        rows.append((name, n["op"], n["device"], str(n["calls"]), "%.3f" % n["total_s"],
                     "%.1f" % n["mean_us"], "%.0f%%" % (100 * n["share"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.append("%d threads, %.2f s since build; times are summed over the threads"
                 % (prof["num_threads"], prof["wall_s"]))
    return "\n".join(lines)


def memory_stats(device="cpu"):
    """Counters of every buffer pool of the process, including those of destroyed
    pipelines whose tensors are still held (godali_memory_stats)."""
    return _lib.get().memory_stats_dict(_device_type(device))


def live_pipelines():
    """How many pipeline handles are alive in the library."""
    return _lib.get().live_pipeline_count()


_PIPELINE_PARAMS = frozenset(inspect.signature(Pipeline.__init__).parameters) - {"self"}


def pipeline_def(fn=None, **pipeline_kwargs):
    """Turns a graph-defining function into a pipeline factory (DALI's pipeline_def).

    The decorated function calls fn.* and returns the outputs. Calling the factory with
    Pipeline arguments (batch_size=..., num_threads=..., device_id=..., seed=...,
    enable_checkpointing=..., checkpoint=..., and godali's max_image_pixels, on_error,
    first_epoch) returns a Pipeline; other keyword
    arguments go to the function. As in DALI, a keyword that names a parameter of the
    function goes to the function only, even when a Pipeline argument has that name, and a
    function with **kwargs is refused. Defaults can be given to the decorator:
    @pipeline_def(batch_size=32).
    """

    def decorate(func):
        params = inspect.signature(func).parameters
        takes_var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())

        transformed = []

        def _conditional_body():
            # `if` on DataNodes (DALI's enable_conditionals): rewritten once, on first use.
            if not transformed:
                from .. import _conditionals
                transformed.append(_conditionals.transform(func))
            return transformed[0]

        @functools.wraps(func)
        def factory(*args, **kwargs):
            if takes_var_kw:
                raise TypeError("godali: %s(): using variadic keyword argument **kwargs in a "
                                "graph-defining function is not allowed (DALI's rule): name "
                                "its parameters" % func.__name__)
            pkw = dict(pipeline_kwargs)
            fkw = {}
            for k, v in kwargs.items():
                # A function parameter shadows a Pipeline argument of the same name (DALI).
                if k in params and params[k].kind != params[k].VAR_POSITIONAL:
                    fkw[k] = v
                elif k in _PIPELINE_PARAMS:
                    pkw[k] = v
                else:
                    raise TypeError("godali: %s() got an unexpected keyword argument %r "
                                    "(neither a Pipeline argument nor one of the "
                                    "function's)" % (func.__name__, k))
            pipe = Pipeline(**pkw)
            body = func
            if pkw.get("enable_conditionals"):
                body = _conditional_body()
                pipe._conditionals_enabled = True
            with pipe:
                try:
                    outs = body(*args, **fkw)
                except Exception as e:
                    if body is func:
                        raise
                    # As DALI (AutoGraph): the error of converted code names the user's
                    # code it went through ("in user code: ...").
                    from .. import _conditionals
                    explained = _conditionals.explain_user_error(e)
                    if explained is None:
                        raise
                    raise explained.with_traceback(e.__traceback__) from None
                if outs is None:
                    # As DALI: the pipeline is made; building it fails.
                    pipe._outputs_error = ValueError(
                        "godali: %s() must return the pipeline's outputs (it returned None)"
                        % func.__name__)
                    return pipe
                if not isinstance(outs, (list, tuple)):
                    outs = (outs,)
                pipe.set_outputs(*outs)
            return pipe

        factory._is_pipeline_def = True  # DALI's marker (its tools test for it)
        return factory

    if fn is not None:
        return decorate(fn)
    return decorate
