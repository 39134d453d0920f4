"""python -m godali: info, and dispatch to bench / make_dataset."""

import json
import sys
import types as pytypes

import pytest

from godali import __main__ as cli

from conftest import run_python


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


@pytest.mark.parametrize("command,module", [("bench", "godali.bench"),
                                            ("make_dataset", "godali.tools.make_dataset")])
def test_dispatch(monkeypatch, command, module):
    seen = []
    fake = pytypes.ModuleType(module)
    fake.main = lambda argv: seen.append(list(argv)) or 0
    monkeypatch.setitem(sys.modules, module, fake)
    parent, _, leaf = module.rpartition(".")
    monkeypatch.setattr(sys.modules[parent] if parent in sys.modules else
                        __import__(parent, fromlist=["x"]), leaf, fake, raising=False)
    assert cli.main([command, "--x", "1"]) == 0
    assert seen == [["--x", "1"]]


def test_unknown_command(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert cli.main([]) == 2
    assert "usage" in capsys.readouterr().err
    assert cli.main(["--help"]) == 0
