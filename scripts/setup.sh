#!/usr/bin/env bash
# setup.sh installs everything godali needs to build and test on Debian 12.
# Idempotent: packages already present are skipped by apt. Set GODALI_NO_CUDA=1 to
# skip the CUDA toolkit (then only the CPU flavour is built).
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

want=(libjpeg62-turbo-dev cmake pkg-config python3-torch python3-torchvision
      python3-pil python3-numpy python3-pytest python3-pip nginx)
if [ "${GODALI_NO_CUDA:-0}" != 1 ]; then
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
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ "$made_policy" = 1 ]; then $SUDO rm -f "$policy"; fi
fi

# moto: the S3-compatible server the source/remote tests start on loopback.
have_moto=0
if command -v moto_server >/dev/null && moto_server --help >/dev/null 2>&1; then have_moto=1; fi
for py in python3 /usr/bin/python3; do
  if [ "$have_moto" = 0 ] && command -v "$py" >/dev/null && "$py" -c 'import moto.server' 2>/dev/null; then have_moto=1; fi
done
if [ "$have_moto" = 0 ]; then
  echo "setup: installing moto[server] (PyPI)"
  python3 -m pip install -q --break-system-packages 'moto[server]' ||
    python3 -m pip install -q 'moto[server]'
fi
command -v go >/dev/null || { echo "setup: Go is required (https://go.dev/dl), not found on PATH" >&2; exit 1; }
echo "setup: ok"
