"""GODALI_STRICT_REFERENCES: a missing reference skips by default and fails when set (make
test, CI), and every test reaches references through conftest's need/missing_reference."""

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
