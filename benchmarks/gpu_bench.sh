#!/usr/bin/env bash
# gpu_bench.sh checks and times the CUDA flavour on a machine with an NVIDIA GPU, from a
# checkout whose build/ was made elsewhere (the GPU machine has no Go):
#
#   make cuda test-cuda-compile          # here: build/libgodali_cuda.so, build/cudatest/
#   benchmarks/gpu_bench.sh [tests|bench|all]      # there (default: all)
#
# tests: the GPU tests of internal/cuda, nvjpeg, kernels and engine (GODALI_REQUIRE_GPU=1,
#        so a missing GPU fails instead of skipping) and `pytest -m gpu` when pytest exists.
# bench: python -m godali_tools bench --device cuda at batch 256 on 16 cores (the issue's
#        ResNet-50 setting): godali cuda (mixed) against the CPU flavour, torch's
#        DataLoader and torchvision's decode_jpeg(device="cuda"), same images, same run.
#
# Everything lands in $OUT (the device tool's result folder) or build/gpu-bench:
# gpu.txt (nvidia-smi, library versions), go-<pkg>.txt, pytest-gpu.txt, bench.{txt,json,png},
# summary.txt. Each step has its own time limit so that a hang still leaves the others'
# results. The exact device command is in docs/cuda.md.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PHASE=${1:-all}
OUT=${OUT:-$ROOT/build/gpu-bench}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH=$ROOT/python:$ROOT/tools
export GODALI_LIBRARY=$ROOT/build
export GODALI_REQUIRE_GPU=1
status=0
summary=$OUT/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

for f in build/libgodali_cuda.so build/libjpeg.so.62; do
  [ -f "$f" ] || { note "missing $f: run 'make cuda test-cuda-compile' on the build machine and carry build/"; exit 2; }
done

# nvJPEG: the driver does not ship it. Use the toolkit's or the one inside the CUDA
# wheels that PyTorch installs, unless GODALI_NVJPEG_LIBRARY already names one.
if [ -z "${GODALI_NVJPEG_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvjpeg\.so\.1[123]'; then
  lib=$(ls /usr/local/cuda*/lib64/libnvjpeg.so.1[123] /usr/local/cuda*/targets/*/lib/libnvjpeg.so.1[123] 2>/dev/null | head -1)
  if [ -z "$lib" ]; then
    lib=$("$PY" - <<'EOF' 2>/dev/null
import glob, os, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
hits = [p for d in dirs for p in glob.glob(os.path.join(d, "nvidia", "**", "libnvjpeg.so.1[123]"), recursive=True)]
print(sorted(hits)[-1] if hits else "")
EOF
)
  fi
  [ -n "$lib" ] && export GODALI_NVJPEG_LIBRARY=$lib
fi

{
  date -u '+%Y-%m-%d %H:%M:%S UTC'
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
  echo "GODALI_NVJPEG_LIBRARY=${GODALI_NVJPEG_LIBRARY:-<system>}"
  echo "nproc=$(nproc)"
  "$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  "$PY" -c 'import godali, json; print(json.dumps(godali.library_info()))' 2>&1
} >"$OUT/gpu.txt"
cat "$OUT/gpu.txt"

run_tests() {
  local pkg dir bin
  for pkg in internal/cuda:cuda nvjpeg:nvjpeg nvdec:nvdec kernels:kernels engine:engine ops/decoders:decoders ops/readers:readers ops/image:image; do
    dir=${pkg%%:*}
    bin=$ROOT/build/cudatest/${pkg##*:}.test
    run=.
    [ "$dir" = ops/readers ] && run=GPU  # the readers' CPU tests need the build machine's tools
    if [ ! -x "$bin" ]; then
      note "go test $dir: $bin missing (make test-cuda-compile)"
      status=1
      continue
    fi
    (cd "$dir" && timeout 300 "$bin" -test.v -test.run "$run" -test.timeout 280s) >"$OUT/go-${pkg##*:}.txt" 2>&1
    local rc=$?
    note "go test $dir: exit $rc, $(grep -c '^--- PASS' "$OUT/go-${pkg##*:}.txt") passed, $(grep -c '^--- FAIL' "$OUT/go-${pkg##*:}.txt") failed, $(grep -c '^--- SKIP' "$OUT/go-${pkg##*:}.txt") skipped"
    [ $rc -eq 0 ] || status=1
  done
  if "$PY" -c 'import pytest' 2>/dev/null; then
    timeout 300 "$PY" -m pytest -m gpu -v -p no:cacheprovider python/tests >"$OUT/pytest-gpu.txt" 2>&1
    local rc=$?
    note "pytest -m gpu: exit $rc: $(tail -1 "$OUT/pytest-gpu.txt")"
    [ $rc -eq 0 ] || status=1
    # NVDEC's Python tests read GPU memory through the driver API (no torch needed).
    timeout 200 "$PY" -m pytest -v -p no:cacheprovider python/tests/test_video.py -k "gpu_video or mixed_video" \
      >"$OUT/pytest-nvdec.txt" 2>&1
    rc=$?
    note "pytest NVDEC: exit $rc: $(tail -1 "$OUT/pytest-nvdec.txt")"
    [ $rc -eq 0 ] || status=1
  else
    note "pytest -m gpu: skipped, pytest is not installed for $PY"
  fi
}

run_bench() {
  timeout 560 "$PY" -m godali_tools bench --device cuda --batch-size 256 --workers 16 --repeats 3 \
    --json "$OUT/bench.json" --chart "$OUT/bench.png" 2>&1 | tee "$OUT/bench.txt"
  local rc=${PIPESTATUS[0]}
  note "bench: exit $rc"
  [ $rc -eq 0 ] || status=1
}

case $PHASE in
  tests) run_tests ;;
  bench) run_bench ;;
  all) run_tests; run_bench ;;
  *) echo "usage: $0 [tests|bench|all]" >&2; exit 2 ;;
esac
exit $status
