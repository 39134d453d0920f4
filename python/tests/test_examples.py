"""The examples run end to end for a few steps on a tiny generated data set (CPU)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, make_jpeg, need


@pytest.fixture(scope="module")
def tiny_imagenet(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_imagenet")
    for split, n in (("train", 12), ("val", 6)):
        for i in range(n):
            make_jpeg(str(root / split / ("n%02d" % (i % 3)) / ("%d.jpg" % i)), 70 + i,
                      90 - i, seed=700 + i)
    return str(root)


def _run(script, *args):
    cmd = [sys.executable, os.path.join(REPO, "examples", script)] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r.stdout


@pytest.mark.slow
def test_resnet_example_trains_and_validates(tiny_imagenet):
    out = _run("resnet50_train.py", "--data", tiny_imagenet, "--arch", "resnet18",
               "--epochs", "1", "--batch-size", "4", "--image-size", "32", "--workers",
               "1", "--device", "cpu", "--print-freq", "1")
    assert "epoch 0 step 3/3" in out
    assert "val top-1" in out


@pytest.mark.slow
def test_resnet_example_steps(tiny_imagenet):
    out = _run("resnet50_train.py", "--data", tiny_imagenet, "--arch", "resnet18",
               "--steps", "2", "--batch-size", "4", "--image-size", "32", "--workers", "1",
               "--device", "cpu")
    assert "stopped after 2 steps" in out


@pytest.mark.slow
def test_dataloader_swap_example(tiny_imagenet):
    out = _run("dataloader_swap.py", "--data", os.path.join(tiny_imagenet, "train"),
               "--steps", "4", "--batch-size", "4", "--image-size", "32", "--workers",
               "1", "--device", "cpu")
    assert "godali: epoch 1 step 1/3" in out
    assert "godali: 4 steps" in out


@pytest.mark.slow
def test_lightning_example_resumes_mid_epoch(tiny_imagenet, tmp_path):
    """Lightning saves godali.torch.DataLoader's state_dict in its checkpoint: the run
    resumed after 5 steps (mid-epoch: 3 steps per epoch) trains on the batches the
    uninterrupted run had at steps 5..7, images included."""
    need("pytorch_lightning")
    data = os.path.join(tiny_imagenet, "train")

    def steps(out):
        return [l for l in out.splitlines() if l.startswith("step ")]

    full = steps(_run("lightning_train.py", "--data", data, "--max-steps", "8"))
    ckpt = str(tmp_path / "a.ckpt")
    first = steps(_run("lightning_train.py", "--data", data, "--max-steps", "5",
                       "--save", ckpt))
    rest = steps(_run("lightning_train.py", "--data", data, "--max-steps", "8",
                      "--resume", ckpt))
    assert len(full) == 8
    assert first == full[:5]
    assert rest == full[5:]
