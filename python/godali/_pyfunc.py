"""Python functions inside a pipeline: fn.python_function, fn.dl_tensor_python_function,
fn.torch_python_function and their ops classes (DALI's PythonFunction family).

Each node registers its function with the library (godali_host_function_register); the
engine's python_function operator calls it back once per batch, on a library thread,
once every sample's inputs are ready, one batch at a time in iteration order
(include/godali.h, "Host functions"). While a call runs, its thread notes the pipeline
(call.pipeline), so that the function's calls into that pipeline raise
ReentrantCallError instead of waiting for themselves. One ctypes
callback serves every node, so that no callback object can be freed while the library may
still call it; a node's entry is dropped when its graph node is collected, after which a
call fails with an error instead of running.

The function's inputs are copies the function owns (it may keep them); its outputs are
copied into the pipeline's memory before the call returns, so it may return views of its
inputs, of any type and shape per sample.
"""

import ctypes
import threading
import traceback
import weakref
from ctypes import POINTER, Structure, byref, c_char_p, c_int32, c_int64, c_uint64, c_void_p

from . import _dlpack, _graph, _lib

NUMPY = "numpy"
DLPACK = "dlpack"
TORCH = "torch"


class HostCall(Structure):
    """godali_host_call_t."""
    _fields_ = [
        ("call", c_uint64),
        ("node", c_char_p),
        ("num_samples", c_int64),
        ("num_inputs", c_int32),
        ("num_outputs", c_int32),
        ("inputs", POINTER(_dlpack.DLTensor)),
        ("epoch", c_int64),
        ("iteration", c_int64),
        ("pipeline", c_uint64),
    ]


_HOST_FN_T = ctypes.CFUNCTYPE(c_int32, c_void_p, POINTER(HostCall))
_EXTRA = {
    "godali_host_function_register": ([c_void_p, c_void_p, POINTER(c_uint64)]),
    "godali_host_function_unregister": ([c_uint64]),
    "godali_host_call_output": ([c_uint64, c_int32, c_int64, POINTER(_dlpack.DLTensor)]),
    "godali_host_call_fail": ([c_uint64, c_char_p, ctypes.c_size_t]),
}

_entries = {}  # library function id -> _Entry
# The pipelines whose function this thread is running now (handles, innermost last).
_running = threading.local()


def inside(handle):
    """Whether the calling thread is running a python_function of the pipeline `handle`."""
    stack = getattr(_running, "handles", None)
    return bool(handle and stack and handle in stack)


def check_not_inside(handle, what):
    """Raises ReentrantCallError when the calling thread is running a python_function of
    the pipeline `handle`: `what` (run(), reset(), ...) would wait for the batch that
    function is computing, which waits for it."""
    if inside(handle):
        raise _lib.ReentrantCallError(
            "godali: %s called from inside a python_function of the same pipeline: it would "
            "wait for the batch the function is computing, which waits for it (a deadlock). "
            "A python_function may not use its own pipeline; compute what it needs from its "
            "inputs, or use another pipeline" % what, _lib.ERROR_STATE)

_lock = threading.Lock()
_bound = None


def _calls(lib):
    """The host-function calls of the loaded library, declared once."""
    global _bound
    if _bound is None:
        with _lock:
            if _bound is None:
                b = {}
                for name, argtypes in _EXTRA.items():
                    f = getattr(lib._cdll, name)
                    f.argtypes = argtypes
                    f.restype = ctypes.c_int
                    b[name[len("godali_"):]] = lib._checked(name, f)
                _bound = b
    return _bound


class _Entry:
    __slots__ = ("function", "kind", "batch", "num_outputs", "name")

    def __init__(self, function, kind, batch, num_outputs, name):
        self.function = function
        self.kind = kind
        self.batch = batch
        self.num_outputs = num_outputs
        self.name = name


# --- conversions -----------------------------------------------------------------------

_KIND_OF_CODE = {_dlpack.kDLInt: "i", _dlpack.kDLUInt: "u", _dlpack.kDLFloat: "f",
                 _dlpack.kDLBool: "b"}
_CODE_OF_KIND = {v: k for k, v in _KIND_OF_CODE.items()}


def _np():
    import numpy
    return numpy


def _array_of(t):
    """A numpy copy of a host DLTensor."""
    np = _np()
    kind = _KIND_OF_CODE.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise TypeError("godali: python_function input of DLPack type code %d bits %d"
                        % (t.dtype.code, t.dtype.bits))
    dtype = np.dtype("%s%d" % (kind, t.dtype.bits // 8)) if kind != "b" else np.dtype(bool)
    shape = tuple(t.shape[d] for d in range(t.ndim))
    n = dtype.itemsize
    for d in shape:
        n *= d
    if n == 0 or not t.data:
        return np.zeros(shape, dtype)
    raw = (ctypes.c_uint8 * n).from_address(t.data + t.byte_offset)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _dl_type(arr):
    np = _np()
    code = _CODE_OF_KIND.get(arr.dtype.kind)
    if code is None or arr.dtype.byteorder == ">":
        raise TypeError("data of type %s is not supported (bool, int8-64, uint8-64, "
                        "float16/32/64)" % arr.dtype)
    del np
    return code, arr.dtype.itemsize * 8


def _dlpack_to_array(capsule):
    """A numpy copy of a DLPack capsule's host tensor; the capsule is consumed (DALI's
    ops._dlpack_to_array)."""
    if hasattr(capsule, "__dlpack__"):
        return _np().from_dlpack(capsule).copy()
    api = ctypes.pythonapi
    valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, c_char_p)(
        ("PyCapsule_IsValid", api))
    get = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(("PyCapsule_GetPointer", api))
    rename = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, c_char_p)(
        ("PyCapsule_SetName", api))
    if not valid(capsule, b"dltensor"):
        raise TypeError("godali: expected a DLPack capsule (\"dltensor\") or an object with "
                        "__dlpack__, got %s" % type(capsule).__name__)
    ptr = get(capsule, b"dltensor")
    m = _dlpack.DLManagedTensor.from_address(ptr)
    t = m.dl_tensor
    if t.device.device_type not in (_dlpack.kDLCPU, _dlpack.kDLCUDAHost):
        raise TypeError("godali: a DLPack tensor on device type %d; the CPU python "
                        "function takes host memory" % t.device.device_type)
    np = _np()
    arr = _array_of_strided(t, np)
    rename(capsule, b"used_dltensor")
    _dlpack.call_deleter(ptr)
    return arr


def _array_of_strided(t, np):
    if not t.strides:
        return _array_of(t)
    kind = _KIND_OF_CODE.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise TypeError("godali: DLPack type code %d bits %d is not supported"
                        % (t.dtype.code, t.dtype.bits))
    dtype = np.dtype("%s%d" % (kind, t.dtype.bits // 8)) if kind != "b" else np.dtype(bool)
    shape = tuple(t.shape[d] for d in range(t.ndim))
    strides = tuple(t.strides[d] * dtype.itemsize for d in range(t.ndim))
    if 0 in shape or not t.data:
        return np.zeros(shape, dtype)
    span = dtype.itemsize + sum((s - 1) * st for s, st in zip(shape, strides))
    raw = (ctypes.c_uint8 * span).from_address(t.data + t.byte_offset)
    base = np.frombuffer(raw, dtype=np.uint8)
    return np.lib.stride_tricks.as_strided(base.view(dtype)[:1] if span == dtype.itemsize
                                           else base[:span - span % dtype.itemsize]
                                           .view(dtype), shape, strides).copy()


def _dlpack_from_array(arr):
    """A DLPack capsule sharing a numpy array's memory (DALI's ops._dlpack_from_array)."""
    np = _np()
    arr = np.asarray(arr)
    code, bits = _dl_type(arr)
    item = arr.dtype.itemsize
    strides = [s // item for s in arr.strides]
    return _dlpack.to_capsule(arr, arr.ctypes.data, _dlpack.kDLCPU, 0, code, bits, 1,
                              list(arr.shape), strides)


def _to_numpy(x, kind):
    """An output sample as a numpy array."""
    np = _np()
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__ or ""
    if mod.startswith("torch") and hasattr(x, "detach"):
        if x.device.type != "cpu":
            raise TypeError("a torch tensor on %s; the CPU python function returns host "
                            "data" % x.device)
        return x.detach().contiguous().numpy()
    if type(x).__name__ == "PyCapsule":
        return _dlpack_to_array(x)
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        return np.asarray(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError("returned %s, which is not an array" % type(x).__name__)
    return arr


def _to_torch(arr):
    import torch
    return torch.from_numpy(arr)


def _convert_inputs(kind, arrays):
    if kind == TORCH:
        return [_to_torch(a) for a in arrays]
    if kind == DLPACK:
        return [_dlpack_from_array(a) for a in arrays]
    return arrays


def _outputs_of(entry, result, what):
    """The function's return value as a list of num_outputs outputs."""
    n = entry.num_outputs
    if n == 0:
        return []
    if n == 1:
        if isinstance(result, tuple):
            if len(result) != 1:
                raise ValueError("Unexpected number of outputs returned by the function: "
                                 "got %d, expected 1" % len(result))
            result = result[0]
        return [result]
    if not isinstance(result, tuple):
        raise TypeError("%s returned %s; with num_outputs=%d the function's output must be "
                        "a tuple of %d" % (what, type(result).__name__, n, n))
    if len(result) != n:
        raise ValueError("Unexpected number of outputs returned by the function: got %d, "
                         "expected %d" % (len(result), n))
    return list(result)


def _run(entry, call, give):
    """Calls the function over the batch and hands each output sample, as a numpy array,
    to give(k, i, array), which copies it into the pipeline. A per-sample function's
    outputs are given right after its call, before the next sample's: a function that
    returns the same buffer every time (safe in DALI) gives every sample its own data."""
    ns, ni = call.num_samples, call.num_inputs
    inputs = [[_array_of(call.inputs[k * ns + i]) for i in range(ns)] for k in range(ni)]
    what = "the function"
    if entry.batch:
        result = entry.function(*[_convert_inputs(entry.kind, inputs[k]) for k in range(ni)])
        outs = _outputs_of(entry, result, what)
        per = []
        for k, o in enumerate(outs):
            if isinstance(o, (list, tuple)):
                samples = list(o)
            else:
                try:
                    samples = list(o)  # an array or tensor of the whole batch
                except TypeError:
                    raise TypeError("with batch_processing=True output %d must be a list of "
                                    "%d samples, got %s" % (k, ns, type(o).__name__)) from None
            if len(samples) != ns:
                raise ValueError("with batch_processing=True output %d must have %d samples "
                                 "(the batch), got %d" % (k, ns, len(samples)))
            per.append([_to_numpy(s, entry.kind) for s in samples])
        for k, samples in enumerate(per):
            for i, arr in enumerate(samples):
                give(k, i, arr)
        return
    for i in range(ns):
        args = [_convert_inputs(entry.kind, [inputs[k][i]])[0] for k in range(ni)]
        outs = _outputs_of(entry, entry.function(*args), what)
        arrays = [_to_numpy(o, entry.kind) for o in outs]
        for k, arr in enumerate(arrays):
            give(k, i, arr)


def _give(calls, call_id, k, i, arr):
    np = _np()
    if arr.dtype.byteorder == ">" or not (arr.flags.c_contiguous or arr.ndim == 0):
        arr = np.ascontiguousarray(arr)
    try:
        code, bits = _dl_type(arr)
    except TypeError as e:
        raise TypeError("output %d sample %d: %s" % (k, i, e)) from None
    t = _dlpack.DLTensor()
    shape = (c_int64 * max(arr.ndim, 1))(*arr.shape)
    strides = (c_int64 * max(arr.ndim, 1))(*[s // arr.dtype.itemsize for s in arr.strides])
    t.data = arr.ctypes.data if arr.size else None
    t.device.device_type = _dlpack.kDLCPU
    t.ndim = arr.ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    if arr.ndim:
        t.shape = ctypes.cast(shape, POINTER(c_int64))
        t.strides = ctypes.cast(strides, POINTER(c_int64))
    calls["host_call_output"](call_id, k, i, byref(t))


def _dispatch(ctx, call_ptr):
    # Runs on a library thread with the GIL (ctypes takes it). Nothing may escape: an
    # exception here would be printed and the call would look successful.
    call_id = 0
    try:
        call = call_ptr.contents
        call_id = call.call
        lib = _lib.get()
        calls = _calls(lib)
        entry = _entries.get(ctx or 0)
        if entry is None:
            raise RuntimeError("the python function of this node no longer exists (its "
                               "pipeline graph was collected)")
        stack = getattr(_running, "handles", None)
        if stack is None:
            stack = _running.handles = []
        stack.append(call.pipeline)
        try:
            _run(entry, call, lambda k, i, arr: _give(calls, call_id, k, i, arr))
        finally:
            stack.pop()
        return 0
    except BaseException as e:  # noqa: B902 - reported to the pipeline instead
        try:
            text = "%s: %s\n%s" % (type(e).__name__, e, "".join(
                traceback.format_exception(type(e), e, e.__traceback__)[-8:]))
            msg = text.encode("utf-8", errors="replace")
            if call_id:
                _calls(_lib.get())["host_call_fail"](call_id, msg, len(msg))
        except BaseException:  # noqa: B902
            pass
        return 1


_dispatch_c = _HOST_FN_T(_dispatch)
_DISPATCH_ADDR = ctypes.cast(_dispatch_c, c_void_p).value
# Never freed: the library may call it until the process ends.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_dispatch_c))


def _register(entry):
    """Registers one node's function; ctx is a key of our own that finds its entry."""
    lib = _lib.get()
    out = c_uint64()
    key = _next_key()
    _entries[key] = entry
    try:
        _calls(lib)["host_function_register"](_DISPATCH_ADDR, c_void_p(key), byref(out))
    except BaseException:
        _entries.pop(key, None)
        raise
    return out.value, key


_key_lock = threading.Lock()
_key = [0]


def _next_key():
    with _key_lock:
        _key[0] += 1
        return _key[0]


def _forget(fid, key):
    _entries.pop(key, None)
    try:
        lib = _lib.loaded()
        if lib is not None:
            _calls(lib)["host_function_unregister"](fid)
    except Exception:  # noqa: BLE001 - at interpreter exit, or the library is gone
        pass


# --- the fn functions ------------------------------------------------------------------

def _make(kind, fname, default_batch):
    def op(*inputs, function=None, num_outputs=1, batch_processing=default_batch,
           output_layouts=None, device="cpu", name=None, preserve=True,
           synchronize_stream=True, **kwargs):
        kwargs.pop("bytes_per_sample_hint", None)
        kwargs.pop("seed", None)
        if kwargs:
            raise TypeError("godali: %s got unknown arguments: %s"
                            % (fname, ", ".join(sorted(kwargs))))
        if function is None or not callable(function):
            raise TypeError("godali: %s: function must be a callable, got %r"
                            % (fname, function))
        if device not in (None, "cpu"):
            raise ValueError("godali: %s(device=%r): godali runs python functions on the "
                             "host only (device='cpu'); move the outputs to the GPU after "
                             "the pipeline" % (fname, device))
        for x in inputs:
            if isinstance(x, (list, tuple)):
                raise TypeError("godali: %s: python functions do not support multiple input "
                                "sets (an input was a %s)" % (fname, type(x).__name__))
        if not isinstance(num_outputs, int) or isinstance(num_outputs, bool) or \
                not 0 <= num_outputs <= 64:
            raise ValueError("godali: %s: num_outputs must be an int in [0, 64], got %r"
                             % (fname, num_outputs))
        if isinstance(output_layouts, str):
            # DALI: one string is every output's layout; a list names them in order.
            output_layouts = [output_layouts] * max(num_outputs, 1)
        if output_layouts is not None:
            output_layouts = [str(x) for x in output_layouts]
        entry = _Entry(function, kind, bool(batch_processing), num_outputs, fname)
        fid, key = _register(entry)
        args = {"function_id": fid, "num_outputs": num_outputs}
        if output_layouts:
            args["output_layouts"] = output_layouts
        sch = _graph.schemas().ops["python_function"]
        kw = dict(args, device="cpu", name=name, preserve=True)
        try:
            res = _graph._call_op(sch, inputs, kw)
        except BaseException:
            _forget(fid, key)
            raise
        outs = list(res) if isinstance(res, tuple) else [res]
        weakref.finalize(outs[0].source, _forget, fid, key)
        if num_outputs == 0:
            return None
        if num_outputs == 1:
            return outs[0]
        return tuple(outs)

    op.__name__ = fname.rsplit(".", 1)[-1]
    op.__qualname__ = op.__name__
    op.__doc__ = _DOCS[kind]
    return op


_DOCS = {
    NUMPY: """DALI's fn.python_function: calls `function` inside the pipeline.

    function: a callable. batch_processing=False (default): called once per sample with one
    numpy array per input; True: called once per batch with one list of arrays per input,
    returning one list per output. num_outputs (1): outputs returned (a tuple when more
    than one; 0: a sink called for its side effects). output_layouts: a layout string for
    every output, or a list. Outputs may be of any type and shape per sample; they are
    copied into the pipeline, so views of the inputs are fine. The inputs are copies the
    function may keep. An exception raised by the function fails the batch: run() raises
    godali.DataError (a RuntimeError) naming the node and the original error. Host only
    (device='cpu'); the outputs can be pipeline outputs or inputs of other python functions.""",
    DLPACK: """DALI's fn.dl_tensor_python_function: as fn.python_function, but the function
    receives DLPack capsules (lists of them per input with batch_processing=True, the
    default) and returns DLPack capsules (or arrays, or objects with __dlpack__).""",
    TORCH: """DALI's torch_python_function: as fn.python_function, but the function receives
    torch tensors (lists of them per input with batch_processing=True, the default) and
    returns torch tensors.""",
}

python_function = _make(NUMPY, "fn.python_function", False)
dl_tensor_python_function = _make(DLPACK, "fn.dl_tensor_python_function", True)
torch_python_function = _make(TORCH, "fn.torch_python_function", True)

FUNCTIONS = {"python_function": python_function,
             "dl_tensor_python_function": dl_tensor_python_function,
             "torch_python_function": torch_python_function}


def ops_class(fn_name, class_name, base):
    """The ops class (DALI's ops.PythonFunction, ...) of a fn function here: created with
    the arguments, called on the inputs."""
    func = FUNCTIONS[fn_name]

    def __init__(self, function=None, num_outputs=1, device="cpu", **kwargs):
        self._device = device
        self._spec = dict(kwargs, function=function, num_outputs=num_outputs)

    def __call__(self, *inputs, **kwargs):
        args = dict(self._spec)
        args.update(kwargs)
        args.setdefault("device", self._device)
        return func(*inputs, **args)

    return type(class_name, (base,), {"__init__": __init__, "__call__": __call__,
                                      "__doc__": func.__doc__, "__module__": "godali.ops",
                                      "schema": None})
