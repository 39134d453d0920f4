"""DALI's TensorCPU / TensorListCPU methods beyond data access: squeeze, set_layout,
reinterpret, ndim, as_reshaped_tensor, broadcast, reset. Expected values are what DALI 2.4
gives for the same calls (run side by side when they were written)."""

import numpy as np
import pytest

from godali import types
from godali.backend import TensorCPU, TensorListCPU


def test_squeeze_drops_unit_dimensions_and_their_layout_letters():
    t = TensorCPU(np.zeros((1, 3, 1, 2), np.float32), "ABCD")
    assert t.squeeze() is True and t.shape() == [3, 2] and t.layout() == "BD"
    assert t.squeeze() is False
    u = TensorCPU(np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2), "ABCD")
    assert u.squeeze(2) is True and u.shape() == [1, 3, 2] and u.layout() == "ABD"
    assert u.squeeze(1) is False  # extent 3: unchanged, as in DALI
    assert np.array_equal(np.asarray(u), np.arange(6, dtype=np.float32).reshape(1, 3, 2))


def test_set_layout_checks_the_dimensions():
    t = TensorCPU(np.zeros((2, 3), np.uint8))
    t.set_layout("HW")
    assert t.layout() == "HW"
    with pytest.raises(ValueError, match="same number of dimensions"):
        t.set_layout("HWC")
    t.set_layout(None)
    assert t.layout() == ""
    tl = TensorListCPU(np.zeros((2, 4, 5), np.uint8))
    tl.set_layout("HW")
    assert tl.layout() == "HW" and tl.ndim() == 2


def test_reinterpret_keeps_the_bytes():
    a = np.array([1.0, -2.5], np.float32)
    t = TensorCPU(a.copy())
    t.reinterpret(types.INT32)
    assert t.dtype == types.INT32
    assert np.array_equal(np.asarray(t), a.view(np.int32))
    with pytest.raises(RuntimeError, match="different element size"):
        t.reinterpret(types.INT16)
    tl = TensorListCPU(np.array([[1, 2]], np.uint16))
    tl.reinterpret(types.INT16)
    assert tl.dtype == types.INT16


def test_reshaped_broadcast_and_reset():
    tl = TensorListCPU(np.arange(6, dtype=np.uint8).reshape(2, 3), "X")
    r = tl.as_reshaped_tensor([3, 2])
    assert r.shape() == [3, 2]
    assert np.array_equal(np.asarray(r), np.arange(6, dtype=np.uint8).reshape(3, 2))
    with pytest.raises(ValueError, match="elements"):
        tl.as_reshaped_tensor([4, 2])
    b = TensorListCPU.broadcast(TensorCPU(np.ones((2,), np.float32)), 3)
    assert len(b) == 3 and b.shape() == [(2,), (2,), (2,)]
    assert np.array_equal(b.as_array(), np.ones((3, 2), np.float32))
    tl.reset()
    assert len(tl) == 0
