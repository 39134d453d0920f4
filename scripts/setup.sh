#!/usr/bin/env bash
# setup.sh installs everything godali needs to build and test on Debian 12.
# Idempotent: packages already present are skipped by apt. The CUDA toolkit is installed
# for `make test` and where an NVIDIA GPU is present (GODALI_WITH_CUDA=1 asks for it,
# GODALI_NO_CUDA=1 refuses it); without it only the CPU flavour is built.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

want=(libjpeg62-turbo-dev cmake pkg-config python3-torch python3-torchvision
      python3-pil python3-numpy python3-pytest python3-pip python3-venv
      python3-matplotlib python3-tqdm python3-fsspec python3-yaml patchelf nginx
      ffmpeg libavcodec-dev libavformat-dev libavutil-dev libswscale-dev python3-av
      python3-opencv python3-scipy libtorch-dev)
# libtorch-dev (Debian's libtorch 1.13, 26 MB): the C++ trainer example that ctest builds
# and runs (examples/cpp_train: godali's DLPack outputs into at::fromDLPack).
# OpenCV (python3-opencv) and SciPy: independent references of the image filter tests
# (laplacian, water, ...; python/tests/test_image_filters.py).
# FFmpeg: the video operators compile against its headers (libav*-dev) and open its
# libraries at run time; the tests make their videos with the ffmpeg command and compare
# with it and with PyAV (python3-av).
# The CUDA toolkit (~5 GB, from Debian's non-free component) builds the CUDA flavour:
# installed for `make test` (which builds and emulator-tests that flavour: the Makefile
# sets GODALI_WITH_CUDA=1) and on machines with an NVIDIA GPU; `make bench` on a machine
# without one does not install it. GODALI_NO_CUDA=1 never installs it.
with_cuda=${GODALI_WITH_CUDA:-0}
if [ -e /dev/nvidia0 ] || command -v nvidia-smi >/dev/null 2>&1; then with_cuda=1; fi
if [ "${GODALI_NO_CUDA:-0}" != 1 ] && [ "$with_cuda" = 1 ]; then
  want+=(nvidia-cuda-toolkit)
  src=/etc/apt/sources.list.d/debian.sources
  # The CUDA toolkit lives in Debian's non-free component.
  if [ -f "$src" ] && ! grep -q 'non-free' "$src"; then
    $SUDO sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"
    rm -f /tmp/.godali-apt-updated
  fi
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # Packages with services (nginx) must not start them: the tests run their own.
  policy=/usr/sbin/policy-rc.d; made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy" && made_policy=1
  fi
  # Progress: one line per 25 packages set up (with their dependencies, a CUDA toolkit is
  # some 370 packages and minutes of work); apt's errors pass unfiltered.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" |
    awk '/^Setting up /{n++; if (n % 25 == 0) {print "setup:   " n " packages set up..."; fflush()}}
         END{print "setup:   " n+0 " packages set up"}'
  if [ "$made_policy" = 1 ]; then $SUDO rm -f "$policy"; fi
fi

# The project's Python: a venv of Debian's python3 (the Makefile's PYTHON), outside the
# repository so that clones and `make clean` reuse it; made again only when
# scripts/requirements.txt changes. It sees Debian's packages (torch 1.13, torchvision,
# Pillow, numpy, OpenCV, SciPy... from apt, above) through a .pth file, and not what
# pip may have put into the system Python (/usr/local/lib/python3.*), and has the pinned
# PyPI packages Debian lacks (scripts/requirements.txt: moto's S3 server, the formats
# tests' writers, auditwheel and zig for make wheel, PyTorch Lightning, decord), installed
# with --no-deps so that pip never replaces a Debian package. Nothing is installed into
# the system Python. GODALI_VENV moves it (pass the same to make).
VENV=${GODALI_VENV:-/usr/local/lib/godali-venv}
VENV_REQ=$(dirname "$0")/requirements.txt
if ! cmp -s "$VENV_REQ" "$VENV/godali-requirements.txt" || [ ! -x "$VENV/bin/python" ]; then
  echo "setup: making $VENV, the project's Python: Debian's python3 and packages, and $(grep -c '^[^#]' "$VENV_REQ") pinned PyPI packages (150 MB to download, 700 MB installed)"
  [ -x "$VENV/bin/python" ] || $SUDO /usr/bin/python3 -m venv "$VENV"
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\n' /usr/lib/python3/dist-packages | $SUDO tee "$site/godali-debian.pth" >/dev/null
  # One line per download; pip's errors pass unfiltered.
  $SUDO env PIP_ROOT_USER_ACTION=ignore "$VENV/bin/python" -m pip install --no-deps --progress-bar off -r "$VENV_REQ" |
    sed -un -E -e 's/^ *Downloading ([^ -]+)-([^ -]+)-[^ ]* \((.*)\)$/setup:   downloading \1 \2 (\3)/p' \
               -e 's/^Installing collected packages: .*/setup:   installing.../p' \
               -e 's/^Successfully installed .*/setup:   installed/p'
  "$VENV/bin/python" -c 'import torch, torchvision, PIL, numpy, moto.server, webdataset, tfrecord, lmdb, auditwheel, ziglang' ||
    { echo "setup: $VENV/bin/python cannot import what the tests need (above)" >&2; exit 1; }
  $SUDO cp "$VENV_REQ" "$VENV/godali-requirements.txt"
fi
# ---- begin: cloud blob emulators (issue 27) ----------------------------------------
# Azurite (Azure Blob, npm) and fake-gcs-server (GCS, a Go program), pinned, which the
# source/remote tests start on loopback for az:// and gs://. Each goes in a directory
# of its own, so that neither touches the system's node modules or Go binaries.
AZURITE_VERSION=3.37.0
FAKE_GCS_VERSION=v1.52.2
azurite_dir=/usr/local/lib/godali-azurite
if [ "$("$azurite_dir/node_modules/.bin/azurite-blob" --version 2>/dev/null || true)" != "$AZURITE_VERSION" ]; then
  if ! command -v npm >/dev/null; then
    echo "setup: installing nodejs and npm (Debian)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "setup: installing azurite@$AZURITE_VERSION (npm) under $azurite_dir"
  $SUDO mkdir -p "$azurite_dir"
  $SUDO npm install --prefix "$azurite_dir" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION" >/dev/null
fi
fake_gcs_dir=/usr/local/lib/godali-gcs
if [ "$(cat "$fake_gcs_dir/VERSION" 2>/dev/null || true)" != "$FAKE_GCS_VERSION" ] || [ ! -x "$fake_gcs_dir/fake-gcs-server" ]; then
  if command -v go >/dev/null; then
    echo "setup: installing fake-gcs-server@$FAKE_GCS_VERSION (Go module proxy) under $fake_gcs_dir"
    $SUDO mkdir -p "$fake_gcs_dir"
    (cd /tmp && $SUDO env "PATH=$PATH" GOBIN="$fake_gcs_dir" GOFLAGS=-buildvcs=false go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION")
    echo "$FAKE_GCS_VERSION" | $SUDO tee "$fake_gcs_dir/VERSION" >/dev/null
  fi
fi
# ---- end: cloud blob emulators (issue 27) ------------------------------------------
command -v go >/dev/null || { echo "setup: Go is required (https://go.dev/dl), not found on PATH" >&2; exit 1; }
# The folders of their own below are installed by the project Python's pip (--target).
PY=$VENV/bin/python
# mxnet (RecordIO) pins numpy<2 and wants its own dependencies: install it alone, into
# a directory of its own that only the tests put on PYTHONPATH (internal/pyref).
MXDIR=/usr/local/lib/godali-mxnet
if [ ! -f "$MXDIR/mxnet/libmxnet.so" ] || [ ! -f "$MXDIR/mxnet/recordio.py" ]; then
  echo "setup: pip installing mxnet==1.9.1 into $MXDIR"
  $SUDO $PY -m pip install -q --no-deps --target "$MXDIR" mxnet==1.9.1 ||
    echo "setup: mxnet could not be installed; the RecordIO cross-check tests will skip" >&2
fi
# --- cloud SDKs: contenders of `make bench-remote` (issue 27) -------------------------
# The Azure and Google Cloud Storage clients users write torch Datasets with
# (azure-storage-blob, google-cloud-storage) and fsspec's adlfs / gcsfs. They bring a
# current fsspec, urllib3 and grpc that Debian's packages do not have, so they go, with
# their dependencies, into a directory of their own that only bench_remote puts on
# sys.path, and only in the trials of those rows (tools/godali_tools/bench_remote.py,
# CLOUDSDK_DIR). If the install fails those rows say so and the bench goes on.
CLOUDSDK_DIR=/usr/local/lib/godali-cloudsdk
CLOUDSDK_PINS="azure-storage-blob==12.31.1 google-cloud-storage==3.17.1 adlfs==2026.8.0 gcsfs==2026.10.1 fsspec==2026.9.0"
if ! cmp -s <(echo "$CLOUDSDK_PINS") "$CLOUDSDK_DIR/godali-pins.txt" ||
    ! PYTHONPATH="$CLOUDSDK_DIR" $PY -c "import azure.storage.blob, google.cloud.storage, adlfs, gcsfs" 2>/dev/null; then
  echo "setup: pip installing $CLOUDSDK_PINS into $CLOUDSDK_DIR"
  $SUDO rm -rf "$CLOUDSDK_DIR"
  # shellcheck disable=SC2086
  if $SUDO env PIP_ROOT_USER_ACTION=ignore $PY -m pip install -q --target "$CLOUDSDK_DIR" $CLOUDSDK_PINS &&
      PYTHONPATH="$CLOUDSDK_DIR" $PY -c "import azure.storage.blob, google.cloud.storage, adlfs, gcsfs"; then
    echo "$CLOUDSDK_PINS" | $SUDO tee "$CLOUDSDK_DIR/godali-pins.txt" >/dev/null
  else
    echo "setup: the cloud SDKs could not be installed; bench-remote's torch-azblob, torch-gcs, torch-adlfs and torch-gcsfs rows will say so" >&2
  fi
fi
# --- end of cloud SDKs -----------------------------------------------------------------
# NVIDIA DALI 2.4: the differential oracle of the tests (tests/compat/test_oracle.py runs
# the same pipelines through DALI's CPU operators and godali's; `make test` sets
# GODALI_DALI_ORACLE=1) and an optional contender of the benchmarks (GODALI_BENCH_DALI=1;
# it runs on the CPU without a GPU). Not installed for `make bench` alone: a 424 MB wheel, installed with its pure-Python
# dependencies (--no-deps, so that pip keeps Debian's numpy and torch) into a directory of
# its own; benchmarks/video_bench.py looks there, other scripts take it on PYTHONPATH.
DALIDIR=/usr/local/lib/godali-dali
if { [ "${GODALI_BENCH_DALI:-0}" = 1 ] || [ "${GODALI_DALI_ORACLE:-0}" = 1 ]; } && [ ! -f "$DALIDIR/nvidia_dali_cuda120-2.4.0.dist-info/METADATA" ]; then
  echo "setup: pip installing nvidia-dali-cuda120==2.4.0 into $DALIDIR"
  $SUDO $PY -m pip install -q --no-deps --target "$DALIDIR" nvidia-dali-cuda120==2.4.0 optree==0.20.0 \
    nvtx==0.2.17 makefun==1.16.0 libcst==1.9.0 ||
    echo "setup: DALI could not be installed; the benchmarks and the oracle tests skip it" >&2
fi
# DALI's CPU image decoders dlopen nvImageCodec (a 32 MB wheel); the bench puts its folder
# on the DALI trials' LD_LIBRARY_PATH, and the oracle tests on their DALI runners'
# (tests/compat/sidebyside.py: the decoder sweep, tests/compat/decsweep.py, needs it).
if { [ "${GODALI_BENCH_DALI:-0}" = 1 ] || [ "${GODALI_DALI_ORACLE:-0}" = 1 ]; } && [ -d "$DALIDIR/nvidia/dali" ] &&
    [ ! -f "$DALIDIR/nvidia/nvimgcodec/libnvimgcodec.so.0" ]; then
  echo "setup: pip installing nvidia-nvimgcodec-cu12==0.9.0.20 into $DALIDIR (DALI's CPU decoders)"
  # (pip --target skips a top-level folder that exists: DALI's nvidia/ is one)
  nvimg_tmp=$(mktemp -d)
  if $SUDO $PY -m pip install -q --no-deps --target "$nvimg_tmp" nvidia-nvimgcodec-cu12==0.9.0.20; then
    $SUDO cp -r "$nvimg_tmp/nvidia/nvimgcodec" "$DALIDIR/nvidia/"
  else
    echo "setup: nvImageCodec could not be installed; DALI's decoding contenders will fail" >&2
  fi
  $SUDO rm -rf "$nvimg_tmp"
fi
# torch 2.x from PyPI, for `make test-torch2`: the torch-facing tests run against Debian's
# torch 1.13 (test-python) and against this current torch / torchvision / Pillow / numpy, in
# a venv of its own outside the repository (kept between runs and checkouts; updated only
# when scripts/torch2-requirements.txt changes). torch's PyPI wheel is a CUDA build that
# brings NVIDIA's libraries: about 3 GB to download, 5.5 GB installed. GODALI_NO_TORCH2=1
# skips it (make test-torch2 then says so); GODALI_TORCH2_VENV moves it (pass the same to make).
TORCH2_VENV=${GODALI_TORCH2_VENV:-/usr/local/lib/godali-torch2}
TORCH2_REQ=$(dirname "$0")/torch2-requirements.txt
# (only for the tests: the Makefile sets GODALI_WITH_TORCH2=1 for make test / test-torch2)
if [ "${GODALI_NO_TORCH2:-0}" != 1 ] && [ "${GODALI_WITH_TORCH2:-0}" = 1 ] &&
    ! cmp -s "$TORCH2_REQ" "$TORCH2_VENV/godali-requirements.txt"; then
  echo "setup: making $TORCH2_VENV: $(grep -E '^(torch|torchvision|pillow|numpy)==' "$TORCH2_REQ" | tr '\n' ' ')from PyPI (3 GB to download)"
  [ -x "$TORCH2_VENV/bin/python" ] || $SUDO /usr/bin/python3 -m venv "$TORCH2_VENV"
  # One line per download and one for the (long) unpacking; pip's errors pass unfiltered.
  $SUDO env PIP_ROOT_USER_ACTION=ignore "$TORCH2_VENV/bin/python" -m pip install --no-cache-dir --progress-bar off -r "$TORCH2_REQ" |
    sed -un -E -e 's/^ *Downloading ([^ -]+)-([^ -]+)-[^ ]* \((.*)\)$/setup:   downloading \1 \2 (\3)/p' \
               -e 's/^Installing collected packages: .*/setup:   installing (a few minutes).../p' \
               -e 's/^Successfully installed .*/setup:   installed/p'
  $SUDO cp "$TORCH2_REQ" "$TORCH2_VENV/godali-requirements.txt"
fi
echo "setup: ok"
