"""Tests of godali_tools.bench: accounting helpers, the verdict, and a small end-to-end run."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
TOOLS_DIR = REPO / "tools"
for _d in (TOOLS_DIR, PYTHON_DIR):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

from godali_tools import bench  # noqa: E402
from godali_tools import make_dataset  # noqa: E402
from conftest import need

HAVE_GODALI_CPU = "cpu" in bench._godali_flavours()


def test_process_tree_and_cpu_time_count_children():
    # The child burns CPU for a while; the parent's tree must include it and its time.
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.6: pass\n"
                              "time.sleep(30)"])
    try:
        assert child.pid in bench.process_tree(os.getpid())
        deadline = time.monotonic() + 20
        while bench.tree_cpu_seconds(child.pid) < 0.55 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert bench.tree_cpu_seconds(child.pid) >= 0.55
        assert bench.tree_cpu_seconds(os.getpid()) >= bench.tree_cpu_seconds(child.pid)
        assert bench.tree_memory_mb(child.pid) > 1
    finally:
        child.kill()
        child.wait()


def test_end_to_end_rules():
    # GPU: loader and model overlap, the slower sets the pace.
    assert bench.end_to_end(1000, 3000, "cuda") == 1000
    assert bench.end_to_end(5000, 3000, "cuda") == 3000
    # CPU: they share the cores, times per image add up: 1/(1/100 + 1/25) = 20.
    assert bench.end_to_end(100, 25, "cpu") == pytest.approx(20)


def _results(torch_r, godali_r):
    return {"torch": {"images_per_s": torch_r}, "godali-cpu": {"images_per_s": godali_r}}


def test_verdict_loader_bound_on_gpu_is_worth_it():
    v = bench.verdict(_results(1000, 2500), {"images_per_s": 3000}, "cuda")
    assert v["bottleneck"] == "loader"
    assert v["speedup"] == pytest.approx(2.5)
    assert v["judgement"].startswith("worth it")


def test_verdict_model_bound_on_cpu_is_not_worth_it():
    v = bench.verdict(_results(200, 400), {"images_per_s": 8}, "cpu")
    assert v["bottleneck"] == "model"
    # 1/(1/400+1/8) / (1/(1/200+1/8)) = 1.0196...
    assert v["speedup"] == pytest.approx((1 / (1 / 400 + 1 / 8)) / (1 / (1 / 200 + 1 / 8)))
    assert v["judgement"].startswith("not worth it")


def test_verdict_needs_both_loaders_and_a_model():
    assert bench.verdict(_results(100, 200), None, "cpu") is None
    assert bench.verdict({"torch": {"images_per_s": 100}}, {"images_per_s": 5}, "cpu") is None


def test_summarize_takes_medians():
    runs = [{"images": 640, "wall_s": w, "cpu_s": 1.5 * w, "peak_mem_mb": m,
             "first_batch_s": w / 2}
            for w, m in ((2.0, 100), (4.0, 300), (3.2, 200))]
    s = bench.summarize(runs, cores=2, batch_size=64)
    assert s["images_per_s"] == pytest.approx(200)  # median of 320, 160, 200
    assert s["ms_per_batch"] == pytest.approx(320)
    assert s["cpu_util"] == pytest.approx(0.75)
    assert s["peak_mem_mb"] == 300
    assert s["cpu_ms_per_image"] == pytest.approx(1000 * 1.5 * 3.2 / 640)
    assert s["first_batch_s"] == pytest.approx(1.6)
    assert sorted(s["images_per_s_runs"]) == pytest.approx([160, 200, 320])


def test_sample_stream_is_whole_shuffled_passes():
    order = bench._sample_stream(10, 35, seed=1)
    assert len(order) == 35
    for k in range(3):
        assert sorted(order[10 * k:10 * k + 10]) == list(range(10))
    assert order[:10] != list(range(10))
    assert bench._sample_stream(10, 35, seed=1) == order


def test_list_image_folder_matches_torchvision(tmp_path):
    from torchvision import datasets
    for cls in ("b", "a"):
        (tmp_path / cls).mkdir()
        for name in ("x.JPEG", "y.png", "notes.txt"):
            (tmp_path / cls / name).write_bytes(b"")
    paths, labels = bench.list_image_folder(tmp_path)
    ref = datasets.ImageFolder(tmp_path, loader=lambda p: p)
    assert paths == [p for p, _ in ref.samples]
    assert labels == [c for _, c in ref.samples]


def test_format_table_shows_failures_and_ratios():
    rows = [
        {"key": "torch", "label": "torch DataLoader", "status": "ok", "images_per_s": 100.0,
         "images_per_s_runs": [90.0, 100.0, 110.0], "ms_per_batch": 640.0,
         "cpu_util": 0.95, "peak_mem_mb": 900.0, "cpu_ms_per_image": 19.0,
         "first_batch_s": 1.5},
        {"key": "godali-cpu", "label": "godali cpu", "status": "ok", "images_per_s": 200.0,
         "images_per_s_runs": [200.0], "ms_per_batch": 320.0, "cpu_util": 0.99,
         "peak_mem_mb": 300.0, "cpu_ms_per_image": 9.9, "first_batch_s": 0.4},
        {"key": "godali-cuda", "label": "godali cuda (mixed)", "status": "skipped",
         "reason": "needs a CUDA GPU"},
    ]
    text = bench.format_table(rows, "cpu")
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["contender", "images/s"]
    assert "2.00x" in lines[3] and "20%" in lines[2] and "19.00" in lines[2]
    assert "0.40" in lines[3]
    assert "skipped: needs a CUDA GPU" in lines[4]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "data"
    make_dataset.build(out, n=16, classes=3, seed=5, scale=0.5, jobs=2)
    return out


@pytest.mark.slow  # a whole bench run with every contender (about a minute)
def test_bench_smoke_run(tiny_data, tmp_path, capsys):
    keys = ["torch", "decode-pil", "godali-cpu", "decode-godali", "godali-cuda",
            "godali-iter"]
    out_json = tmp_path / "r.json"
    code = bench.main(["--data", str(tiny_data), "--device", "cpu", "--batch-size", "4",
                       "--iters", "2", "--warmup", "1", "--repeats", "2",
                       "--contenders", ",".join(keys), "--json", str(out_json)])
    text = capsys.readouterr().out
    doc = json.loads(out_json.read_text())
    rows = {r["key"]: r for r in doc["contenders"]}
    assert [r["key"] for r in doc["contenders"]] == keys
    assert doc["config"]["batch_size"] == 4 and doc["config"]["repeats"] == 2
    assert doc["dataset"]["count"] == 16
    assert doc["machine"]["cores_available"] >= 1
    assert "contender" in text and "images/s" in text and "CPU util" in text

    ran = ["torch", "decode-pil"] + (["godali-cpu", "decode-godali", "godali-iter"]
                                     if HAVE_GODALI_CPU else [])
    for k in ran:
        r = rows[k]
        assert r["status"] == "ok", r
        assert len(r["images_per_s_runs"]) == 2
        assert r["images_per_s"] > 0 and r["ms_per_batch"] > 0
        assert r["cpu_util"] >= 0  # a window of milliseconds: /proc counts 10 ms ticks
        assert r["peak_mem_mb"] > 10
        assert r["first_batch_s"] > 0 and r["cpu_ms_per_image"] >= 0
        assert r["label"] in text
    assert rows["godali-cuda"]["status"] == "skipped"
    if HAVE_GODALI_CPU:
        assert code == 0
        assert rows["godali-cpu"]["versions"]["godali_flavour"] == "cpu"
    else:
        assert code == 1
        assert rows["godali-cpu"]["status"] == "failed"
        assert "library" in rows["godali-cpu"]["reason"]


def test_optional_contenders_are_skipped_when_not_installed(tiny_data, tmp_path,
                                                           monkeypatch, capsys):
    # DALI and SPDL are optional: named but missing, they are reported as skipped with
    # what to install; without --contenders they are left out.
    monkeypatch.setattr(bench, "_installed", lambda module: False)
    assert not any(bench.BY_KEY[k].module for k in bench._default_contenders("cpu"))
    monkeypatch.setattr(bench, "_installed",
                        lambda module: module == "spdl.io")
    assert "decode-spdl" in bench._default_contenders("cpu")
    assert "dali-cpu" not in bench._default_contenders("cpu")
    monkeypatch.setattr(bench, "_installed", lambda module: False)
    out_json = tmp_path / "r.json"
    keys = ["dali-cpu", "decode-dali", "decode-spdl"]
    bench.main(["--data", str(tiny_data), "--device", "cpu", "--batch-size", "4",
                "--iters", "1", "--warmup", "1", "--repeats", "1",
                "--contenders", ",".join(keys), "--json", str(out_json)])
    rows = {r["key"]: r for r in json.loads(out_json.read_text())["contenders"]}
    assert [k for k in keys if rows[k]["status"] == "skipped"] == keys
    assert "nvidia.dali not installed" in rows["dali-cpu"]["reason"]
    assert "pip install nvidia-dali-cuda120" in rows["decode-dali"]["reason"]
    assert "pip install spdl" in rows["decode-spdl"]["reason"]


def test_validation_contenders_run(tiny_data, tmp_path):
    # The validation pipeline (resize shorter 256, centre crop 224) in torch and godali:
    # both deliver every timed batch.
    keys = ["val-torch"] + (["val-godali"] if HAVE_GODALI_CPU else [])
    out_json = tmp_path / "r.json"
    code = bench.main(["--data", str(tiny_data), "--device", "cpu", "--batch-size", "4",
                       "--iters", "2", "--warmup", "1", "--repeats", "1",
                       "--contenders", ",".join(keys), "--json", str(out_json)])
    rows = {r["key"]: r for r in json.loads(out_json.read_text())["contenders"]}
    assert code == 0
    for k in keys:
        assert rows[k]["status"] == "ok", rows[k]
        assert rows[k]["images_per_s"] > 0
    assert "val-godali" in bench._default_contenders("cpu")


def test_dali_trials_find_nvimgcodec(tmp_path, monkeypatch):
    # DALI 2.4 dlopens libnvimgcodec.so by name: the pip package's folder goes first on
    # the DALI trials' LD_LIBRARY_PATH, and nothing changes without the package.
    import importlib.machinery
    import importlib.util
    pkg = tmp_path / "nvidia" / "nvimgcodec"
    pkg.mkdir(parents=True)
    (pkg / "libnvimgcodec.so.0").write_bytes(b"")
    spec = importlib.machinery.ModuleSpec("nvidia.nvimgcodec", None, is_package=True)
    spec.submodule_search_locations = [str(pkg)]
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: spec if name == "nvidia.nvimgcodec" else None)
    env = {"LD_LIBRARY_PATH": "/opt/x"}
    bench._nvimgcodec_path(env)
    assert env["LD_LIBRARY_PATH"] == str(pkg) + os.pathsep + "/opt/x"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    env = {}
    bench._nvimgcodec_path(env)
    assert env == {}


def test_bench_rejects_bad_arguments(tmp_path, capsys):
    assert bench.main(["--data", str(tmp_path), "--contenders", "torch,nope"]) == 2
    err = capsys.readouterr().err
    assert "--contenders" in err and "nope" in err and "godali-cpu" in err
    assert bench.main(["--data", str(tmp_path / "missing"), "--device", "cpu"]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert bench.main(["--batch-size", "0"]) == 2
    assert "--batch-size" in capsys.readouterr().err


def test_progress_writes_plain_lines_when_not_a_terminal(capsys):
    from godali_tools.bench import Progress
    p = Progress(20, tty=False, min_interval=0.0)
    p.set_label("godali 1/2")
    for _ in range(20):
        p.step()
    p.set_label("torch 2/2")
    p.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("progress:   0% (0/20)  godali 1/2")
    assert "progress: 100% (20/20)  godali 1/2" in lines
    assert lines[-1].startswith("progress: 100%") and lines[-1].endswith("torch 2/2")
    # One line per tenth at most, not one per step.
    assert len(lines) <= 12


def _decode_pil_args(data, *extra):
    return ["--data", str(data), "--device", "cpu", "--batch-size", "4", "--iters", "1",
            "--warmup", "0", "--repeats", "1", "--contenders", "decode-pil", *extra]


@pytest.mark.slow  # two bench runs
def test_each_run_writes_into_a_folder_of_its_own(tiny_data, tmp_path, monkeypatch,
                                                  capsys):
    # Two runs with the default destination never share a results file (a run from a
    # Python without torch once overwrote the previous run's results).
    monkeypatch.setattr(bench, "RESULTS_ROOT", tmp_path / "build" / "bench")
    dirs = []
    for _ in range(2):
        assert bench.main(_decode_pil_args(tiny_data)) == 0
        text = capsys.readouterr().out
        said = [ln.split(" to ", 1)[1] for ln in text.splitlines()
                if ln.startswith("results will be written to ")]
        assert len(said) == 1, text
        path = Path(said[0])
        assert path.name == "results.json" and path.parent.parent == tmp_path / "build" / "bench"
        assert f"results: {path}" in text
        assert json.loads(path.read_text())["contenders"][0]["key"] == "decode-pil"
        dirs.append(path.parent)
    assert dirs[0] != dirs[1]
    assert sorted(p.name for p in (tmp_path / "build" / "bench").iterdir()) == \
        sorted(d.name for d in dirs)


def test_out_chooses_the_folder(tiny_data, tmp_path, capsys):
    out = tmp_path / "mine"
    assert bench.main(_decode_pil_args(tiny_data, "--out", str(out))) == 0
    text = capsys.readouterr().out
    assert f"results: {out / 'results.json'}" in text
    doc = json.loads((out / "results.json").read_text())
    assert doc["warnings"] == [] or all(isinstance(w, str) for w in doc["warnings"])
    assert bench.main(_decode_pil_args(tiny_data, "--out", str(out), "--json", "x.json")) == 2
    assert "--out and --json" in capsys.readouterr().err


def test_new_run_dir_never_reuses_a_name(tmp_path):
    import datetime
    now = datetime.datetime(2024, 5, 6, 7, 8, 9)
    a = bench.new_run_dir(tmp_path, "cpu", now)
    b = bench.new_run_dir(tmp_path, "cpu", now)
    assert (a.name, b.name) == ("20240506-070809-cpu", "20240506-070809-cpu-2")


def test_chart_carries_the_warnings(tmp_path):
    need("matplotlib")
    from PIL import Image
    rows = [{"key": "godali-cpu", "label": "godali cpu", "status": "ok",
             "images_per_s": 100.0, "images_per_s_runs": [90.0, 100.0, 110.0]},
            {"key": "torch", "label": "torch DataLoader", "status": "failed",
             "reason": "No module named 'torch'"}]
    noise = ("other processes used up to 40% of the CPUs during timed windows; these "
             "figures are unreliable. Run again on a quiet machine.")
    png = tmp_path / "c.png"
    assert bench.draw_chart(png, rows, None, "t", [noise])
    meta = Image.open(png).text["Warnings"].splitlines()
    assert meta == ["warning: " + noise, "torch DataLoader: failed (No module named 'torch')"]
    assert bench.chart_notes(rows[:1], []) == []
    # The notes make the figure taller rather than squeezing the bars.
    plain = tmp_path / "plain.png"
    assert bench.draw_chart(plain, rows[:1], None, "t")
    assert Image.open(png).size[1] > Image.open(plain).size[1]
    assert "Warnings" not in Image.open(plain).text or Image.open(plain).text["Warnings"] == ""


def _chart_rows():
    return [{"key": "godali-cpu", "label": "godali cpu", "status": "ok",
             "images_per_s": 100.0, "images_per_s_runs": [90.0, 100.0, 110.0]},
            {"key": "torch", "label": "torch DataLoader", "status": "ok",
             "images_per_s": 60.0, "images_per_s_runs": [55.0, 60.0, 65.0]},
            {"key": "decode-pil", "label": "decode only: PIL pool", "status": "ok",
             "images_per_s": 200.0, "images_per_s_runs": [190.0, 200.0, 210.0]}]


def test_chart_says_what_it_measures_with_a_legend(tmp_path):
    need("matplotlib", "the chart is drawn with matplotlib")
    import numpy as np
    from PIL import Image
    stats = {"count": 1000, "classes": 10, "mean_width": 400.4, "mean_height": 350.0,
             "mean_kb": 110.2}
    versions = {"godali": "0.1.0", "torch": "2.1.0", "torchvision": "0.16.0",
                "PIL": "10.0.0", "dali": None, "python": "3.11.2"}
    info = [bench.dataset_line(stats, "/d"),
            bench.versions_line(versions) + "; 2026-11-27T17:00:00+00:00"]
    assert info[0] == "data: 1000 JPEGs in 10 classes, mean 400x350 px, mean 110 KB (/d)"
    assert info[1].startswith("godali 0.1.0, torch 2.1.0, torchvision 0.16.0, "
                              "Pillow 10.0.0, Python 3.11.2;")
    assert "DALI" not in info[1]
    assert "DALI 1.30.0" in bench.versions_line(dict(versions, dali="1.30.0"))

    png = tmp_path / "c.png"
    assert bench.draw_chart(png, _chart_rows(), None, "t", [], info)
    desc = Image.open(png).text["Description"]
    assert info[0] in desc and info[1] in desc and "no model" in desc
    # The legend's three colours are drawn (bars and legend patches): every bar colour
    # appears, and the legend adds pixels of each beyond the bars'.
    px = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3)
    for _, hexcol, _ in bench.BAR_KINDS:
        rgb = tuple(int(hexcol[1 + i] * 2, 16) for i in range(3))
        assert (px == rgb).all(axis=1).sum() > 50, hexcol
    model = {"name": "resnet50", "images_per_s": 80.0}
    with_model = tmp_path / "m.png"
    assert bench.draw_chart(with_model, _chart_rows(), model, "t", [], info)
    assert "training step alone" in Image.open(with_model).text["Description"]


def test_bench_says_how_to_get_a_chart_without_matplotlib(tiny_data, tmp_path, capsys,
                                                          monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    monkeypatch.setattr(bench, "_installed",
                        lambda m: False if m == "matplotlib" else True)
    bench.main(["--data", str(tiny_data), "--device", "cpu", "--batch-size", "4",
                "--iters", "1", "--warmup", "0", "--repeats", "1",
                "--contenders", "decode-pil", "--out", str(tmp_path / "run")])
    text = capsys.readouterr().out
    assert bench.CHART_NO_MATPLOTLIB in text
    assert "pip install matplotlib" in text
    assert not (tmp_path / "run" / "chart.png").exists()


def test_cache_note_says_where_how_big_and_how_to_clear(tmp_path):
    data = tmp_path / "bench-data"
    (data / "class_0").mkdir(parents=True)
    (data / "class_0" / "a.JPEG").write_bytes(b"x" * 3 * 2**20)
    note = bench.cache_note(data, built=True)
    assert f"wrote 3 MiB in {data}" in note
    assert f"rm -r '{data}'" in note
    assert "keeps 3 MiB" in bench.cache_note(data, built=False)
    assert "holds 3 MiB" in bench.cache_note(data, built=None)
