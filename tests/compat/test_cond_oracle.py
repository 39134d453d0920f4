"""DALI 2.4 as the oracle of enable_conditionals (tests/compat/cond_oracle.py): every
generated program gives what DALI gives (or both refuse it with the same exception type).
Needs DALI installed (scripts/setup.sh puts it in /usr/local/lib/godali-dali;
GODALI_DALI_DIR moves it); without it the test skips, and fails with
GODALI_STRICT_REFERENCES=1. `make oracle-conditionals` runs the long sweep."""

import os
import subprocess
import sys

import pytest

import cond_oracle

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DALI_DIR = os.environ.get("GODALI_DALI_DIR", "/usr/local/lib/godali-dali")

# Disagreements known, with their cause (none today).
KNOWN = {}


def _have_dali():
    return os.path.isfile(os.path.join(DALI_DIR, "nvidia", "dali", "__init__.py"))


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    if not _have_dali():
        if os.environ.get("GODALI_STRICT_REFERENCES") == "1":
            pytest.fail("DALI is not installed in %s (scripts/setup.sh installs it)" % DALI_DIR)
        pytest.skip("DALI is not installed in %s: the conditionals oracle needs it "
                    "(scripts/setup.sh installs it)" % DALI_DIR)
    out = tmp_path_factory.mktemp("cond_oracle")
    script = os.path.join(HERE, "cond_oracle.py")
    procs = []
    for impl, path in (("dali", DALI_DIR), ("godali", os.path.join(REPO, "python"))):
        env = dict(os.environ, PYTHONPATH=path)
        procs.append(subprocess.Popen([sys.executable, script, "run", impl, str(out / impl)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    for p in procs:
        text, _ = p.communicate(timeout=600)
        assert p.returncode == 0, text[-3000:]
    return {cid: (status, why) for cid, status, why in
            cond_oracle.compare(str(out / "dali"), str(out / "godali"), verbose=False)}


def test_sweep_runs_the_programs(compared):
    assert len(compared) == cond_oracle.QUICK + len(cond_oracle.FIXED)
    same = sum(1 for s, _ in compared.values() if s == "same")
    assert same > len(compared) * 3 // 4, same


def test_godali_gives_what_dali_gives(compared):
    new = {cid: why for cid, (status, why) in compared.items()
           if status not in ("same", "refused") and cid not in KNOWN}
    assert not new, "disagreements with DALI 2.4: %s" % new


def test_the_fixed_programs_run(compared):
    # the hand-written programs (batch_permutation and random operators in branches,
    # short-circuits, empty branches) run in both, but the one that uses a one-branch
    # variable (both refuse it)
    refused = sorted(cid for cid in cond_oracle.FIXED if compared[cid][0] != "same")
    assert refused == ["one_branch_used"], refused
