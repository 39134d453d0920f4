#!/usr/bin/env bash
# run_cpu.sh reruns every measurement that benchmarks/RESULTS.md quotes, on the CPU.
# About 15 minutes on a 2-core machine; run it on a quiet machine (the bench warns when
# other processes take CPU time during its timed windows).
#
#   benchmarks/run_cpu.sh [OUTDIR]        (default OUTDIR: build/bench)
#
# Each run leaves OUTDIR/NAME.txt (the printed table) and OUTDIR/NAME.json.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Python (scripts/setup.sh; the Makefile's PYTHON), else Debian's.
PY=${PYTHON:-${GODALI_VENV:-/usr/local/lib/godali-venv}/bin/python}
[ -n "${PYTHON:-}" ] || [ -x "$PY" ] || PY=/usr/bin/python3
OUT=${1:-build/bench}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/python:$PWD/tools

run() {
  local name=$1
  shift
  echo "== $name: godali bench $*"
  "$PY" -m godali_tools bench --json "$OUT/$name.json" --chart "$OUT/$name.png" "$@" \
    | tee "$OUT/$name.txt"
}

# 1. The default: 1000 ImageNet-like images, every CPU contender.
run default --repeats 5

# 2. Is the loader the bottleneck at all? A real training step on the same CPU.
run resnet50 --model resnet50 --contenders torch,godali-cpu
run resnet18 --model resnet18 --contenders torch,godali-cpu

# 3. Image size: photographs 4x larger than ImageNet's, and thumbnails.
"$PY" -m godali_tools.make_dataset "$OUT/data-large" --n 300 --scale 4 --force
run large --data "$OUT/data-large"
"$PY" -m godali_tools.make_dataset "$OUT/data-small" --n 1000 --scale 0.3 --force
run small --data "$OUT/data-small"

# 4. One core per contender.
run one-core --workers 1
