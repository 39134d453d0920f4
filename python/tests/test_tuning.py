"""num_threads="auto" / prefetch_queue_depth="auto" (docs/pipeline.md, "Automatic tuning"):
the engine's choice from the CPU budget, its one adjustment from the first batches, and
outputs identical to a fixed pipeline's (num_threads never changes a sample's values)."""

import os

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import godali.fn as fn
from conftest import make_jpeg
from godali.pipeline import Pipeline
from godali.torch import DataLoader, ImageFolder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning")
    for i in range(12):
        make_jpeg(str(root / ("c%d" % (i % 2)) / ("im%02d.jpg" % i)), 60 + 4 * i, 80, seed=i)
    return str(root)


def make(folder, threads, depth):
    pipe = Pipeline(batch_size=2, num_threads=threads, prefetch_queue_depth=depth,
                    device_id=None, seed=7)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=folder, random_shuffle=True, name="Reader")
        img = fn.decoders.image(jpegs)
        pipe.set_outputs(fn.resize(img, resize_x=32, resize_y=32), labels)
    return pipe


def epoch(pipe, n):
    return [np.array(pipe.run()[0].as_array()) for _ in range(n)]


def test_auto_values_and_outputs(folder):
    pipe = make(folder, "auto", "auto")
    assert pipe.num_threads == "auto" and pipe.prefetch_queue_depth == "auto"
    pipe.build()
    t = pipe.tuning()
    cpus = len(os.sched_getaffinity(0))
    assert t["state"] == "initial" and t["auto_threads"] and t["auto_prefetch"]
    assert 1 <= t["num_threads"] <= t["cpu"]["usable_cpus"] <= cpus
    assert t["cpu"]["affinity_cpus"] == cpus
    assert pipe.num_threads == t["num_threads"]
    assert "usable CPUs" in t["reason"]
    got = epoch(pipe, 12)  # 2 epochs of 6: warm-up 2, decided at the first end (4 measured)
    t = pipe.tuning()
    assert t["state"] in ("adjusted", "kept"), t
    assert t["measured"]["batches"] >= 3 and 0 <= t["measured"]["consumer_wait_fraction"] <= 1
    assert t["num_threads"] <= t["max_threads"] and 2 <= t["prefetch_queue_depth"] <= 6
    ref = make(folder, 2, 2)
    ref.build()
    want = epoch(ref, 12)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_affinity_mask_set_from_python(folder, monkeypatch):
    # os.environ changes after the library is loaded reach the engine (the Go runtime of
    # a shared library otherwise sees only the environment the process started with),
    # and pipe.tuning() says where the workers run.
    monkeypatch.delenv("DALI_AFFINITY_MASK", raising=False)
    monkeypatch.setenv("GODALI_AFFINITY_MASK", "0")
    pipe = make(folder, 2, 2)
    pipe.build()
    t = pipe.tuning()
    assert t["worker_cpus"] == [0] and "GODALI_AFFINITY_MASK pins workers 0-0" in t["affinity"]
    pipe.run()
    monkeypatch.delenv("GODALI_AFFINITY_MASK")
    pipe = make(folder, 2, 2)
    pipe.build()
    t = pipe.tuning()
    assert "worker_cpus" not in t and "affinity" not in t


def test_fixed_and_bad_values(folder):
    pipe = make(folder, 3, 2)
    pipe.build()
    t = pipe.tuning()
    assert t["state"] == "fixed" and t["num_threads"] == 3 and t["prefetch_queue_depth"] == 2
    assert pipe.num_threads == 3
    with pytest.raises(ValueError, match="num_threads"):
        Pipeline(batch_size=2, num_threads="many")
    with pytest.raises(ValueError, match="prefetch_queue_depth"):
        Pipeline(batch_size=2, prefetch_queue_depth="deep")


def test_torch_num_workers_auto(folder):
    tf = T.Compose([T.Resize((24, 24)), T.ToTensor()])
    ds = ImageFolder(folder, transform=tf)
    loader = DataLoader(ds, batch_size=4, num_workers="auto")
    assert loader.tuning() is None
    got = [(x.clone(), y.clone()) for x, y in loader]
    t = loader.tuning()
    assert t is not None and t["auto_threads"] and t["auto_prefetch"], t
    want = [(x, y) for x, y in DataLoader(ds, batch_size=4, num_workers=2)]
    assert len(got) == len(want) == 3
    for (a, la), (b, lb) in zip(got, want):
        assert torch.equal(a, b) and torch.equal(la, lb)
    with pytest.raises(TypeError, match="num_workers"):
        DataLoader(ds, batch_size=4, num_workers="many")


def test_memory_plan(folder):
    from PIL import Image
    sizes = []
    for d, _, files in os.walk(folder):
        for f in files:
            with Image.open(os.path.join(d, f)) as im:
                sizes.append(im.size)
    w, h = max(sizes, key=lambda s: s[0] * s[1])
    pipe = make(folder, 2, 2)
    plan = pipe.memory_plan()
    scan, = plan["scans"]
    assert scan["files"] == scan["scanned"] == len(sizes) and scan["failed"] == 0
    assert (scan["max_width"], scan["max_height"]) == (w, h)
    assert scan["max_output_bytes"] == w * h * 3
    dec = [v for v in plan["intermediates"] if v["source"] == "scan"]
    assert len(dec) == 1 and dec[0]["sample_bytes_worst"] == w * h * 3
    out = [v for v in plan["outputs"] if v["sample_bytes_worst"] == 32 * 32 * 3]
    assert len(out) == 1 and out[0]["bytes_worst"] >= 2 * 32 * 32 * 3 * 3
    assert plan["host_bytes_worst"] == (plan["output_bytes"] + plan["intermediate_bytes"] +
                                        plan["crossing_bytes"] + plan["decoder_work_bytes"] +
                                        plan["runtime_bytes"])
    assert plan["crossing_bytes"] == 0 and plan["runtime_bytes"] > 0
    assert plan["available"]["mem_available"] > 0
    tight = Pipeline(batch_size=2, num_threads=2, device_id=None, seed=7, max_host_bytes=1000)
    with tight:
        jpegs, labels = fn.readers.file(file_root=folder, name="Reader")
        tight.set_outputs(fn.decoders.image(jpegs), labels)
    with pytest.raises(Exception, match="max_host_bytes 1000 B is below .* lower"):
        tight.build()
    with pytest.raises(ValueError, match="preallocate"):
        Pipeline(batch_size=2, preallocate="yes")


def test_plan_command(folder, tmp_path, capsys):
    import json

    from godali.__main__ import main
    desc = {"batch_size": 2, "num_threads": "auto", "device_id": None, "ops": [
        {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"],
         "args": {"file_root": folder}},
        {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"]}],
        "outputs": ["images", "labels"]}
    path = tmp_path / "pipe.json"
    path.write_text(json.dumps(desc))
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["memory_plan"]["scans"][0]["max_width"] == 80
    assert doc["tuning"]["auto_threads"] and doc["tuning"]["state"] == "initial"
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "host memory, worst case" in out and "decode: largest image 80x" in out
    desc["max_host_bytes"] = 100
    path.write_text(json.dumps(desc))
    assert main(["plan", str(path)]) == 1
    assert "max_host_bytes 100 B is below" in capsys.readouterr().err
    assert main(["plan", str(tmp_path / "missing.json")]) == 2
