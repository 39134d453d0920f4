"""az:// and gs:// through the Python API (issue 27): a folder of JPEGs read with
fn.readers.file(file_root=...) and webdataset shards read with fn.readers.webdataset,
from Azurite and fake-gcs-server on loopback, give the same samples (bytes, labels,
decoded shapes) as the same pipeline on the local copies, and those bytes are the
files' (sha256). The pipelines run in a child process, whose environment points godali
at the emulator: the Go runtime reads its environment when the library loads."""

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from conftest import missing_reference

from godali_tools import cloud_emulators as ce

IMAGES = Path("/work/shared/testdata/images")
HERE = Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent


def _missing(what):
    missing_reference(f"{what} is not installed (scripts/setup.sh installs it)")


def _jpegs():
    """Up to 12 plain 8-bit RGB baseline JPEGs of the shared test images."""
    from PIL import Image
    files = []
    for p in sorted(p for d in ("pillow", "libjpeg-turbo") if (IMAGES / d).is_dir()
                    for p in (IMAGES / d).glob("*.jpg")):
        try:
            with Image.open(p) as im:
                im.load()
                if im.mode == "RGB" and getattr(im, "bits", 8) == 8 and \
                        not im.info.get("progressive") and max(im.size) <= 1024:
                    files.append(p)
        except Exception:
            continue
        if len(files) == 12:
            break
    if len(files) < 6:
        pytest.skip(f"too few test JPEGs under {IMAGES}")
    return files


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A local folder of JPEGs in two classes, and two webdataset shards of the same
    images (KEY.jpg + KEY.cls), as {object name: bytes}."""
    root = tmp_path_factory.mktemp("cloud-data")
    objects = {}
    samples = []
    for i, p in enumerate(_jpegs()):
        b = p.read_bytes()
        rel = f"imgs/c{i % 2}/{i:02d}_{p.name}"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b)
        objects[rel] = b
        samples.append((f"s{i:03d}", b, i % 2))
    for s in range(2):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for key, b, label in samples[s::2]:
                for ext, data in (("jpg", b), ("cls", str(label).encode())):
                    ti = tarfile.TarInfo(f"{key}.{ext}")
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
        name = f"shards/shard{s}.tar"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(buf.getvalue())
        objects[name] = buf.getvalue()
    return root, objects


@pytest.fixture(scope="module", params=["az", "gs"])
def store(request, dataset):
    """An emulator holding the data set: (URL prefix, environment)."""
    kind = request.param
    _, objects = dataset
    binary = ce.azurite_binary() if kind == "az" else ce.fake_gcs_binary()
    if binary is None:
        _missing("Azurite (npm azurite)" if kind == "az" else "fake-gcs-server")
    port = ce.free_port()
    work = tempfile.mkdtemp(prefix=f"godali-{kind}-")
    cmd = ce.azurite_command(port, work) if kind == "az" else ce.fake_gcs_command(port)
    log = open(os.path.join(work, "server.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        if kind == "az":
            ce.wait_http(base + "/", proc)
            endpoint = base + "/" + ce.AZURITE_ACCOUNT
            ce.azure_put(endpoint, "data", objects)
            yield "az://data/", ce.azure_env(endpoint)
        else:
            ce.wait_http(base + "/storage/v1/b", proc)
            ce.gcs_put(base, "data", objects)
            yield "gs://data/", ce.gcs_env(base)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# One epoch of each reader; prints {sha256 of the bytes: [label, decoded shape]}.
CHILD = r"""
import hashlib, json, sys
from godali import fn, pipeline_def
cfg = json.loads(sys.argv[1])

def epoch(pipe, n):
    pipe.build()
    got = {}
    for _ in range((n + 3) // 4):
        jpegs, labels, images = pipe.run()
        for i in range(len(jpegs)):
            lab = labels.at(i)
            lab = int(bytes(lab).decode()) if cfg["kind"] == "wds" else int(lab.reshape(-1)[0])
            got[hashlib.sha256(bytes(jpegs.at(i))).hexdigest()] = [lab, list(images.at(i).shape)]
    return got

@pipeline_def(batch_size=4, num_threads=2, device_id=None)
def pipe():
    if cfg["kind"] == "file":
        jpegs, labels = fn.readers.file(file_root=cfg["root"], file_filters=["*.jpg"], name="R")
    else:
        jpegs, labels = fn.readers.webdataset(paths=cfg["shards"], ext=["jpg", "cls"], name="R")
    return jpegs, labels, fn.decoders.image(jpegs)

print(json.dumps(epoch(pipe(), cfg["n"])))
"""


def _run(cfg, env):
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_readers_from_emulators_match_local(dataset, store):
    root, objects = dataset
    prefix, env = store
    images = {k: v for k, v in objects.items() if k.startswith("imgs/")}
    want = {hashlib.sha256(b).hexdigest() for b in images.values()}
    n = len(images)

    local = _run({"kind": "file", "root": str(root / "imgs"), "n": n}, {})
    remote = _run({"kind": "file", "root": prefix + "imgs", "n": n}, env)
    assert set(local) == want
    assert remote == local  # same bytes, same labels (class folders), same shapes
    for name, b in images.items():
        assert local[hashlib.sha256(b).hexdigest()][0] == int(name.split("/")[1][1:])

    shards = ["shards/shard0.tar", "shards/shard1.tar"]
    local = _run({"kind": "wds", "shards": [str(root / s) for s in shards], "n": n}, {})
    remote = _run({"kind": "wds", "shards": [prefix + s for s in shards], "n": n}, env)
    assert set(local) == want
    assert remote == local


def test_missing_object_error_names_url_without_key(store):
    prefix, env = store
    cfg = {"kind": "file", "root": prefix + "no/such/dir", "n": 1}
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = str(PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], env=e,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert prefix + "no/such/dir" in r.stderr, r.stderr[-2000:]
    assert ce.AZURITE_KEY not in r.stderr and ce.AZURITE_KEY[:20] not in r.stderr
