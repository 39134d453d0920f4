"""Disagreements with DALI 2.4 found by the property-based oracle (tests/compat/
propsweep.py) and fixed in godali: each test is the case, with what DALI 2.4 does."""

import numpy as np
import pytest

import godali
from godali import fn


def _run(build):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
    img = [np.zeros((6, 7, 3), np.uint8)] * 2
    with pipe:
        pipe.set_outputs(build(fn.external_source(source=lambda: img, layout="HWC",
                                                  batch=True)))
    pipe.build()
    return pipe.run()


@pytest.mark.parametrize("op", ["crop", "crop_mirror_normalize"])
@pytest.mark.parametrize("given", ["crop_h", "crop_w"])
def test_crop_h_and_crop_w_come_together(op, given):
    # DALI 2.4 (crop_attr.cc): "`crop_w` and `crop_h` arguments must be provided together"
    with pytest.raises(ValueError, match="crop_w and crop_h must be given together"):
        _run(lambda x: getattr(fn, op)(x, **{given: 4.0}))
    out = _run(lambda x: getattr(fn, op)(x, crop_h=4.0, crop_w=5.0))
    assert np.array(out[0][0]).shape in ((4, 5, 3), (3, 4, 5))


def test_erase_normalized_with_normalized_shape_is_refused():
    # DALI 2.4 (erase_utils.h): `normalized` is incompatible with a separate
    # `normalized_anchor` / `normalized_shape`
    for extra in ({"normalized_shape": True}, {"normalized_anchor": False}):
        with pytest.raises(ValueError, match="normalized"):
            _run(lambda x: fn.erase(x, anchor=[1.0, 1.0], shape=[2.0, 2.0], axis_names="HW",
                                    normalized=False, **extra))
    out = _run(lambda x: fn.erase(x, anchor=[1.0, 1.0], shape=[2.0, 2.0], axis_names="HW",
                                  normalized_shape=False, normalized_anchor=False))
    assert np.array(out[0][0]).shape == (6, 7, 3)


def test_crop_d_needs_crop_w_and_crop_h():
    # DALI 2.4 (crop_attr.cc): "`crop_d` argument must be provided together with `crop_w`
    # and `crop_h`"
    with pytest.raises(ValueError, match="crop_d"):
        _run(lambda x: fn.crop_mirror_normalize(x, crop_d=2.0))


def test_integer_fill_and_one_hot_values_truncate_as_dalis_cast():
    # DALI 2.4 converts pad's fill_value and one_hot's on/off values with a C cast:
    # 1.78 -> 1, -1.78 -> -1 (godali rounded: 2, -2)
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.zeros((1, 2), np.int16)], layout="HW",
                               batch=True)
        f = fn.external_source(source=lambda: [np.array(-1.78, np.float32)], batch=True)
        i = fn.external_source(source=lambda: [np.array([0, 1], np.int32)], batch=True)
        pipe.set_outputs(fn.pad(x, fill_value=1.78, shape=[1, 3]), fn.pad(x, fill_value=f,
                                                                          shape=[1, 3]),
                         fn.one_hot(i, num_classes=2, dtype=godali.types.INT32,
                                    on_value=2.9, off_value=-0.5))
    pipe.build()
    a, b, c = (np.array(t[0]) for t in pipe.run())
    assert a.tolist() == [[0, 0, 1]] and b.tolist() == [[0, 0, -1]]
    assert c.tolist() == [[2, 0], [0, 2]]


def test_hsv_outputs_uint8_by_default():
    # DALI 2.4's Hsv schema: dtype defaults to UINT8 whatever the input type
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: [np.full((2, 2, 3), 300.5, np.float32)],
                               layout="HWC", batch=True)
        pipe.set_outputs(fn.hsv(x), fn.hsv(x, dtype=godali.types.FLOAT))
    pipe.build()
    a, b = (np.array(t[0]) for t in pipe.run())
    assert a.dtype == np.uint8 and (a == 255).all()
    assert b.dtype == np.float32


def test_epoch_size_is_the_padded_size(tmp_path):
    # DALI 2.4's Pipeline.epoch_size(name) is reader_meta's epoch_size_padded
    for k in range(7):
        np.save(str(tmp_path / ("a%d.npy" % k)), np.full((2,), k, np.float32))
    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pipe:
        pipe.set_outputs(fn.readers.numpy(file_root=str(tmp_path), shard_id=1, num_shards=2,
                                          pad_last_batch=True, name="R"))
    pipe.build()
    assert pipe.reader_meta("R")["epoch_size"] == 7
    assert pipe.epoch_size("R") == pipe.reader_meta("R")["epoch_size_padded"] == 8
    assert pipe.epoch_size() == {"R": 8}


def test_shuffle_after_epoch_sticks_to_the_shard(tmp_path):
    # DALI 2.4's loaders: shuffle_after_epoch implies stick_to_shard (reader_meta says so,
    # and each epoch the shards partition the data set anew)
    for k in range(9):
        np.save(str(tmp_path / ("a%d.npy" % k)), np.full((1,), k, np.float32))
    got = []
    for shard in range(3):
        pipe = godali.Pipeline(batch_size=3, num_threads=1, device_id=None, seed=3)
        with pipe:
            pipe.set_outputs(fn.readers.numpy(file_root=str(tmp_path), shard_id=shard,
                                              num_shards=3, shuffle_after_epoch=True,
                                              name="R"))
        pipe.build()
        assert pipe.reader_meta("R")["stick_to_shard"] is True
        got.append([[int(np.array(t)[0]) for t in pipe.run()[0]] for _ in range(3)])
    for epoch in range(3):
        assert sorted(v for shard in got for v in shard[epoch]) == list(range(9))


def test_external_source_batch_errors_are_runtime_errors():
    # DALI 2.4 raises RuntimeError for a batch larger than batch_size and for samples of
    # different ndim; godali's error is a ValueError and a RuntimeError
    for batch in ([np.zeros(2, np.uint8)] * 3,
                  [np.zeros(2, np.uint8), np.zeros((2, 2), np.uint8)]):
        pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None)
        with pipe:
            pipe.set_outputs(fn.external_source(source=(lambda b: lambda: b)(batch),
                                                batch=True))
        with pytest.raises(RuntimeError):
            pipe.build()  # (build polls the source: the error may come there)
            pipe.run()


def test_wrong_number_of_inputs_is_a_value_error_too():
    # DALI 2.4: "Operator ... expects from 1 to 1 inputs, but received 0." is a ValueError;
    # godali's stays a TypeError as well
    pipe = godali.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        for exc in (ValueError, TypeError):
            with pytest.raises(exc, match="expects from 1 to 1 inputs, but received 0"):
                fn.flip()
