"""slice, flip and crop_mirror_normalize on any type and layout (volumes, sequences, no
layout), and layouts given to feed_input, against numpy written from DALI's documented
semantics (what DALI's own test_slice.py / test_flip.py / test_crop_mirror_normalize.py
check). Integer and exact-copy outputs must match exactly; float normalisation within
1e-5 (DALI's tolerance for FLOAT)."""

import numpy as np
import pytest

import godali
from godali import fn, ops, types


def _run(batch, graph, bs=None, iters=1):
    bs = bs or len(batch[0][0])
    pipe = godali.Pipeline(batch_size=bs, num_threads=2, seed=3)
    with pipe:
        outs = graph(*[fn.external_source(source=lambda b=b: b, batch=True, **kw)
                       for b, kw in batch])
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[np.array(o[i].as_cpu()) for i in range(bs)] for o in res]
    lays = [o.layout() for o in res]
    pipe.close()
    return got, lays


def _round(x):  # DALI's (std::llround) rounding: halves away from zero
    return int(np.floor(x + 0.5)) if x >= 0 else -int(np.floor(-x + 0.5))


# --- slice -------------------------------------------------------------------------------------

def test_slice_axes_named_args_and_integer_anchors():
    rng = np.random.default_rng(0)
    data = [rng.integers(0, 255, (6, 7, 3), dtype=np.uint8) for _ in range(2)]
    f32 = [x.astype(np.float32) for x in data]
    (outs, lays) = _run([(data, dict(layout="HWC"))], lambda x: (
        fn.slice(x, np.array([1, 2]), np.array([3, 4]), axes=(0, 1)),          # ints: absolute
        fn.slice(x, np.float32([0.25]), np.float32([0.5]), axis_names="W"),       # relative
        fn.slice(x, start=[1, 2], end=[4, 6], axes=(0, 1)),
        fn.slice(x, rel_start=[0.5], rel_shape=[0.5], axes=[-2]),
        fn.slice(x, start=[2], axes=[0]),                                          # end: whole
        fn.slice(x, end=[2], axis_names="C"),
        fn.slice(x, np.float32([2, 1]), np.float32([4, 3]), normalized_anchor=False,
                 normalized_shape=False),                                          # default WH: (x, y)
        fn.slice(x, start=[1, 1], shape=[3, 2], axes=(0, 1), dtype=types.FLOAT),
    ))
    for i, x in enumerate(data):
        np.testing.assert_array_equal(outs[0][i], x[1:4, 2:6])
        s = _round(0.25 * 7)
        np.testing.assert_array_equal(outs[1][i], x[:, s:_round(0.75 * 7)])
        np.testing.assert_array_equal(outs[2][i], x[1:4, 2:6])
        np.testing.assert_array_equal(outs[3][i], x[:, _round(3.5):_round(7.0)])
        np.testing.assert_array_equal(outs[4][i], x[2:])
        np.testing.assert_array_equal(outs[5][i], x[:, :, :2])
        np.testing.assert_array_equal(outs[6][i], x[1:4, 2:6])
        np.testing.assert_array_equal(outs[7][i], f32[i][1:4, 1:3])
        assert outs[7][i].dtype == np.float32
    assert lays[0] == "HWC"


def test_slice_per_sample_axes_and_policies():
    rng = np.random.default_rng(1)
    data = [rng.random((5, 6, 3), dtype=np.float32) for _ in range(3)]
    axes = [np.int32([0]), np.int32([-2, 0]), np.int32([])]       # [] means every axis
    anchors = [np.float32([-2]), np.float32([4, -1]), np.float32([1, 1, 0])]
    shapes = [np.float32([4]), np.float32([4, 8]), np.float32([9, 2, 3])]
    (outs, _) = _run([(data, {}), (axes, {}), (anchors, {}), (shapes, {})], lambda x, ax, an, sh: (
        fn.slice(x, an, sh, axes=ax, normalized_anchor=False, normalized_shape=False,
                 out_of_bounds_policy="pad", fill_values=[7, 8, 9]),
        fn.slice(x, an, sh, axes=ax, normalized_anchor=False, normalized_shape=False,
                 out_of_bounds_policy="trim_to_shape"),
    ))
    for i, x in enumerate(data):
        ax = [a % 3 for a in axes[i]] or [0, 1, 2]
        start, end = [0, 0, 0], list(x.shape)
        for a, s, e in zip(ax, anchors[i], shapes[i]):
            start[a], end[a] = int(s), int(s) + int(e)
        ref = np.empty([e - s for s, e in zip(start, end)], np.float32)
        ref[...] = np.float32([7, 8, 9])[:ref.shape[2]] if ref.shape[2] <= 3 else 0
        src = tuple(slice(max(s, 0), min(e, n)) for s, e, n in zip(start, end, x.shape))
        dst = tuple(slice(max(s, 0) - s, min(e, n) - s) for s, e, n in zip(start, end, x.shape))
        ref[dst] = x[src]
        np.testing.assert_array_equal(outs[0][i], ref)
        np.testing.assert_array_equal(outs[1][i], x[src])


def test_slice_errors_use_dalis_words():
    x = [np.zeros((4, 4, 3), np.uint8)]
    with pytest.raises(godali.DataError, match="Slice can't be placed out of bounds with current policy"):
        _run([(x, dict(layout="HWC"))], lambda d: (fn.slice(d, start=[2], shape=[5], axes=[0]),))
    with pytest.raises(Exception, match=r"Axis 3 out of range. Expected range is \[-3, 2\] for a 3D input"):
        _run([(x, {})], lambda d: (fn.slice(d, start=[0], end=[1], axes=[3]),))
    with pytest.raises(ValueError, match='"end", "rel_end", "shape", and "rel_shape" arguments are mutually exclusive'):
        _run([(x, {})], lambda d: (fn.slice(d, start=[0], end=[1], shape=[1], axes=[0]),))


# --- flip --------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout,shape,dtype", [
    ("CHW", (3, 4, 5), np.float32), ("DHWC", (2, 3, 4, 2), np.int16),
    ("CDHW", (2, 3, 4, 5), np.uint8), ("FHWC", (3, 4, 5, 3), np.uint8),
    ("FCDHW", (2, 2, 3, 4, 5), np.float32)])
def test_flip_any_layout(layout, shape, dtype):
    rng = np.random.default_rng(2)
    data = [(rng.random(shape) * 100).astype(dtype) for _ in range(2)]
    (outs, lays) = _run([(data, dict(layout=layout))], lambda x: (
        fn.flip(x, horizontal=1, vertical=0, depthwise=0),
        fn.flip(x, horizontal=0, vertical=1, depthwise=1)))
    w, h, d = layout.find("W"), layout.find("H"), layout.find("D")
    for i, x in enumerate(data):
        np.testing.assert_array_equal(outs[0][i], np.flip(x, w))
        ref = np.flip(x, h)
        if d >= 0:
            ref = np.flip(ref, d)
        np.testing.assert_array_equal(outs[1][i], ref)
    assert lays == [layout, layout]


def test_flip_zero_extent_samples():
    data = [np.zeros((0, 8, 3), np.uint8), np.arange(18, dtype=np.uint8).reshape(2, 3, 3),
            np.zeros((4, 0, 3), np.uint8)]
    (outs, _) = _run([(data, dict(layout="HWC"))], lambda x: (fn.flip(x, horizontal=1, vertical=1),))
    for i, x in enumerate(data):
        np.testing.assert_array_equal(outs[0][i], x[::-1, ::-1])


# --- crop_mirror_normalize ------------------------------------------------------------------

def _cmn_ref(x, layout, out_layout, crop, pos, mean, std, mirror, pad=False, fill=0.0):
    """Crop (start = floor(pos * (extent - crop) + 0.5), padded with fill outside), mirror W,
    normalise, pad channels to a power of two with zeros, transpose to out_layout."""
    c = x.shape[layout.index("C")]
    out = np.asarray(x, np.float64)
    for ax, (size, p) in zip((layout.index(a) for a in crop), zip(crop.values(), pos)):
        start = int(np.floor(p * (x.shape[ax] - size) + 0.5))
        idx = np.arange(start, start + size)
        ok = (idx >= 0) & (idx < x.shape[ax])
        taken = np.take(out, np.clip(idx, 0, x.shape[ax] - 1), axis=ax)
        mask_shape = [1] * out.ndim
        mask_shape[ax] = size
        out = np.where(ok.reshape(mask_shape), taken, np.nan)
    if mirror:
        out = np.flip(out, layout.index("W"))
    cax = layout.index("C")
    shape_c = [1] * out.ndim
    shape_c[cax] = c
    out = (out - np.reshape(mean, shape_c)) / np.reshape(std, shape_c)
    out = np.where(np.isnan(out), fill, out)
    if pad:
        widths = [(0, 0)] * out.ndim
        widths[cax] = (0, 4 - c)
        out = np.pad(out, widths)
    return np.transpose(out, [layout.index(a) for a in out_layout]).astype(np.float32)


def test_cmn_volume_crop_d_to_cdhw():
    rng = np.random.default_rng(4)
    data = [rng.integers(0, 255, (10, 12, 14, 3), dtype=np.uint8) for _ in range(2)]
    mean, std = [10.0, 20.0, 30.0], [2.0, 3.0, 4.0]
    (outs, lays) = _run([(data, dict(layout="DHWC"))], lambda x: (
        fn.crop_mirror_normalize(x, crop_d=4, crop_h=5, crop_w=6, crop_pos_z=0.1, crop_pos_y=0.7,
                                 crop_pos_x=0.3, mean=mean, std=std, mirror=1,
                                 output_layout="CDHW", pad_output=True),))
    for i, x in enumerate(data):
        ref = _cmn_ref(x, "DHWC", "CDHW", {"D": 4, "H": 5, "W": 6}, (0.1, 0.7, 0.3),
                       mean, std, True, pad=True)
        np.testing.assert_allclose(outs[0][i], ref, rtol=1e-5, atol=1e-5)
    assert lays == ["CDHW"]


def test_cmn_sequence_float_trim_and_fill():
    rng = np.random.default_rng(5)
    data = [rng.random((4, 6, 8, 3), dtype=np.float32) * 255 for _ in range(2)]
    mean, std = [100.0], [50.0]
    (outs, lays) = _run([(data, dict(layout="FHWC"))], lambda x: (
        # crop_d on a sequence crops its frames
        fn.crop_mirror_normalize(x, crop_d=2, crop_h=4, crop_w=4, crop_pos_z=1.0, mean=mean,
                                 std=std, output_layout="FCHW"),
        fn.crop_mirror_normalize(x, crop_h=10, crop_w=12, mean=mean, std=std,
                                 out_of_bounds_policy="pad", fill_values=[1, 2, 3],
                                 output_layout="FHWC"),
        fn.crop_mirror_normalize(x, crop_h=10, crop_w=4, mean=mean, std=std,
                                 out_of_bounds_policy="trim_to_shape", output_layout="FHWC"),
    ))
    for i, x in enumerate(data):
        ref = _cmn_ref(x, "FHWC", "FCHW", {"F": 2, "H": 4, "W": 4}, (1.0, 0.5, 0.5), [100.0] * 3,
                       [50.0] * 3, False)
        np.testing.assert_allclose(outs[0][i], ref, rtol=1e-5, atol=1e-5)
        ref = _cmn_ref(x, "FHWC", "FHWC", {"H": 10, "W": 12}, (0.5, 0.5), [100.0] * 3,
                       [50.0] * 3, False, fill=np.float64([1, 2, 3]))
        np.testing.assert_allclose(outs[1][i], ref, rtol=1e-5, atol=1e-5)
        ref = _cmn_ref(x[:, :, 2:6], "FHWC", "FHWC", {}, (), [100.0] * 3, [50.0] * 3, False)
        np.testing.assert_allclose(outs[2][i], ref, rtol=1e-5, atol=1e-5)
    assert lays == ["FCHW", "FHWC", "FHWC"]


def test_cmn_rejects_unknown_layout():
    with pytest.raises(ValueError, match='The layout "ABC" does not match any of the allowed layouts'):
        _run([([np.zeros((4, 4, 3), np.uint8)], dict(layout="ABC"))],
             lambda x: (fn.crop_mirror_normalize(x, crop_h=2, crop_w=2),))


# --- layouts from feed_input ------------------------------------------------------------------

def test_feed_input_layout_reaches_operators():
    class P(godali.Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, device_id=None)
            self.src = ops.ExternalSource()
            self.cast = ops.Cast(dtype=types.FLOAT)

        def define_graph(self):
            self.x = self.src()
            y = self.cast(self.x)
            return self.x, y, fn.slice(y, start=[1], shape=[2], axis_names="W"), fn.flip(y)

        def iter_setup(self):
            self.feed_input(self.x, [np.arange(2 * 5 * 3, dtype=np.uint8).reshape(2, 5, 3)] * 2,
                            layout="HWC")

    p = P()
    p.build()
    for _ in range(2):
        x, y, s, f = p.run()
        assert (x.layout(), y.layout(), s.layout(), f.layout()) == ("HWC",) * 4
        a = np.array(x[0].as_cpu())
        np.testing.assert_array_equal(np.array(s[0].as_cpu()), a[:, 1:3].astype(np.float32))
        np.testing.assert_array_equal(np.array(f[0].as_cpu()), a[:, ::-1].astype(np.float32))
    p.close()


# --- decoders.image_crop / image_slice --------------------------------------------------------

def test_image_crop_decoder_matches_decode_then_crop(tmp_path):
    from conftest import make_jpeg
    files = [make_jpeg(str(tmp_path / ("c%d.jpg" % i)), h, w, seed=i)
             for i, (h, w) in enumerate([(60, 80), (75, 50), (64, 64)])]
    pipe = godali.Pipeline(batch_size=3, num_threads=2, seed=1)
    with pipe:
        enc, _ = fn.readers.file(files=files)
        px = fn.random.uniform(range=[0.0, 1.0])
        full = fn.decoders.image(enc, output_type=types.RGB)
        pipe.set_outputs(full, px,
                         fn.decoders.image_crop(enc, crop=(40, 30), crop_pos_x=px, crop_pos_y=0.25),
                         fn.image_decoder_crop(enc),  # no crop: the whole image
                         fn.decoders.image_slice(enc, start=[5, 7], end=[30, 40], axes=[0, 1]))
    full, px, crop, whole, sl = pipe.run()
    for i in range(3):
        img = np.array(full[i])
        h, w = img.shape[:2]
        x = int(np.floor(float(np.array(px[i])) * (w - 30) + 0.5))
        y = int(np.floor(0.25 * (h - 40) + 0.5))
        # Decoding only the window gives exactly the pixels of the whole decode.
        np.testing.assert_array_equal(np.array(crop[i]), img[y:y + 40, x:x + 30])
        np.testing.assert_array_equal(np.array(whole[i]), img)
        np.testing.assert_array_equal(np.array(sl[i]), img[5:30, 7:40])
    pipe.close()
    with pytest.raises(godali.DataError, match=r"cropping window \[.*\] is not valid for image dimensions \[60 x 80\]"):
        _p = godali.Pipeline(batch_size=1, num_threads=1)
        with _p:
            enc, _ = fn.readers.file(files=files[:1])
            _p.set_outputs(fn.decoders.image_crop(enc, crop_h=10, crop_w=1000))
        _p.run()


# --- random_resized_crop on any layout and type ----------------------------------------------

@pytest.mark.parametrize("antialias", [False, True])
def test_random_resized_crop_any_layout_matches_uint8_resize(antialias):
    """A window of the whole image (area 1, the image's aspect ratio) resized by the generic
    float path (CHW float32, FCHW int16, CFHW) must match the fixed-point HWC uint8 resize
    (itself checked against PIL) within 1 level (fixed-point vs float weights)."""
    rng = np.random.default_rng(7)
    h, w = 48, 64
    img = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    ratio = [w / h, w / h]
    args = dict(size=(20, 36), random_area=[1.0, 1.0], random_aspect_ratio=ratio, antialias=antialias)
    chw = np.ascontiguousarray(img.transpose(2, 0, 1))
    (outs, lays) = _run([([img], dict(layout="HWC")), ([chw.astype(np.float32)], dict(layout="CHW")),
                         ([chw[:, None].astype(np.int16)], dict(layout="CFHW")),
                         ([chw[None].astype(np.float32)], dict(layout="FCHW"))],
                        lambda a, b, c, d: (fn.random_resized_crop(a, **args), fn.random_resized_crop(b, **args),
                                            fn.random_resized_crop(c, **args),
                                            fn.random_resized_crop(d, dtype=types.UINT8, **args)))
    ref = outs[0][0].astype(np.float64).transpose(2, 0, 1)
    assert outs[1][0].dtype == np.float32 and outs[2][0].dtype == np.int16 and outs[3][0].dtype == np.uint8
    np.testing.assert_allclose(outs[1][0], ref, atol=1)
    np.testing.assert_allclose(outs[2][0][:, 0], ref, atol=1)
    np.testing.assert_allclose(outs[3][0][0], ref, atol=1)
    assert lays == ["HWC", "CHW", "CFHW", "FCHW"]


def test_empty_constant_and_list_outputs():
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = types.Constant(np.array([], dtype=np.int32))
        y = types.Constant(np.array([42], dtype=np.int32))
        # a list of numbers returned as an output is one constant output, as in DALI
        return fn.slice(x, 0, 0, axes=[0]), fn.slice(y, 1, 0, axes=[0]), [1.5, 2.5]
    p = pipe()
    a, b, c = p.run()
    for i in range(2):
        assert np.array(a[i]).shape == (0,) and np.array(b[i]).shape == (0,)
        np.testing.assert_array_equal(np.array(c[i]), [1.5, 2.5])
    p.close()


# --- cast and reshape after a python_function (types known only at run time) -----------------

def test_cast_and_reshape_take_python_function_outputs():
    rng = np.random.default_rng(8)
    data = [rng.integers(0, 100, (4, 6, 3)).astype(np.int64) for _ in range(2)]
    pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None, exec_async=False,
                           exec_pipelined=False)
    with pipe:
        x = fn.external_source(source=lambda: data, batch=True, layout="HWC")
        y = fn.python_function(x, function=lambda a: a * 2)          # int64, known when run
        shape = fn.python_function(x, function=lambda a: np.array([a.shape[0], -1], np.int32))
        rel = fn.python_function(x, function=lambda a: np.float32([2, 0.5, 1]))
        pipe.set_outputs(fn.cast(y, dtype=types.UINT8), fn.reshape(x, shape, layout="ab"),
                         fn.reshape(x, rel_shape=rel), fn.reshape(y, shape=[24, 3]))
    a, b, c, d = pipe.run()
    for i, v in enumerate(data):
        np.testing.assert_array_equal(np.array(a[i]), (v * 2).astype(np.uint8))
        np.testing.assert_array_equal(np.array(b[i]), v.reshape(4, 18))
        np.testing.assert_array_equal(np.array(c[i]), v.reshape(8, 3, 3))
        np.testing.assert_array_equal(np.array(d[i]), (v * 2).reshape(24, 3))
    assert b.layout() == "ab"
    pipe.close()


# --- crop on any layout and type -------------------------------------------------------------

def _start(pos, extent, crop, truncate=False):
    x = pos * (extent - crop)
    return int(np.trunc(x)) if truncate else _round(x)


def test_crop_volumes_sequences_types_and_policies():
    rng = np.random.default_rng(9)
    vol = [rng.integers(0, 255, (12, 20, 16, 2), dtype=np.uint8) for _ in range(2)]      # DHWC
    seq = [rng.random((6, 3, 10, 14), dtype=np.float32) for _ in range(2)]               # FCHW
    img = [rng.integers(0, 255, (20, 8, 3), dtype=np.uint8) for _ in range(2)]
    (outs, lays) = _run([(vol, dict(layout="DHWC")), (seq, dict(layout="FCHW")), (img, dict(layout="HWC"))],
                        lambda v, s, i: (
        fn.crop(v, crop_d=5, crop_h=7, crop_w=9, crop_pos_z=0.2, crop_pos_y=0.7, crop_pos_x=0.4,
                dtype=types.FLOAT),
        fn.crop(s, crop=(4, 5, 6), crop_pos_z=1.0),                        # F cropped as depth
        fn.crop(i, crop=(11, 9), out_of_bounds_policy="pad", fill_values=[1, 2, 3]),
        fn.crop(i, crop=(11, 9), out_of_bounds_policy="pad", rounding="truncate"),
        fn.crop(i, crop=(30, 4), out_of_bounds_policy="trim_to_shape"),
    ))
    for k in range(2):
        v = vol[k]
        z, y, x = _start(0.2, 12, 5), _start(0.7, 20, 7), _start(0.4, 16, 9)
        np.testing.assert_array_equal(outs[0][k], v[z:z + 5, y:y + 7, x:x + 9].astype(np.float32))
        s = seq[k]
        f, y, x = _start(1.0, 6, 4), _start(0.5, 10, 5), _start(0.5, 14, 6)
        np.testing.assert_array_equal(outs[1][k], s[f:f + 4, :, y:y + 5, x:x + 6])
        i = img[k]
        # W: 8 wide, 9 wanted at 0.5: start round(-0.5) = -1 (DALI's half away from zero):
        # one padded column on the left; truncate gives 0: the padding on the right.
        ref = np.empty((11, 9, 3), np.uint8)
        ref[...] = [1, 2, 3]
        ref[:, 1:9] = i[5:16]
        np.testing.assert_array_equal(outs[2][k], ref)
        ref = np.zeros((11, 9, 3), np.uint8)
        ref[:, 0:8] = i[4:15]
        np.testing.assert_array_equal(outs[3][k], ref)
        y = _start(0.5, 20, 30)
        np.testing.assert_array_equal(outs[4][k], i[max(y, 0):y + 30, _start(0.5, 8, 4):_start(0.5, 8, 4) + 4])
    assert lays == ["DHWC", "FCHW", "HWC", "HWC", "HWC"]
    with pytest.raises(ValueError, match='The layout "ABC" does not match any of the allowed layouts'):
        _run([(img, dict(layout="ABC"))], lambda i: (fn.crop(i, crop=(2, 2)),))
