"""GPU tests of the CUDA flavour through the Python package: outputs are kDLCUDA tensors
that torch takes without a copy, ordered by the DLPack stream protocol. Skipped without a
device and the CUDA flavour (conftest.py)."""

import numpy as np
import pytest

import godali
from godali import fn, types
from conftest import need

torch = need("torch")

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def rn50(folder, batch_size=4, seed=5, hints=True):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=2, device_id=0, seed=seed)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True,
                                        pad_last_batch=True, name="Reader")
        extra = {"preallocate_width_hint": 120, "preallocate_height_hint": 120} if hints else {}
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               random_area=[0.1, 1.0], **extra)
        images = fn.resize(images, resize_x=32, resize_y=32,
                           interp_type=types.INTERP_TRIANGULAR)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          crop=(32, 32), mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        pipe.set_outputs(images, labels)
    pipe.build()
    return pipe


@pytest.mark.gpu
def test_resnet50_pipeline_into_torch_cuda_tensor(image_folder):
    pipe = rn50(image_folder)
    for _ in range(5):
        images, labels = pipe.run()
        assert images.device == "gpu" and labels.device == "cpu"
        assert images.__dlpack_device__() == (2, 0)
        x = torch.from_dlpack(images)
        assert x.is_cuda and x.dtype == torch.float32 and tuple(x.shape) == (4, 3, 32, 32)
        assert x.data_ptr() == images.data_ptr()
        lo = torch.tensor([-m / s for m, s in zip(MEAN, STD)], device="cuda").view(1, 3, 1, 1)
        hi = torch.tensor([(255 - m) / s for m, s in zip(MEAN, STD)],
                          device="cuda").view(1, 3, 1, 1)
        assert bool(((x >= lo - 1e-4) & (x <= hi + 1e-4)).all())
        assert torch.from_dlpack(labels).shape[0] == 4
    stats = pipe.pool_stats("gpu")
    assert stats["allocations"] > 0 and stats["acquires"] > stats["allocations"]
    pipe.close()


@pytest.mark.gpu
def test_consumer_stream_is_ordered_after_the_batch(image_folder):
    pipe = rn50(image_folder, seed=9)
    images, _ = pipe.run()
    ref = torch.from_dlpack(images).clone()  # current (default) stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # torch passes s to __dlpack__: s waits for the batch, the host does not.
        x = torch.from_dlpack(images)
        total = (x * 2).sum()
    s.synchronize()
    torch.cuda.synchronize()
    assert torch.allclose(total, (ref * 2).sum())
    del x, images
    pipe.close()


@pytest.mark.gpu
def test_device_pool_stops_allocating(image_folder):
    pipe = rn50(image_folder, seed=3)
    held = []

    def epochs(n):
        for _ in range(n):
            while True:
                images, labels = pipe.run()
                held.append(torch.from_dlpack(images).sum())
                if pipe.batch_info.last_in_epoch:
                    break  # run() would go on into the next epoch, as DALI's
        torch.cuda.synchronize()
        held.clear()

    epochs(3)
    warm = pipe.pool_stats("gpu")["allocations"]
    epochs(3)
    assert pipe.pool_stats("gpu")["allocations"] == warm
    pipe.close()


@pytest.mark.gpu
def test_gpu_resize_matches_cpu_through_dot_gpu(image_folder):
    def run(gpu):
        pipe = godali.Pipeline(batch_size=5, num_threads=2, device_id=0, seed=1)
        with pipe:
            jpegs, labels = fn.readers.file(file_root=image_folder)
            images = fn.decoders.image(jpegs, device="cpu")
            if gpu:
                images = images.gpu()
            pipe.set_outputs(fn.resize(images, resize_x=40, resize_y=30), labels.gpu()
                             if gpu else labels)
        images, labels = pipe.run()
        out = images.as_cpu().as_array(), labels.as_cpu().as_array()
        pipe.close()
        return out

    (a, la), (b, lb) = run(False), run(True)
    assert a.shape == b.shape == (5, 30, 40, 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(la, lb)
