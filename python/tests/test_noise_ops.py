"""noise.gaussian, noise.salt_and_pepper, noise.shot: DALI's documented formulas checked by
statistics (the noise is random, so no bit reference exists), determinism across
num_threads, and saturation to the input's type.

Bounds: sample means and variances within 6 standard errors of the distribution's (the
chance of a false failure is below 1e-8 per check); the salt/pepper/kept proportions by a
chi-squared test at p = 1e-6 (2 degrees of freedom: 27.6).
"""

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import make_jpeg

SIZES = [(120, 160), (97, 131), (128, 128), (75, 210)]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("noise")
    return [make_jpeg(str(d / ("n%d.jpg" % i)), h, w, seed=90 + i) for i, (h, w) in enumerate(SIZES)]


def _run(files, graph, threads=2, seed=5):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=threads, seed=seed)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[o[i].as_array().copy() for i in range(len(files))] for o in res]
    pipe.close()
    return got


def _within(x, want, se, what):
    assert abs(x - want) <= 6 * se + 1e-9, (what, x, want, se)


def test_gaussian_statistics_float(jpegs):
    mean, sd = 3.0, 7.0
    imgs, f, g = _run(jpegs, lambda img: (img, fn.cast(img, dtype=types.FLOAT),
                                          fn.noise.gaussian(fn.cast(img, dtype=types.FLOAT), mean=mean, stddev=sd)))
    d = np.concatenate([(g[i].astype(np.float64) - f[i]).ravel() for i in range(len(imgs))])
    assert g[0].dtype == np.float32 and g[0].shape == imgs[0].shape
    n = d.size
    _within(d.mean(), mean, sd / np.sqrt(n), "mean")
    _within(d.var(), sd * sd, sd * sd * np.sqrt(2.0 / n), "variance")
    # normality: the share within one standard deviation (0.6827)
    p1 = np.mean(np.abs(d - mean) <= sd)
    _within(p1, 0.682689, np.sqrt(0.682689 * 0.317311 / n), "share within 1 sd")
    # independent draws: neighbouring values uncorrelated
    r = np.corrcoef(d[:-1], d[1:])[0, 1]
    assert abs(r) < 6 / np.sqrt(n), r


def test_gaussian_uint8_rounds_and_saturates(jpegs):
    imgs, g, z, big = _run(jpegs, lambda img: (img, fn.noise.gaussian(img, stddev=4.0),
                                              fn.noise.gaussian(img, mean=0.4, stddev=0.0),
                                              fn.noise.gaussian(img, mean=-300.0, stddev=10.0)))
    for i, img in enumerate(imgs):
        assert g[i].dtype == np.uint8 and g[i].shape == img.shape
        # stddev 0: out = round(in + 0.4) = in exactly
        np.testing.assert_array_equal(z[i], img)
        assert (big[i] == 0).all()
    # noise on values away from the bounds: variance of the rounded noise ~ 16 + 1/12
    d = np.concatenate([(g[i].astype(np.float64) - imgs[i])[(imgs[i] > 30) & (imgs[i] < 225)] for i in range(len(imgs))])
    _within(d.mean(), 0.0, 4 / np.sqrt(d.size), "mean")
    _within(d.var(), 16 + 1 / 12, 16 * np.sqrt(2.0 / d.size) * 1.1, "variance")
    assert (d == np.round(d)).all()


def test_shot_statistics(jpegs):
    for factor in (0.5, 4.0, 20.0):  # Poisson means from 0 to 510: both samplers
        imgs, f, s = _run(jpegs, lambda img: (img, fn.cast(img, dtype=types.FLOAT),
                                              fn.noise.shot(fn.cast(img, dtype=types.FLOAT), factor=factor)))
        lam = np.concatenate([x.ravel() for x in f]).astype(np.float64) / factor
        k = np.concatenate([x.ravel() for x in s]).astype(np.float64) / factor
        assert np.allclose(k, np.round(k), atol=1e-3), "outputs are multiples of factor"
        n = k.size
        # E[k - lam] = 0, Var = mean(lam); E[(k-lam)^2 - lam] = 0 with Var = 2 lam^2 + lam (Poisson)
        _within((k - lam).mean(), 0.0, np.sqrt(lam.mean() / n), ("mean", factor))
        e2 = (k - lam) ** 2 - lam
        _within(e2.mean(), 0.0, np.sqrt((2 * lam ** 2 + lam).mean() / n), ("variance", factor))
        # zero-mean pixels stay zero
        assert (k[lam == 0] == 0).all()
    imgs, same, u8 = _run(jpegs, lambda img: (img, fn.noise.shot(img, factor=0.0), fn.noise.shot(img, factor=60.0)))
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(same[i], img)
        assert u8[i].dtype == np.uint8
        assert np.isin(u8[i], [0, 60, 120, 180, 240, 255]).all()  # 300 and more saturate to 255


def _sp_counts(imgs, out, salt, pepper, per_pixel):
    kept = sal = pep = 0
    for img, o in zip(imgs, out):
        if per_pixel:
            # all channels of a pixel take the same fate
            sp = (o == salt).all(-1) & ~(img == salt).all(-1)
            pp = (o == pepper).all(-1) & ~(img == pepper).all(-1)
            ch = (o != img).any(-1)
            assert (ch <= (sp | pp)).all()
            k = ~(sp | pp)
            # pixels equal to salt/pepper already are ambiguous: drop them
            amb = (img == salt).all(-1) | (img == pepper).all(-1)
            kept += (k & ~amb).sum(); sal += (sp & ~amb).sum(); pep += (pp & ~amb).sum()
        else:
            amb = (img == salt) | (img == pepper)
            sp, pp = (o == salt) & ~amb, (o == pepper) & ~amb
            assert ((o != img) <= ((o == salt) | (o == pepper))).all()
            kept += ((~sp & ~pp) & ~amb).sum(); sal += sp.sum(); pep += pp.sum()
    return np.array([kept, sal, pep], np.float64)


def _chi2(counts, probs):
    want = counts.sum() * np.asarray(probs)
    return float(((counts - want) ** 2 / want).sum())


def test_salt_and_pepper_proportions(jpegs):
    prob, svp = 0.2, 0.3
    imgs, a, b, c = _run(jpegs, lambda img: (img, fn.noise.salt_and_pepper(img, prob=prob, salt_vs_pepper=svp),
                                             fn.noise.salt_and_pepper(img, prob=prob, salt_vs_pepper=svp, per_channel=True),
                                             fn.noise.salt_and_pepper(img, prob=0.5, salt_val=200, pepper_val=-5)))
    probs = [1 - prob, prob * svp, prob * (1 - svp)]
    ca = _sp_counts(imgs, a, 255, 0, True)
    assert _chi2(ca, probs) < 27.6, ca
    cb = _sp_counts(imgs, b, 255, 0, False)
    assert _chi2(cb, probs) < 27.6, cb
    # per_channel: channels of a pixel independent, so some pixels are partly changed
    assert any(((b[i] != imgs[i]).any(-1) & ~(b[i] != imgs[i]).all(-1)).any() for i in range(len(imgs)))
    cc = _sp_counts(imgs, c, 200, 0, True)  # pepper -5 saturates to 0
    assert _chi2(cc, [0.5, 0.25, 0.25]) < 27.6, cc
    # float input: default salt 1.0 and pepper -1.0
    imgs, f, s = _run(jpegs, lambda img: (img, fn.cast(img, dtype=types.FLOAT) * 0.001,
                                          fn.noise.salt_and_pepper(fn.cast(img, dtype=types.FLOAT) * 0.001, prob=0.3)))
    changed = np.concatenate([(s[i] != f[i]).ravel() for i in range(len(imgs))])
    vals = np.concatenate([s[i][s[i] != f[i]] for i in range(len(imgs))])
    assert set(np.unique(vals)) <= {-1.0, 1.0}
    assert abs(changed.mean() - 0.3) < 6 * np.sqrt(0.3 * 0.7 / (changed.size / 3))


def test_noise_deterministic_across_threads(jpegs):
    def graph(img):
        return (fn.noise.gaussian(img, stddev=5.0), fn.noise.shot(img, factor=3.0),
                fn.noise.salt_and_pepper(img, prob=0.1))

    a = _run(jpegs, graph, threads=1, seed=11)
    b = _run(jpegs, graph, threads=3, seed=11)
    c = _run(jpegs, graph, threads=2, seed=12)
    for x, y, z in zip(a, b, c):
        for i in range(len(jpegs)):
            np.testing.assert_array_equal(x[i], y[i])
        assert any((x[i] != z[i]).any() for i in range(len(jpegs)))


def test_noise_per_sample_args_and_errors(jpegs):
    imgs, sd, g = _run(jpegs, lambda img: (lambda s: (img, s, fn.noise.gaussian(fn.cast(img, dtype=types.FLOAT), stddev=s)))(
        fn.random.uniform(range=[1.0, 20.0])))
    for i in range(len(imgs)):
        d = (g[i] - imgs[i]).ravel().astype(np.float64)
        s = float(sd[i])
        _within(d.std(), s, s * np.sqrt(0.5 / d.size) * 1.2, "per-sample stddev")
    with pytest.raises(Exception, match="stddev"):
        _run(jpegs, lambda img: (fn.noise.gaussian(img, stddev=-1.0),))
    with pytest.raises(Exception, match="prob"):
        _run(jpegs, lambda img: (fn.noise.salt_and_pepper(img, prob=1.5),))
    with pytest.raises(Exception, match="factor"):
        _run(jpegs, lambda img: (fn.noise.shot(img, factor=-2.0),))
