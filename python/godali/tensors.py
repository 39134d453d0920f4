"""Pipeline outputs: TensorList (one per output and batch) and Tensor (one sample).

Both export their memory without a copy through DLPack (__dlpack__), numpy's
__array_interface__ (CPU) and __cuda_array_interface__ (GPU). The engine's buffer is given
back to its pool when the last Python object or consumer tensor that refers to it is gone,
also after the pipeline itself was destroyed.

GPU outputs follow DLPack's stream protocol: __dlpack__(stream=s) makes the consumer's
stream s wait (on the GPU, not the host) for the work that produced the batch, and the
memory goes back to the pool only after the work then queued on s. stream=None means the
legacy default stream, as the DLPack specification says for CUDA; -1 asks for no
synchronisation.
"""

import math

from . import _dlpack
from . import types as _types


class _Buffer:
    """A block of memory with a DLPack description, kept alive by `owner`."""

    __slots__ = ("data", "device_type", "device_id", "code", "bits", "lanes", "shape",
                 "strides", "owner", "__weakref__")

    def __init__(self, data, device_type, device_id, code, bits, lanes, shape, strides,
                 owner):
        self.data = data
        self.device_type = device_type
        self.device_id = device_id
        self.code = code
        self.bits = bits
        self.lanes = lanes
        self.shape = shape
        self.strides = strides  # in elements, or None for compact row-major
        self.owner = owner

    @property
    def itemsize(self):
        return (self.bits * self.lanes + 7) // 8

    def is_compact(self):
        if self.strides is None:
            return True
        expected = 1
        for dim, stride in zip(reversed(self.shape), reversed(self.strides)):
            if dim != 1 and stride != expected:
                return False
            expected *= dim
        return True

    def keeper(self):
        """The object whose lifetime bounds the memory's: owner, or this buffer itself."""
        return self if self.owner is None else self.owner

    def capsule(self, versioned=False):
        return _dlpack.to_capsule(self.keeper(), self.data, self.device_type, self.device_id,
                                  self.code, self.bits, self.lanes, self.shape,
                                  self.strides, versioned=versioned)

    def fence(self, stream):
        """Orders a consumer's CUDA stream (DLPack's stream value) after the work that
        wrote this GPU memory; host memory needs nothing."""
        keeper = self.keeper()
        if isinstance(keeper, _Lease):
            keeper.wait_stream(stream)


class _Lease(_Buffer):
    """A DLManagedTensor handed out by the engine; its deleter runs when this object dies.

    The deleter is only called from the process that loaded the library: in a forked
    child the engine cannot be entered, and the child's copy of the memory simply goes
    away with the child.
    """

    __slots__ = ("_ptr", "_lib")

    # Bound here so that release() works while modules are torn down at exit.
    _call_deleter = staticmethod(_dlpack.call_deleter)

    def __init__(self, lib, ptr):
        t = _dlpack.DLManagedTensor.from_address(ptr).dl_tensor
        ndim = t.ndim
        shape = tuple(t.shape[i] for i in range(ndim))
        strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else None
        _Buffer.__init__(self, (t.data or 0) + t.byte_offset, t.device.device_type,
                         t.device.device_id, t.dtype.code, t.dtype.bits, t.dtype.lanes,
                         shape, strides, None)
        self._ptr = ptr
        self._lib = lib

    def release(self):
        ptr, self._ptr = self._ptr, None
        if ptr and self._lib.in_owner_process():
            self._call_deleter(ptr)

    def wait_stream(self, stream):
        """Makes `stream` wait for the batch's GPU work (godali_tensor_stream_wait); the
        engine frees the memory after that stream's work once this lease is released."""
        if self._ptr and _is_gpu(self) and stream != -1:
            self._lib.tensor_stream_wait(self._ptr, stream)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - nothing can be raised from __del__
            pass


def _device_tuple(buf):
    return (buf.device_type, buf.device_id)


def _consumer_stream(buf, stream):
    """DLPack's stream argument for a CUDA buffer: None is the legacy default stream (1),
    0 is ambiguous and refused. Host buffers need no stream and ignore it."""
    if not _is_gpu(buf):
        return None
    if stream is None:
        return 1
    stream = int(stream)
    if stream == 0 or stream < -1:
        raise BufferError("godali: __dlpack__(stream=%d): expected None, -1, 1 (legacy "
                          "default stream), 2 (per-thread default stream) or a CUDA "
                          "stream handle" % stream)
    return stream


def _export(buf, stream, max_version):
    s = _consumer_stream(buf, stream)
    if s is not None:
        buf.fence(s)
    return buf.capsule(versioned=_dlpack.wants_versioned(max_version))


def _is_gpu(buf):
    return buf.device_type in (_dlpack.kDLCUDA, _dlpack.kDLCUDAManaged)


def _array_interface(buf, holder):
    if _is_gpu(buf):
        raise AttributeError("__array_interface__: the data is on the GPU")
    ts = _dlpack.typestr(_dlpack.dtype_name(buf.code, buf.bits, buf.lanes))
    if ts is None:
        raise AttributeError("__array_interface__: no numpy type for %s"
                             % _dlpack.dtype_name(buf.code, buf.bits, buf.lanes))
    d = {"shape": tuple(buf.shape), "typestr": ts, "data": (buf.data, False), "version": 3}
    if buf.strides is not None:
        d["strides"] = tuple(s * buf.itemsize for s in buf.strides)
    return d


def _cuda_array_interface(buf):
    if not _is_gpu(buf):
        raise AttributeError("__cuda_array_interface__: the data is in host memory")
    ts = _dlpack.typestr(_dlpack.dtype_name(buf.code, buf.bits, buf.lanes))
    if ts is None:
        raise AttributeError("__cuda_array_interface__: no numpy type")
    # The legacy default stream waits for the batch; consumers synchronise with it
    # (version 3's "stream": 1).
    buf.fence(1)
    d = {"shape": tuple(buf.shape), "typestr": ts, "data": (buf.data, False),
         "version": 3, "stream": 1}
    if buf.strides is not None:
        d["strides"] = tuple(s * buf.itemsize for s in buf.strides)
    return d


def _torch_from(buf):
    import torch.utils.dlpack
    if _is_gpu(buf):
        # A bare capsule carries no stream: order torch's current stream ourselves.
        s = torch.cuda.current_stream(buf.device_id).cuda_stream
        buf.fence(1 if s == 0 else s)
    return torch.utils.dlpack.from_dlpack(buf.capsule())


def _numpy_from(obj, buf):
    import numpy as np
    if _is_gpu(buf):
        return _torch_from(buf).cpu().numpy()
    from_dlpack = getattr(np, "from_dlpack", None)
    if from_dlpack is not None:
        return from_dlpack(obj)
    return np.asarray(obj)


class Tensor:
    """One sample of an output (DALI's TensorCPU / TensorGPU), exported without a copy."""

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = buf

    def shape(self):
        """The sample's shape, as a tuple."""
        return tuple(self._buf.shape)

    @property
    def dtype(self):
        """The element type, as types.DALIDataType."""
        return _types.from_dlpack_dtype(self._buf.code, self._buf.bits)

    @property
    def device(self):
        """"gpu" or "cpu"."""
        return "gpu" if _is_gpu(self._buf) else "cpu"

    def data_ptr(self):
        """The address of the first element."""
        return self._buf.data

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("godali: __dlpack__(copy=True) is not supported; the "
                              "export is always zero-copy")
        return _export(self._buf, stream, max_version)

    def __dlpack_device__(self):
        return _device_tuple(self._buf)

    @property
    def __array_interface__(self):
        return _array_interface(self._buf, self)

    @property
    def __cuda_array_interface__(self):
        return _cuda_array_interface(self._buf)

    def as_array(self):
        """A numpy array: zero-copy for host data, copied through torch from the GPU."""
        return _numpy_from(self, self._buf)

    def as_tensor(self):
        """A torch.Tensor sharing this sample's memory."""
        return _torch_from(self._buf)

    def __repr__(self):
        return "godali.Tensor(shape=%s, dtype=%s, device=%s)" % (
            self.shape(), self.dtype.name, self.device)


class TensorList:
    """One pipeline output for one batch: N samples (DALI's TensorListCPU/GPU).

    Dense outputs (every sample the same shape) are one [N, ...] buffer and export as one
    tensor; ragged outputs (decoded images of different sizes) are N buffers, reachable
    per sample through tl[i]. Nothing is copied unless noted.
    """

    __slots__ = ("_dense", "_samples", "_gathered")

    def __init__(self, dense=None, samples=None):
        self._dense = dense
        self._samples = samples
        self._gathered = None

    # -- DALI's TensorList API ----------------------------------------------------------

    def __len__(self):
        if self._dense is not None:
            return self._dense.shape[0] if self._dense.shape else 0
        return len(self._samples)

    def __getitem__(self, i):
        n = len(self)
        if not isinstance(i, int):
            try:
                i = i.__index__()
            except AttributeError:
                raise TypeError("TensorList indices must be integers, not %s"
                                % type(i).__name__) from None
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("sample index %d out of range for a batch of %d" % (i, n))
        if self._samples is not None:
            return Tensor(self._samples[i])
        d = self._dense
        itemsize = d.itemsize
        if d.strides is None:
            step = math.prod(d.shape[1:]) * itemsize
            strides = None
        else:
            step = d.strides[0] * itemsize
            strides = d.strides[1:]
        return Tensor(_Buffer(d.data + i * step, d.device_type, d.device_id, d.code, d.bits,
                              d.lanes, d.shape[1:], strides, d.keeper()))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def shape(self):
        """The shape of every sample: a list of tuples."""
        if self._dense is not None:
            return [tuple(self._dense.shape[1:])] * len(self)
        return [tuple(s.shape) for s in self._samples]

    def is_dense_tensor(self):
        """True when every sample has the same shape (as_tensor() then works)."""
        if self._dense is not None:
            return True
        shapes = {tuple(s.shape) for s in self._samples}
        return len(shapes) <= 1

    @property
    def dtype(self):
        """The element type, as types.DALIDataType."""
        b = self._any()
        return _types.from_dlpack_dtype(b.code, b.bits) if b else _types.NO_TYPE

    @property
    def device(self):
        """"gpu" or "cpu"."""
        b = self._any()
        return "gpu" if (b is not None and _is_gpu(b)) else "cpu"

    def layout(self):
        """DALI's layout string; godali does not track layouts and returns ""."""
        return ""

    def data_ptr(self):
        """The address of the dense [N, ...] data (dense outputs only)."""
        return self._dense_buffer().data

    # -- exports ------------------------------------------------------------------------

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("godali: __dlpack__(copy=True) is not supported")
        return _export(self._dense_buffer(), stream, max_version)

    def __dlpack_device__(self):
        b = self._any()
        if b is None:
            return (_dlpack.kDLCPU, 0)
        return _device_tuple(b)

    @property
    def __array_interface__(self):
        return _array_interface(self._dense_buffer(), self)

    @property
    def __cuda_array_interface__(self):
        return _cuda_array_interface(self._dense_buffer())

    def as_tensor(self):
        """The batch as one torch.Tensor of shape [N, ...], sharing the engine's memory.

        A ragged output whose samples happen to share a shape is gathered into a new
        buffer once (a copy); one with different shapes raises ValueError: index the
        samples instead (tl[i].as_tensor()).
        """
        return _torch_from(self._dense_buffer())

    def as_array(self):
        """The batch as one numpy array [N, ...] (zero-copy for host data)."""
        return _numpy_from(self, self._dense_buffer())

    def as_cpu(self):
        """This output in host memory: self for CPU outputs, a copy for GPU outputs."""
        b = self._any()
        if b is None or not _is_gpu(b):
            return self
        if self._samples is not None and not self.is_dense_tensor():
            return TensorList(samples=[_host_copy(s) for s in self._samples])
        return TensorList(dense=_host_copy(self._dense_buffer()))

    def __repr__(self):
        n = len(self)
        if self._dense is not None:
            shape = "[%d, %s]" % (n, ", ".join(str(s) for s in self._dense.shape[1:]))
        else:
            shape = "ragged (%d samples)" % n
        return "godali.TensorList(%s, dtype=%s, device=%s)" % (shape, self.dtype.name,
                                                               self.device)

    # -- internals ----------------------------------------------------------------------

    def _any(self):
        if self._dense is not None:
            return self._dense
        return self._samples[0] if self._samples else None

    def _dense_buffer(self):
        if self._dense is not None:
            return self._dense
        if self._gathered is None:
            self._gathered = _gather(self._samples)
        return self._gathered


def _gather(samples):
    shapes = {tuple(s.shape) for s in samples}
    if len(shapes) > 1:
        shown = sorted(shapes)[:4]
        raise ValueError(
            "godali: this output is ragged (samples of %d different shapes, e.g. %s) and "
            "cannot be one dense tensor; use tl[i] per sample, or resize/crop in the "
            "pipeline" % (len(shapes), ", ".join(str(s) for s in shown)))
    if not samples:
        raise ValueError("godali: empty output")
    first = samples[0]
    import torch
    parts = [_torch_from(s) for s in samples]
    stacked = torch.stack(parts)
    return _torch_buffer(stacked, first)


def _torch_buffer(t, like):
    t = t.contiguous()
    return _Buffer(t.data_ptr(), like.device_type, like.device_id, like.code, like.bits,
                   like.lanes, tuple(t.shape), None, t)


def _host_copy(buf):
    t = _torch_from(buf).cpu()
    return _Buffer(t.data_ptr(), _dlpack.kDLCPU, 0, buf.code, buf.bits, buf.lanes,
                   tuple(t.shape), None, t)


# DALI's class names.
TensorListCPU = TensorList
TensorListGPU = TensorList
TensorCPU = Tensor
TensorGPU = Tensor
