"""Behaviour DALI's own test files rely on (measured by running them, imports swapped, in a
scratch folder outside the repository; docs/operators.md): external_source's checks and
messages, per_frame's layout rule, set_outputs' errors at build, fn._to_snake_case and
the @augmentation decorator for Python functions."""

import warnings

import numpy as np
import pytest

import godali.fn as fn
import godali.types as types
from godali import Pipeline, pipeline_def
from godali.auto_aug.core import augmentation, signed_bin
from godali.auto_aug.core._args import forbid_unused_kwargs


def _pipe(bs=2):
    return Pipeline(batch_size=bs, num_threads=1, device_id=None)


def test_declared_dtype_mismatch_message():
    p = _pipe()
    p.set_outputs(fn.external_source(source=[[np.ones(3, np.float32)] * 2],
                                     dtype=types.UINT8))
    with pytest.raises(RuntimeError, match="ExternalSource expected data of type uint8 and "
                                           "got: float"):
        p.build()
        p.run()


def test_changed_dtype_and_ndim_messages():
    p = _pipe()
    p.set_outputs(fn.external_source(source=[[np.ones(3, np.float32)] * 2,
                                             [np.ones(3, np.uint8)] * 2]))
    p.build()
    p.run()
    with pytest.raises(RuntimeError, match="Type in the previous iteration was float and "
                                           "the current type is uint8"):
        p.run()
    p = _pipe()
    p.set_outputs(fn.external_source(source=[[np.ones((2, 3), np.uint8)] * 2,
                                             [np.ones(3, np.uint8)] * 2]))
    p.build()
    p.run()
    with pytest.raises(RuntimeError, match="Dimensionality in the previous iteration was 2 "
                                           "and the current is 1"):
        p.run()


def test_feed_input_layout_checked_when_fed():
    p = _pipe(1)
    p.set_outputs(fn.external_source(name="x", layout="H"))
    p.build()
    with pytest.raises(RuntimeError, match='Expected data with layout: "H" and got: "W"'):
        p.feed_input("x", [np.zeros(1)], layout="W")
    p = _pipe(1)
    p.set_outputs(fn.external_source(name="x"))
    p.build()
    p.feed_input("x", [np.zeros(1)], layout="W")
    with pytest.raises(RuntimeError, match='was "W" and the current is "H"'):
        p.feed_input("x", [np.zeros(1)], layout="H")


def test_layout_longer_than_ndim_refused():
    with pytest.raises(RuntimeError, match="ndim = 2,\n layout: \"HWC\""):
        fn.external_source(layout="HWC", ndim=2)


def test_ragged_tensor_list_fed_on():
    batches = [[np.ones((2, 3), np.float32), np.zeros((3, 2), np.float32)]]
    src = _pipe()
    src.set_outputs(fn.external_source(source=batches, cycle=True, layout="XY"))
    src.build()
    dst = _pipe()
    dst.set_outputs(fn.external_source(name="ext"))
    dst.build()
    tl = src.run()[0]
    dst.feed_input("ext", tl)
    out = dst.run()[0]
    assert out.layout() == "XY"
    for i in range(2):
        np.testing.assert_array_equal(np.array(out[i]), batches[0][i])


def test_feed_only_num_outputs_fed_per_output():
    p = _pipe()
    with p:
        a, b = fn.external_source(num_outputs=2)
        p.set_outputs(b)
    p.build()
    p.feed_input(b, [np.full(2, 7, np.int32)] * 2)
    np.testing.assert_array_equal(np.array(p.run()[0][1]), [7, 7])


def test_unused_source_not_polled():
    calls = []

    def src(info):
        calls.append(info)
        return None  # would be refused if it were ever used

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        fn.external_source(source=src, batch=False, num_outputs=2)
        return fn.random.uniform(range=(0, 1), shape=2)

    p = pipe()
    p.build()
    p.run()
    assert calls == []


@pytest.mark.parametrize("replace,layout,want", [(True, "XY", "FY"), (False, "FY", "FY"),
                                                 (False, None, "F*")])
def test_per_frame_layouts(replace, layout, want):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=[[np.ones((2, 3), np.float32)] * 2], cycle=True,
                               layout=layout)
        return fn.per_frame(x, replace=replace)

    p = pipe()
    p.build()
    assert p.run()[0].layout() == want


def test_per_frame_refuses_non_sequence_and_scalar():
    for shape, layout, msg in [((2, 3), "XY", "The input layout should start with 'F'"),
                               ((), None, "Cannot mark zero-dimensional input")]:
        @pipeline_def(batch_size=2, num_threads=1, device_id=None)
        def pipe():
            x = fn.external_source(source=[[np.ones(shape, np.float32)] * 2], cycle=True,
                                   layout=layout)
            return fn.per_frame(x)

        with pytest.raises(RuntimeError, match=msg):
            p = pipe()
            p.build()
            p.run()


def test_set_outputs_errors_at_build():
    p = _pipe()
    p.set_outputs(fn.external_source([[[np.zeros(1)], [np.zeros(2)]]], num_outputs=2,
                                     cycle="quiet"))
    with pytest.raises(TypeError, match="contains a nested `DataNode`"):
        p.build()
    p = _pipe()
    p.set_outputs("test")
    with pytest.raises(TypeError, match="The output 0 is a `<class 'str'>`"):
        p.build()


def test_pipeline_function_returning_none_fails_at_build():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return None

    p = pipe()
    with pytest.raises(ValueError, match="returned None"):
        p.build()


@pytest.mark.parametrize("name,snake", [("RandomBBoxCrop", "random_bbox_crop"),
                                        ("TFRecordReader", "tfrecord_reader"),
                                        ("DLTensorPythonFunction", "dl_tensor_python_function"),
                                        ("Caffe2Reader", "caffe2_reader"),
                                        ("OneXYZTwo", "one_xyz_two"), ("STFT_CPU", "stft_cpu"),
                                        ("XYZ1ABC", "xyz1abc"), ("MXNetReader", "mxnet_reader")])
def test_to_snake_case(name, snake):
    assert fn._to_snake_case(name) == snake


def _bin_source(f):
    return fn.external_source(lambda si: np.array(f(si.idx_in_batch), np.int32), batch=False)


def test_augmentation_params_from_bins():
    @augmentation(mag_range=(10, 20), randomly_negate=True,
                  mag_to_param=lambda m: np.array([m, 1], np.float32))
    def param_of(sample, param):
        return param

    @pipeline_def(batch_size=6, num_threads=1, device_id=None)
    def pipe():
        b = _bin_source(lambda i: i % 3)
        s = _bin_source(lambda i: i // 3)
        return param_of(types.Constant(0), magnitude_bin=signed_bin(b, s),
                        num_magnitude_bins=3)

    p = pipe()
    p.build()
    out = p.run()[0]
    for i in range(6):
        m = np.linspace(10, 20, 3)[i % 3] * (-1 if i >= 3 else 1)
        np.testing.assert_array_equal(np.array(out[i]), np.float32([m, 1]))


def test_augmentation_unsigned_bin_warns_and_negates_at_random():
    @augmentation(mag_range=(1, 2), randomly_negate=True)
    def param_of(sample, param):
        return param

    @pipeline_def(batch_size=64, num_threads=1, device_id=None, seed=3)
    def pipe():
        return param_of(types.Constant(0), magnitude_bin=1, num_magnitude_bins=2)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p = pipe()
    assert any("unsigned `magnitude_bin`" in str(x.message) for x in w)
    p.build()
    vals = {float(np.array(s)) for s in p.run()[0]}
    assert vals == {2.0, -2.0}


def test_augmentation_checks():
    with pytest.raises(Exception, match="accepts 1 positional argument"):
        augmentation(lambda x: x)

    @augmentation
    def aug(sample, param, extra, other=None):
        return sample

    with pytest.raises(Exception, match="already decorated"):
        augmentation(aug)
    with pytest.raises(Exception, match="not provided to the call: extra"):
        aug(types.Constant(1))
    assert aug.augmentation(name="x").name == "x"
    assert aug.augmentation(name="x").augmentation(name=None).name == "aug"
    forbid_unused_kwargs([aug], {"extra": 1, "other": 2}, "call")
    with pytest.raises(Exception, match="The kwarg `nope` is not used"):
        forbid_unused_kwargs([aug], {"nope": 1}, "call")


def test_tensor_list_from_tensors_checks():
    from godali.backend_impl import TensorCPU, TensorListCPU
    with pytest.raises(RuntimeError, match="Cannot create TensorList from an empty list"):
        TensorListCPU([])
    with pytest.raises(TypeError, match="Tensor at position 1 has type 'int8' expected to "
                                        "have type 'float'"):
        TensorListCPU([TensorCPU(np.zeros(1, np.float32)), TensorCPU(np.zeros(1, np.int8))])


def test_dtype_call_warns_and_all_types():
    from godali.backend_impl import TensorCPU
    from godali.backend_impl import types as bt
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert TensorCPU(np.zeros(1, np.int16)).dtype() == types.INT16
    assert "Calling '.dtype()' is deprecated" in str(w[-1].message)
    assert bt._DALIDataType is types.DALIDataType
    for t in types._all_types:
        np_t = types.to_numpy_type(t)
        assert TensorCPU(np.zeros(1, np_t)).dtype == t


@pytest.mark.parametrize("change,found", [({"dtype": types.UINT32}, "types"),
                                          ({"shape": [10, -1]}, "sample dimensions"),
                                          ({"layout": "XYZ"}, "layouts")])
def test_conditional_merge_of_divergent_branches(change, found):
    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=[[np.full((10, 10, 3), 42, np.int32)] * 4], cycle=True,
                               layout="HWC")
        pred = fn.external_source(source=[[np.array(i % 2 == 0) for i in range(4)]],
                                  cycle=True)
        t, f = fn._conditional.split(x, predicate=pred)
        return fn._conditional.merge(t, fn.reinterpret(f, **change), predicate=pred)

    with pytest.raises(RuntimeError, match="Divergent data found in different branches.*"
                                           "Found distinct " + found):
        p = pipe()
        p.build()
        p.run()


def test_autograph_logging_module():
    from godali._autograph.utils import ag_logging
    ag_logging.set_verbosity(3)
    assert ag_logging.get_verbosity() == 3 and ag_logging.has_verbosity(2)
    ag_logging.set_verbosity(0)


@pytest.mark.parametrize("planar,frames", [("CHW", False), ("FCHW", True)])
def test_warp_perspective_channel_first_equals_channel_last(planar, frames):
    # A channel-first sample is warped plane by plane, each with its channel's fill value:
    # the same pixels as the channel-last sample (whose warp is compared with OpenCV in
    # test_ops_dali29.py), transposed.
    rng = np.random.default_rng(5)
    shape = (2, 37, 45, 3) if frames else (37, 45, 3)
    hwc = rng.integers(0, 255, shape, dtype=np.uint8)
    chw = np.ascontiguousarray(np.moveaxis(hwc, -1, -3))
    mat = np.float32([[1.05, 0.1, -3], [-0.05, 0.95, 4], [1e-4, 2e-4, 1]])

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        outs = []
        for data, lay in ((hwc, "FHWC" if frames else "HWC"), (chw, planar)):
            x = fn.external_source(source=[[data]], cycle=True, layout=lay)
            outs.append(fn.experimental.warp_perspective(x, matrix=mat.ravel().tolist(),
                                                         size=(30, 50), fill_value=(7, 8, 9),
                                                         interp_type=types.INTERP_LINEAR))
        return tuple(outs)

    p = pipe()
    p.build()
    a, b = p.run()
    want = np.moveaxis(np.array(a[0]), -1, -3)
    assert b.layout() == planar
    np.testing.assert_array_equal(np.array(b[0]), want)


def test_scalar_constant_refuses_enum_values():
    with pytest.raises(TypeError, match="Expected scalar value of type 'bool', 'int' or "
                                        "'float', got .*DALIDataType"):
        types.ScalarConstant(types.DALIDataType.INT16)
    assert types.ScalarConstant(3).value == 3


def test_augmentation_mag_to_param_may_return_a_list():
    @augmentation(mag_range=(0.1, 0.7), mag_to_param=lambda e: [e, e])
    def square(sample, shape):
        return shape

    @pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def pipe():
        return square(types.Constant(0), magnitude_bin=_bin_source(lambda i: i),
                      num_magnitude_bins=4)

    p = pipe()
    p.build()
    out = p.run()[0]
    for i in range(4):
        e = np.linspace(0.1, 0.7, 4)[i]
        np.testing.assert_allclose(np.array(out[i]), [e, e], rtol=1e-6)


def test_subscript_samples_of_different_shapes_on_several_workers():
    # The subscript operator is shared by the worker threads: what its Setup computes for
    # one sample (output extents, offsets) must not be overwritten by another worker's
    # sample before Run reads it (it was: "internal error: slice bounds out of range"
    # or another sample's extents, now and then, under load).
    shapes = [(160, 120, 3), (5, 7, 3), (64, 33, 3), (9, 2, 3)]
    rng = np.random.default_rng(5)
    data = [[rng.integers(0, 255, size=shapes[(i + b) % 4], dtype=np.uint8) for i in range(16)]
            for b in range(4)]

    @pipeline_def(batch_size=16, num_threads=4, device_id=None, prefetch_queue_depth=2)
    def pipe():
        x = fn.external_source(source=data, cycle=True)
        return x[1:-1, ::-2, 1], x[0, :, 2:4:-1]

    p = pipe()
    p.build()
    for it in range(24):
        a, b = p.run()
        for i in range(16):
            src = data[it % 4][i]
            np.testing.assert_array_equal(np.array(a[i]), src[1:-1, ::-2, 1])
            np.testing.assert_array_equal(np.array(b[i]), src[0, :, 2:4:-1])


# --- operator_2/test_filter.py: decoders with dtype, filter's short border names ----------

def _decode_pipe(files, **kw):
    p = _pipe(len(files))
    with p:
        jpegs, _ = fn.readers.file(files=files)
        p.set_outputs(fn.decoders.image(jpegs, **kw),
                      fn.experimental.decoders.image(jpegs, **kw))
    return p


def test_decoder_dtype_converts_to_the_types_dynamic_range(tmp_path):
    # DALI: "Values will be converted to the dynamic range of the requested type" (its
    # ConvertSatNorm: integers scaled by max/255 in float32 and rounded, floats x / 255).
    # Reference: PIL's decode, converted with numpy.
    from PIL import Image
    from conftest import make_jpeg
    files = [str(tmp_path / ("%d.jpg" % i)) for i in range(2)]
    for i, f in enumerate(files):
        make_jpeg(f, 20 + 3 * i, 31 - 2 * i, seed=i)
    ref = [np.asarray(Image.open(f).convert("RGB")) for f in files]
    want = {
        types.UINT16: lambda x: x.astype(np.uint16) * np.uint16(257),
        types.INT16: lambda x: np.round(x.astype(np.float32) * np.float32(32767 / 255))
        .astype(np.int16),
        types.FLOAT: lambda x: x.astype(np.float32) * np.float32(1 / 255),
    }
    for dtype, conv in want.items():
        p = _decode_pipe(files, dtype=dtype)
        a, b = p.run()
        for i in range(len(files)):
            for out in (a, b):
                got = np.array(out.at(i))
                assert got.dtype == conv(ref[i]).dtype
                np.testing.assert_array_equal(got, conv(ref[i]))
        assert a.layout() == "HWC"
        p.close()


def _png16(path, samples):
    """A 16-bit PNG (grey, RGB or RGBA by the last axis) written by hand: the samples
    are the reference, independent of any decoder."""
    import struct
    import zlib
    h, w, c = samples.shape
    kind = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\0" + samples[y].astype(">u2").tobytes() for y in range(h))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, kind, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_decoder_dtype_keeps_16_bit_samples(tmp_path):
    # DALI 2.4's CPU decoders (tests/compat/decsweep.py) give a 16-bit PNG's samples as
    # they are for UINT16 (x / 65535 for FLOAT, x / 257 rounded for UINT8), not the 8-bit
    # decode (their high bytes) scaled, which loses the low byte (46800 came out 46774,
    # and UINT8 one level below DALI's for a quarter of the values); alpha is dropped,
    # grey replicated.
    rng = np.random.default_rng(3)
    cases = {}
    for c in (1, 3, 4):
        x = rng.integers(0, 65536, (5, 7, c), dtype=np.uint16)
        x[0, 0] = 46800
        f = str(tmp_path / ("s%d.png" % c))
        _png16(f, x)
        cases[f] = x
    for f, x in cases.items():
        rgb = np.repeat(x, 3, axis=2) if x.shape[2] == 1 else x[:, :, :3]
        want = {types.UINT8: ((rgb.astype(np.uint32) + 128) // 257).astype(np.uint8),
                types.UINT16: rgb,
                types.FLOAT: rgb.astype(np.float32) * np.float32(1 / 65535),
                types.INT16: np.round(rgb.astype(np.float32) * np.float32(32767 / 65535)).astype(np.int16)}
        for dtype, ref in want.items():
            p = _decode_pipe([f], dtype=dtype)
            a, b = p.run()
            for out in (a, b):
                np.testing.assert_array_equal(np.array(out.at(0)), ref)
            p.close()
        if x.shape[2] == 1:  # GRAY of a grey image: its samples too
            p = _decode_pipe([f], dtype=types.UINT16, output_type=types.GRAY)
            np.testing.assert_array_equal(np.array(p.run()[0].at(0)), x)
            p.close()
    # image_slice (UINT8 only) and image_crop too, padded or not
    f = str(tmp_path / "s3.png")
    p = _pipe(1)
    with p:
        data, _ = fn.readers.file(files=[f])
        p.set_outputs(fn.decoders.image_slice(data, rel_start=(0.0, 0.4), rel_shape=(1.0, 0.4)),
                      fn.decoders.image_slice(data, rel_start=(0.0, 0.0), rel_shape=(1.0, 1.4),
                                              out_of_bounds_policy="pad", fill_values=9),
                      fn.decoders.image_crop(data, crop=(3, 4), dtype=types.UINT16))
    a, b, c = [np.array(o.at(0)) for o in p.run()]
    u8 = ((cases[f][:, :, :3].astype(np.uint32) + 128) // 257).astype(np.uint8)
    np.testing.assert_array_equal(a, u8[2:4])
    np.testing.assert_array_equal(b[:5], u8)
    assert (b[5:] == 9).all()
    np.testing.assert_array_equal(c, cases[f][1:4, 2:6, :3])
    p.close()
    # like_pil keeps PIL's 8-bit view (high byte, scaled)
    p = _decode_pipe([f], dtype=types.UINT16, like_pil=True)
    np.testing.assert_array_equal(np.array(p.run()[0].at(0)), (cases[f] >> 8).astype(np.uint16) * 257)
    p.close()


def test_decoder_dtype_refusals_name_the_argument():
    p = _pipe(1)
    with p:
        jpegs, _ = fn.readers.file(files=["x.jpg"])
        p.set_outputs(fn.decoders.image(jpegs, dtype=types.INT32))
    with pytest.raises(RuntimeError, match="dtype.*expected UINT8, UINT16, INT16 or FLOAT, got INT32"):
        p.build()
    p = _pipe(1)
    with p:
        jpegs, _ = fn.readers.file(files=["x.jpg"])
        p.set_outputs(fn.decoders.image_slice(jpegs, 0.1, 0.5, dtype=types.FLOAT))
    with pytest.raises(RuntimeError, match="decoders.image_slice decodes to UINT8 only"):
        p.build()


def test_filter_takes_dalis_short_border_names():
    # DALI 2.4 takes border="101" and "1001" for reflect_101 and reflect_1001 (its
    # test_filter.py uses them). Reference: scipy.ndimage.convolve with the flipped kernel
    # (mirror = 101, reflect = 1001), within 1 level for uint8.
    from conftest import need
    ndimage = need("scipy.ndimage")
    x = (np.arange(42, dtype=np.uint8).reshape(6, 7, 1) * 5)
    k = np.float32([[0.1, 0.2, 0.3], [0.05, 0.1, 0.05], [0.0, 0.1, 0.1]])
    for short, long_name, scipy_mode in (("101", "reflect_101", "mirror"),
                                         ("1001", "reflect_1001", "reflect")):
        p = _pipe(1)
        with p:
            s = fn.external_source(source=lambda: [x], layout="HWC")
            p.set_outputs(fn.experimental.filter(s, k, border=short),
                          fn.filter(s, k, border=long_name))
        a, b = p.run()
        p.close()
        got = np.array(a.at(0))
        np.testing.assert_array_equal(got, np.array(b.at(0)))
        ref = ndimage.convolve(x[:, :, 0].astype(np.float32), np.flip(k), mode=scipy_mode)
        assert np.abs(got[:, :, 0].astype(np.int32) - np.round(ref).astype(np.int32)).max() <= 1


# --- operator_1/test_operator_exception.py: an operator's error framed as DALI's ----------

def test_operator_errors_are_framed_as_dalis():
    # DALI: "Critical error in pipeline:\nError in CPU operator `nvidia.dali.math.add`,\n
    # which was used in the pipeline definition with the following traceback:\n\n  File
    # "...", line N, in pipe\n    return a + b\n\nencountered:\n\n<error>" (compared with
    # DALI 2.4 itself in tests/compat/test_dali_errors.py).
    import inspect
    here = inspect.getsourcefile(test_operator_errors_are_framed_as_dalis)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        a = fn.random.uniform(range=[-1, 1], shape=(2, 3))
        b = fn.random.uniform(range=[-1, 1], shape=(3, 2))
        return a + b
    line = inspect.getsourcelines(pipe)[1] + 4
    with pytest.raises(RuntimeError) as e:
        pipe().build()
    want = ("Critical error in pipeline:\nError in CPU operator `godali.math.add`,\nwhich was "
            "used in the pipeline definition with the following traceback:\n\n  File \"%s\", "
            "line %d, in pipe\n    return a + b\n\nencountered:\n\n" % (here, line))
    msg = str(e.value)
    assert msg.startswith(want), msg
    assert "do not broadcast" in msg and msg.endswith("Current pipeline object is no longer valid.")


def test_decoder_ycbcr_output(tmp_path):
    # DALI 2.4's CPU decoders make output_type=YCbCr from the RGB decode by its
    # color_space_conversion (tests/compat/decsweep.py: identical there); godali refused
    # it. ITU-R BT.601 limited range: numpy's formula within 1 (float32 rounding).
    from PIL import Image
    from conftest import make_jpeg
    files = [make_jpeg(str(tmp_path / "a.jpg"), 40, 30, seed=4)]
    rgb = (np.random.default_rng(1).random((20, 24, 3)) * 255).astype(np.uint8)
    rgb[0, :4] = 77  # grey: no chroma
    Image.fromarray(rgb).save(str(tmp_path / "b.png"))
    files.append(str(tmp_path / "b.png"))
    p = _pipe(len(files))
    with p:
        data, _ = fn.readers.file(files=files)
        img = fn.decoders.image(data)
        p.set_outputs(fn.decoders.image(data, output_type=types.YCbCr),
                      fn.color_space_conversion(img, image_type=types.RGB, output_type=types.YCbCr),
                      fn.decoders.image(data, output_type=types.YCbCr, dtype=types.FLOAT),
                      fn.decoders.image_crop(data, output_type=types.YCbCr, crop=(5, 6)),
                      fn.decoders.image_slice(data, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5),
                                              output_type=types.YCbCr),
                      fn.slice(fn.color_space_conversion(img, image_type=types.RGB, output_type=types.YCbCr),
                               rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5), axis_names="WH"),
                      fn.peek_image_shape(data, image_type=types.YCbCr), img)
    ycc, csc, flt, crop, sl, sl_ref, shape, img = p.run()
    m = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]]) / 255
    for i in range(len(files)):
        got = np.array(ycc.at(i))
        np.testing.assert_array_equal(got, np.array(csc.at(i)))
        ref = np.array(img.at(i)).astype(np.float64) @ m.T + [16, 128, 128]
        assert np.abs(got - ref).max() <= 1
        assert 16 <= got[..., 0].min() and got[..., 0].max() <= 235
        np.testing.assert_array_equal(np.array(flt.at(i)), got.astype(np.float32) * np.float32(1 / 255))
        h, w = got.shape[:2]
        y0, x0 = int(0.5 * (h - 5) + 0.5), int(0.5 * (w - 6) + 0.5)
        np.testing.assert_array_equal(np.array(crop.at(i)), got[y0:y0 + 5, x0:x0 + 6])
        np.testing.assert_array_equal(np.array(sl.at(i)), np.array(sl_ref.at(i)))
        assert list(np.array(shape.at(i))) == [h, w, 3]
    assert (np.array(ycc.at(1))[0, :4, 1:] == 128).all()
    p.close()


def test_decoder_gray_of_colour_images_as_dali(tmp_path):
    # DALI 2.4's CPU decoders (tests/compat/decsweep.py: identical on every such file of
    # the corpus) compute GRAY of a colour BMP, PNM or TIFF by OpenCV's fixed-point rule,
    # (4899, 9617, 1868) / 2^14 rounded (this machine's cv2.cvtColor, whose SIMD path may
    # differ, within 1), and of a PNG as libpng's rgb_to_gray with nvImageCodec's weights
    # (9797, 19234, 3737) / 2^15, truncated; PIL's convert("L") (like_pil=True) rounds
    # differently, one level apart for some pixels.
    from PIL import Image
    rgb = (np.random.default_rng(2).random((30, 41, 3)) * 255).astype(np.uint8)
    files = []
    for ext in ("bmp", "ppm", "tif", "png"):
        files.append(str(tmp_path / ("c." + ext)))
        Image.fromarray(rgb).save(files[-1])
    p = _pipe(len(files))
    with p:
        data, _ = fn.readers.file(files=files)
        p.set_outputs(fn.decoders.image(data, output_type=types.GRAY),
                      fn.decoders.image(data, output_type=types.GRAY, like_pil=True))
    dali_like, pil_like = p.run()
    r, g, b = [rgb[..., i].astype(np.int64) for i in range(3)]
    cv = ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14).astype(np.uint8)
    want = {"bmp": cv, "ppm": cv, "tif": cv, "png": ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)}
    try:
        import cv2
        assert np.abs(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.int16) - cv).max() <= 1
    except ImportError:
        pass
    pil = np.asarray(Image.fromarray(rgb).convert("L"))
    for i, f in enumerate(files):
        np.testing.assert_array_equal(np.array(dali_like.at(i))[..., 0], want[f[-3:]], err_msg=f)
        np.testing.assert_array_equal(np.array(pil_like.at(i))[..., 0], pil, err_msg=f)
    assert (want["png"] != pil).any() and (want["bmp"] != pil).any()  # the rules differ here
    p.close()


def test_decoder_cmyk_jpeg_as_dali(tmp_path):
    # DALI 2.4's CPU decoders (tests/compat/decsweep.py: identical on Pillow's
    # pil_sample_cmyk.jpg) turn CMYK into RGB as (255 - C) * (255 - K) / 255 truncated
    # and GRAY into the 601 luma of that, truncated; PIL rounds (like_pil=True).
    from PIL import Image
    rng = np.random.default_rng(6)
    cmyk = rng.integers(0, 256, (16, 24, 4), dtype=np.uint8)
    f = str(tmp_path / "k.jpg")
    Image.fromarray(cmyk, "CMYK").save(f, quality=95)
    stored = np.asarray(Image.open(f)).astype(np.int64)  # what the file holds, as PIL reads it
    c, m, y, k = [stored[..., i] for i in range(4)]
    rgb = np.stack([(255 - v) * (255 - k) // 255 for v in (c, m, y)], -1)
    gray = np.floor(0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2])
    p = _pipe(1)
    with p:
        data, _ = fn.readers.file(files=[f])
        p.set_outputs(fn.decoders.image(data), fn.decoders.image(data, output_type=types.GRAY),
                      fn.decoders.image(data, like_pil=True))
    a, g, pil = p.run()
    np.testing.assert_array_equal(np.array(a.at(0)), rgb)
    np.testing.assert_array_equal(np.array(g.at(0))[..., 0], gray)
    np.testing.assert_array_equal(np.array(pil.at(0)), np.asarray(Image.open(f).convert("RGB")))
    assert (np.array(pil.at(0)) != rgb).any()  # the rules differ here
    p.close()


def test_decoder_any_data_keeps_the_images_channels(tmp_path):
    # DALI 2.4's CPU decoders (tests/compat/decsweep.py): output_type=ANY_DATA gives grey
    # images one channel (8- and 16-bit), colour and palette images three; godali
    # refuses images with alpha (DALI gives RGBA PNGs four channels) by name.
    from PIL import Image
    rng = np.random.default_rng(8)
    grey = rng.integers(0, 256, (9, 13), dtype=np.uint8)
    rgb = rng.integers(0, 256, (9, 13, 3), dtype=np.uint8)
    grey16 = rng.integers(0, 65536, (9, 13), dtype=np.uint16)
    files = [str(tmp_path / n) for n in ("g.png", "c.png", "p.png", "g16.png", "a.png")]
    Image.fromarray(grey).save(files[0])
    Image.fromarray(rgb).save(files[1])
    Image.fromarray(rgb).convert("P").save(files[2])
    _png16(files[3], grey16[..., None])
    Image.fromarray(np.dstack([rgb, grey])).save(files[4])

    def run(f, **kw):
        p = _pipe(1)
        with p:
            data, _ = fn.readers.file(files=[f])
            p.set_outputs(fn.decoders.image(data, output_type=types.ANY_DATA, **kw))
        try:
            return np.array(p.run()[0].at(0))
        finally:
            p.close()
    np.testing.assert_array_equal(run(files[0]), grey[..., None])
    np.testing.assert_array_equal(run(files[1]), rgb)
    np.testing.assert_array_equal(run(files[2]), np.asarray(Image.open(files[2]).convert("RGB")))
    np.testing.assert_array_equal(run(files[3], dtype=types.UINT16), grey16[..., None])
    with pytest.raises(RuntimeError, match="ANY_DATA of a PNG image with an alpha channel"):
        run(files[4])


def test_peek_image_shape_any_data_and_grey_bmp(tmp_path):
    # DALI's test_imgcodec.py test_peek_shape: image_type=ANY_DATA gives the image's own
    # channels (1 for a grayscale BMP, a grey PNM or TIFF; 4 for a PNG with alpha; 3 for
    # colour; godali reads no PBM, DALI's test has one); a BMP whose palette is all greys decodes to one channel with ANY_DATA, as
    # OpenCV (DALI's BMP decoder) reads it.
    from PIL import Image
    rng = np.random.default_rng(9)
    grey = rng.integers(0, 256, (7, 11), dtype=np.uint8)
    rgb = rng.integers(0, 256, (7, 11, 3), dtype=np.uint8)
    made = {"g.bmp": (Image.fromarray(grey).convert("P"), 1), "g.pgm": (Image.fromarray(grey), 1),
            "g.tif": (Image.fromarray(grey), 1), "a.png": (Image.fromarray(np.dstack([rgb, grey])), 4),
            "c.bmp": (Image.fromarray(rgb), 3), "c.jpg": (Image.fromarray(rgb), 3)}
    files = []
    for name, (im, _) in made.items():
        files.append(str(tmp_path / name))
        if name == "g.bmp":  # an 8-bit palette of greys, not PIL's "L" BMP
            im.putpalette([v for i in range(256) for v in (i, i, i)])
        im.save(files[-1])
    p = _pipe(len(files))
    with p:
        data, _ = fn.readers.file(files=files)
        p.set_outputs(fn.peek_image_shape(data, image_type=types.ANY_DATA),
                      fn.experimental.peek_image_shape(data, image_type=types.GRAY))
    shapes, grays = p.run()
    for i, (name, (_, c)) in enumerate(made.items()):
        assert list(np.array(shapes.at(i))) == [7, 11, c], name
        assert list(np.array(grays.at(i))) == [7, 11, 1], name
    p.close()
    p = _pipe(1)
    with p:
        data, _ = fn.readers.file(files=[files[0]])
        p.set_outputs(fn.decoders.image(data, output_type=types.ANY_DATA))
    np.testing.assert_array_equal(np.array(p.run()[0].at(0)), np.asarray(Image.open(files[0]).convert("L"))[..., None])
    p.close()
