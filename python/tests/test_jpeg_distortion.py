"""jpeg_compression_distortion against PIL: Image.save(format="JPEG", quality=q,
subsampling=2 (4:2:0, libjpeg's default, which DALI's OpenCV encoder uses too)) and
reopening. Both run libjpeg with the same settings; measured difference: 0 levels
(asserted bit-exact; should another libjpeg build round differently, the failure message
says by how much).
"""

import io

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types

from conftest import make_jpeg

SIZES = [(40, 56), (53, 47), (64, 64), (31, 70), (1, 1), (17, 3)]


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("jpegdist")
    files = [make_jpeg(str(d / ("j%d.jpg" % i)), h, w, seed=150 + i) for i, (h, w) in enumerate(SIZES)]
    rnd = np.random.default_rng(1).integers(0, 256, (333, 517, 3), dtype=np.uint8)  # grows the buffer
    Image.fromarray(rnd).save(str(d / "rnd.png"))
    return files + [str(d / "rnd.png")]


def _run(files, graph, threads=2):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=threads, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=files)
        outs = graph(fn.decoders.image(data, output_type=types.RGB))
        pipe.set_outputs(*outs)
    res = pipe.run()
    got = [[o[i].as_array().copy() for i in range(len(files))] for o in res]
    pipe.close()
    return got


def _pil(img, q):
    b = io.BytesIO()
    Image.fromarray(img).save(b, format="JPEG", quality=q, subsampling=2)
    return np.asarray(Image.open(io.BytesIO(b.getvalue())).convert("RGB"))


@pytest.mark.parametrize("q", [1, 10, 50, 75, 95, 100])
def test_matches_pil_roundtrip(jpegs, q):
    kw = {} if q == 50 else {"quality": q}  # 50 is DALI's default
    imgs, got = _run(jpegs, lambda img: (img, fn.jpeg_compression_distortion(img, **kw)))
    for i, img in enumerate(imgs):
        want = _pil(img, q)
        assert got[i].shape == img.shape and got[i].dtype == np.uint8
        d = np.abs(got[i].astype(int) - want.astype(int))
        assert d.max() == 0, (q, i, img.shape, int(d.max()), float(d.mean()))
    if q < 90:
        big = imgs[-1]
        assert np.abs(got[-1].astype(int) - big).mean() > 1  # the distortion is there


def test_per_sample_quality_and_errors(jpegs):
    imgs, qs, got = _run(jpegs, lambda img: (lambda q: (img, q, fn.jpeg_compression_distortion(img, quality=q)))(
        fn.random.uniform(values=[5, 30, 90], dtype=types.INT32)))
    for i, img in enumerate(imgs):
        np.testing.assert_array_equal(got[i], _pil(img, int(qs[i])))
    with pytest.raises(Exception, match="quality"):
        _run(jpegs, lambda img: (fn.jpeg_compression_distortion(img, quality=0),))
    with pytest.raises(Exception, match="quality"):
        _run(jpegs, lambda img: (fn.jpeg_compression_distortion(img, quality=fn.random.uniform(values=[50, 101], dtype=types.INT32)),))
