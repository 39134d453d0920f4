"""python -m godali: info, plan, --version; the former tools commands point to godali_tools."""

import json
import os
import subprocess
import sys

import pytest

from godali import __main__ as cli

from conftest import PYTHON_DIR, run_python


def test_info_subprocess(lib):
    r = run_python("import sys; from godali.__main__ import main; sys.exit(main(['info']))")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "godali 0.1.0 (library 0.1.0)" in out
    assert "library: %s" % lib.path in out
    assert "flavour: %s" % lib.flavour in out
    assert "CUDA devices" in out


def test_info_ops_lists_operators(capsys):
    assert cli.main(["info", "--ops"]) == 0
    out = capsys.readouterr().out
    for op in ("readers.file", "decoders.image_random_crop", "crop_mirror_normalize",
               "random.coin_flip"):
        assert op in out
    assert cli.main(["info", "--ops", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["flavour"] in ("cpu", "cuda")
    assert "resize" in {o["name"] for o in doc["operators"]}


@pytest.mark.parametrize("command", ["bench", "bench-remote", "make_dataset"])
def test_tools_commands_point_to_godali_tools(capsys, command):
    # The tools left the package (tools/, godali_tools): the old commands say where.
    assert cli.main([command, "--x", "1"]) == 2
    err = capsys.readouterr().err
    assert "python -m godali_tools %s" % command in err


def test_unknown_command(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert cli.main([]) == 2
    assert "usage" in capsys.readouterr().err
    assert cli.main(["--help"]) == 0


def _godali_subprocess(args, stdout=subprocess.PIPE):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "godali"] + args, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_version(lib):
    r = _godali_subprocess(["--version"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "godali 0.1.0 (library 0.1.0, %s flavour, %s)" % (lib.flavour, lib.path)]
    import godali
    assert godali.__version__ == "0.1.0"


def test_version_without_a_library_still_answers(tmp_path):
    env = dict(os.environ, GODALI_LIBRARY=str(tmp_path / "missing.so"))
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "godali", "--version"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("godali 0.1.0 (library not loaded: ")
    assert "missing.so" in r.stdout


@pytest.mark.parametrize("args", [["info"], ["info", "--ops"], ["--help"], ["--version"]])
def test_closed_pipe_exits_quietly(lib, args):
    # The reader is gone before godali writes its first byte: every write fails with
    # EPIPE, as in `godali info | head -1` once head has exited.
    rd, wr = os.pipe()
    os.close(rd)
    try:
        r = _godali_subprocess(args, stdout=wr)
    finally:
        os.close(wr)
    assert r.stderr == "", r.stderr
    assert r.returncode == 1


def test_head_of_info_through_a_shell_pipe(lib):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run("set -o pipefail; '%s' -m godali info --ops 2>&1 | head -1"
                       % sys.executable, shell=True, executable="/bin/bash", env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout == "godali 0.1.0 (library 0.1.0)\n"
    assert "Traceback" not in r.stdout + r.stderr
