#!/usr/bin/env python3
"""wheel_check.py WHEEL PACKAGE_DIR: checks what a godali wheel carries.

WHEEL is the .whl file, PACKAGE_DIR the godali package it installed (in a fresh venv;
tests/wheel_smoke.sh). Four checks, each printing what it saw:

1. No driver or CUDA toolkit library inside: libcuda and libnvidia-* must come from
   the host's driver (a bundled copy would not match the kernel module), libcudart,
   nvJPEG and the rest from the host's toolkit. The CUDA flavour must instead need
   libcuda.so.1 by name, so that the dynamic loader takes the host's, and bind its
   symbols lazily (no BIND_NOW: NVML's are resolved only after godali dlopens it).
2. manylinux: every platform tag of the wheel is manylinux_X_Y (or a legacy alias) with
   X.Y <= the floor (GODALI_GLIBC_FLOOR, 2.28), and every bundled shared library asks for
   GLIBC_ symbol versions no newer than the floor (read with pyelftools, not trusted
   from auditwheel).
3. Licences: godali's own, the notices, the text of every bundled non-godali library,
   and one for every Go module compiled into each libgodali*.so (listed in the
   library's Go build information, compared with licenses/go/MODULES.txt).
4. No tools: bench, bench-remote, make_dataset, the cloud emulators and the photographs
   are godali_tools (tools/), a package of their own, never in the godali wheel.

Exits non-zero, naming each problem, when a check fails.
"""

import os
import re
import sys
import zipfile

from elftools.elf.elffile import ELFFile
from elftools.elf.dynamic import DynamicSection
from elftools.elf.gnuversions import GNUVerNeedSection

# Shared libraries of the NVIDIA driver and of the CUDA toolkit, by soname stem.
FORBIDDEN = re.compile(
    r"^lib(cuda|nvidia-[\w-]+|nvcuvid|nvoptix|cudart|nvjpeg|nvrtc|nvJitLink|cublas\w*|"
    r"cufft\w*|curand|cusolver\w*|cusparse\w*|npp\w*|nvToolsExt|cudnn\w*|nccl)"
    r"([-.][\w.-]*)?\.so")
# What belongs to godali_tools (tools/), not to the godali wheel: the package, the modules
# it took out of godali, and images (make_dataset's photographs).
TOOLS = re.compile(r"^(godali_tools/|godali/(bench|bench_remote|cloud_emulators)\.py$|"
                   r"godali/tools/)|\.(jpe?g|png)$", re.IGNORECASE)
# A bundled library that is not godali's own needs its licence text in the wheel.
BUNDLED_LICENCES = {"libjpeg": "libjpeg-turbo.copyright"}
LEGACY_TAGS = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _version(text):
    return tuple(int(x) for x in text.split("."))


DF_BIND_NOW, DF_1_NOW = 0x8, 0x1


def bind_now(path):
    """Whether the dynamic loader must resolve every symbol at load time (BIND_NOW)."""
    with open(path, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            if isinstance(sec, DynamicSection):
                for tag in sec.iter_tags():
                    if tag.entry.d_tag == "DT_FLAGS" and tag.entry.d_val & DF_BIND_NOW:
                        return True
                    if tag.entry.d_tag == "DT_FLAGS_1" and tag.entry.d_val & DF_1_NOW:
                        return True
                    if tag.entry.d_tag == "DT_BIND_NOW":
                        return True
    return False


def elf_facts(path):
    """(needed sonames, runpath entries, max GLIBC_ version tuple or None)."""
    needed, runpath, glibc = [], [], []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if isinstance(sec, DynamicSection):
                for tag in sec.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        runpath += (tag.runpath if tag.entry.d_tag == "DT_RUNPATH"
                                    else tag.rpath).split(":")
            elif isinstance(sec, GNUVerNeedSection):
                for _, auxes in sec.iter_versions():
                    for aux in auxes:
                        m = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)+)", aux.name)
                        if m:
                            glibc.append(_version(m.group(1)))
    return needed, runpath, max(glibc) if glibc else None


def go_modules_in(path):
    """The Go modules of a Go binary's build information ("dep\\tPATH\\tVERSION")."""
    with open(path, "rb") as f:
        data = f.read()
    mods = {}
    for m in re.finditer(rb"\n(?:dep|=>)\t([^\t\n]+)\t([^\t\n]+)", data):
        mods[m.group(1).decode()] = m.group(2).decode()
    return mods


def platform_tags(wheel):
    name = os.path.basename(wheel)[:-len(".whl")]
    return name.split("-")[-1].split(".")


def main(argv):
    wheel, pkg = argv[1], argv[2]
    floor = _version(os.environ.get("GODALI_GLIBC_FLOOR", "2.28"))
    problems, libs = check(wheel, pkg, floor)
    if problems:
        for p in problems:
            print("wheel_check: FAIL: " + p, file=sys.stderr)
        return 1
    print("wheel_check: ok (%d shared libraries, no driver or toolkit library)" % len(libs))
    return 0


def check(wheel, pkg, floor):
    """Returns (problems, shared libraries in the wheel) for WHEEL installed at PKG."""
    problems = []

    # --- the platform tags --------------------------------------------------------
    tags = platform_tags(wheel)
    for tag in tags:
        m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", tag)
        legacy = next((v for k, v in LEGACY_TAGS.items() if tag.startswith(k + "_")), None)
        glibc = (int(m.group(1)), int(m.group(2))) if m else legacy
        if glibc is None:
            problems.append("platform tag %s is not a manylinux tag" % tag)
        elif glibc > floor:
            problems.append("platform tag %s needs glibc %d.%d, newer than the floor %s"
                            % (tag, glibc[0], glibc[1], ".".join(map(str, floor))))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        wheel_meta = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        meta_tags = [ln.split(":", 1)[1].strip() for ln in
                     z.read(wheel_meta).decode().splitlines() if ln.startswith("Tag:")]
    if sorted(t.split("-")[-1] for t in meta_tags) != sorted(tags):
        problems.append("WHEEL metadata tags %s disagree with the file name %s"
                        % (meta_tags, tags))
    print("wheel_check: platform tags %s (floor glibc %s)"
          % (", ".join(tags), ".".join(map(str, floor))))

    # --- what the wheel carries -----------------------------------------------------
    libs = [n for n in names if re.search(r"\.so(\.\d+)*$", n)]
    for n in names:
        if FORBIDDEN.match(os.path.basename(n)):
            problems.append("%s is a driver or CUDA toolkit library; the wheel must use the "
                            "host's" % n)
    site = os.path.dirname(os.path.abspath(pkg))
    godali_libs = []
    for n in libs:
        path = os.path.join(site, n)
        if not os.path.isfile(path):
            problems.append("%s is in the wheel but was not installed at %s" % (n, path))
            continue
        needed, runpath, glibc = elf_facts(path)
        shown = ".".join(map(str, glibc)) if glibc else "none"
        print("wheel_check: %s: GLIBC <= %s, needs %s" % (n, shown, ", ".join(needed)))
        if glibc and glibc > floor:
            problems.append("%s needs GLIBC_%s, newer than the floor %s"
                            % (n, shown, ".".join(map(str, floor))))
        for r in runpath:
            if r and not r.startswith("$ORIGIN"):
                problems.append("%s has run path %s outside the package" % (n, r))
        base = os.path.basename(n)
        if base.startswith("libgodali"):
            godali_libs.append(path)
            if "cuda" in base and "libcuda.so.1" not in needed:
                problems.append("%s does not need libcuda.so.1 by name: %s"
                                % (n, ", ".join(needed)))
            # go-nvml's NVML symbols are bound once the driver's libnvidia-ml is
            # dlopen'ed; a library linked BIND_NOW fails to load before that.
            if bind_now(path):
                problems.append("%s is linked with BIND_NOW (-z now): its NVML symbols "
                                "must bind lazily" % n)
    if not any(os.path.basename(p) == "libgodali.so" for p in godali_libs):
        problems.append("no libgodali.so in the wheel")

    # --- no tools -------------------------------------------------------------------
    tools = [n for n in names if TOOLS.search(n)]
    for n in tools:
        problems.append("%s is a tool's file (godali_tools, tools/): it must not ship in "
                        "the godali wheel" % n)
    print("wheel_check: %d files, none of godali_tools (bench, make_dataset, photographs)"
          % len(names) if not tools else "wheel_check: %d tools files" % len(tools))

    # --- licences -------------------------------------------------------------------
    lic = os.path.join(pkg, "lib", "licenses")
    for must in ("LICENSE", "THIRD_PARTY_NOTICES.md", "dlpack.LICENSE", "go/MODULES.txt"):
        if not os.path.isfile(os.path.join(lic, must)):
            problems.append("licence file %s missing from %s" % (must, lic))
    for n in libs:
        base = os.path.basename(n)
        if base.startswith("libgodali"):
            continue
        stem = re.sub(r"(-[0-9a-f]{8})?\.so.*$", "", base)  # auditwheel's hashed names
        text = BUNDLED_LICENCES.get(stem)
        if text is None:
            problems.append("%s is bundled but no licence is known for it: add its licence "
                            "to licenses/ and to BUNDLED_LICENCES in %s" % (n, __file__))
        elif not os.path.isfile(os.path.join(lic, text)):
            problems.append("%s is bundled without its licence %s" % (n, text))
        else:
            print("wheel_check: %s: licence %s" % (n, text))
    listed = {}
    index = os.path.join(lic, "go", "MODULES.txt")
    if os.path.isfile(index):
        with open(index) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    mod, version, *files = line.split()
                    listed[mod] = (version, files)
                    for fn in files:
                        if not os.path.isfile(os.path.join(lic, "go", fn)):
                            problems.append("licence %s of %s missing" % (fn, mod))
    if "std" not in listed:
        problems.append("the Go standard library's licence is not listed in %s" % index)
    for path in godali_libs:
        mods = go_modules_in(path)
        if not mods:
            problems.append("%s: no Go build information found" % path)
        for mod, version in sorted(mods.items()):
            if mod not in listed:
                problems.append("%s compiles in %s %s, whose licence is not in the wheel"
                                % (os.path.basename(path), mod, version))
            elif listed[mod][0] != version:
                problems.append("%s compiles in %s %s, but the licence is of %s"
                                % (os.path.basename(path), mod, version, listed[mod][0]))
        print("wheel_check: %s: %d Go modules, each with its licence"
              % (os.path.basename(path), len(mods)))

    return problems, libs


if __name__ == "__main__":
    sys.exit(main(sys.argv))
