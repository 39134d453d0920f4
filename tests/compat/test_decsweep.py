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

# (config, file) -> why godali differs from DALI there, knowingly.
KNOWN = {
    # DALI's CMYK->RGB conversion rounds differently (within 1 level)
    ("image", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("image-fastidct", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("image-gray", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("image-noorient", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("image-u16", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("crop", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("slice-rel", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    ("rcrop-full", "pillow/pil_sample_cmyk.jpg"): "CMYK rounding",
    # DALI ignores use_fast_idct for JPEGs with an EXIF orientation other than 1
    ("image-fastidct", "pillow/hopper_orientation_6.jpg"): "DALI drops use_fast_idct",
    # GRAY of a PNG, BMP, WebP: DALI's 601 rounding differs by 1 here and there
    ("image-gray", "pillow/hopper.png"): "libpng's gamma-aware rgb_to_gray (gAMA chunk)",
    ("image-gray", "pillow/hopper_rle8.bmp"): "601 rounding",
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
    return decsweep.compare(str(out / "dali"), str(out / "godali"), quick=True)


def test_sweep_runs_every_case(compared):
    assert len(compared) == len(decsweep.configs(True)) * len(decsweep.files(True))
    assert decsweep.summary(compared)["same"] > len(compared) * 3 // 4


def test_godali_decodes_as_dali(compared):
    new = {(cid, name): (status, why) for cid, name, status, why in compared
           if status not in ("same", "both-fail") and (cid, name) not in KNOWN}
    assert not new, "differences from DALI 2.4's decoders: %s" % new
