"""decoders.image -> resize -> crop_mirror_normalize: the decoder decodes only the window of a
JPEG the fused resize + crop reads (its filters' support), in place. The outputs must equal
the full-decode path's bit for bit (tolerance: 0), whatever the image (odd sizes, 4:4:4,
4:2:2, 4:2:0, 4:4:0, 4:1:1, 4:1:0, grey, CMYK/YCCK, arithmetic, progressive, progressive
with libjpeg's block smoothing at work, EXIF orientations 1-8) and whatever the resize and
crop (every filter, antialias on and off,
sizes up and down, resize ROIs, crops inside and partly outside, mirror, output types).

The reference is the same graph with the decoded and the resized images also pipeline
outputs: then the decoder has more than one consumer and decodes the whole image, and resize
is not fused into crop_mirror_normalize (the paths test_outputs and test_tv_exact check
against PIL and torchvision).
"""

import os

import numpy as np
import pytest
from PIL import Image

import godali
from godali import fn, types

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")
FILES = ["corpus/pillow/flower.jpg", "corpus/pillow/iptc.jpg", "corpus/pillow/flower2.jpg",
         "corpus/pillow/hopper_gray.jpg", "corpus/pillow/app13-multiple.jpg",
         "corpus/pillow/pil_sample_cmyk.jpg", "corpus/libjpeg-turbo/testimgari.jpg",
         "corpus/pillow/hopper_orientation_6.jpg", "corpus/pillow/hopper_orientation_7.jpg",
         "sampling/s440_203x131.jpg", "sampling/s440_97x75_progressive.jpg",
         "sampling/s411_161x109.jpg", "sampling/s410_150x99.jpg", "sampling/s420_arith_123x87.jpg",
         "sampling/prog_smooth420_211x157.jpg", "sampling/prog_smooth444_170x131.jpg"]

# (PIL mode, save options) of the generated images.
KINDS = [("RGB", {"subsampling": 0}), ("RGB", {"subsampling": 1}), ("RGB", {"subsampling": 2}),
         ("L", {}), ("RGB", {"subsampling": 2, "progressive": True}),
         ("RGB", {"subsampling": 0, "progressive": True}), ("CMYK", {})]


def _photo(rng, h, w):
    y = np.linspace(0, 1, h)[:, None]
    x = np.linspace(0, 1, w)[None, :]
    a = np.stack([128 + 100 * np.sin(6.28 * (x * rng.uniform(1, 4) + y * rng.uniform(0.3, 2))),
                  128 + 100 * np.cos(6.28 * y * rng.uniform(1, 4)) * np.ones_like(x),
                  255 * x * y], -1)
    a = a + rng.normal(0, 25, a.shape)
    a[rng.integers(0, h), :] = 255  # sharp edges, which the filters and chroma smear
    a[:, rng.integers(0, w)] = 0
    return np.clip(a, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    d = tmp_path_factory.mktemp("valwindow")
    rng = np.random.default_rng(28)
    out = [os.path.join(CORPUS, f) for f in FILES]
    for i in range(21):
        mode, opts = KINDS[i % len(KINDS)]
        h, w = (int(v) for v in rng.integers(9, 230, 2))
        im = Image.fromarray(_photo(rng, h, w)).convert(mode)
        exif = Image.Exif()
        exif[0x0112] = 1 + i % 8
        path = str(d / ("g%d.jpg" % i))
        im.save(path, quality=int(rng.integers(60, 98)), exif=exif.tobytes(), **opts)
        out.append(path)
    return out


def _config(rng):
    """Random resize and crop_mirror_normalize arguments, and the decoder's output type."""
    interp = [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC, types.INTERP_LANCZOS3,
              types.INTERP_TRIANGULAR][rng.integers(0, 5)]
    rs = {"interp_type": interp, "antialias": bool(rng.integers(0, 4) != 0)}
    cmn = {"mean": [0.485 * 255, 0.456 * 255, 0.406 * 255], "std": [0.229 * 255, 0.224 * 255, 0.225 * 255],
           "crop_pos_x": float(rng.uniform(0, 1)), "crop_pos_y": float(rng.uniform(0, 1)),
           "mirror": int(rng.integers(0, 2)), "output_layout": ["CHW", "HWC"][rng.integers(0, 2)],
           "dtype": [types.FLOAT, types.FLOAT16, types.UINT8][rng.integers(0, 3)]}
    kind = rng.integers(0, 5)
    if kind <= 1:  # the validation pipeline: shorter side, a crop that fits
        s = int(rng.integers(12, 300))
        rs["resize_shorter"] = s
        c = int(rng.integers(4, s + 1))
        cmn["crop"] = (c, int(rng.integers(4, s + 1)))
        if kind == 1:
            cmn["crop_rounding"] = "torchvision"
            rs["size_rounding"] = "truncate"
    else:
        if kind == 2:
            rs["resize_x"], rs["resize_y"] = (float(v) for v in rng.uniform(5, 320, 2))
        elif kind == 3:
            rs["size"] = [int(v) for v in rng.integers(5, 300, 2)]
            rs["mode"] = ["not_smaller", "not_larger", "stretch"][rng.integers(0, 3)]
        else:
            rs["resize_longer"] = int(rng.integers(10, 300))
            rs["roi_start"], rs["roi_end"] = [float(v) for v in rng.uniform(0, 0.3, 2)], [float(v) for v in rng.uniform(0.6, 1, 2)]
            rs["roi_relative"] = True
            rs["subpixel_scale"] = bool(rng.integers(0, 2))
        cmn["crop"] = tuple(int(v) for v in rng.integers(3, 260, 2))
        cmn["out_of_bounds_policy"] = "pad"
    out = [types.RGB, types.RGB, types.GRAY, types.BGR][rng.integers(0, 4)]
    if out == types.GRAY:
        cmn["mean"], cmn["std"] = [118.0], [57.0]
    return rs, cmn, out


def _run(files, rs, cmn, out, reference):
    pipe = godali.Pipeline(batch_size=len(files), num_threads=2, seed=1)
    with pipe:
        data, _ = fn.readers.file(files=files)
        img = fn.decoders.image(data, output_type=out)
        resized = fn.resize(img, **rs)
        norm = fn.crop_mirror_normalize(resized, **cmn)
        pipe.set_outputs(*((norm, resized, img) if reference else (norm,)))
    res = pipe.run()
    got = [res[0][i].as_array().copy() for i in range(len(files))]
    pipe.close()
    return got


def test_window_decode_equals_full_decode(jpegs):
    rng = np.random.default_rng(2028)
    for k in range(14):
        rs, cmn, out = _config(rng)
        got = _run(jpegs, rs, cmn, out, reference=False)
        want = _run(jpegs, rs, cmn, out, reference=True)
        for f, g, w in zip(jpegs, got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (k, f, rs, cmn)
            if not np.array_equal(g.view(np.uint8), w.view(np.uint8)):
                bad = np.argwhere(g.view(np.uint8) != w.view(np.uint8))
                pytest.fail("config %d %s %s %s: %s differs from the full decode at %d bytes, first %s"
                            % (k, rs, cmn, out, os.path.basename(f), len(bad), bad[0].tolist()))


def test_window_decode_fails_on_data_cut_below_the_window(tmp_path):
    """A JPEG cut short below the window fails as the full decode does (the rows below the
    window are entropy-decoded, not dropped)."""
    path = str(tmp_path / "tall.jpg")
    Image.fromarray(_photo(np.random.default_rng(5), 400, 150)).save(path, quality=92)
    data = open(path, "rb").read()
    for cut in (len(data) * 92 // 100, len(data) - 2):
        short = str(tmp_path / ("cut%d.jpg" % cut))
        open(short, "wb").write(data[:cut])
        msgs = []
        for reference in (False, True):
            with pytest.raises(Exception) as e:
                _run([short], {"resize_shorter": 64}, {"crop": (48, 48)}, types.RGB, reference)
            msgs.append(str(e.value))
        assert "Premature end of JPEG file" in msgs[1], msgs
        assert msgs[0] == msgs[1]
