"""Pipeline values as operator arguments (DALI's "TensorList" arguments): each operator
given a per-sample argument from a DataNode must equal, sample by sample, the same
operator given that sample's value as a constant. Exact equality: both paths run the
same kernels on the same decoded pixels."""

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70), (48, 33)]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("arginputs")
    return [make_jpeg(str(d / ("p%d.jpg" % i)), h, w, seed=70 + i) for i, (h, w) in enumerate(SIZES)]


def _run(files, graph, seed=9, decoder=None):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=2, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        img = (decoder or (lambda d: fn.decoders.image(d, output_type=types.RGB)))(data)
        outs = graph(img)
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[np.array(o[i].as_array()) for i in range(len(files))] for o in res]
    pipe.close()
    return got


def _one(file, graph):
    return [o[0] for o in _run([file], graph)]


def _vals(x):
    return [float(v) for v in np.asarray(x).reshape(-1)]


def test_resize_sizes_from_pipeline_values(jpegs):
    def graph(img):
        rx = fn.random.uniform(range=[12, 70])
        ry = fn.random.uniform(range=[12, 70])
        sz = fn.random.uniform(range=[10, 50], shape=[2])
        sh = fn.random.uniform(range=[16, 40])
        return (rx, ry, sz, sh, fn.resize(img, resize_x=rx, resize_y=ry), fn.resize(img, size=sz),
                fn.resize(img, resize_shorter=sh), fn.resize(img, resize_x=rx))
    rx, ry, sz, sh, a, b, c, d = _run(jpegs, graph)
    assert len({a[i].shape for i in range(len(jpegs))}) > 1  # the sizes do vary
    for i, f in enumerate(jpegs):
        x, y, (h, w), s = _vals(rx[i])[0], _vals(ry[i])[0], _vals(sz[i]), _vals(sh[i])[0]

        def ref(img):
            return (fn.resize(img, resize_x=x, resize_y=y), fn.resize(img, size=[h, w]),
                    fn.resize(img, resize_shorter=s), fn.resize(img, resize_x=x))
        want = _one(f, ref)
        assert a[i].shape == (round(y), round(x), 3)
        for got, exp in zip((a[i], b[i], c[i], d[i]), want):
            assert got.shape == exp.shape
            np.testing.assert_array_equal(got, exp)


def test_resize_from_values_feeding_cmn_and_random_crop_decoder(jpegs):
    """A per-sample resize is neither fused into crop_mirror_normalize nor used as the
    decoder's size hint: the result equals the unfused constant pipeline."""
    def graph(img):
        sz = fn.random.uniform(range=[24, 60], shape=[2])
        r = fn.resize(img, size=sz)
        return (sz, img, fn.crop_mirror_normalize(r, crop=(20, 20), mean=[10, 20, 30], std=[2, 3, 4]))
    sz, imgs, out = _run(jpegs, graph)
    for i, f in enumerate(jpegs):
        h, w = _vals(sz[i])

        def ref(img):
            r = fn.resize(img, size=[h, w])
            return (r, fn.crop_mirror_normalize(r, crop=(20, 20), mean=[10, 20, 30], std=[2, 3, 4]))
        _, want = _one(f, ref)  # r is an output too, so the reference is not fused
        np.testing.assert_array_equal(out[i], want)

    def rc(d):
        return fn.decoders.image_random_crop(d, output_type=types.RGB)
    got = _run(jpegs, lambda img: (fn.random.uniform(range=[8, 30], shape=[2]),) +
               (fn.resize(img, size=fn.random.uniform(range=[8, 30], shape=[2])),), decoder=rc)
    for i in range(len(jpegs)):
        assert got[1][i].ndim == 3 and got[1][i].shape[2] == 3


def test_cmn_mean_std_crop_from_nodes(jpegs):
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]

    def graph(img):
        m = types.Constant(np.array(mean, np.float32))
        s = types.Constant(np.array(std, np.float32))
        crop = types.Constant(np.array([20, 24], np.int32))
        return (fn.crop_mirror_normalize(img, mean=m, std=s, crop=crop),
                fn.crop_mirror_normalize(img, mean=mean, std=std, crop=(20, 24)),
                fn.crop_mirror_normalize(img, mean=m * 1, std=s, crop_h=types.Constant(np.array(20, np.int32)) * 1, crop_w=23),
                fn.crop_mirror_normalize(img, mean=mean, std=std, crop_h=20, crop_w=23))
    a, b, c, d = _run(jpegs, graph)
    for i in range(len(jpegs)):
        assert a[i].shape == (3, 20, 24)
        np.testing.assert_array_equal(a[i], b[i])
        np.testing.assert_array_equal(c[i], d[i])


def test_crop_size_per_sample(jpegs):
    def graph(img):
        ch = fn.random.uniform(range=[5, 30])
        cw = fn.random.uniform(range=[5, 30])
        return ch, cw, fn.crop(img, crop_h=ch, crop_w=cw, crop_pos_x=0.25)
    ch, cw, out = _run(jpegs, graph)
    for i, f in enumerate(jpegs):
        h, w = _vals(ch[i])[0], _vals(cw[i])[0]
        want, = _one(f, lambda img: (fn.crop(img, crop_h=h, crop_w=w, crop_pos_x=0.25),))
        assert out[i].shape == (int(h), int(w), 3)
        np.testing.assert_array_equal(out[i], want)


def test_random_args_per_sample():
    n = 64
    pipe = godali.Pipeline(batch_size=n, num_threads=1, seed=3)
    with pipe:
        lo = fn.random.uniform(range=[0, 10])
        rg = types.Constant(np.array([0.0, 1.0], np.float32)) + lo  # [lo, lo + 1)
        u = fn.random.uniform(range=rg)
        p = fn.random.uniform(values=[0.0, 1.0])
        c = fn.random.coin_flip(probability=p)
        pipe.set_outputs(lo, u, p, c)
    lo, u, p, c = [[np.array(o[i].as_array()) for i in range(n)] for o in pipe.run()]
    pipe.close()
    for i in range(n):
        assert lo[i] <= u[i] < lo[i] + 1
        assert int(c[i]) == int(p[i])  # probability 0 or 1: the draw is certain
    assert 0 < sum(int(x) for x in p) < n


def test_flip_from_coin_flip(jpegs):
    def graph(img):
        c = fn.random.coin_flip()
        return img, c, fn.flip(img, horizontal=c, vertical=0)
    imgs, c, out = _run(jpegs * 2, graph)
    for i in range(len(imgs)):
        want = imgs[i][:, ::-1] if int(c[i]) else imgs[i]
        np.testing.assert_array_equal(out[i], want)
    assert 0 < sum(int(x) for x in c) < len(c)


def test_per_sample_errors_name_the_argument(jpegs):
    def graph(img):
        return (fn.resize(img, size=types.Constant(np.array([10, 20, 30], np.float32))),)
    with pytest.raises(Exception, match="size"):
        _run(jpegs, graph)
    with pytest.raises(TypeError, match="max_size"):
        _run(jpegs, lambda img: (fn.resize(img, resize_x=20, max_size=fn.random.uniform(range=[1, 2])),))


def test_gaussian_blur_sigma_pair_per_sample(jpegs):
    def graph(img):
        sig = fn.random.uniform(range=[0.5, 3], shape=[2])
        one = fn.random.uniform(range=[0.5, 3])
        return sig, one, fn.gaussian_blur(img, sigma=sig), fn.gaussian_blur(img, sigma=one)
    sig, one, a, b = _run(jpegs, graph)
    for i, f in enumerate(jpegs):
        sy, sx = _vals(sig[i])
        s1 = _vals(one[i])[0]
        want = _one(f, lambda img: (fn.gaussian_blur(img, sigma=[sy, sx]), fn.gaussian_blur(img, sigma=s1)))
        np.testing.assert_array_equal(a[i], want[0])
        np.testing.assert_array_equal(b[i], want[1])
