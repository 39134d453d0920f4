"""tests/wheel_check.py (what `make test-wheel` checks in a wheel) finds each problem
it is there for: a driver library grafted in, a too-new glibc, missing licences."""

import glob
import os
import shutil
import sys
import zipfile

import pytest

from conftest import REPO, need

sys.path.insert(0, os.path.join(REPO, "tests"))
wheel_check = need("wheel_check", reason="needs pyelftools")

HOST_LIB = os.path.join(REPO, "build", "libgodali.so")  # linked against this host's glibc
FLOOR_LIB = os.path.join(REPO, "build", "manylinux", "libgodali.so")  # make wheel-libs
LIBJPEG = next(iter(glob.glob("/usr/lib/*/libjpeg.so.62")), None)


def _wheel(tmp_path, tag, files):
    """A wheel named with TAG holding FILES ({name in wheel: source path or bytes}),
    and the folder it installs into (site/godali)."""
    site = tmp_path / "site"
    whl = tmp_path / ("godali-0.1.0-py3-none-%s.whl" % tag)
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("godali-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n" +
                   "".join("Tag: py3-none-%s\n" % t for t in tag.split(".")))
        for name, src in files.items():
            dst = site / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, bytes):
                dst.write_bytes(src)
            else:
                shutil.copy(src, dst)
            z.write(dst, name)
    return str(whl), str(site / "godali")


def _licences(lib_dir_files):
    src = os.path.join(REPO, "build", "licenses")
    if not os.path.isfile(os.path.join(src, "go", "MODULES.txt")):
        pytest.skip("build/licenses not gathered (make cpu)")
    for root, _, names in os.walk(src):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), src)
            lib_dir_files["godali/lib/licenses/" + rel] = os.path.join(root, n)
    return lib_dir_files


def test_a_wheel_like_the_old_one_fails_every_check(tmp_path):
    if not os.path.isfile(HOST_LIB) or LIBJPEG is None:
        pytest.skip("needs build/libgodali.so and libjpeg.so.62")
    # The wheel of issue 20: manylinux_2_34, a grafted libcuda, no licences.
    whl, pkg = _wheel(tmp_path, "manylinux_2_34_x86_64", {
        "godali/lib/libgodali.so": HOST_LIB,
        "godali.libs/libcuda-3a1b2c3d.so.535.309.01": LIBJPEG,
        "godali/lib/libjpeg.so.62": LIBJPEG,
        "godali/bench.py": b"# the bench, in the package\n",
        "godali/tools/photos/flower.jpg": b"\xff\xd8\xff"})
    problems, _ = wheel_check.check(whl, pkg, (2, 28))
    text = "\n".join(problems)
    assert "platform tag manylinux_2_34_x86_64 needs glibc 2.34" in text
    assert "godali.libs/libcuda-3a1b2c3d.so.535.309.01 is a driver or CUDA toolkit" in text
    if wheel_check.elf_facts(HOST_LIB)[2] > (2, 28):
        assert "godali/lib/libgodali.so needs GLIBC_2." in text
    assert "licence file LICENSE missing" in text
    assert "godali/lib/libjpeg.so.62 is bundled without its licence" in text
    assert "whose licence is not in the wheel" in text
    # The tools shipped inside it (issue 25): they are godali_tools' now.
    assert "godali/bench.py is a tool's file" in text
    assert "godali/tools/photos/flower.jpg is a tool's file" in text


def test_a_floor_built_wheel_passes(tmp_path):
    if not os.path.isfile(FLOOR_LIB) or LIBJPEG is None:
        pytest.skip("build/manylinux/libgodali.so not built (make wheel-libs)")
    files = _licences({"godali/lib/libgodali.so": FLOOR_LIB,
                       "godali/lib/libjpeg.so.62": LIBJPEG})
    with open(os.path.join(REPO, "build", "licenses", "go", "MODULES.txt")) as f:
        gathered = {ln.split()[0] for ln in f if ln.strip() and not ln.startswith("#")}
    if not set(wheel_check.go_modules_in(FLOOR_LIB)) <= gathered:
        pytest.skip("build/manylinux/libgodali.so is older than go.mod (make wheel-libs)")
    whl, pkg = _wheel(tmp_path, "manylinux_2_17_x86_64.manylinux2014_x86_64", files)
    problems, libs = wheel_check.check(whl, pkg, (2, 28))
    assert problems == []
    assert sorted(libs) == ["godali/lib/libgodali.so", "godali/lib/libjpeg.so.62"]
    # The same wheel with a module's licence gone, or tagged above the floor.
    os.remove(os.path.join(pkg, "lib", "licenses", "go", "golang.org_x_sys@v0.49.0.LICENSE"))
    problems, _ = wheel_check.check(whl, pkg, (2, 12))
    assert any("golang.org_x_sys@v0.49.0.LICENSE of golang.org/x/sys missing" in p
               for p in problems), problems
    assert any("platform tag manylinux_2_17_x86_64 needs glibc 2.17, newer than the "
               "floor 2.12" in p for p in problems), problems
    assert any("libgodali.so needs GLIBC_2.14, newer than the floor 2.12" in p
               for p in problems), problems


def test_tools_names():
    for name in ("godali_tools/bench.py", "godali_tools/photos/flower.jpg", "godali/bench.py",
                 "godali/bench_remote.py", "godali/cloud_emulators.py",
                 "godali/tools/make_dataset.py", "godali/x/y.JPG"):
        assert wheel_check.TOOLS.search(name), name
    for name in ("godali/__init__.py", "godali/torch.py", "godali/plugin/pytorch/__init__.py",
                 "godali/lib/libgodali.so", "godali-0.1.0.dist-info/RECORD"):
        assert not wheel_check.TOOLS.search(name), name


def test_forbidden_names():
    for name in ("libcuda.so.1", "libcuda-3f8e2a1c.so.535.309.01", "libnvidia-ml.so.1",
                 "libcudart.so.11.0", "libnvjpeg.so.11", "libcublasLt.so.11"):
        assert wheel_check.FORBIDDEN.match(name), name
    for name in ("libgodali_cuda.so", "libgodali.so", "libjpeg.so.62"):
        assert not wheel_check.FORBIDDEN.match(name), name


def test_bind_now_is_seen(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "f.c"
    src.write_text("extern int later(void);\nint f(void) { return later(); }\n")
    import subprocess
    for flag, want in (("-Wl,-z,now", True), ("-Wl,-z,lazy", False)):
        so = tmp_path / ("f%d.so" % want)
        subprocess.run([cc, "-shared", "-fPIC", flag, "-o", str(so), str(src)], check=True)
        assert wheel_check.bind_now(str(so)) is want, flag
