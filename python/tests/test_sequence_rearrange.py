"""fn.sequence_rearrange against numpy fancy indexing on the frame axis (constant and
per-sample orders), and the errors DALI's tests match (wording of DALI's messages)."""
import numpy as np
import pytest

import godali
from godali import fn


def _seqs(n=3, frames=5):
    rng = np.random.default_rng(1)
    return [rng.integers(0, 100, size=(frames, 4, 3)).astype(np.int32) for _ in range(n)]


def _run(order, layout="FHW", data=None):
    data = data or _seqs()
    pipe = godali.Pipeline(batch_size=len(data), num_threads=1)
    with pipe:
        x = fn.external_source(source=lambda: data, layout=layout)
        o = fn.external_source(source=lambda: order) if isinstance(order, tuple) else order
        pipe.set_outputs(fn.sequence_rearrange(x, new_order=list(o) if isinstance(o, tuple) else o))
    try:
        (out,) = pipe.run()
        return data, [out[i].as_array() for i in range(len(data))]
    finally:
        pipe.close()


def test_constant_order_matches_numpy():
    data, got = _run([4, 0, 0, 2])
    for x, y in zip(data, got):
        np.testing.assert_array_equal(y, x[[4, 0, 0, 2]])


def test_per_sample_order_matches_numpy():
    orders = [np.int32([1]), np.int32([3, 3, 0]), np.int32([0, 1, 2, 3, 4])]
    pipe = godali.Pipeline(batch_size=3, num_threads=1)
    data = _seqs()
    with pipe:
        x = fn.external_source(source=lambda: data, layout="FHW")
        o = fn.external_source(source=lambda: orders)
        pipe.set_outputs(fn.sequence_rearrange(x, new_order=o))
    (out,) = pipe.run()
    for i in range(3):
        np.testing.assert_array_equal(out[i].as_array(), data[i][orders[i]])
    pipe.close()


def _per_sample_error(orders):
    pipe = godali.Pipeline(batch_size=2, num_threads=1)
    data = _seqs(2)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="FHW")
        o = fn.external_source(source=lambda: orders)
        pipe.set_outputs(fn.sequence_rearrange(x, new_order=o))
    with pytest.raises(RuntimeError) as e:
        pipe.run()
    pipe.close()
    return str(e.value)


@pytest.mark.parametrize("order", [[6, 7], [-1]])
def test_constant_order_out_of_range(order):
    with pytest.raises(RuntimeError, match=r"new_order\[0\] must be between 0 and "
                       r"input_sequence_length = 5 for sample 0, but it is: -?\d"):
        _run(order)


def test_empty_orders():
    with pytest.raises(RuntimeError, match="Empty result sequences are not allowed"):
        _run([])
    msg = _per_sample_error([np.int32([0]), np.int32([])])
    assert "Empty `new_order` for sample 1 is not allowed" in msg


def test_per_sample_order_out_of_range_and_2d():
    msg = _per_sample_error([np.int32([0]), np.int32([2, 5])])
    assert "new_order[1] must be between 0 and input_sequence_length = 5 for sample 1, but it is: 5" in msg
    msg = _per_sample_error([np.int32([[1], [2]]), np.int32([[1], [2]])])
    assert "Input with dimension 2 cannot be converted to dimension 1" in msg


@pytest.mark.parametrize("layout", ["HF", "HW"])
def test_layout_must_start_with_frames(layout):
    data = [np.zeros((5, 1), np.int32)]
    with pytest.raises(RuntimeError, match=r'frames dimension `F`, got data with layout = "%s"' % layout):
        _run([0], layout=layout, data=data)
    _, got = _run([0, 0], layout="", data=data)  # no layout: the outer axis is the frames
    assert got[0].shape == (2, 1)
