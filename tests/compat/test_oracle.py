"""DALI 2.4 as a differential oracle (tests/compat/oracle.py): every case of the sweep
gives what DALI gives (or both refuse it), except the disagreements listed in KNOWN with
what is known of their cause. Needs DALI installed (scripts/setup.sh puts it in
/usr/local/lib/godali-dali; GODALI_DALI_DIR moves it); without it the test skips, and
fails with GODALI_STRICT_REFERENCES=1."""

import os

import pytest

import oracle
import sidebyside

HERE = os.path.dirname(os.path.abspath(__file__))

_RESIZE_PIL = ("godali's LINEAR/TRIANGULAR resize is PIL's antialiased bilinear; DALI's own "
               "kernel differs from PIL by a few levels near the borders (DALI's tests allow "
               "mean 0.4 / max 10 on interior pixels; on these small images the mean is 0.5-1.1)")
KNOWN = {
    "resize/11#2": _RESIZE_PIL,
    "resize/11#12": "INTERP_NN without antialias picks other source pixels than DALI's "
                    "(godali follows PIL's NEAREST)",
    "warp_affine/15#8": "INTERP_NN: points on a pixel edge round the other way",
    "water/26#0": "pixels whose source falls outside the image near the border",
    "water/26#1": "pixels whose source falls outside the image near the border",
    "water/26#4": "pixels whose source falls outside the image near the border",
}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    sidebyside.require_dali("the oracle sweep")
    out = tmp_path_factory.mktemp("oracle")
    script = os.path.join(HERE, "oracle.py")
    sidebyside.run_both(lambda impl: [script, "run", impl, str(out / impl)], timeout=900)
    return {cid: (status, why) for cid, status, why in
            oracle.compare(str(out / "dali"), str(out / "godali"), verbose=False)}


def test_sweep_covers_the_operators(compared):
    assert len(compared) > 250
    same = sum(1 for s, _ in compared.values() if s == "same")
    assert same > 200, same


def test_godali_gives_what_dali_gives(compared):
    new = {cid: why for cid, (status, why) in compared.items()
           if status not in ("same", "refused") and cid not in KNOWN}
    assert not new, "disagreements with DALI 2.4: %s" % new


def test_known_differences_are_still_there(compared):
    # A known difference that went away is removed from KNOWN (and docs/operators.md).
    gone = [cid for cid in KNOWN if compared.get(cid, ("",))[0] != "differs"]
    assert not gone, "these now agree with DALI: remove them from KNOWN: %s" % gone
