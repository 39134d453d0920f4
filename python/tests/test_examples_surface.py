"""API surface that DALI's example notebooks use (docs/operators.md, "DALI's example
notebooks"): types.to_dali_type, str() of a ScalarConstant, and types.Constant of an
array made outside a pipeline, feeding one or several pipelines. References: numpy."""
import numpy as np
import pytest

import godali.fn as fn
import godali.types as types
from godali.pipeline import Pipeline


@pytest.mark.parametrize("name,expected", [
    ("uint8", types.UINT8), ("ubyte", types.UINT8), ("int8", types.INT8),
    ("int16", types.INT16), ("ushort", types.UINT16), ("int32", types.INT32),
    ("uint32", types.UINT32), ("int64", types.INT64), ("long", types.INT64),
    ("uint64", types.UINT64), ("half", types.FLOAT16), ("float16", types.FLOAT16),
    ("float", types.FLOAT), ("float32", types.FLOAT), ("float64", types.FLOAT64),
    ("double", types.FLOAT64), ("bool", types.BOOL),
])
def test_to_dali_type_names(name, expected):
    assert types.to_dali_type(name) == expected


@pytest.mark.parametrize("np_type", [np.uint8, np.int16, np.int32, np.int64, np.uint64,
                                     np.float16, np.float32, np.float64, np.bool_])
def test_to_dali_type_numpy_round_trip(np_type):
    # the notebooks' idiom: types.to_dali_type(np.dtype(t).name); and numpy types directly
    dt = types.to_dali_type(np.dtype(np_type).name)
    assert types.to_numpy_type(dt) == np.dtype(np_type).type
    assert types.to_dali_type(np.dtype(np_type)) == dt
    assert types.to_dali_type(np_type) == dt


def test_to_dali_type_unknown():
    with pytest.raises(TypeError, match="complex64"):
        types.to_dali_type("complex64")


def test_scalar_constant_str():
    assert str(types.Constant(10)) == "10:DALIDataType.INT32"
    assert str(types.Constant(10.0)) == "10.0:DALIDataType.FLOAT"
    assert str(types.Constant(3, types.UINT8)) == "3:DALIDataType.UINT8"


def test_constant_array_outside_pipeline_feeds_two_pipelines():
    arr = np.arange(24).reshape(2, 3, 4)
    src1 = types.Constant(arr)          # made outside any pipeline, as DALI allows
    src2 = types.Constant(arr + 100)
    p1 = Pipeline(batch_size=2, num_threads=1, device_id=None)
    with p1:
        p1.set_outputs(fn.cat(src1, src2, axis=1))
    p2 = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p2:
        p2.set_outputs(fn.stack(src1, src2, axis=3))
    p1.build()
    p2.build()
    (cat,) = p1.run()
    (st,) = p2.run()
    ref32 = arr.astype(np.int32)  # DALI narrows int64 constants to int32
    for i in range(2):
        np.testing.assert_array_equal(np.asarray(cat.at(i)),
                                      np.concatenate([ref32, ref32 + 100], axis=1))
    out = np.asarray(st.at(0))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.stack([ref32, ref32 + 100], axis=3))


@pytest.mark.parametrize("conv,np_type", [
    ("int8", np.int8), ("int16", np.int16), ("int32", np.int32), ("uint8", np.uint8),
    ("uint16", np.uint16), ("uint32", np.uint32), ("float16", np.float16),
    ("float32", np.float32),
])
def test_scalar_constant_conversions_in_expressions(conv, np_type):
    # DALI's type promotion: a typed constant with a tensor of the same type keeps it
    c = getattr(types.Constant(3), conv)()
    assert c.dtype == types.to_dali_type(np.dtype(np_type))
    data = np.array([[1, 2, 5]], dtype=np_type)
    p = Pipeline(batch_size=1, num_threads=1, device_id=None)
    with p:
        x = fn.external_source(lambda: [data], dtype=c.dtype)
        p.set_outputs(x * c)
    p.build()
    (out,) = p.run()
    got = np.asarray(out.at(0))
    assert got.dtype == np_type
    np.testing.assert_array_equal(got, data * np_type(3))
