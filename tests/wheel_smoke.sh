#!/usr/bin/env bash
# wheel_smoke.sh WHEEL: installs the wheel into a fresh virtual environment and checks
# what it carries (tests/wheel_check.py: no driver or CUDA toolkit library, manylinux
# tag and GLIBC symbol versions at most GODALI_GLIBC_FLOOR, the licences of everything
# bundled), then that it works from there: the `godali` command, import godali, the
# library found inside the package (not build/), a small pipeline run, a torch tensor
# out, and godali.torch's DataLoader.
#
# With GODALI_WHEEL_EMU=DIR (the GPU emulator's libcuda.so.1, tests/gpuemu; make
# test-wheel-emu), it also loads the wheel's CUDA flavour and checks that the libcuda.so.1
# it runs on is the one the host offers (DIR, through LD_LIBRARY_PATH), never a copy from
# the wheel, and that a mixed-device pipeline runs on it.
#
# The venv sees the system's site-packages for torch, numpy and PIL: godali comes only
# from the wheel (pip --no-deps --no-index). Why not PyPI's torch: `pip download
# --no-deps torch` fetched torch-2.15.0 (539 MB) in 44 s on the development machine, but
# installing it also pulls its nvidia-* CUDA wheels (several GB, not measured), on every
# CI run, to test godali's packaging rather than torch's; torch's DLPack import, which
# is what godali relies on, is the same API in Debian's 1.13.
set -euo pipefail
wheel=$(readlink -f "$1")
emu=${GODALI_WHEEL_EMU:+$(readlink -f "$GODALI_WHEEL_EMU")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --no-deps --no-index "$wheel"
here=$(dirname "$(readlink -f "$0")")
cd "$tmp"
pkg=$(env -u PYTHONPATH "$tmp/venv/bin/python" -c 'import godali, os; print(os.path.dirname(godali.__file__))')
env -u PYTHONPATH "$tmp/venv/bin/python" "$here/wheel_check.py" "$wheel" "$pkg"

# The console script, and a reader that closes the pipe early: no traceback.
version=$(env -u PYTHONPATH -u GODALI_LIBRARY "$tmp/venv/bin/godali" --version)
case "$version" in
  "godali "*"(library "*", "*" flavour, $pkg/lib/libgodali"*) echo "wheel smoke: $version" ;;
  *) echo "wheel smoke: godali --version said: $version" >&2; exit 1 ;;
esac
# godali exits 1 when head closed the pipe first (0 when it finished before), quietly.
status=0
env -u PYTHONPATH -u GODALI_LIBRARY "$tmp/venv/bin/godali" info --ops 2>"$tmp/info.err" | head -1 >/dev/null || status=$?
if [ -s "$tmp/info.err" ] || [ "$status" -gt 1 ]; then
  echo "wheel smoke: godali info | head -1 exited $status and wrote to stderr:" >&2
  cat "$tmp/info.err" >&2; exit 1
fi

mkdir -p "$tmp/data/a" "$tmp/data/b"
env -u PYTHONPATH -u GODALI_LIBRARY "$tmp/venv/bin/python" - "$tmp" <<'PY'
import os, sys
tmp = sys.argv[1]
import godali
from godali import fn, types
where = os.path.dirname(godali.__file__)
assert where.startswith(os.path.join(tmp, "venv")), where
info = godali.library_info()
assert info["library_path"].startswith(where), info
from PIL import Image
import numpy as np
for i, d in enumerate(["a", "b", "a", "b"]):
    arr = (np.arange(24 * 32 * 3).reshape(24, 32, 3) * (i + 1) % 256).astype(np.uint8)
    Image.fromarray(arr).save(os.path.join(tmp, "data", d, "%d.jpg" % i), quality=95)
pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
with pipe:
    jpegs, labels = fn.readers.file(file_root=os.path.join(tmp, "data"))
    images = fn.crop_mirror_normalize(fn.resize(fn.decoders.image(jpegs), size=[16, 16]),
                                      dtype=types.FLOAT, output_layout="CHW")
    pipe.set_outputs(images, labels)
pipe.build()
x, y = pipe.run()
import torch
t = torch.from_dlpack(x.as_tensor())
assert isinstance(t, torch.Tensor) and tuple(t.shape) == (2, 3, 16, 16), t.shape
import torchvision.transforms as T
from godali.torch import DataLoader, ImageFolder
dl = DataLoader(ImageFolder(os.path.join(tmp, "data"),
                            transform=T.Compose([T.Resize((8, 8)), T.ToTensor()])), batch_size=4)
xb, yb = next(iter(dl))
assert xb.shape == (4, 3, 8, 8) and yb.dtype == torch.int64
print("wheel smoke test: ok (%s, %s)" % (info["library_path"], info["flavour"]))
PY

if [ -n "$emu" ]; then
test -f "$emu/libcuda.so.1" || { echo "wheel smoke: no libcuda.so.1 in $emu" >&2; exit 1; }
env -u PYTHONPATH -u GODALI_LIBRARY LD_LIBRARY_PATH="$emu" GODALI_FLAVOUR=cuda \
  GODALI_NVJPEG_LIBRARY="$emu/libnvjpeg_emu.so" GODALI_REQUIRE_GPU=1 \
  "$tmp/venv/bin/python" - "$tmp" "$emu" <<'PY'
import os, sys
tmp, emu = sys.argv[1], sys.argv[2]
import godali
from godali import fn, types
where = os.path.dirname(godali.__file__)
info = godali.library_info()
assert info["flavour"] == "cuda" and info["library_path"].startswith(where), info
with open("/proc/self/maps") as f:
    cuda_libs = {line.split()[-1] for line in f if "libcuda" in line.split()[-1]}
assert cuda_libs == {os.path.join(emu, "libcuda.so.1")}, cuda_libs
pipe = godali.Pipeline(batch_size=2, num_threads=1, device_id=0, seed=1)
with pipe:
    jpegs, labels = fn.readers.file(file_root=os.path.join(tmp, "data"))
    images = fn.resize(fn.decoders.image(jpegs, device="mixed", output_type=types.RGB),
                       size=[16, 16])
    pipe.set_outputs(images, labels)
pipe.build()
x, y = pipe.run()
t = x.as_tensor()  # (as_cpu() would need a CUDA torch; the venv's is Debian's CPU one)
assert t.__dlpack_device__() == (2, 0), t.__dlpack_device__()  # kDLCUDA, device 0
assert tuple(t.shape()) == (2, 16, 16, 3) and t.__cuda_array_interface__["typestr"] == "|u1"
print("wheel smoke test (CUDA flavour on the host's libcuda.so.1 = %s): ok" % sorted(cuda_libs)[0])
PY
fi
