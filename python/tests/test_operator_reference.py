"""docs/operators-reference.md and docs/not-supported.md are what
scripts/gen_operator_reference.py writes from the library's schemas and the package's
unsupported names (make operator-reference), and the not-supported list is honest: every
entry raises NotImplementedError, and everything in godali that raises it for a DALI name
is listed."""

import importlib.util
import os
import re

import pytest

import godali
from godali import _missing, fn
from godali.auto_aug import auto_augment

from conftest import REPO

_spec = importlib.util.spec_from_file_location(
    "gen_operator_reference", os.path.join(REPO, "scripts", "gen_operator_reference.py"))
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


@pytest.mark.parametrize("path", [gen.REFERENCE, gen.NOT_SUPPORTED], ids=os.path.basename)
def test_generated_docs_are_current(path):
    want = gen.outputs()[path]
    with open(path) as f:
        assert f.read() == want, "%s is stale: run make operator-reference" % path


def test_reference_lists_every_public_operator():
    text = gen.outputs()[gen.REFERENCE]
    for name in godali._graph.schemas().ops:
        if not name.startswith("_"):
            assert "\n## %s\n" % name in text


@pytest.mark.parametrize("name", sorted(_missing.MISSING))
def test_missing_fn_names_raise(name):
    f = fn
    for part in name.split("."):
        f = getattr(f, part)
    with pytest.raises(NotImplementedError, match=re.escape("fn." + name)):
        f()


def test_unsupported_policies_raise():
    # every policy listed as unsupported raises; every other one of DALI's builds
    for policy in auto_augment.UNSUPPORTED_POLICIES:
        with pytest.raises(NotImplementedError, match=policy):
            auto_augment.auto_augment(None, policy_name=policy)
    for policy in set(auto_augment._POLICIES) - set(auto_augment.UNSUPPORTED_POLICIES):
        getattr(auto_augment, "get_%s_policy" % policy)()


def _resolve(path):
    obj = godali
    parts = path.split(".")
    obj = importlib.import_module("godali." + parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p) if hasattr(obj, p) else importlib.import_module(obj.__name__ + "." + p)
    return obj


@pytest.mark.parametrize("path", sorted(_missing.UNSUPPORTED))
def test_unsupported_calls_raise(path, tmp_path):
    import inspect
    f = _resolve(path)
    # Calls that can be made here are made; the GPU-data ones are read (their source
    # raises NotImplementedError on the path the entry names).
    if path.startswith("plugin_manager."):
        lib = tmp_path / "libplugin.so"
        lib.write_bytes(b"")
        with pytest.raises(NotImplementedError, match="DALI plugin"):
            f(str(lib) if path.endswith("load_library") else str(tmp_path))
    else:
        assert "raise NotImplementedError" in inspect.getsource(f)


def test_every_not_implemented_dali_name_is_listed():
    # A raise NotImplementedError in the package is either in the generated list (by the
    # function that raises) or one of these: abstract methods and an older library.
    exempt = {"pipeline/__init__.py": 1, "plugin/base_iterator.py": 1, "_graph.py": 2}
    listed_files = {"_missing.py", "auto_aug/_core.py", "auto_aug/auto_augment.py",
                    "plugin_manager.py", "tensors.py", "_graph.py"}
    pkg = os.path.dirname(godali.__file__)
    for root, _, files in os.walk(pkg):
        for name in files:
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(root, name), pkg)
            with open(os.path.join(root, name)) as f:
                n = len(re.findall(r"raise NotImplementedError", f.read()))
            if n == 0:
                continue
            assert rel in listed_files or rel in exempt, \
                "%s raises NotImplementedError: list it in godali._missing.UNSUPPORTED" % rel
