"""Per-frame arguments and sequences of matrices (engine/sequence.go): transforms.* given
fn.per_frame arguments or a sequence of matrices give one matrix per frame; combine checks
frame counts; gaussian_blur/laplacian take channel-first sequences (CFHW) plane by plane.
References: numpy matrices, and the same operator run frame by frame with constant
arguments."""
import numpy as np
import pytest

import godali.fn as fn
import godali.types as types
from godali import pipeline_def


def _run(build, batch_size, **kw):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=0)
    def pipe():
        return build()
    p = pipe()
    p.build()
    out = p.run()
    return [[np.array(t) for t in o] for o in out], [o.layout() for o in out]


def _rot(deg):
    r = np.deg2rad(deg)
    return np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0]])


def _h(m):
    return np.vstack([m, [0, 0, 1]])


def test_rotation_per_frame_angles_give_one_matrix_per_frame():
    angles = [np.array([0, 30, 90, -45], np.float32), np.array([10], np.float32)]
    (out,), (lay,) = _run(lambda: fn.transforms.rotation(
        angle=fn.per_frame(fn.external_source(lambda: angles))), 2)
    assert lay == "F**"
    for a, m in zip(angles, out):
        assert m.shape == (len(a), 2, 3) and m.dtype == np.float32
        ref = np.stack([_rot(x) for x in a])
        np.testing.assert_allclose(m, ref, atol=1e-6)


def test_translation_of_matrix_sequence_with_per_frame_and_broadcast_args():
    rng = np.random.default_rng(1)
    mts = [rng.uniform(-5, 5, (3, 2, 3)).astype(np.float32)]
    offs = [rng.uniform(-9, 9, (3, 2)).astype(np.float32)]
    one = [np.array([[1.5, -2]], np.float32)]  # one entry: given to every frame
    (a, b), _ = _run(lambda: (
        fn.transforms.translation(fn.per_frame(fn.external_source(lambda: mts, layout="F**")),
                                  offset=fn.per_frame(fn.external_source(lambda: offs))),
        fn.transforms.translation(fn.per_frame(fn.external_source(lambda: mts, layout="F**")),
                                  offset=fn.per_frame(fn.external_source(lambda: one)))), 1)
    for f in range(3):
        t = np.array([[1, 0, offs[0][f][0]], [0, 1, offs[0][f][1]]])
        np.testing.assert_allclose(a[0][f], (_h(t) @ _h(mts[0][f]))[:2], rtol=1e-5, atol=1e-4)
        t = np.array([[1, 0, 1.5], [0, 1, -2]])
        np.testing.assert_allclose(b[0][f], (_h(t) @ _h(mts[0][f]))[:2], rtol=1e-5, atol=1e-4)


def test_combine_per_frame_and_per_sample_matrices():
    rng = np.random.default_rng(2)
    seq = [rng.uniform(-3, 3, (4, 2, 3)).astype(np.float32)]
    one = [rng.uniform(-3, 3, (2, 3)).astype(np.float32)]
    (out,), (lay,) = _run(lambda: fn.transforms.combine(
        fn.per_frame(fn.external_source(lambda: seq, layout="F**")),
        fn.external_source(lambda: one)), 1)
    assert lay == "" and out[0].shape == (4, 2, 3)  # input 1 given whole: no layout
    for f in range(4):
        np.testing.assert_allclose(out[0][f], (_h(one[0]) @ _h(seq[0][f]))[:2], rtol=1e-4, atol=1e-4)


def test_combine_frame_count_mismatch_names_sample():
    a = [np.zeros((5, 2, 3), np.float32), np.zeros((5, 2, 3), np.float32)]
    b = [np.zeros((5, 2, 3), np.float32), np.zeros((4, 2, 3), np.float32)]
    with pytest.raises(RuntimeError, match="The input 0 and the input 1 have different number of frames for sample 1"):
        _run(lambda: fn.transforms.combine(fn.per_frame(fn.external_source(lambda: a, layout="F**")),
                                           fn.per_frame(fn.external_source(lambda: b, layout="F**"))), 2)


def test_per_frame_argument_count_mismatch():
    v = [np.zeros((3, 8, 8, 3), np.uint8)]
    ang = [np.array([1, 2], np.float32)]
    with pytest.raises(RuntimeError, match="tensor argument `angle` contains 2 per-frame parameters, "
                                           "but there are 3 frames in the corresponding sample of input 0"):
        _run(lambda: fn.rotate(fn.external_source(lambda: v, layout="FHWC"),
                               angle=fn.per_frame(fn.external_source(lambda: ang)), keep_size=True), 1)


def test_per_frame_argument_needs_frames():
    img = [np.zeros((3, 8, 8), np.float32)]
    with pytest.raises(RuntimeError, match="samples in the input 0 must contain frames too"):
        _run(lambda: fn.gaussian_blur(fn.external_source(lambda: img, layout="CHW"),
                                      window_size=fn.per_frame(np.array([3, 5, 7], np.int32))), 1)


@pytest.mark.parametrize("op", ["gaussian_blur", "laplacian"])
def test_channel_first_sequence_plane_by_plane(op):
    rng = np.random.default_rng(3)
    vid = [rng.integers(0, 255, (2, 3, 12, 10), dtype=np.uint8)]  # CFHW
    ws = [np.array([3, 5, 7], np.int32)]
    (out,), (lay,) = _run(lambda: getattr(fn, op)(
        fn.external_source(lambda: vid, layout="CFHW"),
        window_size=fn.per_frame(fn.external_source(lambda: ws))), 1)
    assert lay == "CFHW" and out[0].shape == vid[0].shape
    for c in range(2):
        for f in range(3):
            (ref,), _ = _run(lambda: getattr(fn, op)(
                fn.external_source(lambda: [vid[0][c, f]], layout="HW"), window_size=int(ws[0][f])), 1)
            np.testing.assert_array_equal(out[0][c, f], ref[0])


def _box(h, w, deg, parity):
    r = np.deg2rad(deg)
    c, s = abs(np.cos(r)), abs(np.sin(r))
    ow, oh = int(np.ceil(c * w + s * h - 0.01)), int(np.ceil(c * h + s * w - 0.01))
    if parity:
        pw, ph = (w % 2, h % 2) if s <= c else (h % 2, w % 2)
        ow += (ow % 2) != pw
        oh += (oh % 2) != ph
    return oh, ow


def test_rotate_per_frame_angles_share_one_size():
    # DALI: per side the largest box before the parity fix, made odd or even as most
    # frames' fixed sides are; every frame is the image rotated alone to that size.
    rng = np.random.default_rng(4)
    vid = [rng.integers(0, 255, (3, 21, 34, 3), dtype=np.uint8)]
    ang = [np.array([10, -37, 80], np.float32)]
    (out,), (lay,) = _run(lambda: fn.rotate(fn.external_source(lambda: vid, layout="FHWC"),
                                            angle=fn.per_frame(fn.external_source(lambda: ang)),
                                            fill_value=0), 1)
    raw = [_box(21, 34, a, False) for a in ang[0]]
    fixed = [_box(21, 34, a, True) for a in ang[0]]
    size = []
    for k in range(2):
        m = max(r[k] for r in raw)
        odd = 2 * sum(f[k] % 2 for f in fixed) > len(fixed)
        size.append(m + ((m % 2 == 1) != odd))
    assert lay == "FHWC" and out[0].shape == (3, size[0], size[1], 3)
    for f in range(3):
        (ref,), _ = _run(lambda: fn.rotate(fn.external_source(lambda: [vid[0][f]], layout="HWC"),
                                           angle=float(ang[0][f]), size=size, fill_value=0), 1)
        np.testing.assert_array_equal(out[0][f], ref[0])


def test_rotate_size_per_sample():
    img = [np.full((10, 12, 3), 7, np.uint8), np.full((9, 9, 3), 7, np.uint8)]
    sizes = [np.array([20, 15], np.int64), np.array([5, 6], np.int64)]
    (out,), _ = _run(lambda: fn.rotate(fn.external_source(lambda: img, layout="HWC"), angle=30.0,
                                       size=fn.external_source(lambda: sizes)), 2)
    assert [o.shape for o in out] == [(20, 15, 3), (5, 6, 3)]


def test_warp_affine_per_frame_matrix_input():
    rng = np.random.default_rng(5)
    vid = [rng.integers(0, 255, (3, 16, 20, 3), dtype=np.uint8)]
    mats = [np.stack([np.array([[1, 0, dx], [0, 1, -dx]], np.float32) for dx in (0.0, 2.5, -3.0)])]
    (out,), _ = _run(lambda: fn.warp_affine(fn.external_source(lambda: vid, layout="FHWC"),
                                            fn.per_frame(fn.external_source(lambda: mats, layout="F**")),
                                            fill_value=0), 1)
    for f in range(3):
        (ref,), _ = _run(lambda: fn.warp_affine(fn.external_source(lambda: [vid[0][f]], layout="HWC"),
                                                matrix=mats[0][f], fill_value=0), 1)  # a 2x3 array, read flat
        np.testing.assert_array_equal(out[0][f], ref[0])


def test_coord_transform_per_frame_mt_over_points_and_point_sequences():
    rng = np.random.default_rng(6)
    pts = [rng.uniform(-5, 5, (7, 2)).astype(np.float32)]
    seq = [rng.uniform(-5, 5, (3, 7, 2)).astype(np.float32)]
    mts = [rng.uniform(-2, 2, (3, 2, 3)).astype(np.float32)]
    (a, b), (la, lb) = _run(lambda: (
        fn.coord_transform(fn.external_source(lambda: pts),
                           MT=fn.per_frame(fn.external_source(lambda: mts))),
        fn.coord_transform(fn.per_frame(fn.external_source(lambda: seq, layout="F**")),
                           MT=fn.per_frame(fn.external_source(lambda: mts)))), 1)
    assert a[0].shape == (3, 7, 2) and la == ""  # frames from the argument over points without layout
    assert lb == "F**"
    for f in range(3):
        m, t = mts[0][f][:, :2].astype(np.float64), mts[0][f][:, 2].astype(np.float64)
        np.testing.assert_allclose(a[0][f], pts[0] @ m.T + t, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(b[0][f], seq[0][f] @ m.T + t, rtol=1e-5, atol=1e-4)
