"""Every ```python block of README.md and docs/*.md runs as written.

Each block runs alone, in a fresh Python with this checkout's package, in a folder that
holds what the docs say the snippets start from: the small data set of

    python -m godali_tools make_dataset train --n 48 --classes 4 --scale 0.5

(README.md, "Python"). A block that cannot run here says so on the line just before
its fence, and is reported as skipped with the reason, never silently left out:

    <!-- snippet: gpu -->           needs a CUDA device (runs where there is one)
    <!-- snippet: slow -->          runs, marked slow (more than a few seconds)
    <!-- snippet: skip REASON -->   never runs; keep these rare

A failure names the file and line of the block; the traceback's line numbers are the
document's own.
"""

import glob
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from conftest import PYTHON_DIR, REPO

FENCE = "```python"
MARK = re.compile(r"^<!--\s*snippet:\s*(gpu|slow|skip)\b\s*(.*?)\s*-->$")
DATASET_ARGS = ["train", "--n", "48", "--classes", "4", "--scale", "0.5", "--seed", "0"]
TIMEOUT_S = 600


@dataclass(frozen=True)
class Snippet:
    doc: str  # path relative to the repository
    line: int  # 1-based line of the block's first code line
    code: str
    mark: str  # "", "gpu", "slow" or "skip"
    reason: str


def doc_files():
    return [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs",
                                                                             "*.md")))


def extract(path):
    """The ```python blocks of one Markdown file, with the marker before each."""
    rel = os.path.relpath(path, REPO)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() != FENCE:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError("%s:%d: ```python block is never closed" % (rel, i + 1))
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        m = MARK.match(lines[k].strip()) if k >= 0 else None
        if m and m.group(1) == "skip" and not m.group(2):
            raise AssertionError("%s:%d: <!-- snippet: skip --> needs a reason" % (rel, k + 1))
        out.append(Snippet(rel, i + 2, "\n".join(lines[i + 1:j]) + "\n",
                           m.group(1) if m else "", m.group(2) if m else ""))
        i = j + 1
    return out


SNIPPETS = [s for path in doc_files() for s in extract(path)]


def _params():
    params = []
    for s in SNIPPETS:
        marks = []
        if s.mark == "gpu":
            marks.append(pytest.mark.gpu)
        elif s.mark == "slow":
            marks.append(pytest.mark.slow)
        elif s.mark == "skip":
            marks.append(pytest.mark.skip(reason="%s:%d: %s" % (s.doc, s.line, s.reason)))
        params.append(pytest.param(s, marks=marks, id="%s:%d" % (s.doc, s.line)))
    return params


@pytest.fixture(scope="module")
def snippet_dir(tmp_path_factory):
    """The folder the snippets start in: the data set README.md names."""
    from godali_tools import make_dataset
    d = tmp_path_factory.mktemp("snippets")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        assert make_dataset.main(DATASET_ARGS + ["--jobs", "1"]) == 0
    finally:
        os.chdir(cwd)
    return d


def test_the_docs_have_snippets():
    # The extraction itself: a renamed fence or folder must not silently leave nothing.
    assert len(SNIPPETS) >= 4, SNIPPETS
    assert {s.doc for s in SNIPPETS} >= {"README.md", os.path.join("docs", "pytorch.md")}


def test_the_documented_data_set_is_the_one_used():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "make_dataset " + " ".join(DATASET_ARGS) in readme


@pytest.mark.parametrize("snippet", _params())
def test_snippet_runs(snippet, snippet_dir):
    # Line numbers in a traceback are the document's: the code is preceded by as many
    # empty lines as come before it there, in a file named after the document.
    script = snippet_dir / (snippet.doc.replace(os.sep, "_") + ".%d.py" % snippet.line)
    script.write_text("\n" * (snippet.line - 1) + snippet.code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    try:
        r = subprocess.run([sys.executable, str(script)], cwd=str(snippet_dir), env=env,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail("%s:%d: the ```python block ran for more than %d s (mark it "
                    "<!-- snippet: slow --> only if it must be long)"
                    % (snippet.doc, snippet.line, TIMEOUT_S), pytrace=False)
    if r.returncode != 0:
        pytest.fail("%s:%d: the ```python block failed (exit %d); its traceback's line "
                    "numbers are %s's:\n%s%s"
                    % (snippet.doc, snippet.line, r.returncode, snippet.doc,
                       r.stdout[-2000:], r.stderr[-4000:]), pytrace=False)
