"""DLPack capsules made in pure ctypes: naming, ownership and consumers (torch, numpy)."""

import ctypes
import gc

import numpy as np
import pytest
import torch

from godali import _dlpack
from godali.tensors import Tensor, TensorList, _Buffer

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_get_ptr.restype = ctypes.c_void_p
_get_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Owner:
    """Stands for an engine lease: counts how often it is released."""

    alive = 0

    def __init__(self, arr):
        self.arr = arr
        Owner.alive += 1

    def __del__(self):
        Owner.alive -= 1


def _buffer(arr):
    code = {"f": _dlpack.kDLFloat, "i": _dlpack.kDLInt, "u": _dlpack.kDLUInt}[arr.dtype.kind]
    return _Buffer(arr.ctypes.data, _dlpack.kDLCPU, 0, code, arr.dtype.itemsize * 8, 1,
                   arr.shape, None, Owner(arr))


def test_struct_layouts_match_dlpack_h():
    # Offsets from include/dlpack/dlpack.h on a 64-bit host.
    assert ctypes.sizeof(_dlpack.DLDevice) == 8
    assert ctypes.sizeof(_dlpack.DLDataType) == 4
    assert _dlpack.DLTensor.shape.offset == 24
    assert ctypes.sizeof(_dlpack.DLTensor) == 48
    assert _dlpack.DLManagedTensor.deleter.offset == 56
    assert _dlpack.DLManagedTensorVersioned.dl_tensor.offset == 32


def test_unconsumed_capsule_releases_owner():
    before = Owner.alive
    buf = _buffer(np.arange(6, dtype=np.float32).reshape(2, 3))
    cap = buf.capsule()
    assert _get_name(cap) == b"dltensor"
    del buf
    assert Owner.alive == before + 1  # the capsule keeps it
    gc.collect()  # exports of earlier tests still waiting in garbage cycles go first
    n = _dlpack.live_exports()
    del cap
    gc.collect()
    assert Owner.alive == before
    assert _dlpack.live_exports() == n - 1


def test_torch_consumes_capsule_once_and_frees_on_tensor_death():
    before = Owner.alive
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    buf = _buffer(arr)
    cap = buf.capsule()
    t = torch.utils.dlpack.from_dlpack(cap)
    assert _get_name(cap) == b"used_dltensor"
    assert t.data_ptr() == arr.ctypes.data
    assert t.tolist() == arr.tolist()
    del buf, cap, arr
    gc.collect()
    assert Owner.alive == before + 1  # torch's tensor holds it
    del t
    gc.collect()
    assert Owner.alive == before


def test_versioned_capsule():
    arr = np.arange(4, dtype=np.uint8)
    tl = TensorList._wrap(dense=_buffer(arr.reshape(2, 2)))
    cap = tl.__dlpack__(max_version=(1, 0))
    assert _get_name(cap) == b"dltensor_versioned"
    m = _dlpack.DLManagedTensorVersioned.from_address(_get_ptr(cap, b"dltensor_versioned"))
    assert (m.version.major, m.version.minor) == (1, 0)
    assert m.dl_tensor.data == arr.ctypes.data
    assert [m.dl_tensor.shape[i] for i in range(m.dl_tensor.ndim)] == [2, 2]
    assert _get_name(tl.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert _get_name(tl.__dlpack__()) == b"dltensor"
    del cap
    gc.collect()


def test_torch2_style_keywords_are_accepted():
    # torch 2.x calls __dlpack__(stream=..., max_version=...) and numpy 2 adds copy and
    # dl_device; none of them may raise TypeError.
    tl = TensorList._wrap(dense=_buffer(np.zeros((2, 3), np.float32)))
    for kw in ({}, {"stream": None}, {"stream": None, "max_version": (1, 0)},
               {"max_version": (1, 0), "dl_device": (1, 0), "copy": False}):
        cap = tl.__dlpack__(**kw)
        assert _get_name(cap) in (b"dltensor", b"dltensor_versioned")
    assert tl.__dlpack_device__() == (_dlpack.kDLCPU, 0)
    with pytest.raises(BufferError):
        tl.__dlpack__(copy=True)
    if hasattr(torch, "from_dlpack"):
        t = torch.from_dlpack(tl)
        assert tuple(t.shape) == (2, 3)


def test_torch_takes_the_struct_it_asks_for_and_frees_it():
    # A torch that asks for DLPack 1.x (max_version; torch 2.15 does) gets
    # DLManagedTensorVersioned; torch 1.13 asks for nothing and gets DLManagedTensor. Either way the tensor shares the
    # memory, and its death runs the struct's deleter, which releases the owner.
    class Spy:
        def __init__(self, tl):
            self.tl, self.asked, self.cap = tl, [], None

        def __dlpack__(self, **kw):
            self.asked.append(kw.get("max_version"))
            self.cap = self.tl.__dlpack__(**kw)
            return self.cap

        def __dlpack_device__(self):
            return self.tl.__dlpack_device__()

    gc.collect()
    before = Owner.alive
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    spy = Spy(TensorList._wrap(dense=_buffer(arr)))
    t = torch.from_dlpack(spy)
    assert t.data_ptr() == arr.ctypes.data and t.tolist() == arr.tolist()
    versioned = _dlpack.wants_versioned(spy.asked[-1])
    assert _get_name(spy.cap) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 15):
        assert versioned, spy.asked  # make test-torch2's torch asks for DLPack 1.x
    del spy
    gc.collect()
    assert Owner.alive == before + 1  # the tensor holds it
    del t
    gc.collect()
    assert Owner.alive == before


def test_numpy_consumers_share_memory():
    arr = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    tl = TensorList._wrap(dense=_buffer(arr))
    a = tl.as_array()
    assert a.ctypes.data == arr.ctypes.data
    np.testing.assert_array_equal(a, arr)
    b = np.asarray(tl)  # __array_interface__
    assert b.ctypes.data == arr.ctypes.data
    s = tl[1]
    assert isinstance(s, Tensor)
    assert s.shape() == [3, 4]
    assert np.asarray(s).ctypes.data == arr.ctypes.data + 12 * 4
    np.testing.assert_array_equal(s.as_array(), arr[1])
    assert torch.from_dlpack(s).data_ptr() == arr.ctypes.data + 12 * 4


def test_many_exports_of_one_batch():
    arr = np.arange(8, dtype=np.int64).reshape(2, 4)
    tl = TensorList._wrap(dense=_buffer(arr))
    ts = [torch.from_dlpack(tl) for _ in range(5)] + [torch.from_dlpack(tl[i]) for i in range(2)]
    assert all(t.data_ptr() in (arr.ctypes.data, arr.ctypes.data + 32) for t in ts)
    assert ts[-1].tolist() == [4, 5, 6, 7]


def _capsule_strides(cap, versioned):
    name = b"dltensor_versioned" if versioned else b"dltensor"
    ptr = _get_ptr(cap, name)
    cls = _dlpack.DLManagedTensorVersioned if versioned else _dlpack.DLManagedTensor
    t = cls.from_address(ptr).dl_tensor
    if not t.strides:
        return None
    return tuple(t.strides[i] for i in range(t.ndim))


@pytest.mark.parametrize("shape", [(2, 3, 4), (4, 1), (1, 5), (3, 0, 2), (7,)])
@pytest.mark.parametrize("versioned", [False, True])
def test_capsules_carry_compact_strides(shape, versioned):
    # DLPack >= 1.2: a producer fills strides whenever ndim > 0.
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    tl = TensorList._wrap(dense=_buffer(arr))
    cap = tl.__dlpack__(max_version=(1, 2) if versioned else None)
    want = torch.empty(shape).stride()
    assert _capsule_strides(cap, versioned) == want
    del cap
    # torch negotiates the struct it knows (this torch may predate versioned capsules).
    t = torch.from_dlpack(tl) if hasattr(torch, "from_dlpack") else \
        torch.utils.dlpack.from_dlpack(tl.__dlpack__())
    assert t.stride() == want and t.is_contiguous()
    assert t.data_ptr() == arr.ctypes.data or arr.size == 0
    assert t.tolist() == arr.tolist()


def test_library_tensors_carry_strides(image_folder):
    # The engine's own DLManagedTensors (capi/bridge.c) and what torch makes of them.
    import godali
    from godali import fn
    pipe = godali.Pipeline(batch_size=4, num_threads=1, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        img = fn.resize(fn.decoders.image(jpegs), resize_x=20, resize_y=12)
        ragged = fn.decoders.image(jpegs)
        pipe.set_outputs(img, labels, ragged)
    pipe.build()
    images, labels, raw = pipe.run()
    for out, shape in ((images, (4, 12, 20, 3)), (labels, (4, 1))):
        lease = out._dense
        m = _dlpack.DLManagedTensor.from_address(lease._ptr).dl_tensor
        assert m.strides, "the library exported NULL strides"
        want = torch.empty(shape).stride()
        assert tuple(m.strides[i] for i in range(m.ndim)) == want
        t = torch.from_dlpack(out.as_tensor())
        assert tuple(t.shape) == shape
        assert t.data_ptr() == lease.data  # zero-copy
        assert t.stride() == want
    for i in range(4):  # ragged samples, one DLManagedTensor each
        s = raw[i]
        t = torch.from_dlpack(s)
        assert t.data_ptr() == s.data_ptr()
        assert t.stride() == torch.empty(s.shape()).stride()
    pipe.close()
