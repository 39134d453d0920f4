"""godali.plugin.pytorch.experimental.proxy (DALI's DALI proxy): a pipeline fed from a
torchvision Dataset's transform, compared with the same pipeline over readers.file."""

import os

import numpy as np
import pytest
import torch
from torchvision.datasets import ImageFolder

from conftest import make_jpeg
from godali import _lib, fn, types
from godali.pipeline import pipeline_def
from godali.plugin.pytorch.experimental import proxy as dali_proxy

BS = 4
H, W = 24, 32


def read_bytes(path):
    # ImageFolder's loader: the encoded file, decoded later by the pipeline.
    return np.fromfile(path, dtype=np.uint8)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    sizes = [(64, 80), (72, 96), (96, 72), (50, 120), (88, 88), (120, 60), (64, 64),
             (100, 76), (48, 56), (80, 100), (70, 70)]  # 11 files: the last batch has 3
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("c%d" % (i % 3)) / ("im%02d.jpg" % i)), h, w, seed=60 + i)
    return str(root)


def augment(jpegs):
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    return fn.resize(images, resize_x=W, resize_y=H)


@pipeline_def(batch_size=BS, num_threads=2, device_id=None, seed=5)
def proxy_pipe():
    jpegs = fn.external_source(name="images", no_copy=True)
    return augment(jpegs)


@pipeline_def(batch_size=BS, num_threads=2, device_id=None, seed=5)
def reader_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=False, name="r")
    return augment(jpegs), labels


def reference(root, n):
    """Every file's output and label through readers.file, in the reader's (sorted) order."""
    pipe = reader_pipe(root)
    images, labels = [], []
    while len(images) < n:
        out, lab = pipe.run()
        for i in range(len(out)):
            images.append(np.array(out[i]))
            labels.append(int(np.array(lab[i]).reshape(-1)[0]))
    return images[:n], labels[:n]


@pytest.mark.parametrize("workers", [0, 2])
def test_matches_readers_file(folder, workers):
    server = dali_proxy.DALIServer(proxy_pipe())
    ds = ImageFolder(folder, loader=read_bytes, transform=server.proxy)
    loader = dali_proxy.DataLoader(server, ds, batch_size=BS, num_workers=workers,
                                   shuffle=False)
    ref_images, ref_labels = reference(folder, len(ds))
    # ImageFolder and readers.file both list classes and files in sorted order.
    assert [t for _, t in ds.samples] == ref_labels
    got, got_labels, sizes = [], [], []
    with server:
        for images, labels in loader:
            assert isinstance(images, torch.Tensor) and images.dtype == torch.uint8
            assert images.shape[1:] == (H, W, 3)
            assert images.shape[0] == labels.shape[0]
            sizes.append(images.shape[0])
            got.extend(x.numpy().copy() for x in images)
            got_labels.extend(labels.tolist())
    assert sizes == [4, 4, 3]  # the last partial batch is trimmed to its samples
    assert got_labels == ref_labels
    for i, (a, b) in enumerate(zip(got, ref_images)):
        np.testing.assert_array_equal(a, b, err_msg="sample %d" % i)


def test_two_epochs_and_start_stop_thread(folder):
    server = dali_proxy.DALIServer(proxy_pipe())
    ds = ImageFolder(folder, loader=read_bytes, transform=server.proxy)
    loader = dali_proxy.DataLoader(server, ds, batch_size=3, num_workers=2)
    ref_images, ref_labels = reference(folder, len(ds))
    server.start_thread()
    try:
        for _ in range(2):
            got = [(x.numpy().copy(), int(t)) for xs, ts in loader for x, t in zip(xs, ts)]
            assert [t for _, t in got] == ref_labels
            for (a, _), b in zip(got, ref_images):
                np.testing.assert_array_equal(a, b)
    finally:
        server.stop_thread()


class _Pairs(torch.utils.data.Dataset):
    """A Dataset that calls the proxy by keyword and returns a dict with extra fields."""

    def __init__(self, files, proxy):
        self.files, self.proxy = files, proxy

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return {"image": self.proxy(images=read_bytes(self.files[i])), "index": i,
                "name": os.path.basename(self.files[i])}


def test_keyword_call_dict_samples_and_ragged_outputs(folder):
    @pipeline_def(batch_size=BS, num_threads=1, device_id=None)
    def decode_only():
        jpegs = fn.external_source(name="images")
        return fn.decoders.image(jpegs, output_type=types.RGB)

    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)
    server = dali_proxy.DALIServer(decode_only())
    loader = dali_proxy.DataLoader(server, _Pairs(files, server.proxy), batch_size=BS,
                                   num_workers=2)
    from PIL import Image
    seen = []
    with server:
        for batch in loader:
            imgs = batch["image"]
            assert isinstance(imgs, list)  # shapes differ: one tensor per sample
            assert len(imgs) == len(batch["index"]) == len(batch["name"])
            for img, idx in zip(imgs, batch["index"].tolist()):
                with Image.open(files[idx]) as im:
                    ref = np.asarray(im.convert("RGB"))
                assert tuple(img.shape) == ref.shape
                # godali's decoder against PIL's (both libjpeg-turbo, islow IDCT).
                assert np.abs(img.numpy().astype(int) - ref.astype(int)).max() <= 1
                seen.append(idx)
    assert seen == list(range(len(files)))


def test_pipeline_error_surfaces_in_main_process(folder, tmp_path):
    # A file that is not an image, in the second batch.
    root = tmp_path / "bad"
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)[:6]
    os.makedirs(root / "a")
    for i, f in enumerate(files):
        data = open(f, "rb").read() if i != 5 else b"this is not a JPEG" * 10
        (root / "a" / ("%02d.jpg" % i)).write_bytes(data)
    for workers in (0, 2):
        server = dali_proxy.DALIServer(proxy_pipe())
        ds = ImageFolder(str(root), loader=read_bytes, transform=server.proxy)
        loader = dali_proxy.DataLoader(server, ds, batch_size=BS, num_workers=workers)
        got = []
        with server:
            with pytest.raises(_lib.GodaliError) as ei:
                for images, _ in loader:
                    got.append(images.shape[0])
        assert got == [4], workers  # the first batch came through, the second failed
        assert os.getpid() == server._id[0]


def test_misuse_errors(folder):
    server = dali_proxy.DALIServer(proxy_pipe())
    ds = ImageFolder(folder, loader=read_bytes, transform=server.proxy)
    with pytest.raises(RuntimeError, match="thread is not running"):
        next(iter(dali_proxy.DataLoader(server, ds, batch_size=BS)))
    with server:
        with pytest.raises(ValueError, match="larger than the pipeline's batch_size"):
            next(iter(dali_proxy.DataLoader(server, ds, batch_size=BS + 1)))
    with pytest.raises(TypeError, match="unknown input 'jpegs'"):
        server.proxy(jpegs=b"x")
    with pytest.raises(TypeError, match="takes 1 input"):
        server.proxy(b"x", b"y")
    with pytest.raises(TypeError, match="first argument is the DALIServer"):
        dali_proxy.DataLoader(ds, batch_size=BS)

    @pipeline_def(batch_size=BS, num_threads=1, device_id=None)
    def with_source():
        return fn.external_source(source=lambda: [np.zeros(1, np.uint8)] * BS, name="s")

    with pytest.raises(ValueError, match="has a source"):
        dali_proxy.DALIServer(with_source())

    @pipeline_def(batch_size=BS, num_threads=1, device_id=None)
    def reader_only(root):
        jpegs, _ = fn.readers.file(file_root=root)
        return jpegs

    with pytest.raises(ValueError, match="no fn.external_source"):
        dali_proxy.DALIServer(reader_only(folder))


def test_proxy_in_worker_returns_placeholders_only(folder):
    # The proxy holds no pipeline: pickled to a worker it makes placeholders that carry
    # the inputs; nothing there touches the library.
    import pickle
    server = dali_proxy.DALIServer(proxy_pipe())
    p = pickle.loads(pickle.dumps(server.proxy))
    ref = p(np.arange(3, dtype=np.uint8))
    assert isinstance(ref, dali_proxy.DALIOutputSampleRef)
    np.testing.assert_array_equal(ref.call.inputs[0], [0, 1, 2])
