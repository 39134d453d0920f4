"""bench-remote's data preparation: the shards hold exactly the folder's images."""

import tarfile
from pathlib import Path

from godali import bench_remote


def test_write_shards_holds_every_image(tmp_path):
    data = tmp_path / "data"
    want = {}
    for c in range(2):
        (data / f"c{c}").mkdir(parents=True)
        for i in range(5):
            body = bytes([c, i]) * (10 + i)
            (data / f"c{c}" / f"{i}.jpg").write_bytes(body)
            want[body] = c
    shards, keys, labels, images = bench_remote.write_shards(data, tmp_path / "s", 3, 0)
    assert len(shards) == 3 and len(keys) == len(labels) == len(images) == 10
    got = {}
    for s in shards:
        with tarfile.open(s) as tf:
            members = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
        for name, body in members.items():
            if name.endswith(".jpg"):
                got[body] = int(members[name[:-4] + ".cls"])
    assert got == want
    for k, lab, img in zip(keys, labels, images):
        assert want[Path(img).read_bytes()] == lab and k.endswith(".jpg")
    # A second call reuses the shards.
    mtimes = [Path(s).stat().st_mtime_ns for s in shards]
    bench_remote.write_shards(data, tmp_path / "s", 3, 0)
    assert [Path(s).stat().st_mtime_ns for s in shards] == mtimes


def test_parse_args_rejects_unknown_contender():
    import pytest
    with pytest.raises(SystemExit):
        bench_remote.parse_args(["--contenders", "nope"])
    a = bench_remote.parse_args(["--latency", "20ms, 50ms"])
    assert a.latencies == ["20ms", "50ms"] and a.kinds == list(bench_remote.ALL_KINDS)
