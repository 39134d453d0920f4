"""Per-operator profiling: GODALI_PROFILE=1, Pipeline.profile() and profile_table()."""

import pytest

from godali import fn, pipeline_def, types
from godali.pipeline import format_profile, profiling_requested


@pipeline_def(batch_size=5, num_threads=2, device_id=None, seed=3)
def _train(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB, name="decode")
    images = fn.resize(images, resize_x=32, resize_y=32, name="resize")
    flip = fn.random.coin_flip(name="coin")
    out = fn.crop_mirror_normalize(images, mirror=flip, dtype=types.FLOAT,
                                   output_layout="CHW", name="cmn")
    return out, labels


def test_profile_counts_each_operator_per_sample(image_folder, monkeypatch):
    monkeypatch.setenv("GODALI_PROFILE", "1")  # set after the library was loaded: Python reads it
    pipe = _train(image_folder)
    pipe.build()
    for _ in range(2):  # one epoch: 10 images, 2 batches of 5
        pipe.run()
    prof = pipe.profile()
    assert prof["enabled"] and prof["num_threads"] == 2 and prof["wall_s"] > 0
    nodes = {n["name"]: n for n in prof["nodes"]}
    # resize is fused into crop_mirror_normalize, and the profile says so.
    assert "resize" not in nodes and nodes["cmn"]["fused"] == ["resize"]
    for name, op in (("Reader", "readers.file"), ("decode", "decoders.image"),
                     ("coin", "random.coin_flip"), ("cmn", "crop_mirror_normalize")):
        assert nodes[name]["op"] == op and nodes[name]["device"] == "cpu"
        assert nodes[name]["calls"] == 10, nodes[name]
        assert nodes[name]["total_s"] > 0
        assert nodes[name]["mean_us"] == pytest.approx(
            nodes[name]["total_s"] * 1e6 / 10, rel=1e-6)
    totals = [n["total_s"] for n in prof["nodes"]]
    assert totals == sorted(totals, reverse=True)
    assert sum(n["share"] for n in prof["nodes"]) == pytest.approx(1.0)
    assert nodes["decode"]["mean_us"] > 10 * nodes["coin"]["mean_us"]
    table = pipe.profile_table().splitlines()
    assert table[0].split() == ["node", "op", "device", "samples", "total", "s",
                                "us/sample", "share"]
    assert any(line.startswith("cmn (+resize)") for line in table)
    assert table[-1].startswith("2 threads")


def test_profile_is_off_without_the_variable(image_folder, monkeypatch):
    monkeypatch.delenv("GODALI_PROFILE", raising=False)
    pipe = _train(image_folder)
    pipe.build()
    pipe.run()
    prof = pipe.profile()
    assert prof["enabled"] is False and prof["nodes"] == []
    assert "GODALI_PROFILE=1" in format_profile(prof)


def test_profiling_requested_values():
    for v, want in (("1", True), ("true", True), (" On ", True), ("0", False), ("", False),
                    ("no", False)):
        assert profiling_requested({"GODALI_PROFILE": v}) is want
    assert profiling_requested({}) is False
