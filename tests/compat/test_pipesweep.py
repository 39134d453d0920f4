"""Pipeline semantics against DALI 2.4 (tests/compat/pipesweep.py): readers on generated
data sets (file, numpy, webdataset, tfrecord, caffe, caffe2, mxnet, coco: samples, order,
shards, padding, stick_to_shard, shuffles, epoch sizes), external_source in its modes,
DALIGenericIterator's last-batch policies, checkpoint/restore. Every scenario gives what
DALI gives, or both refuse it, except KNOWN (with its cause).

DALI's PyTorch plugin needs torch 2 (it enters torch.device as a context manager), so
both sides run under the torch 2 virtual environment (scripts/setup.sh,
GODALI_WITH_TORCH2=1) when it is there; DALI's autograph imports gast, astunparse and six
at import, which that environment lacks: they are lent from Debian's Python (links in a
scratch directory), with a stand-in for pkg_resources that gast's version probe imports.
Without the environment the iterator scenarios are left out (said in the output)."""

import os
import subprocess
import sys

import pytest

import pipesweep
import sidebyside

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH2 = os.environ.get("GODALI_TORCH2_PY", "/usr/local/lib/godali-torch2/bin/python")
DEBIAN = "/usr/lib/python3/dist-packages"

KNOWN = {
    "caffe/shard 0 of 1 pad_last_batch=False":
        "the data set mixes encoded Datums (1-D bytes) and a raw HWC Datum: DALI refuses a "
        "batch whose samples differ in dimensionality, godali returns them",
    "caffe/shard 1 of 2 pad_last_batch=False":
        "as above (the raw Datum falls in this shard's batches)",
}


def _shim(path):
    os.makedirs(path, exist_ok=True)
    for name in ("gast", "astunparse", "six.py"):
        src = os.path.join(DEBIAN, name)
        if os.path.exists(src) and not os.path.exists(os.path.join(path, name)):
            os.symlink(src, os.path.join(path, name))
    with open(os.path.join(path, "pkg_resources.py"), "w") as fh:
        fh.write("class DistributionNotFound(Exception):\n    pass\n\n\n"
                 "def get_distribution(name):\n    raise DistributionNotFound(name)\n")
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    sidebyside.require_dali("the pipeline-semantics oracle")
    tmp = tmp_path_factory.mktemp("pipesweep")
    data = str(tmp / "data")
    subprocess.run([sys.executable, os.path.join(HERE, "pipesweep.py"), "make-data", data],
                   check=True, capture_output=True)
    torch2 = os.path.isfile(TORCH2)
    py = TORCH2 if torch2 else sys.executable
    shim = ":" + _shim(str(tmp / "shim")) if torch2 else ""
    sidebyside.run_both(lambda impl: [os.path.join(HERE, "pipesweep.py"), "run", impl, data,
                                      str(tmp / (impl + ".json"))],
                        timeout=900, python=py, paths={"dali": sidebyside.DALI_DIR + shim})
    rows = pipesweep.compare(str(tmp / "dali.json"), str(tmp / "godali.json"))
    if not torch2:
        print("pipesweep: no torch 2 environment (%s): iterator scenarios left out" % TORCH2)
        rows = [r for r in rows if not r[0].startswith("iterator/")]
    return rows


def test_scenarios_cover_the_semantics(compared):
    names = {r[0].split("/")[0] for r in compared}
    want = {"file", "numpy", "webdataset", "tfrecord", "caffe", "caffe2", "mxnet", "coco",
            "external_source", "checkpoint"}
    assert want <= names, want - names
    assert sum(1 for r in compared if r[1] == "same") >= 40


def test_godali_does_what_dali_does(compared):
    bad = ["%s: %s: %s" % (n, st, " ".join(w.split())[:400]) for n, st, w in compared
           if st not in ("same", "refused") and n not in KNOWN]
    counts = {}
    for _n, st, _w in compared:
        counts[st] = counts.get(st, 0) + 1
    print("pipesweep: %d scenarios %s" % (len(compared), counts))
    assert not bad, "pipeline semantics that differ from DALI 2.4:\n" + "\n".join(bad)


def test_known_differences_are_still_there(compared):
    st = {n: s for n, s, _w in compared}
    gone = [n for n in KNOWN if st.get(n) in ("same", "refused")]
    assert not gone, "these now agree with DALI: remove them from KNOWN: %s" % gone
