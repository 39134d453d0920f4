"""stack, cat, reshape, squeeze, expand_dims against numpy; peek_image_shape against PIL
(sizes) and the decoders (channels). All exact."""

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types

from conftest import make_jpeg

BATCH = 3


def _run(graph, batch=BATCH):
    pipe = godali.Pipeline(batch_size=batch, num_threads=2, seed=4)
    with pipe:
        pipe.set_outputs(*graph())
    res = pipe.run()
    got = [[np.array(o[i].as_array()) for i in range(batch)] for o in res]
    layouts = [o.layout() if hasattr(o, "layout") else None for o in res]
    pipe.close()
    return got, layouts


A = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
B = (100 + np.arange(24, dtype=np.int32)).reshape(2, 3, 4)
C = (500 + np.arange(16, dtype=np.int32)).reshape(2, 2, 4)


def test_stack_and_cat_match_numpy():
    def graph():
        a, b, c = types.Constant(A), types.Constant(B), types.Constant(C)
        u = fn.random.uniform(range=[0, 1], shape=[2, 3, 4])  # per-sample values
        return [fn.stack(a, b), fn.stack(a, b, fn.cast(u, dtype=types.INT32) * 0 + a, axis=2), fn.stack(a, b, axis=-1),
                fn.cat(a, c, axis=1), fn.cat(a, b, axis=-1), fn.cat(a, b, b), u, fn.stack(u, a * 1.0, axis=1)]
    got, _ = _run(graph)
    want = [np.stack([A, B]), np.stack([A, B, A], axis=2), np.stack([A, B], axis=-1),
            np.concatenate([A, C], axis=1), np.concatenate([A, B], axis=-1), np.concatenate([A, B, B])]
    for k, w in enumerate(want):
        for s in range(BATCH):
            assert got[k][s].shape == w.shape, (k, got[k][s].shape, w.shape)
            np.testing.assert_array_equal(got[k][s], w.astype(got[k][s].dtype))
    for s in range(BATCH):
        u = got[6][s]
        np.testing.assert_array_equal(got[7][s], np.stack([u, A.astype(np.float32)], axis=1))


def test_stack_cat_errors():
    with pytest.raises(Exception, match="same type"):
        _run(lambda: [fn.stack(types.Constant(A), types.Constant(A.astype(np.float32)))])
    with pytest.raises(Exception, match="shape"):
        _run(lambda: [fn.cat(types.Constant(A), types.Constant(C), axis=0)])
    with pytest.raises(Exception, match="axis"):
        _run(lambda: [fn.stack(types.Constant(A), types.Constant(B), axis=4)])


def test_reshape_squeeze_expand_dims_match_numpy():
    def graph():
        a = types.Constant(A)
        rs = types.Constant(np.array([4, -1], np.int32))
        return [fn.reshape(a, shape=[6, 4]), fn.reshape(a, shape=[-1, 2]), fn.reshape(a, shape=rs),
                fn.reshape(a, rel_shape=[1, 2, 0.5]), fn.reshape(a, src_dims=[0, -1, 1, 2]),
                fn.squeeze(fn.reshape(a, shape=[1, 24, 1]), axes=[0, 2]),
                fn.expand_dims(a, axes=[0, 3]), fn.expand_dims(a, axes=[3])]
    got, _ = _run(graph)
    want = [A.reshape(6, 4), A.reshape(-1, 2), A.reshape(4, -1), A.reshape(2, 6, 2),
            A.reshape(2, 1, 3, 4), A.reshape(24), A.reshape(1, 2, 3, 1, 4), A[..., None]]
    for k, w in enumerate(want):
        for s in range(BATCH):
            assert got[k][s].shape == w.shape, (k, got[k][s].shape, w.shape)
            np.testing.assert_array_equal(got[k][s], w)


def test_reshape_layouts_and_errors(tmp_path):
    f = make_jpeg(str(tmp_path / "x.jpg"), 20, 30, seed=1)
    pipe = godali.Pipeline(batch_size=1, num_threads=1, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=[f])
        img = fn.decoders.image(data, output_type=types.RGB)
        flat = fn.reshape(img, shape=[-1, 3])
        same = fn.reshape(img, shape=[30, 20, 3])
        named = fn.reshape(img, shape=[600, 3], layout="XC")
        stacked = fn.stack(img, img, axis=0, axis_name="F")
        ex = fn.expand_dims(img, axes=[0], new_axis_names="F")
        sq = fn.squeeze(ex, axis_names="F")
        pipe.set_outputs(img, flat, same, named, stacked, ex, sq)
    outs = pipe.run()
    img = np.array(outs[0][0].as_array())
    np.testing.assert_array_equal(np.array(outs[1][0].as_array()), img.reshape(-1, 3))
    np.testing.assert_array_equal(np.array(outs[2][0].as_array()), img.reshape(30, 20, 3))
    assert [o.layout() for o in outs[1:]] == ["", "HWC", "XC", "FHWC", "FHWC", "HWC"]
    np.testing.assert_array_equal(np.array(outs[4][0].as_array()), np.stack([img, img]))
    pipe.close()
    with pytest.raises(Exception, match="elements"):
        _run(lambda: [fn.reshape(types.Constant(A), shape=[5, 5])])
    with pytest.raises(Exception, match="extent 1 can be removed"):
        _run(lambda: [fn.squeeze(types.Constant(A), axes=[1])])


def test_squeeze_expand_dims_dalis_edge_cases():
    # squeeze is a reshape: an empty input may lose any dimension (the volume stays 0);
    # expand_dims without new axes keeps the layout, and names a 0-D input's new axis.
    def src(shape, layout=""):
        return fn.external_source(lambda: [np.zeros(shape, np.uint8)] * BATCH, batch=True, layout=layout)

    def graph():
        return [fn.squeeze(src((100, 0, 0), "XYZ"), axis_names="X"),
                fn.squeeze(src((100, 0, 0), "XYZ"), axes=[1]),
                fn.expand_dims(src((10, 20), "HW"), axes=[]),
                fn.expand_dims(src(()), axes=[0], new_axis_names="X"),
                fn.expand_dims(src((2, 3), "HW"), axes=[2, 0], new_axis_names="AB")]
    pipe = godali.Pipeline(batch_size=BATCH, num_threads=1, seed=1)
    with pipe:
        pipe.set_outputs(*graph())
    outs = pipe.run()
    assert [o.layout() for o in outs] == ["YZ", "XZ", "HW", "X", "BHAW"]
    assert [np.array(o[0]).shape for o in outs] == [(0, 0), (100, 0), (10, 20), (1,), (1, 2, 1, 3)]
    pipe.close()
    with pytest.raises(Exception, match="Requested a shape with 100 elements but the original shape has 0"):
        _run(lambda: [fn.squeeze(src((100, 0, 0)), axes=[2, 1])])
    with pytest.raises(Exception, match="requires an input with a proper layout"):
        _run(lambda: [fn.expand_dims(src((2, 3)), axes=[0], new_axis_names="C")])


def test_peek_image_shape_matches_pil(tmp_path):
    sizes = [(37, 61), (64, 48), (25, 25)]
    files = [make_jpeg(str(tmp_path / ("p%d.jpg" % i)), h, w, seed=i) for i, (h, w) in enumerate(sizes)]
    files.append(make_jpeg(str(tmp_path / "gray.jpg"), 33, 44, seed=9, mode="L"))
    png = str(tmp_path / "a.png")
    Image.fromarray(np.zeros((19, 23, 4), np.uint8)).save(png)
    files.append(png)
    pipe = godali.Pipeline(batch_size=len(files), num_threads=2, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=files)
        pipe.set_outputs(fn.peek_image_shape(data), fn.peek_image_shape(data, dtype=types.INT32, image_type=types.GRAY),
                         fn.shapes(fn.decoders.image(data, output_type=types.RGB)))
    peek, gray, decoded = pipe.run()
    for i, f in enumerate(files):
        w, h = Image.open(f).size
        p = np.array(peek[i].as_array())
        assert p.dtype == np.int64 and list(p) == [h, w, 3]
        assert list(np.array(decoded[i].as_array())) == [h, w, 3]
        g = np.array(gray[i].as_array())
        assert g.dtype == np.int32 and list(g) == [h, w, 1]
    pipe.close()


def test_peek_image_shape_error_names_the_file(tmp_path):
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"this is not an image")
    pipe = godali.Pipeline(batch_size=1, num_threads=1, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=[str(bad)])
        pipe.set_outputs(fn.peek_image_shape(data))
    with pytest.raises(Exception, match="broken.jpg"):
        pipe.run()
    pipe.close()


def test_subscript_newaxis_as_dali():
    # DALI 2.4 gives these shapes and layouts for the same program (measured side by
    # side); None is a full slice in DALI's subscripts, not a new axis.
    data = np.arange(6, dtype=np.float32).reshape(2, 3)

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: [data, data + 1], layout="HW")
        return (x[godali.newaxis], x[:, godali.newaxis("C")], x[1, godali.newaxis],
                x[None, 1:], x[:, :, godali.newaxis])

    p = pipe()
    p.build()
    outs = p.run()
    want = [((2, 1, 2, 3), ""), ((2, 2, 1, 3), "HCW"), ((2, 1, 3), ""), ((2, 2, 2), "HW"),
            ((2, 2, 3, 1), "")]
    for out, (shape, layout) in zip(outs, want):
        assert out.as_array().shape == shape and out.layout() == layout
    assert np.array_equal(outs[1].as_array()[1, :, 0, :], data + 1)
    assert np.array_equal(outs[2].as_array()[0, 0], data[1])
    with pytest.raises(ValueError, match="single-character"):
        godali.newaxis("CH")
