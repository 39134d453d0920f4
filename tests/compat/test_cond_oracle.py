"""DALI 2.4 as the oracle of enable_conditionals (tests/compat/cond_oracle.py): every
generated program gives what DALI gives (or both refuse it with the same exception type).
Needs DALI installed (scripts/setup.sh puts it in /usr/local/lib/godali-dali;
GODALI_DALI_DIR moves it); without it the test skips, and fails with
GODALI_STRICT_REFERENCES=1. `make oracle-conditionals` runs the long sweep."""

import os

import pytest

import cond_oracle
import sidebyside

HERE = os.path.dirname(os.path.abspath(__file__))

# Disagreements known, with their cause (none today).
KNOWN = {}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    sidebyside.require_dali("the conditionals oracle")
    out = tmp_path_factory.mktemp("cond_oracle")
    script = os.path.join(HERE, "cond_oracle.py")
    sidebyside.run_both(lambda impl: [script, "run", impl, str(out / impl)], timeout=600)
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
