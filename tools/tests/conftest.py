"""The tools' tests (tools/tests): godali (python/) and godali_tools (tools/) on sys.path,
and the library suite's reference helpers (need, missing_reference: a missing reference
is a skip, or a failure under GODALI_STRICT_REFERENCES=1) from python/tests/conftest.py."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS_DIR)
PYTHON_DIR = os.path.join(REPO, "python")
for _d in (TOOLS_DIR, PYTHON_DIR):
    if _d not in sys.path:
        sys.path.insert(0, _d)
    # The tests' subprocesses (trials, `-m godali_tools ...`) import both too.
    if _d not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [_d] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def _suite_conftest():
    name = "godali_suite_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(PYTHON_DIR, "tests", "conftest.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


need = _suite_conftest().need
missing_reference = _suite_conftest().missing_reference


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
