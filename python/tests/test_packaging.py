"""pip install of the package with the library inside (what `make python` prepares)."""

import glob
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import PYTHON_DIR, REPO


@pytest.mark.slow
def test_wheel_carries_the_library_and_loads_it(tmp_path, lib):
    build = os.path.join(REPO, "build")
    libs = glob.glob(os.path.join(build, "libgodali*.so"))
    if not libs:
        pytest.skip("build/ has no library (the tests ran against GODALI_LIBRARY)")
    src = tmp_path / "src"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "tests", "lib", "__pycache__", "*.egg-info", "build", ".pytest_cache"))
    # What `make python` does: the built libraries next to the package code.
    os.makedirs(src / "godali" / "lib")
    for f in glob.glob(os.path.join(build, "libgodali*.so")) + \
            glob.glob(os.path.join(build, "libjpeg.so.62")):
        shutil.copy(f, src / "godali" / "lib")
    pip = [sys.executable, "-m", "pip"]
    r = subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w",
                              str(tmp_path / "dist"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (wheel,) = glob.glob(str(tmp_path / "dist" / "*.whl"))
    assert "-py3-none-linux_" in os.path.basename(wheel)  # platform, not pure
    names = zipfile.ZipFile(wheel).namelist()
    assert "godali/lib/libgodali.so" in names
    for mod in ("plugin/pytorch/__init__.py", "plugin/base_iterator.py", "pipeline/experimental.py",
                "plugin/pytorch/experimental/proxy/__init__.py", "ops.py", "backend.py"):
        assert "godali/" + mod in names

    target = tmp_path / "site"
    r = subprocess.run(pip + ["install", "--no-deps", "--target", str(target), wheel],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("GODALI_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    r = subprocess.run([sys.executable, "-m", "godali", "info"], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    installed = os.path.join(str(target), "godali", "lib")
    assert "library: %s" % installed in r.stdout, r.stdout


@pytest.mark.slow
def test_install_without_the_library_fails_at_install_with_the_way_out(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "tests", "lib", "__pycache__", "*.egg-info", "build", ".pytest_cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                        "--no-build-isolation", "--target", str(tmp_path / "site"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "godali's library is not in python/godali/lib/" in out, out[-3000:]
    assert "make python" in out
    assert not (tmp_path / "site" / "godali").exists()
