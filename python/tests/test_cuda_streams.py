"""The DLPack stream protocol of GPU outputs, checked without a GPU: a fake library stands
in for godali_tensor_stream_wait and records which consumer stream each export fences."""

import ctypes

import pytest

from godali import _dlpack
from godali.tensors import TensorList, _Lease


class FakeLib:
    def __init__(self):
        self.waits = []

    def tensor_stream_wait(self, ptr, stream):
        self.waits.append(stream)
        return 0

    def in_owner_process(self):
        return True


class KeepLease(_Lease):
    """A _Lease that also holds the fake tensor it describes."""

    __slots__ = ("_keep",)


def make(lib, shape=(2, 3), device_id=1):
    """A lease of a DLManagedTensor that claims to be on kDLCUDA (never dereferenced; its
    deleter is NULL)."""
    m = _dlpack.DLManagedTensor()
    shp = (ctypes.c_int64 * len(shape))(*shape)
    t = m.dl_tensor
    t.data = 0x7000_0000
    t.device.device_type = _dlpack.kDLCUDA
    t.device.device_id = device_id
    t.ndim = len(shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = _dlpack.kDLFloat, 32, 1
    t.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    lease = KeepLease(lib, ctypes.addressof(m))
    lease._keep = (m, shp)
    return lease


@pytest.mark.parametrize("stream, want", [(None, [1]), (1, [1]), (2, [2]), (0x55aa, [0x55aa]),
                                          (-1, [])])
def test_dlpack_stream_fences_the_consumer(stream, want):
    lib = FakeLib()
    tl = TensorList._wrap(dense=make(lib))
    assert tl.__dlpack_device__() == (_dlpack.kDLCUDA, 1)
    cap = tl.__dlpack__(stream=stream)
    assert cap is not None
    assert lib.waits == want


def test_samples_of_a_dense_batch_fence_the_batch():
    lib = FakeLib()
    tl = TensorList._wrap(dense=make(lib))
    t = tl[1]
    assert t.device == "gpu" and t.shape() == [3]
    t.__dlpack__(stream=9)
    assert lib.waits == [9]
    assert t.__dlpack_device__() == (_dlpack.kDLCUDA, 1)


def test_stream_zero_is_refused():
    lib = FakeLib()
    tl = TensorList._wrap(dense=make(lib))
    with pytest.raises(BufferError, match="stream=0"):
        tl.__dlpack__(stream=0)
    assert lib.waits == []


def test_cuda_array_interface_orders_the_legacy_stream():
    lib = FakeLib()
    tl = TensorList._wrap(dense=make(lib))
    cai = tl.__cuda_array_interface__
    assert cai["stream"] == 1 and cai["shape"] == (2, 3) and cai["typestr"] == "<f4"
    assert lib.waits == [1]


def test_host_outputs_ignore_the_stream():
    lib = FakeLib()
    m = _dlpack.DLManagedTensor()
    m.dl_tensor.device.device_type = _dlpack.kDLCPU
    lease = KeepLease(lib, ctypes.addressof(m))
    lease._keep = m
    lease.wait_stream(1)
    TensorList._wrap(dense=lease).__dlpack__(stream=5)
    assert lib.waits == []


def test_stream_calls_of_the_c_abi_on_host_outputs(lib, image_folder):
    """godali_pipeline_output_cuda and godali_tensor_stream_wait follow DLPack's stream
    rules in both flavours; host outputs ignore a valid stream."""
    import godali
    from godali import _lib, fn

    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        _, labels = fn.readers.file(file_root=image_folder)
        pipe.set_outputs(labels)
    pipe.build()
    pipe.run()
    h = pipe._handle
    out = ctypes.c_void_p()
    with pytest.raises(_lib.InvalidArgumentError, match="stream 0"):
        lib.pipeline_output_cuda(h, 0, 0, ctypes.byref(out))
    with pytest.raises(_lib.InvalidArgumentError, match="stream -5"):
        lib.pipeline_output_sample_cuda(h, 0, 0, -5, ctypes.byref(out))
    for stream in (-1, 1, 2, 0x1234):
        lib.pipeline_output_cuda(h, 0, stream, ctypes.byref(out))
        t = _dlpack.DLManagedTensor.from_address(out.value)
        assert t.dl_tensor.device.device_type == _dlpack.kDLCPU
        assert tuple(t.dl_tensor.shape[i] for i in range(t.dl_tensor.ndim)) == (2, 1)
        lib.tensor_stream_wait(out.value, stream)  # host memory: nothing to order
        _dlpack.call_deleter(out.value)
    # A tensor godali did not make is refused, not dereferenced as one of its own.
    foreign = _dlpack.DLManagedTensor()
    with pytest.raises(_lib.InvalidArgumentError, match="not made by godali"):
        lib.tensor_stream_wait(ctypes.addressof(foreign), 1)
    assert pipe.pool_stats()["exported"] == 0
    pipe.close()
