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
    _dlpack.check_ndim(buf.shape)
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
    _dlpack.check_ndim(buf.shape)
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
    if buf.code == _dlpack.kDLBool and buf.bits == 8:
        # torch before 2.1 refuses DLPack's bool: take the bytes as uint8 and view them
        # as bool (same size, no copy; every version takes that).
        cap = _dlpack.to_capsule(buf.keeper(), buf.data, buf.device_type, buf.device_id,
                                 _dlpack.kDLUInt, 8, buf.lanes, buf.shape, buf.strides)
        return torch.utils.dlpack.from_dlpack(cap).view(torch.bool)
    return torch.utils.dlpack.from_dlpack(buf.capsule())


def _numpy_from(obj, buf):
    import numpy as np
    _dlpack.check_ndim(buf.shape)
    if _is_gpu(buf):
        return _torch_from(buf).cpu().numpy()
    from_dlpack = getattr(np, "from_dlpack", None)
    # numpy's from_dlpack refuses kDLBool (6) in the versions before 2.x: BOOL outputs
    # (comparisons) go through __array_interface__, which is zero-copy too.
    if from_dlpack is not None and buf.code != _dlpack.kDLBool:
        return from_dlpack(obj)
    return np.asarray(obj)


def _buffer_from_array(data):
    """A _Buffer over an array-like object (numpy array, anything with
    __array_interface__ or the buffer protocol, a torch tensor on CPU or GPU), sharing
    its memory when it is C-contiguous (a compact copy otherwise)."""
    if isinstance(data, Tensor):
        return data._buf
    if isinstance(data, TensorList):
        return data._dense_buffer()
    mod = type(data).__module__ or ""
    if mod.startswith("torch") and getattr(data, "is_cuda", False):
        t = data.contiguous()
        code, bits = _TORCH_DL[str(t.dtype)]
        return _Buffer(t.data_ptr(), _dlpack.kDLCUDA, t.device.index or 0, code, bits, 1,
                       tuple(t.shape), None, t)
    import numpy as np
    if mod.startswith("torch"):
        data = data.detach().numpy()
    arr = np.ascontiguousarray(data)
    key = (arr.dtype.kind, arr.dtype.itemsize)
    if key not in _NP_DL:
        raise TypeError("godali: no DALI type for numpy dtype %s" % arr.dtype)
    code, bits = _NP_DL[key]
    return _Buffer(arr.ctypes.data, _dlpack.kDLCPU, 0, code, bits, 1, tuple(arr.shape),
                   None, arr)


_NP_DL = {("u", 1): (1, 8), ("u", 2): (1, 16), ("u", 4): (1, 32), ("u", 8): (1, 64),
          ("i", 1): (0, 8), ("i", 2): (0, 16), ("i", 4): (0, 32), ("i", 8): (0, 64),
          ("f", 2): (2, 16), ("f", 4): (2, 32), ("f", 8): (2, 64), ("b", 1): (6, 8)}
_TORCH_DL = {"torch.uint8": (1, 8), "torch.int8": (0, 8), "torch.int16": (0, 16),
             "torch.int32": (0, 32), "torch.int64": (0, 64), "torch.float16": (2, 16),
             "torch.float32": (2, 32), "torch.float64": (2, 64), "torch.bool": (6, 8)}


def _check_layout(layout, ndim):
    if layout is None:
        return ""
    if not isinstance(layout, str):
        raise TypeError("godali: layout must be a string such as \"HWC\", not %s"
                        % type(layout).__name__)
    if layout and ndim is not None and len(layout) != ndim:
        raise ValueError("godali: layout %r has %d dimensions but the data has %d"
                         % (layout, len(layout), ndim))
    return layout


def _to_dl_dtype(new_type):
    """DALIDataType -> DLPack (code, bits), or TypeError naming it."""
    for key, t in _types._FROM_DL.items():
        if t == new_type:
            return key
    raise TypeError("godali: cannot reinterpret as %r: not an element type godali has"
                    % (new_type,))


def _reinterpreted(buf, new_type, what):
    code, bits = _to_dl_dtype(new_type)
    if bits * buf.lanes != buf.bits * buf.lanes:
        raise RuntimeError("Cannot reinterpret the %s as having a different element size." % what)
    return _Buffer(buf.data, buf.device_type, buf.device_id, code, bits, buf.lanes, buf.shape,
                   buf.strides, buf.owner)


def _layout_for(layout, ndim):
    """DALI's set_layout check: "" / None clear it; otherwise one letter per dimension."""
    if layout is None or layout == "":
        return ""
    if not isinstance(layout, str):
        raise TypeError("godali: a layout is a string, got %r" % (layout,))
    if len(layout) != ndim:
        raise ValueError("A non-empty layout must have the same number of dimensions as the "
                         "number of dimensions of the Tensor.\nGot: %d (%s)\nExpected: %d."
                         % (len(layout), layout, ndim))
    return layout


class Tensor:
    """One tensor (DALI's TensorCPU / TensorGPU): a sample of an output, or a whole dense
    batch (TensorList.as_tensor()). Exported without a copy through DLPack
    (torch.from_dlpack(t)), numpy (np.asarray(t), as_array()) and
    __cuda_array_interface__.

    TensorCPU(array, layout="") wraps an array-like object (a numpy array, a torch
    tensor) without a copy when it is C-contiguous, as DALI's does.
    """

    __slots__ = ("_buf", "_layout")

    def __init__(self, data, layout=None, is_pinned=False):
        buf = _buffer_from_array(data)
        want_gpu = isinstance(self, TensorGPU)
        if isinstance(self, TensorCPU) and _is_gpu(buf):
            raise TypeError("godali: TensorCPU needs host data; got GPU memory")
        if want_gpu and not _is_gpu(buf):
            raise TypeError("godali: TensorGPU needs GPU data (a CUDA torch tensor)")
        self._buf = buf
        # DALI's TensorCPU(array, layout) keeps the layout it is given without checking it
        # against the array's dimensions (DALI's own tests build TensorCPU(2-D, "NHWC")).
        self._layout = _check_layout(layout, None)

    @classmethod
    def _wrap(cls, buf, layout=""):
        t = object.__new__(TensorGPU if _is_gpu(buf) else TensorCPU)
        t._buf = buf
        t._layout = layout if layout and len(layout) == len(buf.shape) else ""
        return t

    def shape(self):
        """The tensor's shape, as a list (DALI's)."""
        return list(self._buf.shape)

    @property
    def ndim(self):
        return len(self._buf.shape)

    @property
    def dtype(self):
        """The element type, as types.DALIDataType."""
        return _types.from_dlpack_dtype(self._buf.code, self._buf.bits)

    @property
    def device(self):
        """"gpu" or "cpu"."""
        return "gpu" if _is_gpu(self._buf) else "cpu"

    def layout(self):
        """The layout string ("HWC", "CHW", ...; "" when unknown)."""
        return self._layout

    def data_ptr(self):
        """The address of the first element."""
        return self._buf.data

    def nbytes(self):
        return math.prod(self._buf.shape) * self._buf.itemsize

    def set_layout(self, layout):
        """Sets the layout (DALI's set_layout): one letter per dimension, or None / ""."""
        self._layout = _layout_for(layout, len(self._buf.shape))

    def squeeze(self, dim=None):
        """Removes dimensions of extent 1 (only `dim` when given) in place, with their
        layout letters; True when the shape changed (DALI's squeeze)."""
        b = self._buf
        nd = len(b.shape)
        if dim is None:
            drop = [i for i, e in enumerate(b.shape) if e == 1]
        else:
            d = int(dim)
            if not -nd <= d < nd:
                raise IndexError("godali: squeeze: dimension %d out of range for %d "
                                 "dimensions" % (d, nd))
            d %= nd
            drop = [d] if b.shape[d] == 1 else []
        if not drop:
            return False
        keep = [i for i in range(nd) if i not in drop]
        strides = None if b.strides is None else tuple(b.strides[i] for i in keep)
        self._buf = _Buffer(b.data, b.device_type, b.device_id, b.code, b.bits, b.lanes,
                            tuple(b.shape[i] for i in keep), strides, b.owner)
        if self._layout:
            self._layout = "".join(self._layout[i] for i in keep)
        return True

    def reinterpret(self, new_type):
        """Reads the same bytes as another element type of the same size (DALI's
        reinterpret), in place."""
        self._buf = _reinterpreted(self._buf, new_type, "tensor")

    def __len__(self):
        if not self._buf.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._buf.shape[0]

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

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        a = self.as_array()
        return a if dtype is None else a.astype(dtype, copy=False)

    def as_array(self):
        """A numpy array: zero-copy for host data, copied through torch from the GPU."""
        return _numpy_from(self, self._buf)

    def as_cpu(self):
        """This tensor in host memory: self for host data, a copy for GPU data."""
        if not _is_gpu(self._buf):
            return self
        return Tensor._wrap(_host_copy(self._buf), self._layout)

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking=False, use_copy_kernel=False):
        """Copies the data to the memory at `ptr` (an int or ctypes pointer) of nbytes()
        bytes (DALI's copy_to_external). For GPU tensors ptr is device memory."""
        import ctypes
        dst = ptr.value if isinstance(ptr, ctypes.c_void_p) else int(ptr)
        src = self._compact_buffer()
        n = math.prod(src.shape) * src.itemsize
        if not _is_gpu(src):
            ctypes.memmove(dst, src.data, n)
            return
        raise NotImplementedError("godali: copy_to_external of GPU data is not supported; "
                                  "use torch.from_dlpack(tensor) and copy_() instead")

    def _compact_buffer(self):
        b = self._buf
        if b.is_compact():
            return b
        t = _torch_from(b).contiguous()
        return _torch_buffer(t, b)

    def __repr__(self):
        return "godali.%s(shape=%s, dtype=%s%s)" % (
            type(self).__name__, self.shape(), self.dtype.name,
            ", layout=%s" % self._layout if self._layout else "")


class TensorCPU(Tensor):
    """A tensor in host memory (DALI's nvidia.dali.backend.TensorCPU)."""

    __slots__ = ()


class TensorGPU(Tensor):
    """A tensor in GPU memory (DALI's nvidia.dali.backend.TensorGPU)."""

    __slots__ = ()


class _EmptyListError(RuntimeError, ValueError):
    """TensorListCPU([]) (DALI raises RuntimeError)."""


class TensorList:
    """One pipeline output for one batch: N samples (DALI's TensorListCPU/GPU).

    Dense outputs (every sample the same shape) are one [N, ...] buffer and export as one
    tensor; ragged outputs (decoded images of different sizes) are N buffers, reachable
    per sample through tl[i]. Nothing is copied unless noted.

    TensorListCPU(array, layout="") wraps an [N, ...] array (or a list of per-sample
    arrays) as DALI's constructor does.
    """

    __slots__ = ("_dense", "_samples", "_gathered", "_layout")

    def __init__(self, data, layout=None, is_pinned=False):
        if isinstance(data, (list, tuple)):
            if not data:
                raise _EmptyListError("Cannot create TensorList from an empty list.")
            samples = [_buffer_from_array(x) for x in data]
            dense = None
            ndim = len(samples[0].shape) if samples else 0
            first = _types.from_dlpack_dtype(samples[0].code, samples[0].bits)
            for i, b in enumerate(samples[1:], 1):
                t = _types.from_dlpack_dtype(b.code, b.bits)
                if t != first:
                    raise TypeError(
                        "Tensors cannot have different data types. Tensor at position %d "
                        "has type '%s' expected to have type '%s'."
                        % (i, _types._dali_type_name(t), _types._dali_type_name(first)))
        else:
            dense = _buffer_from_array(data)
            samples = None
            if not dense.shape:
                raise ValueError("godali: a TensorList needs data with a batch dimension")
            ndim = len(dense.shape) - 1
        bufs = [dense] if dense is not None else samples
        if isinstance(self, TensorListCPU) and any(_is_gpu(b) for b in bufs):
            raise TypeError("godali: TensorListCPU needs host data; got GPU memory")
        if isinstance(self, TensorListGPU) and not all(_is_gpu(b) for b in bufs):
            raise TypeError("godali: TensorListGPU needs GPU data (CUDA torch tensors)")
        self._dense = dense
        self._samples = samples
        self._gathered = None
        self._layout = _check_layout(layout, ndim)

    @classmethod
    def _wrap(cls, dense=None, samples=None, layout=""):
        b = dense if dense is not None else (samples[0] if samples else None)
        tl = object.__new__(TensorListGPU if (b is not None and _is_gpu(b))
                            else TensorListCPU)
        tl._dense = dense
        tl._samples = samples
        tl._gathered = None
        tl._layout = layout or ""
        return tl

    # -- DALI's TensorList API ----------------------------------------------------------

    def __len__(self):
        if self._dense is not None:
            return self._dense.shape[0] if self._dense.shape else 0
        return len(self._samples)

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            return TensorList._wrap(samples=[self[j]._buf for j in range(*i.indices(n))],
                                    layout=self._layout)
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
            return Tensor._wrap(self._samples[i], self._layout)
        d = self._dense
        itemsize = d.itemsize
        if d.strides is None:
            step = math.prod(d.shape[1:]) * itemsize
            strides = None
        else:
            step = d.strides[0] * itemsize
            strides = d.strides[1:]
        return Tensor._wrap(_Buffer(d.data + i * step, d.device_type, d.device_id, d.code,
                                    d.bits, d.lanes, d.shape[1:], strides, d.keeper()),
                            self._layout)

    def at(self, i):
        """Sample i as a numpy array (DALI's TensorListCPU.at; GPU data is copied)."""
        return self[i].as_array()

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def shape(self):
        """The shape of every sample: a list of tuples."""
        if self._dense is not None:
            return [tuple(self._dense.shape[1:])] * len(self)
        return [tuple(s.shape) for s in self._samples]

    def ndim(self):
        """The number of dimensions of the samples (DALI's TensorList.ndim())."""
        if self._dense is not None:
            return len(self._dense.shape) - 1
        return len(self._samples[0].shape) if self._samples else 0

    def set_layout(self, layout):
        """Sets the samples' layout (DALI's set_layout): one letter per dimension."""
        self._layout = _layout_for(layout, self.ndim())

    def reinterpret(self, new_type):
        """Reads the same bytes as another element type of the same size, in place."""
        if self._dense is not None:
            self._dense = _reinterpreted(self._dense, new_type, "tensor list")
        else:
            self._samples = [_reinterpreted(b, new_type, "tensor list") for b in self._samples]
        self._gathered = None

    def reset(self):
        """Empties the list (DALI's reset)."""
        self._dense, self._samples, self._gathered = None, [], None

    def as_reshaped_tensor(self, shape):
        """The dense batch as one tensor of `shape` (same number of elements), sharing
        its memory (DALI's as_reshaped_tensor)."""
        b = self._dense_buffer()
        shape = tuple(int(x) for x in shape)
        if math.prod(shape) != math.prod(b.shape):
            raise ValueError("godali: as_reshaped_tensor: %s has %d elements, the batch %d"
                             % (list(shape), math.prod(shape), math.prod(b.shape)))
        if not b.is_compact():
            raise ValueError("godali: as_reshaped_tensor needs a contiguous batch")
        return Tensor._wrap(_Buffer(b.data, b.device_type, b.device_id, b.code, b.bits,
                                    b.lanes, shape, None, b.keeper()))

    @classmethod
    def broadcast(cls, tensor, num_samples):
        """A list of num_samples samples that all share `tensor`'s memory (DALI's
        TensorListCPU.broadcast)."""
        n = int(num_samples)
        if n < 0:
            raise ValueError("godali: broadcast: num_samples must be >= 0, got %d" % n)
        buf = tensor._buf
        return cls._wrap(samples=[buf] * n, layout=tensor.layout())

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
        """The samples' layout ("HWC", "CHW", ...; "" when unknown)."""
        return self._layout

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
        """The batch as one Tensor of shape [N, ...] (DALI's as_tensor), sharing the
        engine's memory: torch.from_dlpack(tl.as_tensor()) or np.asarray(...).

        A ragged output whose samples happen to share a shape is gathered into a new
        buffer once (a copy); one with different shapes raises ValueError: index the
        samples instead (tl[i]).
        """
        return Tensor._wrap(self._dense_buffer(),
                            ("N" + self._layout) if self._layout else "")

    def as_array(self):
        """The batch as one numpy array [N, ...] (zero-copy for host data)."""
        return _numpy_from(self, self._dense_buffer())

    def as_cpu(self):
        """This output in host memory: self for CPU outputs, a copy for GPU outputs."""
        b = self._any()
        if b is None or not _is_gpu(b):
            return self
        if self._samples is not None and not self.is_dense_tensor():
            return TensorList._wrap(samples=[_host_copy(s) for s in self._samples],
                                    layout=self._layout)
        return TensorList._wrap(dense=_host_copy(self._dense_buffer()), layout=self._layout)

    def copy_to_external(self, ptr, cuda_stream=None, non_blocking=False,
                         use_copy_kernel=False):
        """Copies the dense batch to the memory at `ptr` (DALI's copy_to_external)."""
        self.as_tensor().copy_to_external(ptr, cuda_stream, non_blocking)

    def _as_torch(self):
        # The iterators' path: one torch tensor over the batch, no Tensor object between.
        return _torch_from(self._dense_buffer())

    def __repr__(self):
        """DALI's printout: the samples (numpy-summarised), dtype, layout, num_samples and
        every sample's shape."""
        import numpy as np
        n = len(self)
        host = self.as_cpu()
        indent = " " * 4
        opts = dict(threshold=64, edgeitems=2, separator=" ")
        try:
            if n == 0:
                body = "[]"
            elif host.is_dense_tensor():
                body = np.array2string(np.asarray(host.as_array()), prefix=indent, **opts)
            else:
                idx = list(range(n)) if n <= 4 else [0, 1, None, n - 2, n - 1]
                parts = []
                for i in idx:
                    if i is None:
                        parts.append(indent + "...")
                    else:
                        parts.append(indent + np.array2string(np.asarray(host.at(i)),
                                                              prefix=indent, **opts))
                body = "[" + "\n\n\n".join(parts).lstrip() + "]"
        except Exception:  # a printout must never fail
            body = "<unavailable>"
        fields = ["dtype=DALIDataType.%s" % self.dtype.name]
        if self._layout:
            fields.append('layout="%s"' % self._layout)
        fields.append("num_samples=%d" % n)
        fields.append("shape=[%s]" % ", ".join(str(tuple(int(d) for d in s))
                                               for s in self.shape()))
        return "%s(\n%s%s,\n%s)" % (type(self).__name__, indent, body,
                                      ",\n".join(indent + f for f in fields))

    __str__ = __repr__

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


class TensorListCPU(TensorList):
    """A batch in host memory (DALI's nvidia.dali.backend.TensorListCPU)."""

    __slots__ = ()


class TensorListGPU(TensorList):
    """A batch in GPU memory (DALI's nvidia.dali.backend.TensorListGPU)."""

    __slots__ = ()


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


