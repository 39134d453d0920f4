#!/bin/sh
# floor-cc.sh cc|c++ ARGS...: the C (or C++) compiler that cgo uses for the wheel's
# libraries. Zig's clang (PyPI's ziglang) compiles and links against glibc
# $GODALI_GLIBC_FLOOR's headers and symbol versions (2.28 unless set) rather than the
# build machine's glibc, so the wheel loads on any Linux with that glibc or newer
# (manylinux_2_28: RHEL/Rocky 8, Ubuntu 20.04, Debian 10 and later).
#
# The target is cross in zig's eyes: it sees none of /usr/include or /usr/lib, only
# what the caller passes (-I/-L of a folder that holds the few host headers and
# libraries godali links: libjpeg, and the CUDA driver API's header and stub).
set -e
mode=$1
shift
case "$mode" in
  cc|c++) ;;
  *) echo "floor-cc.sh: first argument must be cc or c++, got '$mode'" >&2; exit 2 ;;
esac
arch=$(uname -m)
case "$arch" in
  x86_64|aarch64) ;;
  arm64) arch=aarch64 ;;
  *) echo "floor-cc.sh: no glibc floor target for $arch" >&2; exit 2 ;;
esac
exec "${GODALI_FLOOR_PYTHON:-/usr/bin/python3}" -m ziglang "$mode" \
  -target "$arch-linux-gnu.${GODALI_GLIBC_FLOOR:-2.28}" "$@"
