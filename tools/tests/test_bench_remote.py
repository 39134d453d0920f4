"""bench-remote's data preparation: the shards hold exactly the folder's images."""

import hashlib
import os
import tarfile
from pathlib import Path

from godali_tools import bench_remote


def test_write_shards_holds_every_image(tmp_path):
    data = tmp_path / "data"
    want = {}
    for c in range(2):
        (data / f"c{c}").mkdir(parents=True)
        for i in range(5):
            body = bytes([c, i]) * (10 + i)
            (data / f"c{c}" / f"{i}.jpg").write_bytes(body)
            want[body] = c
    shards, keys, labels, images = bench_remote.write_shards(data, tmp_path / "s", 3, 0)
    assert len(shards) == 3 and len(keys) == len(labels) == len(images) == 10
    got = {}
    for s in shards:
        with tarfile.open(s) as tf:
            members = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
        for name, body in members.items():
            if name.endswith(".jpg"):
                got[body] = int(members[name[:-4] + ".cls"])
    assert got == want
    for k, lab, img in zip(keys, labels, images):
        assert want[Path(img).read_bytes()] == lab and k.endswith(".jpg")
    # A second call reuses the shards.
    mtimes = [Path(s).stat().st_mtime_ns for s in shards]
    bench_remote.write_shards(data, tmp_path / "s", 3, 0)
    assert [Path(s).stat().st_mtime_ns for s in shards] == mtimes


def test_parse_args_rejects_unknown_contender():
    import pytest
    with pytest.raises(SystemExit):
        bench_remote.parse_args(["--contenders", "nope"])
    a = bench_remote.parse_args(["--latency", "20ms, 50ms"])
    assert a.latencies == ["20ms", "50ms"] and a.kinds == list(bench_remote.ALL_KINDS)


# ---------------------------------------------------------------------------------------
# The cloud-SDK contenders (issue 27): azure-storage-blob, google-cloud-storage, adlfs
# and gcsfs in a torch Dataset, against Azurite and fake-gcs-server.

def _need_cloud(kinds=tuple(bench_remote.SDK_KINDS)):
    from conftest import missing_reference
    ce = bench_remote._emulators()
    for kind in kinds:
        why = bench_remote.sdk_missing(kind)
        if why:
            missing_reference(f"{kind}: {why}")
    if ce.azurite_binary() is None:
        missing_reference("Azurite (npm azurite; scripts/setup.sh installs it)")
    if ce.fake_gcs_binary() is None:
        missing_reference("fake-gcs-server (scripts/setup.sh installs it)")


def _jpeg_folder(root, per_class=6):
    """A two-class folder of small random JPEGs, written with PIL."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(5)
    for c in range(2):
        (root / f"c{c}").mkdir(parents=True)
        for i in range(per_class):
            a = (rng.random((40, 56, 3)) * 255).astype("uint8")
            Image.fromarray(a).save(root / f"c{c}" / f"{i}.jpg", quality=90)
    return root


def test_cloud_readers_return_the_uploaded_bytes(tmp_path):
    """Each SDK's reader (in a child process with the SDK directory on its path) reads
    back, byte for byte, what the standard-library uploaders put into the emulators."""
    import json
    import subprocess
    import sys
    _need_cloud()
    ce = bench_remote._emulators()
    objects = {"images/000000.jpg": bytes(range(256)) * 40,
               "images/dir/x y.jpg": b"\x00tail" * 1000}
    with bench_remote.Servers(tmp_path) as srv:
        az, gs = srv.azurite(), srv.fake_gcs()
        ce.azure_put(az, bench_remote.BUCKET, objects)
        ce.gcs_put(gs, bench_remote.BUCKET, objects)
        script = (
            "import hashlib, json, os, sys\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "os.environ['GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT'] = 'false'\n"
            "from godali_tools import bench_remote as br\n"
            "out = {}\n"
            "for kind, ep in json.loads(sys.argv[2]).items():\n"
            "    read = br.cloud_reader(kind, ep)\n"
            "    out[kind] = {n: hashlib.sha256(read(n)).hexdigest() for n in sys.argv[3:]}\n"
            "print(json.dumps(out))\n")
        eps = {k: (az if store == "az" else gs)
               for k, (store, _) in bench_remote.SDK_KINDS.items()}
        r = subprocess.run([sys.executable, "-c", script, bench_remote.CLOUDSDK_DIR,
                            json.dumps(eps), *objects], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, NO_GCE_CHECK="true"))
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    want = {n: hashlib.sha256(b).hexdigest() for n, b in objects.items()}
    assert got == {k: want for k in bench_remote.SDK_KINDS}


def test_bench_runs_the_cloud_sdk_rows(tmp_path, monkeypatch):
    """`bench-remote --contenders torch-azblob,...` on a tiny folder: every SDK row, behind
    the latency proxy, times its batches and lands in results.json."""
    import json
    _need_cloud()
    data = _jpeg_folder(tmp_path / "data")
    # The shards go to a cache of this test's own, not the bench's real one.
    monkeypatch.setattr(bench_remote._bench(), "CACHE_DIR", tmp_path / "cache")
    out = tmp_path / "r.json"
    kinds = list(bench_remote.SDK_KINDS)
    assert bench_remote.main([
        "--data", str(data), "--shards", "2", "--latency", "2ms", "--contenders",
        ",".join(kinds), "--batch-size", "4", "--warmup", "1", "--baseline-iters", "1",
        "--repeats", "1", "--workers", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["left_out"] == {}
    assert sorted(res["results"]) == sorted(f"{k}@2ms" for k in kinds)
    for name, runs in res["results"].items():
        assert runs[0] is not None, name
        assert runs[0]["img_s"] > 0 and runs[0]["images"] == 4, (name, runs)


def test_missing_sdk_leaves_its_rows_out_with_the_reason(tmp_path, monkeypatch):
    missing = tmp_path / "no-sdk"
    monkeypatch.setattr(bench_remote, "CLOUDSDK_DIR", str(missing))
    why = bench_remote.sdk_missing("torch-gcs")
    assert str(missing) in why and "google.cloud.storage" in why
    table = bench_remote.format_table({"torch-boto3@2ms": [
        {"img_s": 10.0, "cpu_util": 0.5, "foreign_cpu": 0.0, "images": 8}]},
        ["torch-boto3@2ms", "torch-gcs@2ms"], {"torch-gcs@2ms": why})
    assert "torch-boto3@2ms" in table and f"left out: {why}" in table
    # An SDK directory without the package: the import error is named.
    missing.mkdir()
    assert "import adlfs" in bench_remote.sdk_missing("torch-adlfs")
