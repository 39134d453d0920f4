"""sub_batch_size (docs/pipeline.md, "Sub-batches"): a batch python_function runs once per
part of the batch with that part's samples, the nodes after it too, and the outputs are
identical, byte for byte, to the whole-batch run (DALI's semantics, the default)."""

import numpy as np
import pytest

import godali.fn as fn
from godali import _lib
import godali.types as types
from conftest import make_jpeg
from godali.pipeline import Pipeline


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("subbatch")
    for i in range(10):
        make_jpeg(str(root / "c0" / ("im%02d.jpg" % i)), 50 + 6 * i, 40 + 3 * i, seed=i)
    return str(root)


def build(folder, sub, calls, batch=4):
    def darken(images):
        calls.append(len(images))
        # Per sample: the part's result is the whole batch's for those samples.
        return [np.ascontiguousarray(np.asarray(im)[::-1] // 2) for im in images]

    pipe = Pipeline(batch_size=batch, num_threads=2, device_id=None, seed=11,
                    sub_batch_size=sub)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, name="Reader")
        img = fn.decoders.image_random_crop(jpegs, random_area=[0.3, 1.0])
        dark = fn.python_function(img, function=darken, batch_processing=True)
        # Per-sample nodes after the function run in the second phase, part by part.
        out = fn.flip(fn.cast(dark, dtype=types.UINT8), horizontal=fn.random.coin_flip())
        pipe.set_outputs(out, labels, img)
    return pipe


def run(pipe, iters):
    res = []
    for _ in range(iters):
        out = pipe.run()
        res.append([np.array(o.as_array()) if o.is_dense_tensor() else
                    [np.array(o[i]) for i in range(len(o))] for o in out])
    return res


def same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_parts_identical_to_whole_batch(folder):
    whole_calls, base = [], None
    with build(folder, None, whole_calls) as pipe:
        base = run(pipe, 5)
    assert whole_calls[:5] == [4] * 5  # DALI's semantics: the whole batch per call
    for sub, sizes in ((1, [1, 1, 1, 1]), (3, [3, 1]), (4, [4]), (100, [4])):
        calls = []
        with build(folder, sub, calls) as pipe:
            got = run(pipe, 5)
        assert same(base, got), "sub_batch_size=%d differs from the whole-batch run" % sub
        assert calls[:5 * len(sizes)] == sizes * 5, (sub, calls)


def test_bad_values(folder):
    for bad in (0, -1, 2.5, "2", True):
        with pytest.raises(ValueError, match="sub_batch_size must be None"):
            Pipeline(batch_size=4, num_threads=1, device_id=None, sub_batch_size=bad)
    # An operator that needs the whole batch (pad: to the batch's largest sample) refuses.
    pipe = Pipeline(batch_size=4, num_threads=1, device_id=None, sub_batch_size=2)
    with pipe:
        jpegs, _ = fn.readers.file(file_root=folder)
        pipe.set_outputs(fn.pad(fn.decoders.image(jpegs), axes=(0, 1)))
    with pytest.raises(Exception, match=r"sub_batch_size 2: node .*pad.* needs the whole batch"):
        pipe.build()


def build_mixed(folder, sub):
    import godali

    def gray(images):
        return [np.ascontiguousarray(np.asarray(im).mean(axis=2).astype(np.uint8))
                for im in images]

    pipe = godali.Pipeline(batch_size=4, num_threads=2, device_id=0, seed=5,
                           sub_batch_size=sub)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, name="Reader")
        host = fn.python_function(fn.decoders.image(jpegs), function=gray,
                                  batch_processing=True)
        dev = fn.resize(fn.decoders.image(jpegs, device="mixed"), resize_x=16, resize_y=16)
        pipe.set_outputs(host, dev, labels)
    return pipe


@pytest.mark.skipif(_lib.get().flavour != "cuda", reason="needs the CUDA flavour (a GPU, "
                    "or the emulator: make test-cuda-emu)")
def test_parts_with_a_gpu_stage(folder):
    """The CUDA flavour: the host part of a pipeline with a GPU stage runs in parts, the
    GPU stage over the whole batch; the host outputs are the whole-batch run's (the
    device output is checked for its shape: reading it back needs torch with CUDA)."""
    res = {}
    for sub in (None, 3):
        with build_mixed(folder, sub) as pipe:
            out = []
            for _ in range(4):
                host, dev, labels = pipe.run()
                assert dev.device == "gpu" and tuple(dev.shape()[0]) == (16, 16, 3)
                out.append([[np.array(host[i]) for i in range(4)],
                            np.array(labels.as_array())])
            res[sub] = out
    assert same(res[None], res[3])
