"""The property-based DALI oracle (tests/compat/propsweep.py), its quick sweep: QUICK_N
cases drawn from DALI's schemas run through DALI 2.4 and godali; every case gives what
DALI gives, or both refuse it, or it is one of the KNOWN kinds of difference below (each
with its cause). Needs DALI (skips without it; fails with GODALI_STRICT_REFERENCES=1).
`make oracle-long` runs the long sweep through the same rules."""

import os
import subprocess
import sys

import pytest

import propsweep

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DALI_DIR = os.environ.get("GODALI_DALI_DIR", "/usr/local/lib/godali-dali")
N = int(os.environ.get("ORACLE_N", propsweep.QUICK_N))
SEED = int(os.environ.get("ORACLE_SEED", propsweep.SEED))

COLOUR = {"hsv", "hue", "saturation", "color_twist", "brightness", "contrast",
          "brightness_contrast", "color_space_conversion"}
LAYOUT_ONLY = {"reinterpret", "squeeze", "full"}


def _dtype(case):
    return case["input"]["dtype"] if case["input"] else None


def _args(case):
    return set(case["args"]) | set(case["arg_inputs"])


# (cause, predicate(case, status, detail)): a disagreement of a known kind. Each one is a
# decision (godali accepts more, or is stricter where DALI's documentation says so) or a
# gap written down in docs/operators.md ("DALI 2.4 as the oracle").
KNOWN = [
    ("DALI 2.4 crashes (abort or segfault) on this input: 1-channel HWC into hue/hsv, "
     "an empty float/int16 sample into gaussian_blur; godali refuses or runs it",
     lambda c, s, d: s == "dali-crash"),
    ("godali takes float16 where DALI's CPU kernel has no float16 instance (flip, "
     "reductions, crop_mirror_normalize, ...): godali's is a superset",
     lambda c, s, d: s == "error" and d.startswith("DALI refuses") and "float16" in d),
    ("godali's colour operators take uint8, int16, int32 and float, not float16 input",
     lambda c, s, d: s == "error" and c["op"] in COLOUR and _dtype(c) == "float16"
     and d.startswith("godali refuses")),
    ("godali's hue/saturation have no image_type argument (RGB only; DALI's is in the "
     "schema it shares with color_twist)",
     lambda c, s, d: c["op"] in ("hue", "saturation") and "image_type" in _args(c)
     and "unknown argument 'image_type'" in d),
    ("godali's tensor_resize and paste lack arguments DALI has (tensor_resize: mode, "
     "min_filter, mag_filter, size_rounding, ...; paste: n_channels): refused by name",
     lambda c, s, d: c["op"] in ("tensor_resize", "experimental.tensor_resize", "paste")
     and "unknown argument" in d),
    ("DALI's reductions.mean refuses an integer output dtype for a float input (and "
     "float16 input); godali computes it",
     lambda c, s, d: s == "error" and c["op"] == "reductions.mean"
     and d.startswith("DALI refuses") and ("Unsupported" in d)),
    ("reductions.min/max over an empty extent: DALI gives the type's identity, godali "
     "refuses (an empty extent has no minimum)",
     lambda c, s, d: c["op"] in ("reductions.min", "reductions.max")
     and "empty extent" in d),
    ("reshape of an empty sample with a wildcard (-1) extent: DALI gives 0, godali "
     "refuses (the extent is undetermined)",
     lambda c, s, d: c["op"] == "reshape" and "volume of the input is 0" in d),
    ("DALI refuses calls that change nothing (reinterpret without dtype/shape/layout, "
     "squeeze without axes) and full of a shape whose layout is not its own; godali runs "
     "them as the identity",
     lambda c, s, d: s == "error" and c["op"] in LAYOUT_ONLY and d.startswith("DALI refuses")),
    ("warp_affine's per-sample matrix: DALI wants 2x3, godali also takes the flat 6",
     lambda c, s, d: c["op"] == "warp_affine" and "matrix" in c["arg_inputs"]
     and d.startswith("DALI refuses") and "2 x 3" in d),
    ("bbox_paste ratio < 1: DALI's documentation says >= 1 and godali enforces it; DALI "
     "does not check",
     lambda c, s, d: c["op"] == "bbox_paste" and "ratio" in d and "must be >= 1" in d),
    ("transforms.* ndim=0 with explicit vectors: DALI ignores ndim, godali refuses it",
     lambda c, s, d: c["op"].startswith("transforms.") and "\"ndim\"" in d),
    ("hsv on 1-channel input: DALI reads past the channel (garbage), godali refuses",
     lambda c, s, d: c["op"] in ("hsv", "hue", "saturation", "color_twist")
     and "3 channels" in d),
    ("rotate takes only uint8 in godali (DALI: any numeric type)",
     lambda c, s, d: c["op"] == "rotate" and "must be HWC uint8" in d
     and d.startswith("godali refuses")),
    ("one_hot: DALI treats one-element samples as scalars only when every sample of the "
     "batch has one element; godali decides per sample (operators see one sample)",
     lambda c, s, d: c["op"] == "one_hot" and s == "differs" and "(1, " in d),
    ("filters on int32 samples holding +-2**31: both accumulate in float32, in another "
     "order; where large terms cancel the results differ by a few hundred (relative "
     "1e-7 of the terms)",
     lambda c, s, d: c["op"] in ("laplacian", "gaussian_blur") and _dtype(c) == "int32"
     and s == "differs"),
    ("erase with both axes and axis_names: DALI takes axis_names, godali refuses the "
     "ambiguity",
     lambda c, s, d: c["op"] == "erase" and "give axes or axis_names, not both" in d),
    ("crop_mirror_normalize of a volume (DHWC) with a 2-D output_layout: godali keeps "
     "D before H (as it keeps F first), DALI wants a permutation of the input layout",
     lambda c, s, d: c["op"] == "crop_mirror_normalize" and "is_permutation_of" in d),
    ("transforms.crop with a zero-extent source box divides by zero: both give "
     "non-finite values, in different places",
     lambda c, s, d: c["op"] == "transforms.crop" and "NaN" in d),
]


def known(case, status, detail):
    for cause, pred in KNOWN:
        try:
            if pred(case, status, detail):
                return cause
        except (KeyError, TypeError):
            continue
    return None


def _have_dali():
    return os.path.isfile(os.path.join(DALI_DIR, "nvidia", "dali", "__init__.py"))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    if not _have_dali():
        if os.environ.get("GODALI_STRICT_REFERENCES") == "1":
            pytest.fail("DALI is not installed in %s (scripts/setup.sh installs it)" % DALI_DIR)
        pytest.skip("DALI is not installed in %s: the oracle sweep needs it" % DALI_DIR)
    out = tmp_path_factory.mktemp("propsweep")
    script = os.path.join(HERE, "propsweep.py")
    procs = []
    for impl, path in (("dali", DALI_DIR), ("godali", os.path.join(REPO, "python"))):
        env = dict(os.environ, PYTHONPATH=path)
        procs.append(subprocess.Popen(
            [sys.executable, script, "drive", impl, str(out / impl), str(N), "--seed",
             str(SEED)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
        text, _ = p.communicate(timeout=3600)
        assert p.returncode == 0, text[-3000:]
    rows = propsweep.compare(str(out / "dali"), str(out / "godali"), N, SEED)
    return [(propsweep.draw_case(int(cid.rsplit("@", 1)[1]), SEED), st, why)
            for cid, st, why in rows]


def test_sweep_covers_the_operators(swept):
    ops, _ = propsweep.swept_operators()
    seen = {c["op"] for c, _s, _w in swept}
    assert len(seen) >= min(len(ops), N // 4), sorted(set(n for n, _ in ops) - seen)
    same = sum(1 for _c, s, _w in swept if s == "same")
    assert same >= N // 3, same
    per_sample = sum(1 for c, s, _w in swept if c["arg_inputs"] and s == "same")
    assert per_sample > 0


def test_godali_gives_what_dali_gives(swept):
    bad = ["%s %s: %s\n  %s" % (c["id"], s, " ".join(w.split())[:300],
                                propsweep.describe(c)[:300])
           for c, s, w in swept
           if s not in ("same", "refused", "refused-other-type") and not known(c, s, w)]
    counts = propsweep.summary([(c["id"], s, w) for c, s, w in swept])
    print("propsweep: %d cases %s, known kinds hit: %d" % (
        len(swept), counts, sum(1 for c, s, w in swept if known(c, s, w))))
    assert not bad, "new disagreements with DALI 2.4:\n" + "\n".join(bad)


def test_exception_types_match(swept):
    # Where both refuse, godali's exception is (a subclass of) DALI's: user code that
    # catches DALI's type catches godali's.
    other = ["%s: %s" % (c["id"], w[:200]) for c, s, w in swept if s == "refused-other-type"
             and not ("unknown argument" in w or "takes 1 input" in w)]
    assert not other, other
