#!/bin/sh
# floor-cc.sh cc|c++ ARGS...: the C (or C++) compiler that cgo uses for the wheel's
# libraries. Zig's clang (PyPI's ziglang) compiles and links against glibc
# $GODALI_GLIBC_FLOOR's headers and symbol versions (2.28 unless set) rather than the
# build machine's glibc, so the wheel loads on any Linux with that glibc or newer
# (manylinux_2_28: RHEL/Rocky 8, Ubuntu 20.04, Debian 10 and later).
#
# The target is cross in zig's eyes: it sees none of /usr/include or /usr/lib, only
# what the caller passes (-I/-L of a folder that holds the few host headers and
# libraries godali links: libjpeg, and the CUDA toolkit's headers and driver stub).
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
# The host's own header and library folders are dropped from the command line: a
# dependency's #cgo directives may name them (gorgonia.org/cu adds -I/usr/include and
# -L/usr/lib/x86_64-linux-gnu/), and through them the host's glibc headers would
# replace the floor's. What godali needs from there is linked into the folder given
# with -I/-L by the Makefile ($(FLOOR)).
n=$#
i=0
while [ "$i" -lt "$n" ]; do
  a=$1
  shift
  i=$((i + 1))
  case "$a" in
    -I/usr/include|-I/usr/include/|-I/usr/local/include|-I/usr/local/include/) continue ;;
    -L/usr/lib|-L/usr/lib/|-L/lib|-L/lib/|-L/usr/lib/*-linux-gnu|-L/usr/lib/*-linux-gnu/) continue ;;
    -L/lib/*-linux-gnu|-L/lib/*-linux-gnu/|-L/usr/lib64|-L/usr/lib64/|-L/lib64|-L/lib64/) continue ;;
    # go-nvml's #cgo LDFLAGS (it resolves NVML with dlsym); zig's linker lacks the flag,
    # and undefined symbols are allowed in a shared library anyway.
    -Wl,--unresolved-symbols=ignore-in-object-files) continue ;;
    # A library folder that does not exist: gorgonia.org/cu names /usr/local/cuda/lib64
    # and /usr/local/cuda/lib, which Debian's toolkit lacks; zig's linker would print an
    # alarming "unable to open library directory" for each (GNU ld says nothing).
    -L/*) [ -d "${a#-L}" ] || continue ;;
  esac
  set -- "$@" "$a"
done
exec "${GODALI_FLOOR_PYTHON:-/usr/bin/python3}" -m ziglang "$mode" \
  -target "$arch-linux-gnu.${GODALI_GLIBC_FLOOR:-2.28}" "$@"
