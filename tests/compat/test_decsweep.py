"""DALI 2.4's CPU image decoders as the oracle of godali's (tests/compat/decsweep.py): the
quick sweep (a few corpus files through the main configurations) gives what DALI gives,
but for the differences written down in KNOWN. Needs DALI and nvImageCodec (scripts/
setup.sh installs both for GODALI_DALI_ORACLE=1) and the real-world corpus; without them
the test skips (GODALI_STRICT_REFERENCES=1 makes missing DALI a failure). `make
oracle-decoders` runs the full sweep."""

import os

import pytest

import decsweep
import sidebyside

HERE = os.path.dirname(os.path.abspath(__file__))

# (config, file) -> why godali differs from DALI there, knowingly (docs/operators.md,
# "DALI's image decoders side by side"). A difference that went away is removed here.
KNOWN = {
    ("image-fastidct", "pillow/hopper_orientation_6.jpg"):
        "DALI 2.4 ignores use_fast_idct for JPEGs with an EXIF orientation other than 1",
    ("image-fastidct", "gen/orient6.jpg"):
        "DALI 2.4 ignores use_fast_idct for JPEGs with an EXIF orientation other than 1",
    ("image-gray", "gen/png16-3.png"):
        "GRAY of 16-bit colour PNG: DALI converts the 16-bit samples (libpng), godali the "
        "8-bit decode (within 2 levels)",
    ("image-gray", "gen/png16-4.png"):
        "GRAY of 16-bit colour PNG: DALI converts the 16-bit samples (libpng), godali the "
        "8-bit decode (within 2 levels)",
    ("image-gray", "pillow/hopper.png"):
        "GRAY of a PNG with gAMA and cHRM chunks: libpng's gamma-aware rgb_to_gray in DALI "
        "(up to 44 levels), not reproduced",
    ("image-gray", "gen/orient6.webp"):
        "GRAY of lossy WebP: DALI's libwebp path rounds 1 level apart on a few pixels",
}
@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    sidebyside.require_dali_decoders("the decoder sweep")
    if not os.path.isdir(decsweep.IMAGES):
        pytest.skip("the real-world image corpus is not in %s" % decsweep.IMAGES)
    out = tmp_path_factory.mktemp("decsweep")
    script = os.path.join(HERE, "decsweep.py")
    paths = {"dali": sidebyside.DALI_DIR + os.pathsep + HERE,
             "godali": sidebyside.GODALI_DIR + os.pathsep + HERE}
    sidebyside.run_both(lambda impl: [script, "run", impl, str(out / impl), "--quick"],
                        timeout=300, paths=paths)
    nfiles = len(decsweep.files(True, str(out / "godali")))
    return decsweep.compare(str(out / "dali"), str(out / "godali"), quick=True), nfiles


def test_sweep_runs_every_case(compared):
    rows, nfiles = compared
    assert nfiles > len(decsweep.QUICK_FILES)  # the generated files too
    assert len(rows) == len(decsweep.configs(True)) * nfiles
    assert decsweep.summary(rows)["same"] > len(rows) * 3 // 4


def test_godali_decodes_as_dali(compared):
    rows, _ = compared
    new = {(cid, name): (status, why) for cid, name, status, why in rows
           if status not in ("same", "both-fail") and (cid, name) not in KNOWN}
    assert not new, "differences from DALI 2.4's decoders: %s" % new
    gone = [k for k in KNOWN if k not in {(c, n) for c, n, s, _ in rows if s != "same"}]
    assert not gone, "known differences that went away (remove them from KNOWN): %s" % gone
