"""godali bench-remote: does reading webdataset shards from S3 keep up with local disk?

    python -m godali_tools bench-remote [--data DIR] [--shards N] [--latency 20ms,50ms]
                                  [--contenders a,b,...] [--repeats R] [--iters N]
                                  [--baseline-iters N] [--batch-size N] [--workers N]
                                  [--io-concurrency N] [--out DIR] [--json PATH]

Every contender runs the ResNet-50 training pipeline of `python -m godali_tools bench`
(random-resized crop to 224, flip, normalize to float CHW, batch 64) on the same
images, in a fresh process, on the same cores; the table shows the median img/s over
the repeats. The images are the bench's data set (`python -m godali_tools make_dataset`),
written once into webdataset tar shards (KEY.jpg + KEY.cls) with Python's tarfile.

The bench starts its own servers on 127.0.0.1 and stops them when it ends: moto (an
S3-compatible server; the shards and, for torch-boto3, the single images are uploaded
to it), nginx serving the shards over HTTP, and one godali-faultproxy process per
latency in front of each, which adds that latency to every request.

Contenders (LAT: each --latency):

  folder           godali readers.file over the local image folder (the bench's figure)
  wds-local        godali readers.webdataset over the local shards
  wds-s3@LAT       godali readers.webdataset over s3:// shards, default settings
  wds-az@LAT       the same over az:// shards in Azurite (Azure Blob emulator)
  wds-gs@LAT       the same over gs:// shards in fake-gcs-server (GCS emulator)
  torch-boto3@LAT  torch DataLoader whose Dataset.__getitem__ does s3.get_object of one
                   image, PIL decode and the torchvision transforms; num_workers = cores
  wds-curl@LAT     the webdataset package, pipe:curl of each shard from nginx, PIL
                   decode + torchvision transforms; WebLoader num_workers = cores
  torch-azblob@LAT like torch-boto3, each image a blob in Azurite read with the
                   azure-storage-blob SDK (BlobServiceClient, Azurite's connection string)
  torch-gcs@LAT    the same with the google-cloud-storage SDK on fake-gcs-server
                   (anonymous credentials, the emulator as api_endpoint)
  torch-adlfs@LAT  the same with fsspec's adlfs (AzureBlobFileSystem.cat_file)
  torch-gcsfs@LAT  the same with fsspec's gcsfs (GCSFileSystem(token="anon").cat_file)

The four SDK rows import their packages from CLOUDSDK_DIR, where scripts/setup.sh
installs them with their dependencies (a current fsspec, urllib3, grpc that Debian's
Python does not have); only those trials put it on sys.path. Where a package or an
emulator is missing, its rows say why in the table and the bench goes on.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib.util
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BUCKET = "godali-bench"
DEFAULT_LATENCIES = "20ms,50ms"
# The user's cloud-SDK alternatives: kind -> (store, module the trial imports).
SDK_KINDS = {"torch-azblob": ("az", "azure.storage.blob"),
             "torch-gcs": ("gs", "google.cloud.storage"),
             "torch-adlfs": ("az", "adlfs"),
             "torch-gcsfs": ("gs", "gcsfs")}
ALL_KINDS = ("folder", "wds-local", "wds-s3", "wds-az", "wds-gs", "torch-boto3", "wds-curl") \
    + tuple(SDK_KINDS)
DEFAULT_KINDS = ALL_KINDS
# Where scripts/setup.sh installs the cloud SDKs (pip --target, pinned there).
CLOUDSDK_DIR = os.environ.get("GODALI_CLOUDSDK_DIR", "/usr/local/lib/godali-cloudsdk")
# Every contender that reads from a server, and the store each reads.
STORE_OF = {"wds-s3": "s3", "torch-boto3": "s3", "wds-az": "az", "wds-gs": "gs",
            "wds-curl": "http", **{k: v[0] for k, v in SDK_KINDS.items()}}


def _emulators():
    """godali/cloud_emulators.py, loaded by path (standard library only), like _bench."""
    name = "godali_cloud_emulators"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / "cloud_emulators.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _bench():
    """The bench module, loaded by path: a trial that does not use godali (torch-boto3,
    wds-curl) must not import the godali package, whose Go runtime must not meet the
    DataLoader's fork()."""
    name = "godali_bench_helpers"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / "bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------------------
# Trial side (a fresh process per trial, started by bench.run_trial).

def _stream(cfg: dict) -> list:
    b = _bench()
    return b._sample_stream(len(cfg["keys"]), b._stream_len(cfg), cfg["seed"])


def _worker_wds(cfg: dict) -> dict:
    b = _bench()
    import torch
    import godali
    from godali import fn, pipeline_def

    extra = {"initial_fill": cfg.get("initial_fill") or 1024}
    if cfg.get("io_concurrency"):
        extra["io_concurrency"] = cfg["io_concurrency"]

    @pipeline_def
    def rn50_train_wds():
        jpegs, cls = fn.readers.webdataset(paths=cfg["shards"], ext=["jpg", "cls"],
                                           random_shuffle=True, pad_last_batch=True,
                                           name="Reader", **extra)
        return b.rn50_augment(jpegs), cls

    pipe = rn50_train_wds(batch_size=cfg["batch_size"], num_threads=cfg["cores"],
                          device_id=None, seed=cfg["seed"], prefetch_queue_depth=2)
    pipe.build()

    def batches():
        while True:
            out = pipe.run()
            yield b._godali_torch(out[0], torch)

    res = b._timed(batches(), cfg, lambda: None)
    res["versions"] = {"godali": godali.library_info().get("library_version")}
    pipe.close()
    return res


def _transforms():
    from torchvision import transforms
    b = _bench()
    return transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), transforms.Normalize(b.IMAGENET_MEAN, b.IMAGENET_STD)])


class S3Images:
    """S3Images is what users write today: one get_object per image, PIL decode and the
    torchvision transforms, in DataLoader workers (a boto3 client per worker)."""

    def __init__(self, endpoint: str, keys: list, labels: list):
        self.endpoint, self.keys, self.labels = endpoint, keys, labels
        self.tf = _transforms()
        self.s3 = None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        import boto3
        from botocore.config import Config
        from PIL import Image
        if self.s3 is None:
            self.s3 = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                                   config=Config(retries={"max_attempts": 8, "mode": "standard"}))
        body = self.s3.get_object(Bucket=BUCKET, Key=self.keys[i])["Body"].read()
        img = Image.open(io.BytesIO(body)).convert("RGB")
        return self.tf(img), self.labels[i]


def _worker_torch_boto3(cfg: dict) -> dict:
    b = _bench()
    import torch
    from torch.utils.data import DataLoader

    ds = S3Images(cfg["endpoint"], cfg["keys"], cfg["labels"])
    loader = DataLoader(ds, batch_size=cfg["batch_size"], sampler=_stream(cfg),
                        num_workers=cfg["cores"], drop_last=True)
    res = b._timed(iter(loader), cfg, lambda: None)
    res["torch_threads"] = torch.get_num_threads()
    return res


def _worker_wds_curl(cfg: dict) -> dict:
    b = _bench()
    import webdataset as wds

    tf = _transforms()
    urls = [f"pipe:curl -s -f {u}" for u in cfg["shards"]]
    # resampled: an endless stream of shards, as a long ImageNet epoch would be.
    ds = (wds.WebDataset(urls, resampled=True, shardshuffle=False)
          .shuffle(1000).decode("pil").to_tuple("jpg", "cls")
          .map_tuple(tf, lambda c: int(c)).batched(cfg["batch_size"], partial=False))
    loader = wds.WebLoader(ds, batch_size=None, num_workers=cfg["cores"])
    return b._timed(iter(loader), cfg, lambda: None)


def azurite_connection_string(endpoint: str) -> str:
    """The connection string of Azurite's well-known account with its Blob service at
    endpoint (http://HOST:PORT/devstoreaccount1), as Azure's SDKs take it."""
    ce = _emulators()
    return (f"DefaultEndpointsProtocol=http;AccountName={ce.AZURITE_ACCOUNT};"
            f"AccountKey={ce.AZURITE_KEY};BlobEndpoint={endpoint};")


def cloud_reader(kind: str, endpoint: str):
    """cloud_reader returns read(name) -> bytes of one object of BUCKET, the way a user
    writes it with the SDK of kind (SDK_KINDS), at the emulator's endpoint."""
    if kind == "torch-azblob":
        from azure.storage.blob import BlobServiceClient
        cc = BlobServiceClient.from_connection_string(
            azurite_connection_string(endpoint)).get_container_client(BUCKET)
        return lambda name: cc.download_blob(name).readall()
    if kind == "torch-gcs":
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage
        bucket = storage.Client(project="godali-bench", credentials=AnonymousCredentials(),
                                client_options={"api_endpoint": endpoint}).bucket(BUCKET)
        return lambda name: bucket.blob(name).download_as_bytes()
    if kind == "torch-adlfs":
        import adlfs
        fs = adlfs.AzureBlobFileSystem(connection_string=azurite_connection_string(endpoint),
                                       skip_instance_cache=True)
        return lambda name: fs.cat_file(f"{BUCKET}/{name}")
    if kind == "torch-gcsfs":
        import gcsfs
        fs = gcsfs.GCSFileSystem(token="anon", endpoint_url=endpoint,
                                 skip_instance_cache=True)
        return lambda name: fs.cat_file(f"{BUCKET}/{name}")
    raise ValueError(f"cloud_reader: unknown kind {kind!r}")


class CloudImages:
    """CloudImages is S3Images with Azure's and Google's SDKs or fsspec: one object read
    per image, PIL decode and the torchvision transforms, in DataLoader workers (the
    client is made in each worker, after the fork: gcsfs and adlfs run an event loop in
    a thread that a fork does not carry)."""

    def __init__(self, kind: str, endpoint: str, keys: list, labels: list):
        self.kind, self.endpoint, self.keys, self.labels = kind, endpoint, keys, labels
        self.tf = _transforms()
        self.read = None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        from PIL import Image
        if self.read is None:
            self.read = cloud_reader(self.kind, self.endpoint)
        img = Image.open(io.BytesIO(self.read(self.keys[i]))).convert("RGB")
        return self.tf(img), self.labels[i]


def _worker_torch_cloud(cfg: dict) -> dict:
    b = _bench()
    import torch
    from torch.utils.data import DataLoader

    ds = CloudImages(cfg["kind"], cfg["endpoint"], cfg["keys"], cfg["labels"])
    loader = DataLoader(ds, batch_size=cfg["batch_size"], sampler=_stream(cfg),
                        num_workers=cfg["cores"], drop_last=True)
    res = b._timed(iter(loader), cfg, lambda: None)
    res["torch_threads"] = torch.get_num_threads()
    return res


WORKERS = {"wds-local": _worker_wds, "wds-s3": _worker_wds, "wds-az": _worker_wds,
           "wds-gs": _worker_wds,
           "torch-boto3": _worker_torch_boto3, "wds-curl": _worker_wds_curl,
           **{k: _worker_torch_cloud for k in SDK_KINDS}}


def sdk_missing(kind: str):
    """Why the SDK of kind cannot be imported from CLOUDSDK_DIR (tried in a child
    process, keeping this one's sys.path as it is), or None when it can."""
    mod = SDK_KINDS[kind][1]
    if not os.path.isdir(CLOUDSDK_DIR):
        return f"{CLOUDSDK_DIR} is missing (scripts/setup.sh installs {mod} there)"
    r = subprocess.run([sys.executable, "-c", f"import {mod}"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=CLOUDSDK_DIR))
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return f"import {mod} from {CLOUDSDK_DIR} failed: {last}"
    return None


def worker_main(cfg_json: str) -> int:
    cfg = json.loads(cfg_json)
    kind = cfg["kind"]
    if kind in ("wds-local", "wds-s3", "wds-az", "wds-gs"):
        # Load the library before torch (bench.worker_main says why).
        os.environ["GODALI_FLAVOUR"] = "cpu"
        import godali
        godali.library_info()
    if kind in SDK_KINDS:
        # First on the path: the SDKs need their own fsspec, urllib3... (setup.sh).
        sys.path.insert(0, CLOUDSDK_DIR)
        # gcsfs's default filesystem first asks a gRPC endpoint for the bucket's type
        # (a minute's timeout against an emulator); users' standard buckets take the
        # plain one, which this selects.
        os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
    try:
        import torch
        torch.set_num_threads(cfg["cores"])
    except ImportError:
        pass
    b = _bench()
    b._setup_started = time.perf_counter()
    res = WORKERS[kind](cfg)
    b._emit("R " + json.dumps(res))
    return 0


# ---------------------------------------------------------------------------------------
# Servers: moto, nginx and fault proxies on loopback, each stopped when the bench ends
# (and killed by the kernel if the bench itself dies: PR_SET_PDEATHSIG).

def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Servers:
    """Servers starts and stops the bench's servers; use it as a context manager."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.procs = []  # (name, Popen, log file)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _start(self, name, cmd, stdin=subprocess.DEVNULL, stdout=None):
        log = open(self.workdir / f"{name}.log", "w")
        p = subprocess.Popen(cmd, stdin=stdin, stdout=stdout or log, stderr=log,
                             preexec_fn=_die_with_parent, text=True)
        self.procs.append((name, p, log))
        return p

    def stop(self):
        for name, p, log in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        self.procs = []

    def moto(self) -> str:
        ce = _emulators()
        port = ce.free_port()
        p = self._start("moto", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                 "-p", str(port)])
        url = f"http://127.0.0.1:{port}"
        ce.wait_http(url + "/moto-api/", p, 60)
        return url

    def nginx(self, root: Path) -> str:
        binary = shutil.which("nginx") or next(
            (c for c in ("/usr/sbin/nginx", "/sbin/nginx") if os.path.exists(c)), None)
        if binary is None:
            raise RuntimeError("nginx is not installed (scripts/setup.sh installs it)")
        ce = _emulators()
        d = self.workdir / "nginx"
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        port = ce.free_port()
        user = "user root;" if os.geteuid() == 0 else ""
        conf = f"""{user}
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  keepalive_requests 100000;
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}
}}
"""
        (d / "nginx.conf").write_text(conf)
        p = self._start("nginx", [binary, "-p", str(d), "-e", str(d / "error.log"),
                                  "-c", str(d / "nginx.conf"), "-g", "daemon off;"])
        url = f"http://127.0.0.1:{port}"
        ce.wait_http(url + "/", p, 20)
        return url

    def azurite(self) -> str:
        """Starts Azurite; returns its Blob endpoint (http://127.0.0.1:PORT/devstoreaccount1)."""
        ce = _emulators()
        if ce.azurite_binary() is None:
            raise RuntimeError("Azurite is not installed (scripts/setup.sh installs it)")
        port = ce.free_port()
        d = self.workdir / "azurite"
        d.mkdir(exist_ok=True)
        p = self._start("azurite", ce.azurite_command(port, str(d)))
        ce.wait_http(f"http://127.0.0.1:{port}/", p, 60)
        return f"http://127.0.0.1:{port}/{ce.AZURITE_ACCOUNT}"

    def fake_gcs(self) -> str:
        ce = _emulators()
        if ce.fake_gcs_binary() is None:
            raise RuntimeError("fake-gcs-server is not installed (scripts/setup.sh installs it)")
        port = ce.free_port()
        p = self._start("fake-gcs", ce.fake_gcs_command(port))
        url = f"http://127.0.0.1:{port}"
        ce.wait_http(url + "/storage/v1/b", p, 60)
        return url

    def proxy(self, binary: str, target: str, latency: str, limit: str) -> str:
        name = f"proxy-{target.rsplit(':', 1)[1]}-{latency}"
        p = self._start(name, [binary, "-target", target, "-latency", latency,
                               "-limit", limit], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = p.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"godali-faultproxy did not start (see {self.workdir}/{name}.log)")
        return line


def faultproxy_binary(workdir: Path) -> str:
    """The godali-faultproxy command: build/godali-faultproxy (make bench-remote builds
    it), else built here with go."""
    built = REPO / "build" / "godali-faultproxy"
    if built.exists():
        return str(built)
    out = workdir / "godali-faultproxy"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    r = subprocess.run([go, "build", "-o", str(out), "./source/remote/cmd/godali-faultproxy"],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building godali-faultproxy: {r.stderr.strip()}")
    return str(out)


# ---------------------------------------------------------------------------------------
# Data.

def write_shards(data: Path, out: Path, shards: int, seed: int) -> tuple:
    """write_shards writes the image folder into webdataset shards (shuffled once, then
    cut into `shards` tars of KEY.jpg + KEY.cls); returns (shard paths, keys, labels,
    image paths) in shard order. Reuses shards written before from the same list."""
    import random
    paths, labels = _bench().list_image_folder(data)
    order = list(range(len(paths)))
    random.Random(seed).shuffle(order)
    stamp = json.dumps({"paths": [paths[i] for i in order], "shards": shards,
                        "sizes": [os.path.getsize(paths[i]) for i in order]})
    out.mkdir(parents=True, exist_ok=True)
    names = [out / f"shard-{s:04d}.tar" for s in range(shards)]
    if (out / "stamp.json").exists() and (out / "stamp.json").read_text() == stamp and \
            all(n.exists() for n in names):
        pass
    else:
        for s, name in enumerate(names):
            tmp = name.with_suffix(".tmp")
            with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tf:
                for j in order[len(order) * s // shards:len(order) * (s + 1) // shards]:
                    key = f"{j:06d}"
                    for ext, body in (("jpg", Path(paths[j]).read_bytes()),
                                      ("cls", str(labels[j]).encode())):
                        ti = tarfile.TarInfo(f"{key}.{ext}")
                        ti.size, ti.mtime, ti.mode = len(body), 0, 0o644
                        tf.addfile(ti, io.BytesIO(body))
            tmp.rename(name)
        (out / "stamp.json").write_text(stamp)
    keys = [f"images/{j:06d}.jpg" for j in order]
    return [str(n) for n in names], keys, [labels[j] for j in order], \
        [paths[j] for j in order]


def _s3_env(endpoint: str, workdir: Path) -> dict:
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "", "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": endpoint, "AWS_ENDPOINT_URL": "",
            "AWS_CONFIG_FILE": str(workdir / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(workdir / "none"),
            "AWS_EC2_METADATA_DISABLED": "true"}


def upload(endpoint: str, workdir: Path, shards: list, keys: list, images: list,
           singles: bool):
    for k, v in _s3_env(endpoint, workdir).items():
        os.environ[k] = v
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    for p in shards:
        s3.upload_file(p, BUCKET, "shards/" + os.path.basename(p))
    if singles:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda kp: s3.put_object(Bucket=BUCKET, Key=kp[0],
                                                 Body=Path(kp[1]).read_bytes()),
                        zip(keys, images)))


# ---------------------------------------------------------------------------------------
# Parent side.

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python -m godali_tools bench-remote",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="image folder (default: the bench's data set, built "
                    "once by python -m godali_tools make_dataset)")
    ap.add_argument("--shards", type=int, default=8, help="webdataset shards (default 8)")
    ap.add_argument("--latency", default=DEFAULT_LATENCIES,
                    help="latencies added per request, comma-separated (default 20ms,50ms)")
    ap.add_argument("--contenders", default=",".join(DEFAULT_KINDS),
                    help=f"subset of {','.join(ALL_KINDS)} (default: all)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="cores for every contender (num_threads / num_workers)")
    ap.add_argument("--warmup", type=int, default=4, help="warm-up batches per trial")
    ap.add_argument("--iters", type=int, default=24, help="timed batches (godali)")
    ap.add_argument("--baseline-iters", type=int, default=6,
                    help="timed batches for torch-boto3, wds-curl and the cloud-SDK rows at "
                    "latency (slow)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--io-concurrency", type=int, default=0,
                    help="io_concurrency of wds-s3 (0: godali's default)")
    ap.add_argument("--initial-fill", type=int, default=1024,
                    help="shuffling buffer of readers.webdataset (default 1024, DALI's); "
                    "smaller than the data set, it makes wds-s3 stream shards in and out "
                    "of memory rather than keep them all")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", help="folder for this run's results.json (default: a new "
                    "folder under build/bench-remote/ named after the date and time, "
                    "beside `godali bench`'s build/bench/)")
    ap.add_argument("--json", help="write the per-repeat figures to this file instead of "
                    "OUT/results.json")
    ap.add_argument("--keep-dir", help="work directory (shards, server logs) to keep")
    args = ap.parse_args(argv)
    kinds = [k.strip() for k in args.contenders.split(",") if k.strip()]
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad or not kinds:
        ap.error(f"--contenders: unknown {bad}; valid: {','.join(ALL_KINDS)}")
    args.kinds = kinds
    args.latencies = [x.strip() for x in args.latency.split(",") if x.strip()]
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    b = _bench()
    if args.json:
        json_path = Path(args.json)
    elif args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        json_path = Path(args.out) / "results.json"
    else:
        json_path = b.new_run_dir(b.RESULTS_ROOT.parent / "bench-remote", "remote") / \
            "results.json"
    print(f"results will be written to {json_path}")
    from godali_tools import make_dataset

    if args.data:
        data = Path(args.data)
    else:
        data = b.DEFAULT_DATA
        data.parent.mkdir(parents=True, exist_ok=True)
        _, built = make_dataset.ensure(data, n=b.DEFAULT_IMAGES)
        print(b.cache_note(data, built))
    shard_dir = b.CACHE_DIR / "bench-remote-shards"
    shards, keys, labels, images = write_shards(data, shard_dir, args.shards, 0)
    shard_bytes = sum(os.path.getsize(p) for p in shards)
    print(f"data set: {data}: {len(keys)} images in {len(shards)} webdataset shards "
          f"({shard_bytes / 1e6:.1f} MB, {shard_dir})")
    print(b.cache_note(shard_dir, None))

    tmp = Path(args.keep_dir) if args.keep_dir else Path(tempfile.mkdtemp(prefix="godali-bench-remote-"))
    tmp.mkdir(parents=True, exist_ok=True)
    results = {}
    try:
        with Servers(tmp) as srv:
            left_out = {}  # kind -> why its rows have no figures
            for kind in [k for k in args.kinds if k in SDK_KINDS]:
                why = sdk_missing(kind)
                if why:
                    left_out[kind] = why
            remote = [k for k in args.kinds if k in STORE_OF and k not in left_out]
            proxies = {}
            if remote:
                binary = faultproxy_binary(tmp)
                # Bounded: the proxies exit on their own if the bench outlives this.
                limit = "60m"
                if "wds-s3" in remote or "torch-boto3" in remote:
                    moto = srv.moto()
                    t0 = time.perf_counter()
                    upload(moto, tmp, shards, keys, images, "torch-boto3" in remote)
                    print(f"moto on {moto}: uploaded in {time.perf_counter() - t0:.1f} s")
                    for lat in args.latencies:
                        proxies[("s3", lat)] = srv.proxy(binary, moto, lat, limit)
                ce = _emulators()
                emu = {}
                for store, start in (("az", srv.azurite), ("gs", srv.fake_gcs)):
                    users = [k for k in remote if STORE_OF[k] == store]
                    if not users:
                        continue
                    try:
                        emu[store] = start()
                    except RuntimeError as e:
                        for k in users:
                            left_out[k] = str(e)
                            remote.remove(k)
                        continue
                    # The shards, and the single images when a per-image row reads them.
                    objs = {"shards/" + os.path.basename(p): Path(p).read_bytes()
                            for p in shards}
                    if any(k in SDK_KINDS for k in users):
                        objs.update((k, Path(p).read_bytes()) for k, p in zip(keys, images))
                    t0 = time.perf_counter()
                    put = ce.azure_put if store == "az" else ce.gcs_put
                    items = sorted(objs.items())
                    from concurrent.futures import ThreadPoolExecutor
                    with ThreadPoolExecutor(8) as ex:
                        list(ex.map(lambda i: put(emu[store], BUCKET, dict(items[i::8])),
                                    range(8)))
                    print(f"{'Azurite' if store == 'az' else 'fake-gcs-server'} on "
                          f"{emu[store]}: uploaded {len(objs)} objects in "
                          f"{time.perf_counter() - t0:.1f} s")
                    for lat in args.latencies:
                        if store == "az":
                            host = emu[store].rsplit("/", 1)[0]
                            proxies[("az", lat)] = srv.proxy(binary, host, lat, limit) + \
                                "/" + ce.AZURITE_ACCOUNT
                        else:
                            proxies[("gs", lat)] = srv.proxy(binary, emu[store], lat, limit)
                if "wds-curl" in remote:
                    www = tmp / "www"
                    www.mkdir(exist_ok=True)
                    for p in shards:
                        dst = www / os.path.basename(p)
                        if not dst.exists():
                            os.symlink(p, dst)
                    ngx = srv.nginx(www)
                    print(f"nginx on {ngx}")
                    for lat in args.latencies:
                        proxies[("http", lat)] = srv.proxy(binary, ngx, lat, limit)
            for kind, why in left_out.items():
                print(f"{kind}: left out: {why}", file=sys.stderr)
            configs = _configs(args, proxies, shards, keys, labels, data, tmp, left_out)
            skipped = {f"{k}@{lat}": why for k, why in left_out.items()
                       for lat in args.latencies}
            print(f"{len(configs)} configurations x {args.repeats} repeats, "
                  f"batch {args.batch_size}, {args.workers} cores each")
            for rep in range(args.repeats if configs else 0):
                order = configs[rep % len(configs):] + configs[:rep % len(configs)]
                for name, cfg, wf in order:
                    try:
                        r = b.run_trial(cfg, timeout=600, worker_file=wf)
                    except b.BenchError as e:
                        print(f"  {name}: failed: {e}", file=sys.stderr)
                        results.setdefault(name, []).append(None)
                        continue
                    ips = r["images"] / r["wall_s"]
                    results.setdefault(name, []).append(
                        {"img_s": ips, "cpu_util": r["cpu_s"] / (r["wall_s"] * args.workers),
                         "foreign_cpu": r.get("foreign_cpu"), "images": r["images"]})
                    print(f"  repeat {rep + 1}: {name:<22} {ips:8.1f} img/s", flush=True)
    finally:
        if not args.keep_dir:
            shutil.rmtree(tmp, ignore_errors=True)
    print()
    names = [n for n, _, _ in configs] + [n for n in skipped if n not in results]
    print(format_table(results, names, skipped))
    busy = max((r["foreign_cpu"] or 0.0 for runs in results.values() for r in runs if r),
               default=0.0)
    warnings = []
    if busy > 0.1:
        warnings.append(f"other processes used up to {100 * busy:.0f}% of the CPUs during "
                        "timed windows; these figures are unreliable. Run again on a "
                        "quiet machine.")
    for w in warnings:
        print(f"warning: {w}")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps({
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "args": {k: v for k, v in vars(args).items()}, "results": results,
        "left_out": skipped,
        "warnings": warnings}, indent=2))
    print(f"results: {json_path}")
    return 0


def _configs(args, proxies, shards, keys, labels, data, tmp, left_out=()) -> list:
    base = {"batch_size": args.batch_size, "cores": args.workers, "warmup": args.warmup,
            "iters": args.iters, "seed": args.seed, "device": "cpu",
            "initial_fill": args.initial_fill}
    out = []
    remote_file = str(HERE / "bench_remote.py")
    for kind in args.kinds:
        if kind in left_out:
            continue
        if kind == "folder":
            out.append(("folder", dict(base, contender="godali-cpu", data=str(data)), None))
        elif kind == "wds-local":
            out.append(("wds-local", dict(base, kind=kind, contender=kind, shards=shards,
                                          keys=keys), remote_file))
        for lat in args.latencies:
            if kind == "wds-s3":
                url = proxies[("s3", lat)]
                out.append((f"wds-s3@{lat}", dict(
                    base, kind=kind, contender=kind, keys=keys,
                    shards=[f"s3://{BUCKET}/shards/{os.path.basename(p)}" for p in shards],
                    io_concurrency=args.io_concurrency, env=_s3_env(url, tmp)), remote_file))
            elif kind in ("wds-az", "wds-gs"):
                ce = _emulators()
                url = proxies[(kind[4:], lat)]
                env = ce.azure_env(url) if kind == "wds-az" else ce.gcs_env(url)
                out.append((f"{kind}@{lat}", dict(
                    base, kind=kind, contender=kind, keys=keys,
                    shards=[f"{kind[4:]}://{BUCKET}/shards/{os.path.basename(p)}"
                            for p in shards],
                    io_concurrency=args.io_concurrency, env=env), remote_file))
            elif kind == "torch-boto3":
                url = proxies[("s3", lat)]
                out.append((f"torch-boto3@{lat}", dict(
                    base, kind=kind, contender=kind, keys=keys, labels=labels,
                    endpoint=url, iters=args.baseline_iters, env=_s3_env(url, tmp)),
                    remote_file))
            elif kind in SDK_KINDS:
                store = SDK_KINDS[kind][0]
                url = proxies[(store, lat)]
                # No credentials in the environment: each SDK is given the emulator's
                # (Azurite's connection string; anonymous for GCS) by cloud_reader.
                env = {"AZURE_STORAGE_CONNECTION_STRING": "", "STORAGE_EMULATOR_HOST": "",
                       "GOOGLE_APPLICATION_CREDENTIALS": "", "NO_GCE_CHECK": "true"}
                out.append((f"{kind}@{lat}", dict(
                    base, kind=kind, contender=kind, keys=keys, labels=labels,
                    endpoint=url, iters=args.baseline_iters, env=env), remote_file))
            elif kind == "wds-curl":
                url = proxies[("http", lat)]
                out.append((f"wds-curl@{lat}", dict(
                    base, kind=kind, contender=kind, keys=keys, iters=args.baseline_iters,
                    shards=[f"{url}/{os.path.basename(p)}" for p in shards]), remote_file))
    return out


def format_table(results: dict, names: list, left_out: dict | None = None) -> str:
    """The table of median img/s per row; a row in left_out shows why it has none."""
    def med(name):
        xs = [r["img_s"] for r in results.get(name, []) if r]
        return statistics.median(xs) if xs else None

    local = med("wds-local")
    lines = [f"{'configuration':<22} {'img/s':>8} {'spread':>7} {'vs wds-local':>13} "
             f"{'CPU util':>9} {'others CPU':>10}  repeats",
             f"{'-' * 22} {'-' * 8} {'-' * 7} {'-' * 13} {'-' * 9} {'-' * 10}  -------"]
    for n in names:
        rs = [r for r in results.get(n, []) if r]
        m = med(n)
        if m is None and (left_out or {}).get(n):
            lines.append(f"{n:<22} {'-':>8}  left out: {left_out[n]}")
            continue
        if m is None:
            lines.append(f"{n:<22} {'failed':>8}")
            continue
        xs = [r["img_s"] for r in rs]
        spread = (max(xs) - min(xs)) / m if m else 0
        rel = f"{m / local:.2f}x" if local else "-"
        util = statistics.median(r["cpu_util"] for r in rs)
        foreign = statistics.median(r["foreign_cpu"] or 0 for r in rs)
        lines.append(f"{n:<22} {m:8.1f} {spread:6.0%} {rel:>13} {util:8.0%} {foreign:9.0%}  "
                     + " ".join(f"{x:.0f}" for x in xs))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main() or 0)
