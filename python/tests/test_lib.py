"""Library loading, flavour choice, status checking and the fork guard."""

import multiprocessing
import os
import queue

import pytest

import godali
from godali import _lib

from conftest import run_python


def _touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\x7fELF")
    return path


@pytest.fixture
def fake_dirs(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg_lib"
    build = tmp_path / "build"
    pkg.mkdir()
    build.mkdir()
    monkeypatch.setattr(_lib, "search_dirs", lambda: [str(pkg), str(build)])
    return str(pkg), str(build)


def _ok_probe():
    return True, "", ["Fake GPU"]


def _bad_probe():
    return False, "cuInit(0) returned CUDA error 100", []


def _exploding_probe():
    raise AssertionError("CUDA must not be probed when no CUDA flavour is present")


def test_cpu_only_build_never_probes_cuda(fake_dirs):
    pkg, build = fake_dirs
    cpu = _touch(os.path.join(build, "libgodali.so"))
    path, flavour, tried, note = _lib.choose_library({}, probe=_exploding_probe)
    assert (path, flavour, note) == (cpu, "cpu", "")
    assert os.path.join(pkg, "libgodali.so") in tried


def test_package_copy_wins_unless_build_is_newer(fake_dirs):
    pkg, build = fake_dirs
    built = _touch(os.path.join(build, "libgodali.so"))
    mine = _touch(os.path.join(pkg, "libgodali.so"))
    os.utime(built, (1000, 1000))
    os.utime(mine, (1000, 1000))
    assert _lib.choose_library({}, probe=_exploding_probe)[0] == mine
    # A `make` after `make python`: the stale package copy must not shadow it.
    os.utime(built, (2000, 2000))
    assert _lib.choose_library({}, probe=_exploding_probe)[0] == built


def test_cuda_flavour_only_when_probe_succeeds(fake_dirs):
    _, build = fake_dirs
    cpu = _touch(os.path.join(build, "libgodali.so"))
    cuda = _touch(os.path.join(build, "libgodali_cuda.so"))
    assert _lib.choose_library({}, probe=_ok_probe)[:2] == (cuda, "cuda")
    path, flavour, _, note = _lib.choose_library({}, probe=_bad_probe)
    assert (path, flavour) == (cpu, "cpu")
    assert "CUDA is unusable" in note and "error 100" in note


def test_forced_flavours(fake_dirs):
    _, build = fake_dirs
    cpu = _touch(os.path.join(build, "libgodali.so"))
    _touch(os.path.join(build, "libgodali_cuda.so"))
    assert _lib.choose_library({"GODALI_FLAVOUR": "cpu"}, probe=_exploding_probe)[0] == cpu
    # Forcing CUDA where it does not work must not load it: that would kill the process.
    with pytest.raises(ImportError, match="terminate"):
        _lib.choose_library({"GODALI_FLAVOUR": "cuda"}, probe=_bad_probe)
    with pytest.raises(ImportError, match="GODALI_FLAVOUR"):
        _lib.choose_library({"GODALI_FLAVOUR": "tpu"}, probe=_ok_probe)


def test_godali_library_env(fake_dirs, tmp_path):
    _touch(os.path.join(fake_dirs[1], "libgodali.so"))
    explicit = _touch(str(tmp_path / "elsewhere" / "libgodali.so"))
    assert _lib.choose_library({"GODALI_LIBRARY": explicit}, probe=_exploding_probe)[0] == \
        explicit
    cuda = _touch(str(tmp_path / "elsewhere" / "libgodali_cuda.so"))
    with pytest.raises(ImportError, match="CUDA flavour"):
        _lib.choose_library({"GODALI_LIBRARY": cuda}, probe=_bad_probe)
    # A folder: the CUDA flavour where CUDA works, else the CPU one.
    folder = os.path.dirname(explicit)
    assert _lib.choose_library({"GODALI_LIBRARY": folder}, probe=_ok_probe)[0] == cuda
    assert _lib.choose_library({"GODALI_LIBRARY": folder}, probe=_bad_probe)[0] == explicit
    with pytest.raises(ImportError, match="nothing.so"):
        _lib.choose_library({"GODALI_LIBRARY": str(tmp_path / "nothing.so")})


def test_not_found_lists_every_path(fake_dirs):
    pkg, build = fake_dirs
    _touch(os.path.join(build, "libgodali_cuda.so"))
    with pytest.raises(ImportError) as e:
        _lib.choose_library({}, probe=_bad_probe)
    msg = str(e.value)
    assert "CUDA is unusable" in msg
    for d in (pkg, build):
        assert os.path.join(d, "libgodali.so") in msg
        assert os.path.join(d, "libgodali_cuda.so") in msg


@pytest.mark.slow  # probes in a subprocess with CUDA
def test_probe_fails_without_visible_devices():
    r = run_python("from godali import _lib; ok, why, n = _lib.probe_cuda(); "
                   "print(ok); print(why)", env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "False"


def test_import_does_not_load_the_library():
    r = run_python("import godali, godali.fn, godali.types; from godali import _lib; "
                   "print(_lib.loaded() is None)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_loaded_library_facts(lib):
    assert lib.version() == (0, 1, 0)
    assert lib.flavour in ("cpu", "cuda")
    assert os.path.isfile(lib.path)
    info = godali.library_info()
    assert info["library_path"] == lib.path
    assert info["flavour"] == lib.flavour


def test_every_function_is_typed(lib):
    for name in _lib._SIGNATURES:
        f = getattr(lib._cdll, name)
        assert f.argtypes == _lib._SIGNATURES[name], name
        assert f.restype is not None


def test_status_becomes_exception_with_library_message(lib):
    # A handle that never existed: GODALI_ERROR_INVALID_HANDLE and the engine's message.
    with pytest.raises(godali.InvalidHandleError) as e:
        lib.pipeline_build(987654321)
    assert e.value.status == _lib.ERROR_INVALID_HANDLE
    assert str(e.value)
    assert isinstance(e.value, godali.GodaliError) and isinstance(e.value, RuntimeError)
    with pytest.raises(godali.InvalidPipelineError) as e:
        text = b'{"batch_size": 0, "ops": [], "outputs": []}'
        lib.pipeline_create(text, len(text), _lib.byref(_lib.c_uint64()))
    assert "batch_size" in str(e.value)


def test_error_classes():
    assert issubclass(godali.DataError, godali.GodaliError)
    assert issubclass(godali.InvalidPipelineError, ValueError)
    assert issubclass(godali.GodaliError, RuntimeError)


def _child_uses_pipeline(pipe, q):
    try:
        pipe.run()
        q.put("no error")
    except godali.ForkedProcessError as e:
        q.put("forked: " + str(e))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put("other: %r" % e)


def test_fork_child_gets_clear_error(image_folder):
    from godali import fn
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        pipe.set_outputs(labels)
    pipe.build()
    first = pipe.run()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_uses_pipeline, args=(pipe, q))
    p.start()
    try:
        msg = q.get(timeout=60)
    except queue.Empty:
        msg = "child hung"
    p.join(timeout=30)
    if p.is_alive():
        p.kill()
    assert msg.startswith("forked: "), msg
    assert "loaded in process %d" % os.getpid() in msg
    assert "spawn" in msg
    # The parent is unaffected, and the batch it held is intact.
    assert len(first[0]) == 2
    assert len(pipe.run()[0]) == 2
    pipe.close()


def test_fork_before_loading_is_fine(image_folder):
    # Importing godali starts nothing: a child forked before the first use loads its own
    # copy of the library and works.
    code = r"""
import multiprocessing, godali
from godali import _lib
def child(q):
    from godali import fn
    pipe = godali.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        _, labels = fn.readers.file(file_root=%r)
        pipe.set_outputs(labels)
    q.put(pipe.run()[0].as_array().ravel().tolist())
ctx = multiprocessing.get_context("fork")
q = ctx.Queue()
p = ctx.Process(target=child, args=(q,))
p.start()
print(q.get(timeout=60))
p.join(30)
print(_lib.loaded() is None, p.exitcode)
""" % image_folder
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[0, 0]", "True 0"]
