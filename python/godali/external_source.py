"""fn.external_source and Pipeline.feed_input: data from Python fed into a pipeline.

An external_source node is a source of whole batches, like a reader; its data comes from
a Python `source` (a callable, an iterable or a generator function, polled before each
run) or from pipe.feed_input(name, data). As in DALI the data is copied when it is fed
(no_copy=False, the default): a source may refill the same buffer for every batch. With
no_copy=True it goes to the library without a copy: the arrays are referenced until the
library's release callback says the batch that used them was released. docs/pipeline.md,
"External sources", has the rules.
"""

import ctypes
import inspect
import warnings
import weakref
from ctypes import POINTER, c_int64, c_void_p

from . import _dlpack, _graph, _lib
from . import types as _types

GODALI_FEED_COPY = 1

# Objects the library reads in place, by the context id given with their feed: the
# release callback (any thread) drops them.
_held = {}


@ctypes.CFUNCTYPE(None, c_void_p)
def _release(ctx):
    _held.pop(ctx, None)


_release_ptr = ctypes.cast(_release, c_void_p)

# numpy dtype name -> (DLPack code, bits, godali dtype name)
_NP_TYPES = {
    "uint8": (1, 8, "UINT8"), "uint16": (1, 16, "UINT16"), "uint32": (1, 32, "UINT32"),
    "uint64": (1, 64, "UINT64"), "int8": (0, 8, "INT8"), "int16": (0, 16, "INT16"),
    "int32": (0, 32, "INT32"), "int64": (0, 64, "INT64"), "float16": (2, 16, "FLOAT16"),
    "float32": (2, 32, "FLOAT"), "float64": (2, 64, "FLOAT64"), "bool": (6, 8, "BOOL"),
}
_NAME_TO_NP = {v[2]: k for k, v in _NP_TYPES.items()}


def _np():
    import numpy
    return numpy


def _dtype_name(dtype, what):
    """The godali dtype name of a DALI type, a numpy dtype or a string; None stays None."""
    if dtype is None:
        return None
    if isinstance(dtype, _types.DALIDataType):
        name = dtype.name
    elif isinstance(dtype, str) and dtype.upper().replace("TYPES.", "") in _NAME_TO_NP:
        name = dtype.upper().replace("TYPES.", "")
    else:
        try:
            name = _NP_TYPES[str(_np().dtype(dtype))][2]
        except (TypeError, KeyError):
            raise TypeError("godali: %s: dtype %r is not supported; use one of %s"
                            % (what, dtype, ", ".join(sorted(_NAME_TO_NP)))) from None
    if name not in _NAME_TO_NP:
        raise TypeError("godali: %s: dtype %s is not supported; use one of %s"
                        % (what, name, ", ".join(sorted(_NAME_TO_NP))))
    return name


def _as_array(x, dtype, what):
    """A numpy view of x (no copy for numpy, CPU torch tensors, __array_interface__ and
    __dlpack__ objects; str and bytes become uint8 arrays of their bytes)."""
    np = _np()
    if x is None or isinstance(x, dict):
        raise TypeError("godali: %s: a sample must be an array, a tensor, a number, str or "
                        "bytes, got %s" % (what, _describe(x)))
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__ or ""
    if mod.startswith("torch") and hasattr(x, "numpy"):
        if getattr(x, "device", None) is not None and x.device.type != "cpu":
            raise TypeError("godali: %s: a tensor on %s; external_source takes host data "
                            "(device='cpu')" % (what, x.device))
        return x.detach().numpy()
    if isinstance(x, str):
        return np.frombuffer(x.encode("utf-8"), dtype=np.uint8)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(x, dtype=np.uint8)
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        return np.asarray(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    want = _NAME_TO_NP.get(dtype) if dtype else None
    try:
        return np.asarray(x, dtype=want)
    except (TypeError, ValueError) as e:
        raise TypeError("godali: %s: cannot use %s as data: %s"
                        % (what, type(x).__name__, e)) from None


def _layout_str(x):
    f = getattr(x, "layout", None)
    if f is None or type(x).__module__.startswith(("numpy", "torch")):
        return None
    try:
        lay = f() if callable(f) else f
    except Exception:
        return None
    return lay if isinstance(lay, str) and lay else None


def _data_layout(data):
    """The samples' layout a batch carries: a TensorList's, or the one every Tensor of a
    list shares (a dense Tensor batch: its layout without the leading sample dimension)."""
    if isinstance(data, (list, tuple)):
        lays = {_layout_str(x) for x in data}
        return lays.pop() if len(lays) == 1 else None
    lay = _layout_str(data)
    if _is_tensor_list(data):
        return lay  # a TensorList's layout is its samples'
    if lay and not hasattr(data, "__len__") or lay is None:
        return None
    if hasattr(data, "shape") and callable(data.shape) and \
            isinstance(data.shape(), list) and len(lay) == len(data.shape()):
        return lay[1:] or None  # a dense Tensor [N, ...]: its layout is the batch's
    return lay


def _is_tensor_list(x):
    """A TensorList (godali's or DALI's): samples by index, dense or not."""
    return (not isinstance(x, (list, tuple)) and hasattr(x, "is_dense_tensor")
            and hasattr(x, "at") and hasattr(x, "__len__"))


def _dali_type_name(t):
    """DALI's name of a type (given by its godali name) in its messages."""
    return _types._dali_type_name(getattr(_types.DALIDataType, t, t))


def _feed_error(what, msg):
    return _lib.InvalidArgumentError("godali: %s: %s" % (what, msg), _lib.ERROR_INVALID_ARGUMENT)


def _describe(x):
    """What a source returned, for an error message: a scalar, None, a dict, ..."""
    if x is None:
        return "None"
    if isinstance(x, dict):
        return "a dict (keys %s)" % ", ".join(repr(k) for k in list(x)[:5])
    r = repr(x)
    if len(r) > 40:
        r = r[:37] + "..."
    return "a scalar (%s %s)" % (type(x).__name__, r)


def _dl_of(arr, what):
    t = _NP_TYPES.get(str(arr.dtype))
    if t is None:
        raise TypeError("godali: %s: data of type %s is not supported; use one of %s"
                        % (what, arr.dtype, ", ".join(sorted(_NP_TYPES))))
    return t


class _Converted:
    """One output's batch, ready for the library."""

    __slots__ = ("dense", "arrays", "dtype", "ndim", "keep", "layout", "data_layout")

    def __init__(self, data, batch_size, dtype, what):
        self.layout = None  # feed_input(layout=...): the layout this batch is fed with
        # the layout the data carries (DALI's TensorCPU/TensorListCPU, godali's Tensor and
        # TensorList), used where the node declares none
        self.data_layout = _data_layout(data)
        np = _np()
        if data is None or isinstance(data, dict):
            raise TypeError("godali: %s: a batch must be a list of samples or an array whose "
                            "first dimension is the batch, got %s" % (what, _describe(data)))
        if _is_tensor_list(data) and not data.is_dense_tensor():
            # a ragged TensorList (a pipeline's output fed on): its samples one by one
            data = [data[i] for i in range(len(data))]
        if isinstance(data, (list, tuple)):
            arrays = []
            for i, s in enumerate(data):
                a = _as_array(s, dtype, "%s, sample %d" % (what, i))
                if not a.flags.c_contiguous:
                    a = np.ascontiguousarray(a)
                arrays.append(a)
            self.dense = False
        else:
            a = _as_array(data, dtype, what)
            if a.ndim == 0:
                raise TypeError("godali: %s: a batch must be a list of samples or an array "
                                "whose first dimension is the batch, got %s"
                                % (what, _describe(data)))
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            arrays = [a]
            self.dense = True
        n = len(self._samples(arrays))
        # batch_size is the pipeline's maximum (DALI's max_batch_size): an iteration has
        # as many samples as its external sources give, 1 to batch_size.
        # _lib.InvalidArgumentError: a ValueError and, as DALI's, a RuntimeError
        if n > batch_size:
            raise _lib.InvalidArgumentError(
                "godali: %s: got a batch of %d samples, more than the pipeline's "
                "max_batch_size (batch_size) %d" % (what, n, batch_size))
        if n == 0:
            raise ValueError("godali: %s: got an empty batch; a batch has 1 to "
                             "max_batch_size (%d) samples" % (what, batch_size))
        types = {str(a.dtype) for a in arrays}
        if len(types) > 1:
            raise TypeError("godali: %s: samples have different types (%s)"
                            % (what, ", ".join(sorted(types))))
        self.arrays = arrays
        self.dtype = _dl_of(arrays[0], what)[2] if arrays else dtype
        if self.dense:
            self.ndim = arrays[0].ndim - 1
        else:
            self.ndim = arrays[0].ndim if arrays else 0
        self.keep = data

    def num_samples(self):
        return len(self._samples(self.arrays))

    def _samples(self, arrays):
        return arrays[0] if self.dense else arrays

    def feed(self, lib, handle, name, layout, copy, what):
        arrays = self.arrays
        flags = GODALI_FEED_COPY if copy else 0
        code, bits, _ = _dl_of(arrays[0], what) if arrays else (1, 8, "UINT8")
        dl = _dlpack.DLDataType(code, bits, 1)
        lay = layout.encode() if layout else None
        deleter, ctx = None, None
        if not copy:
            # The context is the address of the entry kept alive in _held: unique while
            # it is held, and never a small integer (the library's Go runtime must not
            # meet small integers where C passes a pointer).
            entry = (self.keep, arrays)
            key = id(entry)
            _held[key] = entry
            deleter, ctx = _release_ptr, key
        if self.dense:
            a = arrays[0]
            shape = (c_int64 * a.ndim)(*a.shape)
            lib.pipeline_feed_input(handle, name.encode(), a.ctypes.data, dl, a.ndim - 1,
                                    shape, lay, flags, deleter, ctx)
            return
        n = len(arrays)
        nd = self.ndim
        for i, a in enumerate(arrays):
            if a.ndim != nd:
                _held.pop(ctx, None)
                raise _lib.InvalidArgumentError(
                    "godali: %s: sample %d has %d dimensions, sample 0 has %d"
                    % (what, i, a.ndim, nd))
        ptrs = (c_void_p * max(n, 1))(*[a.ctypes.data for a in arrays])
        shapes = (c_int64 * max(n * nd, 1))(*[d for a in arrays for d in a.shape])
        lib.pipeline_feed_input_ragged(handle, name.encode(), n, ptrs, dl, nd,
                                       ctypes.cast(shapes, POINTER(c_int64)), lay, flags,
                                       deleter, ctx)


def held_pointers():
    """The addresses of the arrays the library currently reads in place (tests)."""
    out = []
    for _, arrays in list(_held.values()):
        out.extend(a.ctypes.data for a in arrays)
    return out


# --- sources ---------------------------------------------------------------------------

def _cycle_mode(cycle):
    if cycle is None or cycle is False or cycle == "no":
        return None
    if cycle is True or cycle == "quiet":
        return "quiet"
    if cycle == "raise":
        return "raise"
    raise ValueError("godali: fn.external_source: cycle must be False, True, 'no', 'quiet' or "
                     "'raise', got %r" % (cycle,))


def _positional_params(f):
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return 0
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            n += 1
    return n


class _Source:
    """Polls a Python source for units: a batch (batch=True) or a sample (batch=False)."""

    def __init__(self, source, cycle, batch_info):
        self.cycle = _cycle_mode(cycle)
        self.batch_info = bool(batch_info)
        self.factory = None
        self.it = None
        self.callback = None
        self.kind = "ITERABLE"  # DALI's SourceKind names (its checkpoint warning)
        if inspect.isgeneratorfunction(source):
            self.kind = "GENERATOR_FUNC"
            if _positional_params(source) > 0:
                raise TypeError("godali: fn.external_source: a generator function source "
                                "must take no arguments")
            self.factory = lambda: iter(source())
        elif hasattr(source, "__iter__"):
            if inspect.isgenerator(source) and self.cycle:
                raise TypeError("godali: fn.external_source: Cannot cycle through a generator "
                                "object; if it was made by a generator function, pass that "
                                "function instead as `source`.")
            self.factory = lambda: iter(source)
        elif callable(source):
            if cycle is not None:
                raise ValueError("godali: fn.external_source: cycle applies to iterable "
                                 "sources only, not to a callable")
            self.callback = source
            self.kind = "CALLABLE"
            self.nparams = _positional_params(source)
        else:
            raise TypeError("godali: fn.external_source: source must be a callable, an "
                            "iterable or a generator function, got %s" % type(source).__name__)

    def _next_iter(self):
        if self.it is None:
            self.it = self.factory()
        try:
            return next(self.it)
        except StopIteration:
            if self.cycle == "quiet":
                self.it = self.factory()
                return next(self.it)
            if self.cycle == "raise":
                self.it = self.factory()
            raise

    def next_batch(self, batch, batch_size, iteration, epoch):
        """One unit per output... as a list over the batch (sample mode) or the batch."""
        if batch:
            if self.callback is None:
                return self._next_iter()
            if self.nparams == 0:
                return self.callback()
            if self.batch_info:
                return self.callback(_types.BatchInfo(iteration, epoch))
            return self.callback(iteration)
        samples = []
        for i in range(batch_size):
            if self.callback is None:
                samples.append(self._next_iter())
            elif self.nparams == 0:
                samples.append(self.callback())
            else:
                samples.append(self.callback(_types.SampleInfo(
                    iteration * batch_size + i, i, iteration, epoch)))
        return samples


class _Group:
    """One fn.external_source call: its nodes (one per output) and its source."""

    def __init__(self, pipe, nodes, source, num_outputs, batch, batch_info, dtypes, ndims,
                 layouts, no_copy, repeat_last):
        self.pipe = pipe
        self.nodes = nodes
        self.source = source
        self.num_outputs = num_outputs
        self.batch = batch
        self.batch_info = batch_info
        self.dtypes = dtypes
        self.ndims = ndims
        self.layouts = layouts
        self.no_copy = no_copy
        self.repeat_last = repeat_last
        self.pending = []      # converted batches not yet given to the library
        self.last = None       # repeat_last: the last batch fed
        self.fed = False       # something fed since the last run (repeat_last)
        self.iteration = 0
        self.epoch = 0
        self.ahead = 0         # batches fed from the source and not yet taken
        self.exhausted = False
        self.error = None      # the source's error for the batch after those ahead
        self._seen = {}        # output -> (dtype, ndim, layout) of its first batch

    # The pipeline holds its groups: a group refers back to it weakly (as _graph.OpNode),
    # so that a pipeline nothing else references is freed at once.
    @property
    def pipe(self):
        ref = self._pipe
        return ref() if ref is not None else None

    @pipe.setter
    def pipe(self, p):
        self._pipe = weakref.ref(p) if p is not None else None

    def what(self, k):
        return "fn.external_source %r" % self.nodes[k].name

    def attach(self, pipe):
        """Joins the pipeline that adopted this source's nodes (a call made outside
        `with pipe:`)."""
        if self.pipe is pipe:
            return
        self.pipe = pipe
        if getattr(pipe, "_ext_groups", None) is None:
            pipe._ext_groups = []
        if self not in pipe._ext_groups:
            pipe._ext_groups.append(self)

    def copy_for(self, from_source):
        # DALI's default (no_copy=False): copied when fed, so a source may reuse its
        # buffers; no_copy=True reads the arrays in place until the batch is released.
        return not self.no_copy

    def pull(self, bs):
        """The source's next batch, converted per output; StopIteration at the end.

        Variable batch size (DALI's): a batch-mode source decides the size of its
        iteration, and a per-sample source (batch=False) is polled that many times for it
        (batch_size times when no batch-mode source gave the iteration a size)."""
        it = self.iteration
        sizes = _iteration_sizes(self.pipe)
        if not self.batch and it in sizes:
            bs = sizes[it]
        unit = self.source.next_batch(self.batch, bs, it, self.epoch)
        self.iteration += 1
        k = self.num_outputs
        if k is None:
            per_output = [unit]
        elif self.batch:
            if not isinstance(unit, (list, tuple)) or len(unit) != k:
                raise TypeError("godali: fn.external_source with num_outputs=%d: the source "
                                "must return %d batches (a tuple), got %s"
                                % (k, k, type(unit).__name__))
            per_output = list(unit)
        else:
            per_output = [[] for _ in range(k)]
            for i, s in enumerate(unit):
                if not isinstance(s, (list, tuple)) or len(s) != k:
                    raise TypeError("godali: fn.external_source with num_outputs=%d: sample "
                                    "%d must be a tuple of %d items" % (k, i, k))
                for j in range(k):
                    per_output[j].append(s[j])
        conv = [_Converted(d, bs, self.dtypes[j], self.what(j))
                for j, d in enumerate(per_output)]
        for j, c in enumerate(conv):
            self.check(j, c)
        counts = [c.num_samples() for c in conv]
        if any(n != counts[0] for n in counts):
            raise ValueError("godali: fn.external_source with num_outputs=%d: the source "
                             "returned batches of different sizes %s; the outputs of one "
                             "iteration must have the same number of samples"
                             % (k, counts))
        if self.batch and counts:
            sizes.setdefault(it, counts[0])
            for old in [x for x in sizes if x < it - 256]:  # long past: forget
                del sizes[old]
        return conv

    def check(self, j, conv, layout=None):
        """DALI's checks of a batch against the node's declared dtype, ndim and layout,
        and against the batches fed before (type, dimensionality and layout may not
        change from one iteration to the next), with DALI's messages."""
        what = self.what(j)
        dt, nd = conv.dtype, conv.ndim
        lay = layout if layout is not None else (conv.layout or conv.data_layout)
        want = self.dtypes[j]
        seen = self._seen.get(j)
        if want is not None and dt != want:
            raise _feed_error(what, "ExternalSource expected data of type %s and got: %s "
                              "(the node declares dtype %s, the data is %s)"
                              % (_dali_type_name(want), _dali_type_name(dt), want, dt))
        if seen is not None and want is None and seen[0] != dt:
            raise _feed_error(what, "Type of the data fed to the external source has changed "
                              "from the previous iteration. Type in the previous iteration "
                              "was %s and the current type is %s. (%s, then %s)"
                              % (_dali_type_name(seen[0]), _dali_type_name(dt), seen[0], dt))
        if self.ndims[j] is not None and nd != self.ndims[j]:
            raise _feed_error(what, "ExternalSource expected data with %d dimensions and got "
                              "%d dimensions" % (self.ndims[j], nd))
        if seen is not None and self.ndims[j] is None and seen[1] != nd:
            raise _feed_error(what, "Number of dimensions of the data fed to the external "
                              "source has changed from previous iteration. Dimensionality "
                              "in the previous iteration was %d and the current is %d."
                              % (seen[1], nd))
        if layout is not None and self.layouts[j] and layout and layout != self.layouts[j]:
            raise _feed_error(what, "Expected data with layout: \"%s\" and got: \"%s\""
                              % (self.layouts[j], layout))
        if (seen is not None and not self.layouts[j] and seen[2] is not None
                and lay is not None and seen[2] != lay):
            raise _feed_error(what, "Layout of the data fed to the external source has "
                              "changed from previous iteration. Layout in the previous "
                              "iteration was \"%s\" and the current is \"%s\"."
                              % (seen[2], lay))
        if seen is None:
            self._seen[j] = (dt, nd, lay)

    def resolve(self, conv):
        """Fills the dtype, ndim (and the layout, when feed_input gave one) of nodes that
        did not declare them from converted data."""
        for j, c in enumerate(conv):
            node = self.nodes[j]
            node.args.setdefault("dtype", c.dtype)
            node.args.setdefault("ndim", c.ndim)
            lay = getattr(c, "layout", None) or getattr(c, "data_layout", None)
            if lay and not self.layouts[j] and "layout" not in node.args:
                # DALI takes the layout of the data fed; godali needs it at build.
                node.args["layout"] = lay
                self.layouts[j] = lay

    def resolved(self):
        return all("dtype" in n.args and "ndim" in n.args for n in self.nodes)

    def send(self, conv, from_source):
        p = self.pipe
        for j, c in enumerate(conv):
            # feed_input(layout=) wins, then the node's layout, then the data's own
            lay = c.layout or self.layouts[j] or c.data_layout
            c.feed(p._lib, p._handle, self.nodes[j].name, lay,
                   self.copy_for(from_source), self.what(j))
        self.fed = True
        if self.repeat_last:
            self.last = conv

    def end(self):
        p = self.pipe
        for n in self.nodes:
            p._lib.pipeline_feed_end_of_epoch(p._handle, n.name.encode())

    def drop(self):
        p = self.pipe
        for n in self.nodes:
            p._lib.pipeline_feed_drop(p._handle, n.name.encode(), None)


# --- pipeline hooks (pipeline/__init__.py calls these) -----------------------------------

def groups(pipe, nodes=None):
    """The pipeline's external source groups whose nodes are among `nodes` (by default
    the nodes its outputs reach, once it has outputs: a source none of whose outputs is
    used is never polled nor fed, as DALI prunes it)."""
    gs = getattr(pipe, "_ext_groups", None) or []
    if nodes is None:
        nodes = _reachable(pipe)
        if nodes is None:
            return gs
    ids = {id(n) for n in nodes}
    return [g for g in gs if any(id(n) in ids for n in g.nodes)]


def _reachable(pipe):
    """The nodes the pipeline's outputs reach (cached while its outputs and nodes stay
    the same), None before it has outputs: a source whose data nothing uses (a value
    made outside the function and used only in a branch whose result is unused) is not
    in the graph and is not fed, as in DALI."""
    outs = getattr(pipe, "_outputs", None)
    if not outs or not hasattr(pipe, "_reachable_nodes"):
        return None
    key = (id(outs), len(outs), len(getattr(pipe, "_nodes", ())))
    hit = pipe.__dict__.get("_ext_reachable")
    if hit is None or hit[0] != key:
        hit = (key, pipe._reachable_nodes())
        pipe.__dict__["_ext_reachable"] = hit
    return hit[1]


def prepare(pipe, nodes):
    """Before the pipeline is created: fills dtype and ndim from the sources' first batch
    where they were not given. Returns False when a feed_input-only node still lacks them
    (the build waits for the first feed_input)."""
    ok = True
    gs = _batch_mode_first(groups(pipe, nodes))
    # A per-sample source polled now needs its first iteration's size: the batch-mode
    # sources give it, so they are polled first (their batch waits in pending).
    sizes_needed = any(g.source is not None and not g.batch and not g.resolved() for g in gs)
    for g in gs:
        if g.resolved() and not (sizes_needed and g.batch and g.source is not None):
            continue
        if g.source is not None:
            if not g.pending and not g.exhausted:
                try:
                    g.pending.append(g.pull(pipe._batch_size))
                except StopIteration:
                    g.exhausted = True
            if not g.pending:
                if g.resolved():
                    continue
                raise ValueError("godali: %s: the source gave no data, so its dtype and ndim "
                                 "are unknown; give dtype= and ndim=" % g.what(0))
            g.resolve(g.pending[0])
        elif g.pending:
            g.resolve(g.pending[0])
        else:
            ok = False
    return ok


def after_build(pipe):
    """Gives the library the feed_input batches made before the pipeline existed."""
    for g in groups(pipe):
        if g.source is None:
            pending, g.pending = g.pending, []
            for conv in pending:
                g.send(conv, False)


def top_up(pipe):
    """Before a run: feeds every source up to prefetch_queue_depth batches ahead."""
    gs = groups(pipe)
    if not gs or not pipe._handle:
        return
    depth = pipe._prefetch_queue_depth
    bs = pipe._batch_size
    for g in _batch_mode_first(gs):
        if g.source is None:
            if g.repeat_last and not g.fed and g.last is not None:
                g.send(g.last, False)
            g.fed = False
            continue
        if g.error is not None and g.ahead == 0:
            # The batches fed before the error were returned: this run is the one for the
            # batch whose polling failed.
            err, g.error = g.error, None
            raise err
        while g.ahead < depth and not g.exhausted and g.error is None:
            if g.pending:
                conv = g.pending.pop(0)
            else:
                try:
                    conv = g.pull(bs)
                except StopIteration:
                    g.exhausted = True
                    g.end()
                    break
                except Exception as e:
                    if g.ahead == 0:
                        raise
                    g.error = e  # raised by the run() that would return this batch
                    break
            g.send(conv, True)
            g.ahead += 1


def took(pipe):
    for g in groups(pipe):
        if g.ahead > 0:
            g.ahead -= 1


def has_sources(pipe):
    return any(g.source is not None for g in groups(pipe))


def _iteration_sizes(pipe):
    """The batch sizes the batch-mode sources gave the epoch's iterations, by iteration."""
    sizes = getattr(pipe, "_ext_sizes", None)
    if sizes is None:
        sizes = pipe._ext_sizes = {}
    return sizes


def _batch_mode_first(gs):
    # The batch-mode sources decide an iteration's size; the per-sample ones follow it.
    return sorted(gs, key=lambda g: not g.batch)


def restart(pipe):
    """After the pipeline's reset: the sources' next epoch."""
    _iteration_sizes(pipe).clear()
    for g in groups(pipe):
        if g.source is None:
            continue
        g.drop()
        g.ahead = 0
        g.error = None
        g.iteration = 0
        g.epoch += 1
        g.exhausted = False


# --- checkpoints (DALI's: a callable source's position is the pipeline's) ---------------

def _recorded(g):
    """Whether a checkpoint records the group's position: a callable source that takes
    the iteration, BatchInfo or SampleInfo (DALI's rule: calling it again with the saved
    indices gives the same data). Iterables and parameterless callables are not."""
    src = g.source
    return src is not None and src.callback is not None and src.nparams > 0


def checkpointed_feeds(pipe, nodes):
    """The external source nodes (names) whose position the checkpoint records."""
    return [n.name for g in groups(pipe, nodes) if _recorded(g) for n in g.nodes]


def warn_unrecorded(pipe):
    """DALI's warning, at build, for a source whose state a checkpoint cannot capture."""
    for g in groups(pipe):
        if g.source is None or _recorded(g):
            continue
        if g.source.callback is None:
            reason = "with SourceKind.%s as a 'source'" % g.source.kind
        else:
            reason = "with parameterless callable as a 'source'"
        warnings.warn(
            "Checkpointing enabled in a pipeline with external source operator, %s. DALI "
            "doesn't capture state of such 'source'. When loading the checkpoint, the "
            "'source' must be manually adjusted by the user to start from the correct "
            "point, otherwise it will start from the beginning, potentially leading to "
            "mismatch with other data sources. (godali: %s)" % (reason, g.what(0)),
            Warning, stacklevel=4)


def checkpoint_state(pipe):
    """Each recorded source's position after the batches the consumer took: the epoch
    and the iteration its next batch is polled with (those polled ahead are polled again
    after a restore)."""
    out = {}
    for g in groups(pipe):
        if _recorded(g):
            it = g.iteration - g.ahead - len(g.pending)
            # The outputs' dtype and ndim (and layout) as the pipeline was built: a
            # pipeline restored at the end of an epoch cannot learn them by polling.
            meta = [{k: n.args[k] for k in ("dtype", "ndim", "layout") if k in n.args}
                    for n in g.nodes]
            out[g.nodes[0].name] = {"epoch": g.epoch, "iteration": it, "outputs": meta}
    return out


def restore_state(pipe, state):
    """Before the first poll of a restored pipeline: each recorded source goes on from
    the position the checkpoint saved."""
    for g in groups(pipe):
        if not _recorded(g):
            continue
        name = g.nodes[0].name
        st = (state or {}).get(name)
        if not isinstance(st, dict):
            raise ValueError("godali: the checkpoint has no position for the external "
                             "source %r (it was saved by a pipeline without this source, "
                             "or by an older godali)" % name)
        try:
            g.epoch, g.iteration = int(st["epoch"]), int(st["iteration"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("godali: the checkpoint's position of the external source %r "
                             "is malformed: %r" % (name, st)) from None
        if g.epoch < 0 or g.iteration < 0:
            raise ValueError("godali: the checkpoint's position of the external source %r "
                             "is negative: %r" % (name, st))
        meta = st.get("outputs")
        if isinstance(meta, list) and len(meta) == len(g.nodes):
            for j, (n, m) in enumerate(zip(g.nodes, meta)):
                for k in ("dtype", "ndim", "layout"):
                    if k in m and k not in n.args:
                        n.args[k] = m[k]
                        if k == "layout":
                            g.layouts[j] = m[k]


def adopted(node, pipe):
    """_graph.adopt registered an external_source node made outside a pipeline in `pipe`."""
    g = getattr(node, "extra", None)
    if isinstance(g, _Group):
        g.attach(pipe)


class InputNotFoundError(_lib.InvalidArgumentError, KeyError):
    """feed_input named no external source of the pipeline's graph (DALI's KeyError)."""

    def __str__(self):
        return self.args[0] if self.args else ""


def feed_input(pipe, name, data, layout=None, no_copy=None):
    if getattr(pipe, "_outputs", None) is not None:
        # DALI: only the sources in the graph (reachable from the outputs) take data.
        reachable = {n.name for n in pipe._reachable_nodes()}
        for g in getattr(pipe, "_ext_groups", None) or []:
            if any(n.name == name for n in g.nodes) and name not in reachable:
                raise InputNotFoundError(
                    "godali: feed_input: Could not find an input operator with name %r in "
                    "the pipeline's graph: the external source is not used by any output"
                    % name, _lib.ERROR_INVALID_ARGUMENT)
    for g in groups(pipe):
        for j, n in enumerate(g.nodes):
            if n.name == name:
                conv = _Converted(data, pipe._batch_size, g.dtypes[j], g.what(j))
                g.check(j, conv, layout)
                lay = layout if layout is not None else g.layouts[j]
                conv.layout = lay
                if not pipe._handle:
                    if len(g.nodes) != 1:
                        raise ValueError("godali: feed_input(%r): build the pipeline before "
                                         "feeding a multi-output external_source" % name)
                    if g.copy_for(False) if no_copy is None else not no_copy:
                        # Copied now, as it would be by the library.
                        conv.arrays = [a.copy() for a in conv.arrays]
                        conv.keep = None
                    conv.layout = layout  # types the node with the rest (resolve)
                    g.pending.append([conv])
                    return
                copy = g.copy_for(False) if no_copy is None else not no_copy
                conv.feed(pipe._lib, pipe._handle, name, lay, copy, g.what(j))
                g.fed = True
                if g.repeat_last:
                    g.last = [conv]
                return
    from . import _video
    if _video.feed_stream(pipe, name, data, no_copy):
        return
    names = [n.name for g in groups(pipe) for n in g.nodes]
    raise _lib.InvalidArgumentError(
        "godali: feed_input: no external source named %r; external sources: %s"
        % (name, ", ".join(repr(x) for x in names) or "none"), _lib.ERROR_INVALID_ARGUMENT)


# --- fn.external_source --------------------------------------------------------------------

def external_source(source=None, num_outputs=None, *, cycle=None, name=None, device="cpu",
                    layout=None, dtype=None, ndim=None, cuda_stream=None, use_copy_kernel=None,
                    blocking=None, batch=True, repeat_last=False, parallel=None, no_copy=None,
                    prefetch_queue_depth=None, bytes_per_sample_hint=None, batch_info=None,
                    **kwargs):
    """Data from Python (DALI's fn.external_source).

    source: a callable (no argument; or the iteration number, types.BatchInfo with
    batch_info=True, or types.SampleInfo per sample with batch=False), an iterable, or a
    generator function; polled before each run. A batch is a list of samples (numpy
    arrays, CPU torch tensors, objects with __array_interface__ or __dlpack__, str or
    bytes) or one array whose first dimension is the batch. StopIteration ends the epoch:
    pipe.run() raises StopIteration once the batches already fed are returned, and
    pipe.reset() starts the next epoch. cycle: False (the iterator goes on after reset),
    True or "quiet" (restart silently at the end), "raise" (StopIteration, then restart).
    num_outputs: the source returns a tuple of that many batches (or samples).
    Without source, feed each batch with pipe.feed_input(name, data) before running.
    no_copy: False/None (default, as DALI): the data is copied when fed, so a source may
    refill one buffer for every batch; True: no copy, the arrays are referenced until the
    library has released the batch (do not modify them meanwhile). As in DALI the call may
    be made outside `with pipe:`: the node joins the pipeline whose set_outputs or
    operator uses it. parallel and prefetch_queue_depth are
    accepted; godali polls the source serially, up to the pipeline's
    prefetch_queue_depth batches ahead.
    """
    pipe = _graph.current_pipeline()  # None: adopted later (_graph.adopt)
    if kwargs:
        raise TypeError("godali: fn.external_source got unknown arguments: %s"
                        % ", ".join(sorted(kwargs)))
    if device not in (None, "cpu", "gpu"):
        raise ValueError("godali: fn.external_source: device must be 'cpu' or 'gpu', got %r"
                         % (device,))
    if source is None:
        if cycle is not None:
            raise ValueError("godali: fn.external_source: cycle needs a source")
        if batch_info:
            raise ValueError("godali: fn.external_source: batch_info needs a source")
    if num_outputs is not None:
        num_outputs = int(num_outputs)
        if num_outputs < 1:
            raise ValueError("godali: fn.external_source: num_outputs must be >= 1")
    if not batch and batch_info:
        raise ValueError("godali: fn.external_source: batch_info applies to batch=True only")
    if parallel and source is not None:
        from . import _conditionals
        if _conditionals.is_converted(source):
            # DALI's rule: a parallel source is sent to worker processes by reference to
            # its definition, which a function made by the conditional rewrite lacks.
            raise ValueError(
                "godali: fn.external_source: the `source` was created in a scope that was "
                "rewritten for enable_conditionals. To allow the `source` to be correctly "
                "used with parallel external source, it must remain unconverted: define it "
                "(or the factory creating it) outside the pipeline definition")
    k = num_outputs or 1

    def per_output(v, what):
        if isinstance(v, (list, tuple)) and num_outputs is not None:
            if len(v) != k:
                raise ValueError("godali: fn.external_source: %s has %d entries for %d "
                                 "outputs" % (what, len(v), k))
            return list(v)
        return [v] * k

    dtypes = [_dtype_name(d, "fn.external_source") for d in per_output(dtype, "dtype")]
    ndims = per_output(ndim, "ndim")
    layouts = per_output(layout, "layout")
    for j, lay in enumerate(layouts):
        if lay is not None and not isinstance(lay, str):
            raise TypeError("godali: fn.external_source: layout must be a string")
        if lay and ndims[j] is not None and len(lay) != int(ndims[j]):
            raise _feed_error("fn.external_source", "Number of dimensions in the provided "
                              "layout does not match the ndim argument. The arguments "
                              "provided:\n ndim = %d,\n layout: \"%s\"." % (ndims[j], lay))
        if lay and ndims[j] is None:
            ndims[j] = len(lay)
    src = _Source(source, cycle, batch_info) if source is not None else None
    schema = _graph.schemas().ops["external_source"]
    nodes = []
    for j in range(k):
        args = {}
        if dtypes[j] is not None:
            args["dtype"] = dtypes[j]
        if ndims[j] is not None:
            args["ndim"] = int(ndims[j])
        if layouts[j]:
            args["layout"] = layouts[j]
        nname = name if k == 1 or name is None else "%s_%d" % (name, j)
        nodes.append(_graph.OpNode(schema, "cpu", [], {}, args, pipe, nname, False))
    if src is None:
        # Fed by feed_input only: each output is an input of its own (DALI's
        # ExternalSource(num_outputs=k) fed output by output).
        parts = [([n], [dtypes[j]], [ndims[j]], [layouts[j]]) for j, n in enumerate(nodes)]
    else:
        parts = [(nodes, dtypes, ndims, layouts)]
    for ns, dts, nds, lays in parts:
        g = _Group(None, ns, src, num_outputs if src is not None else None, bool(batch),
                   bool(batch_info), dts, nds, lays, no_copy, bool(repeat_last))
        for n in ns:
            n.extra = g
        if pipe is not None:
            g.attach(pipe)
    outs = [n.outputs[0] for n in nodes]
    if device == "gpu":
        # DALI's GPU external source: the host batch, copied to the GPU by the pipeline.
        outs = [_graph.move_to_gpu(o, "ExternalSource") for o in outs]
    if num_outputs is None:
        return outs[0]
    return tuple(outs)
