"""godali.torch.install(): torch.utils.data.DataLoader served by godali where it can be
faithful, torch's DataLoader otherwise (one log line each); the datasets godali reads
(Subset, ConcatDataset, DatasetFolder subclasses, ImageNet folders); torch's argument
checks; the standard ImageNet val pipeline pixel for pixel against torchvision on real
photographs.

References: torchvision's ImageFolder run in Python (dataset[i]) and torch's own
DataLoader. Tolerances: PILToTensor pipelines bit-exact; ToTensor + Normalize 1e-5
(float32 rounding of the folded normalisation).
"""

import json
import logging
import os

import pytest
import torch
import torch.utils.data as tud
import torchvision
import torchvision.transforms as T
from PIL import Image

import godali.torch as gt
from conftest import make_jpeg

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
VAL_U8 = T.Compose([T.Resize(256), T.CenterCrop(224), T.PILToTensor()])


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """100 images cut from the bundled photographs (tools/godali_tools/photos, Pillow's
    test images, MIT-CMU licence there) by the benchmark's data set maker: ImageNet-like
    sizes, grayscale/CMYK/progressive files among them; plus the 8 photographs
    themselves."""
    from godali_tools.make_dataset import DEFAULT_PHOTOS, build
    out = tmp_path_factory.mktemp("photos") / "set"
    build(str(out), n=100, classes=5, seed=0, jobs=2)
    os.makedirs(out / "originals")
    for p in sorted(DEFAULT_PHOTOS.glob("*.jpg")):
        os.symlink(p, out / "originals" / p.name)
    return str(out)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    sizes = [(40, 60), (61, 45), (50, 53), (45, 71), (64, 49), (57, 36), (48, 48)]
    for i, (h, w) in enumerate(sizes):
        make_jpeg(str(root / ("k%d" % (i % 3)) / ("v%d.jpg" % i)), h, w, seed=700 + i)
    return str(root)


@pytest.fixture
def installed():
    gt.install()
    yield
    gt.uninstall()


def small_tf(u8=True):
    tail = [T.PILToTensor()] if u8 else [T.ToTensor(), T.Normalize(MEAN, STD)]
    return T.Compose([T.Resize(33), T.CenterCrop(28)] + tail)


def all_batches(loader):
    xs, ys = [], []
    for x, y in loader:
        xs.append(x.clone())
        ys.append(y.clone())
    return xs, ys


def same_batches(a, b, atol=0):
    (ax, ay), (bx, by) = all_batches(a), all_batches(b)
    assert len(ax) == len(bx)
    for x, rx, y, ry in zip(ax, bx, ay, by):
        assert torch.equal(y, ry)
        assert x.shape == rx.shape and x.dtype == rx.dtype
        assert (x.double() - rx.double()).abs().max().item() <= atol


# -- the val pipeline on photographs ---------------------------------------------------

@pytest.mark.slow
def test_val_pipeline_is_pixel_exact_on_photographs(photos):
    ds = torchvision.datasets.ImageFolder(photos, VAL_U8)
    got = torch.cat([x for x, _ in gt.DataLoader(ds, batch_size=12, num_workers=2)])
    assert len(got) == len(ds) == 108
    odd = 0
    for i, (path, _) in enumerate(ds.samples):
        ref = ds[i][0]
        assert torch.equal(got[i], ref), "%s: max difference %d" % (
            path, (got[i].int() - ref.int()).abs().max().item())
        w, h = Image.open(path).size
        long_side = int(256 * max(w, h) / min(w, h))
        odd += (long_side - 224) % 4 == 1  # where half-up rounding would start 1 later
    assert odd >= 10, odd  # the half-to-even cases are well represented
    # The float pipeline of the ImageNet example: same pixels, float32 normalisation.
    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(photos, tf)
    sub = tud.Subset(ds, range(0, 108, 9))
    got = torch.cat([x for x, _ in gt.DataLoader(sub, batch_size=4)])
    ref = torch.stack([sub[i][0] for i in range(len(sub))])
    assert (got - ref).abs().max().item() <= 1e-5


# -- install() ----------------------------------------------------------------------------

def test_install_serves_imagefolder_and_logs(small, installed, caplog):
    caplog.set_level(logging.INFO, logger="godali.torch")
    ds = torchvision.datasets.ImageFolder(small, small_tf())
    loader = torch.utils.data.DataLoader(ds, batch_size=3, shuffle=False, num_workers=1,
                                         pin_memory=True)
    assert type(loader) is gt.DataLoader
    assert isinstance(loader, torch.utils.data.DataLoader)
    assert isinstance(loader, tud.DataLoader)
    assert "served by godali" in caplog.text and "ImageFolder" in caplog.text
    assert len(loader) == 3 and loader.dataset is ds
    assert isinstance(loader.sampler, tud.SequentialSampler) and len(loader.sampler) == 7
    gt.uninstall()
    ref = torch.utils.data.DataLoader(ds, batch_size=3)
    assert type(ref) is tud.dataloader.DataLoader
    same_batches(loader, ref)


@pytest.mark.parametrize("make, why", [
    (lambda ds: dict(dataset=ds, worker_init_fn=lambda w: None), "worker_init_fn"),
    (lambda ds: dict(dataset=ds, batch_size=None), "batch_size=None"),
    (lambda ds: dict(dataset=ds, sampler=tud.WeightedRandomSampler([1.0] * 7, 7)),
     "WeightedRandomSampler"),
    (lambda ds: dict(dataset=tud.TensorDataset(torch.zeros(4, 2))), "TensorDataset"),
    (lambda ds: dict(dataset=torchvision.datasets.FakeData(4, (3, 8, 8), 2, T.ToTensor())),
     "FakeData"),
    (lambda ds: dict(dataset=torchvision.datasets.ImageFolder(
        ds.root, T.Compose([T.Resize((8, 8)), T.ToTensor(), T.RandomErasing(),
                            T.Normalize(MEAN, STD)]))),
     "RandomErasing"),
    (lambda ds: dict(dataset=torchvision.datasets.ImageFolder(
        ds.root, T.Compose([T.Resize((8, 8)), T.Lambda(lambda x: x), T.ToTensor()]))),
     "Lambda"),
    (lambda ds: dict(dataset=torchvision.datasets.ImageFolder(ds.root, T.Resize((8, 8)),
                                                            loader=lambda p: Image.open(p))),
     "loader="),
])
def test_install_leaves_what_godali_cannot_serve_to_torch(small, installed, caplog, make,
                                                          why):
    caplog.set_level(logging.INFO, logger="godali.torch")
    ds = torchvision.datasets.ImageFolder(small, small_tf())
    loader = torch.utils.data.DataLoader(**make(ds))
    assert type(loader) is tud.dataloader.DataLoader
    line = [r.getMessage() for r in caplog.records if "torch's DataLoader keeps it" in
            r.getMessage()]
    assert len(line) == 1 and why in line[0], caplog.text


def test_torch_argument_errors_stay_errors(small, installed):
    ds = torchvision.datasets.ImageFolder(small, small_tf())
    for kw in (dict(batch_size=2.5), dict(batch_size=0), dict(batch_size=True),
               dict(num_workers=-1), dict(drop_last="yes"), dict(timeout=-1),
               dict(persistent_workers=True), dict(shuffle=True,
                                                   sampler=tud.SequentialSampler(ds))):
        with pytest.raises(ValueError) as godali_err:
            gt.DataLoader(ds, **kw)
        with pytest.raises(ValueError) as torch_err:
            gt._TorchDataLoader()(ds, **kw)
        # the same words as torch's (godali's may be prefixed)
        assert str(torch_err.value).split(",")[0] in str(godali_err.value), (kw, godali_err,
                                                                            torch_err)
        with pytest.raises(ValueError):
            torch.utils.data.DataLoader(ds, **kw)  # under install() too


def test_install_rebinds_names_in_the_calling_module_and_uninstall_restores():
    orig = tud.DataLoader
    ns = {"__name__": "tw_fake_script", "DataLoader": orig}
    import sys
    import types
    mod = types.ModuleType("tw_fake_script")
    mod.DataLoader = orig
    sys.modules["tw_fake_script"] = mod
    try:
        exec("import godali.torch\ngodali.torch.install()", mod.__dict__)
        assert mod.DataLoader is tud.DataLoader is not orig
        assert gt.installed()
        gt.install()  # twice: no effect
        assert tud.DataLoader is mod.DataLoader
        gt.uninstall()
        assert mod.DataLoader is tud.DataLoader is orig and not gt.installed()
    finally:
        gt.uninstall()
        del sys.modules["tw_fake_script"]
    assert ns["DataLoader"] is orig


# A script that starts as many do: a docstring and `from __future__` (which must come
# first: the two lines go after them), torch's DataLoader imported before install(), here
# and in a module of its own, and a library (a folder named site-packages) that did too.
_FUTURE_SCRIPT = '''"""A training script."""
from __future__ import annotations

import sys

from torch.utils.data import DataLoader
import torch.utils.data as tud
import helper_data
import fakelib

import godali.torch
godali.torch.install()

import torchvision.datasets as datasets
import torchvision.transforms as T

ds = datasets.ImageFolder(sys.argv[1], T.Compose([T.Resize((8, 8)), T.PILToTensor()]))
loaders = {"main": DataLoader(ds, batch_size=4), "attr": tud.DataLoader(ds, batch_size=4),
           "helper": helper_data.make(ds), "library": fakelib.DataLoader(ds, batch_size=4)}
ref = godali.torch._TorchDataLoader()(ds, batch_size=4)
want = [(x.tolist(), y.tolist()) for x, y in ref]
for name, loader in loaders.items():
    same = [(x.tolist(), y.tolist()) for x, y in loader] == want
    print(name, type(loader).__module__, same, isinstance(loader, DataLoader))
'''


def test_install_after_future_imports_and_late_imports(small, tmp_path):
    import subprocess
    import sys
    from conftest import PYTHON_DIR
    (tmp_path / "train.py").write_text(_FUTURE_SCRIPT)
    (tmp_path / "helper_data.py").write_text(
        "from torch.utils.data import DataLoader as DL\n\n\n"
        "def make(ds):\n    return DL(ds, batch_size=4)\n")
    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "fakelib.py").write_text("from torch.utils.data import DataLoader\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR, str(tmp_path), str(lib),
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, str(tmp_path / "train.py"), small], env=env,
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    got = dict((line.split()[0], line.split()[1:]) for line in r.stdout.splitlines())
    assert got == {"main": ["godali.torch", "True", "True"],
                   "attr": ["godali.torch", "True", "True"],
                   "helper": ["godali.torch", "True", "True"],
                   "library": ["torch.utils.data.dataloader", "True", "True"]}, r.stdout
    # the log names what was rebound, what was left, and where the lines go
    assert "helper_data.DL (imported before install()) now names the installed " \
        "DataLoader" in r.stderr, r.stderr
    assert "fakelib.DataLoader (library imported before install()) keeps torch's " \
        "DataLoader" in r.stderr
    assert "after the module docstring and any `from __future__` imports" in r.stderr
    assert r.stderr.count("served by godali") == 3


def test_subclass_of_installed_dataloader_is_torchs(small, installed):
    class MyLoader(torch.utils.data.DataLoader):
        pass
    ds = torchvision.datasets.ImageFolder(small, small_tf())
    assert type(MyLoader(ds, batch_size=2)) is MyLoader


# -- datasets -------------------------------------------------------------------------------

def test_subset_and_concat_match_torch(small):
    ds = torchvision.datasets.ImageFolder(small, small_tf(u8=False))
    TorchDL = gt._TorchDataLoader()
    for d in (tud.Subset(ds, [6, 0, 3, 3, -1]), tud.Subset(ds, range(4, 7)),
              tud.ConcatDataset([ds, tud.Subset(ds, [2, 1])])):
        same_batches(gt.DataLoader(d, batch_size=2), TorchDL(d, batch_size=2), atol=1e-5)
    other = torchvision.datasets.ImageFolder(small, T.Compose([T.Resize((8, 8)),
                                                               T.ToTensor()]))
    with pytest.raises(gt.UnsupportedDatasetError, match="ConcatDataset part 1"):
        gt.DataLoader(tud.ConcatDataset([ds, other]))
    with pytest.raises(TypeError, match="TensorDataset"):
        gt.DataLoader(tud.TensorDataset(torch.zeros(3)))


def test_datasetfolder_subclasses_and_imagenet(small, tmp_path):
    from torchvision.datasets.folder import default_loader

    class Mine(torchvision.datasets.ImageFolder):
        pass

    class Custom(torchvision.datasets.ImageFolder):
        def __getitem__(self, i):
            return super().__getitem__(i)

    TorchDL = gt._TorchDataLoader()
    for d in (Mine(small, small_tf()),
              torchvision.datasets.DatasetFolder(small, default_loader, extensions=(".jpg",),
                                                 transform=small_tf())):
        same_batches(gt.DataLoader(d, batch_size=3), TorchDL(d, batch_size=3))
    with pytest.raises(gt.UnsupportedDatasetError, match="Custom overrides __getitem__"):
        gt.DataLoader(Custom(small, small_tf()))
    # torchvision.datasets.ImageNet's layout: root/meta.bin and root/val/<wnid>/*.JPEG.
    wnids = ["n01440764", "n01443537"]
    torch.save(({w: ("class %s" % w,) for w in wnids}, []), str(tmp_path / "meta.bin"))
    for i in range(5):
        make_jpeg(str(tmp_path / "val" / wnids[i % 2] / ("ILSVRC_%d.JPEG" % i)),
                  40 + i, 50, seed=90 + i)
    inet = torchvision.datasets.ImageNet(str(tmp_path), split="val", transform=small_tf())
    same_batches(gt.DataLoader(inet, batch_size=2), TorchDL(inet, batch_size=2))


# -- samplers -------------------------------------------------------------------------------

@pytest.mark.parametrize("shuffle, drop_last", [(True, False), (False, True), (False, False)])
def test_distributed_sampler_reads_what_torch_deals(small, shuffle, drop_last):
    ds = torchvision.datasets.ImageFolder(small, small_tf())
    TorchDL = gt._TorchDataLoader()
    for rank in range(3):
        for epoch in (0, 4):
            s = tud.distributed.DistributedSampler(ds, num_replicas=3, rank=rank,
                                                   shuffle=shuffle, drop_last=drop_last)
            s.set_epoch(epoch)
            mine = gt.DistributedSampler(ds, num_replicas=3, rank=rank, shuffle=shuffle,
                                         drop_last=drop_last)
            mine.set_epoch(epoch)
            assert list(mine) == list(s)
            loader = gt.DataLoader(ds, batch_size=2, sampler=s)
            assert len(loader) == len(TorchDL(ds, batch_size=2, sampler=s))
            same_batches(loader, TorchDL(ds, batch_size=2, sampler=s))
            assert loader.sampler is s


# -- ImageFolderLoader -----------------------------------------------------------------------

def test_imagefolderloader_takes_num_workers(small):
    from godali.plugin.pytorch import ImageFolderLoader
    loader = ImageFolderLoader(small, batch_size=4, train=False, image_size=28,
                               num_workers=2)
    assert loader.num_workers == 2
    tf = T.Compose([T.Resize(32), T.CenterCrop(28), T.ToTensor(), T.Normalize(MEAN, STD)])
    ref = gt._TorchDataLoader()(torchvision.datasets.ImageFolder(small, tf), batch_size=4)
    same_batches(loader, ref, atol=1e-5)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        ImageFolderLoader(small, batch_size=2.5)
    with pytest.raises(ValueError, match="num_workers or num_threads"):
        ImageFolderLoader(small, batch_size=2, num_threads=1, num_workers=2)


# -- an ImageNet-style script, unmodified but for install() ------------------------------

def _imagenet_tree(root):
    """train: 13 images over 5 classes, val: 11 (odd, so 2 ranks leave one over)."""
    for split, n in (("train", 13), ("val", 11)):
        for i in range(n):
            make_jpeg(str(root / split / ("c%d" % (i % 5)) / ("%s%02d.jpg" % (split, i))),
                      60 + 7 * i, 90 - 3 * i, seed=(1000 if split == "val" else 2000) + i)
    return root


def _run_script(tmp_path, nproc):
    import subprocess
    import sys
    from conftest import HERE, PYTHON_DIR
    data = _imagenet_tree(tmp_path / "data")
    out = str(tmp_path / "result.json")
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    script = [os.path.join(HERE, "imagenet_style.py"), str(data), out]
    if nproc == 1:
        cmd = [sys.executable] + script
    else:
        # torch 1.13's torchrun needs --redirects/--tee spelled out on Python 3.11 (see
        # test_distributed.py).
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=%d" % nproc, "--redirects", "1", "--tee", "2"] + script
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    results = []
    for k in range(nproc):
        with open("%s.rank%d" % (out, k)) as f:
            results.append(json.load(f))
    return results, r.stdout + r.stderr, data



@pytest.mark.slow
def test_imagenet_style_script_one_process(tmp_path):
    (res,), logs, data = _run_script(tmp_path, 1)
    assert res["train_type"] == res["val_type"] == "godali.torch.DataLoader"
    assert res["isinstance"]
    assert logs.count("served by godali") == 2, logs
    assert "keeps it" not in logs
    val = torchvision.datasets.ImageFolder(str(data / "val"))
    for ep in res["epochs"]:
        assert sorted(ep["train"]) == sorted(torchvision.datasets.ImageFolder(
            str(data / "train")).targets)
        assert ep["train_steps"] == ep["train_len"] == 4
        assert ep["val"] == val.targets  # in order, shuffle=False
    assert res["epochs"][0]["train"] != res["epochs"][1]["train"]  # reshuffled


@pytest.mark.slow
def test_imagenet_style_script_two_ranks(tmp_path):
    results, logs, data = _run_script(tmp_path, 2)
    # per rank: train, val, and the Subset leftover loader in each of 2 epochs
    assert logs.count("served by godali") == 2 * (2 + 2), logs
    assert "keeps it" not in logs
    val = torchvision.datasets.ImageFolder(str(data / "val"))
    train = torchvision.datasets.ImageFolder(str(data / "train"))
    for r, res in enumerate(results):
        assert res["train_type"] == res["val_type"] == res["aux_type"] == \
            "godali.torch.DataLoader"
        for e, ep in enumerate(res["epochs"]):
            # exactly what torch's DistributedSampler deals this rank
            s = tud.distributed.DistributedSampler(train, num_replicas=2, rank=r)
            s.set_epoch(e)
            assert ep["train"] == [train.targets[i] for i in s]
            vs = tud.distributed.DistributedSampler(val, num_replicas=2, rank=r,
                                                    shuffle=False, drop_last=True)
            assert ep["val"] == [val.targets[i] for i in vs]
            assert ep["aux"] == val.targets[10:]  # the one sample left over
            assert ep["train_steps"] == ep["train_len"] == 2  # ceil(7 / 4)
    # the ranks' val samples and the leftover cover the val set exactly once
    ep0 = [res["epochs"][0] for res in results]
    assert len(ep0[0]["val"]) + len(ep0[1]["val"]) + len(ep0[0]["aux"]) == len(val)
