"""torchrun --nproc_per_node=2 (gloo, CPU) over a generated ImageFolder.

Sharding semantics checked here: ImageFolderLoader deals samples as torch's
DistributedSampler (ceil(n/k) per rank, padded with repeats); the DALI-style iterator's
reader pads each shard to ceil(n/k) samples (pad_last_batch) so that every rank runs the
same number of steps, and cuts the padding copies from the last batches (PARTIAL), so
the ranks together see every sample exactly once per epoch. Shuffling (shuffle_after_epoch, one seed on all ranks) is a permutation of
the whole data set per epoch, reproducible from (seed, epoch).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, PYTHON_DIR, make_jpeg

N = 13  # one image per class: the label names the sample; odd, so shards differ


@pytest.fixture(scope="module")
def dist_result(tmp_path_factory):
    root = tmp_path_factory.mktemp("distfolder")
    for i in range(N):
        make_jpeg(str(root / ("c%02d" % i) / "a.jpg"), 30 + i, 34, seed=500 + i)
    out = str(tmp_path_factory.mktemp("distout") / "result.json")
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    # --standalone: a local rendezvous on a free port. --redirects 1 --tee 2: torch
    # 1.13's torchrun cannot parse its own defaults ("0") on Python 3.11 (IntFlag
    # iteration changed); these values work with every version.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node=2", "--redirects", "1", "--tee", "2",
           os.path.join(HERE, "dist_worker.py"), str(root), out]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        pytest.fail("torchrun timed out: %s" % (e.stderr or b"")[-2000:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.slow
def test_ranks_see_every_sample_once_per_epoch(dist_result):
    assert dist_result["world"] == 2
    orders = []
    for epoch, ranks in sorted(dist_result["loader"].items()):
        assert len({r["len"] for r in ranks}) == 1  # same len on every rank
        assert len({r["steps"] for r in ranks}) == 1  # same number of steps
        assert ranks[0]["steps"] == ranks[0]["len"]
        seen = ranks[0]["labels"] + ranks[1]["labels"]
        # torch's DistributedSampler: ceil(13 / 2) = 7 per rank, one padding repeat.
        assert len(ranks[0]["labels"]) == len(ranks[1]["labels"]) == 7
        assert sorted(set(seen)) == list(range(N)), (epoch, ranks)
        orders.append(seen)
    assert len({tuple(o) for o in orders}) == len(orders)  # reshuffled every epoch


@pytest.mark.slow
def test_set_epoch_reproduces_across_ranks(dist_result):
    again = dist_result["loader_again"]["1"]
    first = dist_result["loader"]["1"]
    assert again == [r["labels"] for r in first]


@pytest.mark.slow
def test_dali_iterator_with_sharded_reader(dist_result):
    for epoch, ranks in sorted(dist_result["iterator"].items()):
        assert ranks[0]["len"] == ranks[1]["len"] == 3  # ceil(ceil(13 / 2) / 3)
        seen = ranks[0]["labels"] + ranks[1]["labels"]
        assert sorted(seen) == list(range(N)), (epoch, ranks)
