"""DALI's auto_aug surface that DALI's own auto_aug test files use (measured by running
them, imports swapped, outside the repository; docs/operators.md): the suites'
augmentations called with a per-sample magnitude bin and on FHWC videos, Python
(@augmentation) augmentations inside policies, RandAugment and TrivialAugment (DALI's
conditionals and select), Policy's checks and presentation, and the pure-Python helpers
(get_translations, magnitudes, the sub-policy matrix) compared with DALI 2.4's where it
is installed."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import missing_reference

import godali.fn as fn
import godali.types as types
from godali import pipeline_def
from godali.auto_aug import augmentations as a, auto_augment, rand_augment, trivial_augment
from godali.auto_aug.core import Policy, augmentation

DALI_DIR = os.environ.get("GODALI_DALI_DIR", "/usr/local/lib/godali-dali")


def _images(n, h=24, w=32, seed=0, vary=1):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h + i * vary, w + 2 * i * vary, 3), dtype=np.uint8)
            for i in range(n)]


def _run(pipe_fn, **kw):
    p = pipe_fn(**kw)
    p.build()
    return [[np.array(s) for s in out] for out in p.run()]


@pytest.mark.parametrize("aug", [a.rotate, a.shear_x, a.translate_y_no_shape, a.solarize,
                                 a.posterize, a.brightness])
def test_per_sample_magnitude_bin_is_the_fixed_bin(aug):
    """aug(images, magnitude_bin=<one bin per sample>) gives each sample what
    aug(images, magnitude_bin=<that bin>) gives it."""
    imgs = _images(4)
    aug = aug.augmentation(randomly_negate=False)

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(lambda: imgs, batch=True, layout="HWC")
        b = fn.external_source(lambda info: np.array(info.idx_in_batch * 2, np.int32),
                               batch=False)
        return (aug(x, magnitude_bin=b, num_magnitude_bins=7),) + tuple(
            aug(x, magnitude_bin=k * 2, num_magnitude_bins=7) for k in range(4))

    outs = _run(pipe)
    for k in range(4):
        np.testing.assert_array_equal(outs[0][k], outs[1 + k][k])
    # the bins differ: bin 0 and bin 6 of the same sample are not the same image
    assert not np.array_equal(outs[1][1], outs[4][1])


def test_video_frames_take_the_sample_augmentation():
    """An FHWC video goes through the sample's augmentation frame by frame: each frame
    is what the same augmentation gives that frame as an HWC image."""
    frames = _images(3, h=20, w=20, seed=1, vary=0)
    video = np.stack(frames)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=3)
    def pipe():
        v = fn.external_source(lambda: [video], batch=True, layout="FHWC")
        out = []
        for aug, b in ((a.rotate.augmentation(randomly_negate=False), 5), (a.equalize, None),
                       (a.auto_contrast, None), (a.posterize, 3)):
            out.append(aug(v, magnitude_bin=b, num_magnitude_bins=11))
        return tuple(out)

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, seed=3)
    def per_frame():
        x = fn.external_source(lambda: frames, batch=True, layout="HWC")
        out = []
        for aug, b in ((a.rotate.augmentation(randomly_negate=False), 5), (a.equalize, None),
                       (a.auto_contrast, None), (a.posterize, 3)):
            out.append(aug(x, magnitude_bin=b, num_magnitude_bins=11))
        return tuple(out)

    vids, ref = _run(pipe), _run(per_frame)
    for v, r in zip(vids, ref):
        assert v[0].shape == video.shape
        for i in range(3):
            np.testing.assert_array_equal(v[0][i], r[i])


def _op_id(op_id):
    def mag_to_param(magnitude):
        return np.array([op_id, magnitude], dtype=np.int32)
    return mag_to_param


@augmentation
def _tag(data, param):
    return fn.cat(data, param)


def _chi2_ok(counts, expected):
    """Pearson's statistic below the 0.999 quantile (Wilson-Hilferty bound)."""
    counts, expected = np.asarray(counts, float), np.asarray(expected, float)
    stat = ((counts - expected) ** 2 / expected).sum()
    k = len(counts) - 1
    crit = k * (1 - 2 / (9 * k) + 3.09 * np.sqrt(2 / (9 * k))) ** 3
    return stat < crit, stat, crit


def test_python_augmentations_in_trivial_augment():
    """Python augmentations run through apply_trivial_augment (DALI's select): one of
    them per sample with a uniform bin and, when randomly negated, a uniform sign; every
    (augmentation, magnitude) appears about equally often."""
    augs = [_tag.augmentation(mag_range=(10 * i + 1, 10 * i + 3), mag_to_param=_op_id(i + 1),
                              randomly_negate=i == 0) for i in range(2)]
    bs = 1200

    @pipeline_def(enable_conditionals=True, batch_size=bs, num_threads=1, device_id=None,
                  seed=11)
    def pipe():
        data = types.Constant(np.array([], dtype=np.int32))
        return trivial_augment.apply_trivial_augment(augs, data, num_magnitude_bins=3)

    (out,) = _run(pipe)
    counts = {}
    for s in out:
        counts[tuple(s)] = counts.get(tuple(s), 0) + 1
    want = [(1, m) for m in (1, 2, 3)] + [(1, -m) for m in (1, 2, 3)] + \
        [(2, m) for m in (11, 12, 13)]
    assert set(counts) == set(want), counts
    probs = [1 / 12] * 6 + [1 / 6] * 3
    ok, stat, crit = _chi2_ok([counts[k] for k in want], [p * bs for p in probs])
    assert ok, (stat, crit, counts)


def test_python_augmentations_in_rand_augment_and_policies():
    """apply_rand_augment with Python augmentations applies n of them at bin m; an
    AutoAugment policy of Python augmentations runs each stage with its probability (a
    stage of probability 1 always, 0 never)."""
    augs = [_tag.augmentation(mag_range=(10 * i, 10 * i + 4), mag_to_param=_op_id(i + 1))
            for i in range(3)]

    @pipeline_def(enable_conditionals=True, batch_size=300, num_threads=1, device_id=None,
                  seed=5)
    def rand():
        data = types.Constant(np.array([], dtype=np.int32))
        return fn.reshape(rand_augment.apply_rand_augment(augs, data, n=2, m=4,
                                                          num_magnitude_bins=5),
                          shape=(-1, 2))

    (out,) = _run(rand)
    seen = set()
    for s in out:
        assert s.shape == (2, 2)
        for op, mag in s:
            assert mag == 10 * (op - 1) + 4
            seen.add(int(op))
    assert seen == {1, 2, 3}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy = Policy("P", 5, [[(augs[0], 1.0, 1), (augs[1], 0.0, 2)], [(augs[2], 1, 3)]])

    @pipeline_def(enable_conditionals=True, batch_size=300, num_threads=1, device_id=None,
                  seed=5)
    def auto():
        data = types.Constant(np.array([], dtype=np.int32))
        return fn.reshape(auto_augment.apply_auto_augment(policy, data), shape=(-1, 2))

    (out,) = _run(auto)
    kinds = {tuple(map(tuple, s)) for s in out}
    assert kinds == {((1, 1),), ((3, 23),)}, kinds


def test_reshape_wildcard_of_an_empty_sample_is_zero():
    """DALI: reshape of a 0-element sample to (-1, 2) gives shape (0, 2)."""
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        x = types.Constant(np.array([], dtype=np.int32))
        return fn.reshape(x, shape=(-1, 2)), fn.reshape(x, shape=(2, -1))

    a_, b_ = _run(pipe)
    assert a_[0].shape == (0, 2) and b_[0].shape == (2, 0)


def test_policy_and_call_errors_name_the_problem():
    with pytest.raises(Exception, match=r"Probability of applying the augmentation must be "
                                        r"a number from `\[0, 1\]` range. Got `2`"):
        Policy("P", 9, [[(a.rotate, 2, 2)]])
    with pytest.raises(Exception, match="must be an instance of Augmentation. Got `0.5`"):
        Policy("P", 9, [[(0.5, a.rotate, 3)]])
    with pytest.warns(Warning, match="probability 0 in one of the sub-policies"):
        Policy("P", 9, [[(a.rotate, 0, 3)]])
    with pytest.raises(Exception, match="The kwarg `shhape` is not used by any of the "
                                        "augmentations."):
        rand_augment.apply_rand_augment(rand_augment.get_rand_augment_suite(), None, 1, 2,
                                        shhape=1)
    with pytest.raises(Exception, match="The augmentation `translate_x` requires `shape` "
                                        "argument"):
        rand_augment.apply_rand_augment(rand_augment.get_rand_augment_suite(use_shape=True),
                                        None, 1, 2)


# The pure-Python surface, printed as JSON by the same code under DALI and godali.
_SURFACE = r"""
import json, sys, warnings
import numpy as np
lib = sys.argv[1]
if lib == "dali":
    from nvidia.dali.auto_aug import augmentations as a, auto_augment
    from nvidia.dali.auto_aug.core import Policy, augmentation
    from nvidia.dali.auto_aug.core._utils import get_translations
else:
    from godali.auto_aug import augmentations as a, auto_augment
    from godali.auto_aug.core import Policy, augmentation
    from godali.auto_aug.core._utils import get_translations
out = {}
for use_shape in (True, False):
    for kw in ({}, {"max_translate_rel" if use_shape else "max_translate_abs": [0.5, 7]}):
        tx, ty = get_translations(use_shape, 123, 0.123, **kw)
        out["tr %s %s" % (use_shape, kw)] = [list(map(float, tx.mag_range)),
                                             list(map(float, ty.mag_range)),
                                             tx.randomly_negate, tx.op is a.translate_x.op]
for name in ("rotate", "shear_x", "solarize", "posterize", "solarize_add", "brightness"):
    aug = getattr(a, name)
    mags = aug._get_magnitudes(7)
    out["mags " + name] = [str(mags.dtype), mags.tolist(),
                           np.asarray(aug._map_mags_to_params(mags)).tolist()]
@augmentation(mag_range=(0, 3))
def same(data, _):
    return data
@augmentation
def other(data, _):
    return data
@augmentation
def same2(data, _):
    return data
same2 = same2.augmentation(name="same")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pol = Policy("P", 4, [[(same, 0.5, 1), (other, 1, None)], [(same2, 0.2, None)]])
out["repr"] = repr(pol).split("augmentations=")[0]  # an Augmentation's repr differs
out["augmentations"] = list(pol.augmentations)
out["names"] = [[aug.name for aug, _, _ in sp] for sp in pol.sub_policies]
for getter in ("get_image_net_policy", "get_svhn_policy", "get_reduced_cifar10_policy"):
    p = getattr(auto_augment, getter)()
    m, augs = auto_augment._sub_policy_to_augmentation_matrix_map(p)
    out["matrix " + getter] = [m.tolist(), [[x.name for x in st] for st in augs]]
errors = []
for args in [(0.25, a.rotate), (9, a.rotate), (9, [a.rotate]), (9, [(a.rotate, a.shear_x)]),
             (9, [[(a.rotate, 1, -1)]]), (7, [[(same, 0.5, None)]])]:
    try:
        Policy("F", *args)
    except Exception as e:
        errors.append(str(e).split(" Got")[0].split(", got")[0])
out["errors"] = errors
print(json.dumps(out))
"""


def test_pure_python_surface_matches_dali(tmp_path):
    """get_translations, the suites' magnitudes and parameters, Policy's names,
    presentation and errors, and the sub-policy matrix: the same JSON under DALI 2.4
    and godali."""
    if not os.path.isfile(os.path.join(DALI_DIR, "nvidia", "dali", "__init__.py")):
        missing_reference("DALI 2.4 in %s (scripts/setup.sh installs it)" % DALI_DIR)
    script = tmp_path / "surface.py"
    script.write_text(_SURFACE)
    res = {}
    for lib, path in (("dali", DALI_DIR), ("godali", os.path.join(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))):
        env = dict(os.environ, PYTHONPATH=path)
        r = subprocess.run([sys.executable, str(script), lib], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        res[lib] = json.loads(r.stdout.strip().splitlines()[-1])
    for k in res["dali"]:
        assert res["godali"][k] == res["dali"][k], k
