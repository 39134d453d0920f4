"""decoders.numpy against numpy's own .npy writer (np.save): every array comes back equal,
with its type and shape, whatever its byte and element order."""

import io

import numpy as np
import pytest

import godali
from godali import fn, types


def _npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return np.frombuffer(b.getvalue(), np.uint8)


ARRAYS = [
    np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
    np.arange(6, dtype=">i4").reshape(2, 3),
    np.array(7.5, dtype=np.float64),
    np.array([True, False, True]),
    np.zeros((0, 3), np.uint8),
]


@pytest.mark.parametrize("a", ARRAYS, ids=lambda a: "%s%s%s" % (
    a.dtype.str, a.shape, "F" if a.flags.f_contiguous and a.ndim > 1 else ""))
def test_decodes_what_numpy_saved(a):
    # A batch holds one type and rank (as in DALI): two samples of each array.
    pipe = godali.Pipeline(batch_size=2, num_threads=2, device_id=None)
    with pipe:
        enc = fn.external_source(source=lambda: [_npy(a), _npy(a)], batch=True)
        pipe.set_outputs(fn.decoders.numpy(enc))
    (out,) = pipe.run()
    pipe.close()
    for i in range(2):
        got = np.array(out[i])
        assert got.shape == a.shape and got.dtype == a.dtype.newbyteorder("=")
        np.testing.assert_array_equal(got, a)


def test_dtype_and_layout_are_checked_per_file():
    data = [np.arange(12, dtype=np.float32).reshape(3, 4)]
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        enc = fn.external_source(source=lambda: [_npy(a) for a in data], batch=True)
        pipe.set_outputs(fn.decoders.numpy(enc, dtype=types.FLOAT, layout="HW"))
    (out,) = pipe.run()
    assert out.layout() == "HW"
    np.testing.assert_array_equal(np.array(out[0]), data[0])
    pipe.close()
    for kw, msg in [({"dtype": types.INT32}, "the array is FLOAT, dtype says INT32"),
                    ({"layout": "HWC"}, '"layout"')]:
        pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
        with pipe:
            enc = fn.external_source(source=lambda: [_npy(a) for a in data], batch=True)
            pipe.set_outputs(fn.decoders.numpy(enc, **kw))
        with pytest.raises(RuntimeError, match=msg):
            pipe.run()
        pipe.close()


def test_bytes_that_are_not_npy_are_a_data_error():
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        enc = fn.external_source(source=lambda: [np.frombuffer(b"not a numpy file", np.uint8)],
                                 batch=True)
        pipe.set_outputs(fn.decoders.numpy(enc))
    with pytest.raises(godali.DataError if hasattr(godali, "DataError") else RuntimeError,
                       match="not a .npy file"):
        pipe.run()
    pipe.close()
