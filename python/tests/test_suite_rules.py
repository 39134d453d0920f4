"""Rules of the test suite itself. GODALI_STRICT_REFERENCES: a missing reference skips by
default and fails when set (make test, CI), and every test reaches references through
conftest's need/missing_reference. Families: every test file belongs to one (make check
FAMILY=x)."""

import os
import re

import pytest

import conftest
from conftest import HERE, missing_reference, need


def test_missing_reference_skips_by_default(monkeypatch):
    monkeypatch.delenv(conftest.STRICT_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="reference missing: PIL"):
        missing_reference("PIL")
    monkeypatch.setenv(conftest.STRICT_ENV, "0")
    with pytest.raises(pytest.skip.Exception):
        need("godali_no_such_module_xyz")


def test_missing_reference_fails_when_strict(monkeypatch):
    monkeypatch.setenv(conftest.STRICT_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="GODALI_STRICT_REFERENCES=1.*needs godali_no_such"):
        need("godali_no_such_module_xyz")
    assert need("json").dumps([1]) == "[1]"


def test_no_test_skips_on_a_reference_by_itself():
    # importorskip and skips naming a missing program or package bypass the switch.
    pattern = re.compile(r"importorskip\(|pytest\.skip\([^)]*(not installed|ffmpeg|no image corpus)")
    offenders = []
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".py") and name not in ("conftest.py", os.path.basename(__file__)):
            with open(os.path.join(HERE, name)) as f:
                for i, line in enumerate(f, 1):
                    if pattern.search(line):
                        offenders.append("%s:%d: %s" % (name, i, line.strip()))
    assert not offenders, "use conftest.need / missing_reference:\n" + "\n".join(offenders)


def test_every_test_file_has_a_family():
    files = sorted(n[:-3] for n in os.listdir(HERE) if n.startswith("test_") and n.endswith(".py"))
    listed = {f for fs in conftest.FAMILIES.values() for f in fs}
    assert not [f for f in files if f not in listed], "add them to conftest.FAMILIES"
    assert not sorted(listed - set(files)), "conftest.FAMILIES names files that do not exist"


def test_family_marks_select_their_files(request):
    # This file is in the api family: its items carry the marker make check FAMILY=api uses.
    assert request.node.get_closest_marker("family_api") is not None
    assert request.node.get_closest_marker("family_image") is None


def test_families_are_the_ops_packages_and_three_more():
    # make check FAMILY=x runs ops/x's Go tests with the Python tests of family x.
    ops = os.path.join(conftest.REPO, "ops")
    pkgs = {d for d in os.listdir(ops) if os.path.isdir(os.path.join(ops, d))} - {"all", "internal"}
    assert set(conftest.FAMILIES) == pkgs | {"api", "torch", "tools"}


def test_the_package_never_imports_nvidia_dali():
    # DALI is a test oracle and a bench reference, never a dependency of godali itself:
    # no module of the shipped package imports it (the bench's DALI contenders live in
    # the checkout's benchmarks/).
    package = os.path.join(os.path.dirname(HERE), "godali")
    pattern = re.compile(r"^\s*(import nvidia\.dali|from nvidia\.dali[\w.]* import|"
                         r"import nvidia\b|from nvidia import)")
    offenders = []
    for root, _, files in os.walk(package):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path) as f:
                    for i, line in enumerate(f, 1):
                        if pattern.search(line):
                            offenders.append("%s:%d: %s" % (os.path.relpath(path, package),
                                                            i, line.strip()))
    assert offenders == [], "\n".join(offenders)
