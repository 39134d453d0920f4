"""Runs one script under DALI 2.4 and under godali, side by side, for the oracle tests
(test_oracle, test_propsweep, test_pipesweep, test_cond_oracle): each implementation in
its own process (only one of them may be importable as the pipeline library), both at
once."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DALI_DIR = os.environ.get("GODALI_DALI_DIR", "/usr/local/lib/godali-dali")
GODALI_DIR = os.path.join(REPO, "python")
# DALI 2.4's CPU image decoders dlopen nvImageCodec from the loader path (scripts/setup.sh
# installs it here); without it they fail with "dlopen libnvimgcodec.so failed".
NVIMGCODEC_DIR = os.path.join(DALI_DIR, "nvidia", "nvimgcodec")


def have_dali():
    return os.path.isfile(os.path.join(DALI_DIR, "nvidia", "dali", "__init__.py"))


def require_dali(what):
    """Skips the test without DALI, or fails it where references are required (CI)."""
    if have_dali():
        return
    if os.environ.get("GODALI_STRICT_REFERENCES") == "1":
        pytest.fail("DALI is not installed in %s (scripts/setup.sh installs it)" % DALI_DIR)
    pytest.skip("DALI is not installed in %s: %s needs it (scripts/setup.sh installs it)"
                % (DALI_DIR, what))


def have_nvimgcodec():
    return os.path.isfile(os.path.join(NVIMGCODEC_DIR, "libnvimgcodec.so.0"))


def require_dali_decoders(what):
    """As require_dali, and also needs nvImageCodec (DALI's decoders dlopen it)."""
    require_dali(what)
    if have_nvimgcodec():
        return
    if os.environ.get("GODALI_STRICT_REFERENCES") == "1":
        pytest.fail("nvImageCodec is not installed in %s (scripts/setup.sh installs it)"
                    % NVIMGCODEC_DIR)
    pytest.skip("nvImageCodec is not installed in %s: %s needs DALI's decoders "
                "(scripts/setup.sh installs it)" % (NVIMGCODEC_DIR, what))


def dali_env(base=None):
    """The environment of a DALI runner: base (os.environ) with nvImageCodec's folder,
    where it is installed, ahead on LD_LIBRARY_PATH, so that DALI's decoders run."""
    env = dict(os.environ if base is None else base)
    if have_nvimgcodec():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [NVIMGCODEC_DIR] + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    return env


def run_both(argv, timeout, python=None, paths=None):
    """Runs argv(impl) for impl "dali" and "godali" at once, with PYTHONPATH set to that
    implementation (paths overrides it per impl), and asserts both exit 0."""
    paths = dict({"dali": DALI_DIR, "godali": GODALI_DIR}, **(paths or {}))
    procs = []
    for impl in ("dali", "godali"):
        env = dict(dali_env() if impl == "dali" else os.environ, PYTHONPATH=paths[impl])
        procs.append(subprocess.Popen([python or sys.executable] + argv(impl), env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    for p in procs:
        text, _ = p.communicate(timeout=timeout)
        assert p.returncode == 0, text[-3000:]
