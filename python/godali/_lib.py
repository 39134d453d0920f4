"""Loading libgodali and calling it through ctypes.

Only one flavour of the library is ever loaded into a process: each carries its own Go
runtime. The CUDA flavour initialises CUDA when it is loaded and terminates the process if
that fails, so it is chosen only after libcuda itself has said that a device works.
"""

import atexit
import ctypes
import logging
import os
import threading
from ctypes import (POINTER, Structure, byref, c_char, c_char_p, c_int, c_int32, c_int64,
                    c_size_t, c_uint64, c_void_p)

from . import _dlpack

log = logging.getLogger("godali")

CPU_NAME = "libgodali.so"
CUDA_NAME = "libgodali_cuda.so"

_RTLD_LAZY = 0x1
_RTLD_LOCAL = 0x0

# Status codes (godali_status_t).
OK = 0
END_OF_EPOCH = 1
ERROR_INVALID_ARGUMENT = -1
ERROR_INVALID_HANDLE = -2
ERROR_INVALID_PIPELINE = -3
ERROR_DATA = -4
ERROR_STATE = -5
ERROR_NO_CUDA = -6
ERROR_CUDA = -7
ERROR_OUT_OF_MEMORY = -8
ERROR_INTERNAL = -100


class GodaliError(RuntimeError):
    """A godali library call failed. `status` holds the godali_status_t value."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class InvalidArgumentError(GodaliError, ValueError):
    """A value passed to the library was rejected (GODALI_ERROR_INVALID_ARGUMENT)."""


class InvalidHandleError(GodaliError):
    """The pipeline was destroyed or never existed (GODALI_ERROR_INVALID_HANDLE)."""


class InvalidPipelineError(GodaliError, ValueError):
    """The pipeline description was rejected (GODALI_ERROR_INVALID_PIPELINE)."""


class DataError(GodaliError):
    """A sample could not be read or decoded; the message names the file. The pipeline
    stays usable: the next run() goes on with the following batch."""


class StateError(GodaliError):
    """A call came out of order, or a ragged output was asked for as a dense tensor."""


class ReentrantCallError(StateError):
    """A python_function (a host function) called into the pipeline that runs it (run(),
    reset(), close(), ...): the call would wait for the batch the function is computing,
    which waits for the call. Raised instead of deadlocking."""


# How the library words the refusal of such a call (capi/hostfunc.go, errReentrant).
_REENTRANT_MARK = "called from inside the host function of node"


class NoCUDAError(GodaliError):
    """The GPU was requested but the loaded library is the CPU flavour."""


class CUDAError(GodaliError):
    """A CUDA call inside the library failed."""


class OutOfMemoryError(GodaliError, MemoryError):
    """The system refused memory to the library (GODALI_ERROR_OUT_OF_MEMORY); the message
    says how much was asked for."""


class InternalError(GodaliError):
    """A bug in godali: please report it with the message."""


_ERRORS = {
    ERROR_INVALID_ARGUMENT: InvalidArgumentError,
    ERROR_INVALID_HANDLE: InvalidHandleError,
    ERROR_INVALID_PIPELINE: InvalidPipelineError,
    ERROR_DATA: DataError,
    ERROR_STATE: StateError,
    ERROR_NO_CUDA: NoCUDAError,
    ERROR_CUDA: CUDAError,
    ERROR_OUT_OF_MEMORY: OutOfMemoryError,
    ERROR_INTERNAL: InternalError,
}

_STATUS_NAMES = {
    OK: "GODALI_OK", END_OF_EPOCH: "GODALI_END_OF_EPOCH",
    ERROR_INVALID_ARGUMENT: "GODALI_ERROR_INVALID_ARGUMENT",
    ERROR_INVALID_HANDLE: "GODALI_ERROR_INVALID_HANDLE",
    ERROR_INVALID_PIPELINE: "GODALI_ERROR_INVALID_PIPELINE",
    ERROR_DATA: "GODALI_ERROR_DATA", ERROR_STATE: "GODALI_ERROR_STATE",
    ERROR_NO_CUDA: "GODALI_ERROR_NO_CUDA", ERROR_CUDA: "GODALI_ERROR_CUDA",
    ERROR_OUT_OF_MEMORY: "GODALI_ERROR_OUT_OF_MEMORY",
    ERROR_INTERNAL: "GODALI_ERROR_INTERNAL",
}


class ForkedProcessError(RuntimeError):
    """The library was loaded by a parent process; this forked child cannot use it."""


# --- C structs -------------------------------------------------------------------------

class BatchInfo(Structure):
    _fields_ = [
        ("batch_size", c_int64), ("valid", c_int64), ("epoch", c_int64),
        ("iteration", c_int64), ("last_in_epoch", c_int32), ("reserved", c_int32),
        ("skipped", c_int64),
    ]


class OutputInfo(Structure):
    _fields_ = [
        ("uniform", c_int32), ("ndim", c_int32), ("device_type", c_int32),
        ("device_id", c_int32), ("dtype", _dlpack.DLDataType), ("num_samples", c_int64),
        ("layout", c_char * 16),  # GODALI_MAX_LAYOUT
    ]


class ReaderMeta(Structure):
    _fields_ = [
        ("epoch_size", c_int64), ("epoch_size_padded", c_int64), ("shard_size", c_int64),
        ("shard_id", c_int32), ("number_of_shards", c_int32), ("pad_last_batch", c_int32),
        ("stick_to_shard", c_int32),
    ]


class PoolStats(Structure):
    _fields_ = [
        ("allocations", c_int64), ("releases", c_int64), ("acquires", c_int64),
        ("returns", c_int64), ("outstanding", c_int64), ("reserved_bytes", c_int64),
        ("in_use_bytes", c_int64), ("exported", c_int64),
    ]


def struct_dict(s):
    """Returns the fields of a ctypes Structure as a dict."""
    return {name: getattr(s, name) for name, _ in s._fields_ if name != "reserved"}


_H = c_uint64
_PP = POINTER(c_void_p)

# name -> argtypes; every function returns godali_status_t except godali_last_error.
_SIGNATURES = {
    "godali_version": [POINTER(c_int), POINTER(c_int), POINTER(c_int)],
    "godali_flavour": [POINTER(c_char_p)],
    "godali_operator_schemas": [POINTER(c_char_p)],
    "godali_pipeline_create": [c_char_p, c_size_t, POINTER(_H)],
    "godali_pipeline_build": [_H],
    "godali_pipeline_run": [_H],
    "godali_pipeline_next": [_H],
    "godali_pipeline_reset": [_H],
    "godali_pipeline_wait": [_H, c_int64, POINTER(c_int)],
    "godali_pipeline_interrupt": [_H],
    "godali_pipeline_destroy": [_H],
    "godali_host_shutdown": [],
    "godali_pipeline_num_outputs": [_H, POINTER(c_int)],
    "godali_pipeline_output_name": [_H, c_int, POINTER(c_char_p)],
    "godali_pipeline_batch_info": [_H, POINTER(BatchInfo)],
    "godali_pipeline_output_info": [_H, c_int, POINTER(OutputInfo)],
    "godali_pipeline_skipped": [_H, _PP, POINTER(c_size_t)],
    "godali_pipeline_set_profiling": [_H, c_int],
    "godali_pipeline_profile": [_H, _PP, POINTER(c_size_t)],
    "godali_pipeline_output": [_H, c_int, _PP],
    "godali_pipeline_output_versioned": [_H, c_int, _PP],
    "godali_pipeline_output_sample": [_H, c_int, c_int64, _PP],
    "godali_pipeline_output_cuda": [_H, c_int, c_int64, _PP],
    "godali_pipeline_output_sample_cuda": [_H, c_int, c_int64, c_int64, _PP],
    "godali_tensor_stream_wait": [c_void_p, c_int64],
    "godali_pipeline_reader_meta": [_H, c_char_p, POINTER(ReaderMeta)],
    "godali_pipeline_epoch_size": [_H, c_char_p, POINTER(c_int64)],
    "godali_pipeline_set_epoch_reader": [_H, c_char_p],
    "godali_pipeline_set_last_batch_policy": [_H, c_char_p],
    "godali_check_node": [c_char_p, c_size_t],
    "godali_pipeline_epoch_batches": [_H, POINTER(c_int64)],
    "godali_pipeline_pool_stats": [_H, c_int32, POINTER(PoolStats)],
    "godali_memory_stats": [c_int32, POINTER(PoolStats)],
    "godali_live_pipelines": [POINTER(c_int64)],
    "godali_pipeline_checkpoint": [_H, _PP, POINTER(c_size_t)],
    "godali_pipeline_tuning": [_H, _PP, POINTER(c_size_t)],
    "godali_pipeline_memory_plan": [_H, _PP, POINTER(c_size_t)],
    "godali_pipeline_restore": [_H, c_char_p, c_size_t],
    "godali_free": [c_void_p],
    "godali_pipeline_feed_input": [_H, c_char_p, c_void_p, _dlpack.DLDataType, c_int,
                                   POINTER(c_int64), c_char_p, ctypes.c_uint32, c_void_p,
                                   c_void_p],
    "godali_pipeline_feed_input_ragged": [_H, c_char_p, c_int64, POINTER(c_void_p),
                                          _dlpack.DLDataType, c_int, POINTER(c_int64),
                                          c_char_p, ctypes.c_uint32, c_void_p, c_void_p],
    "godali_pipeline_feed_end_of_epoch": [_H, c_char_p],
    "godali_pipeline_feed_drop": [_H, c_char_p, POINTER(c_int64)],
    "godali_pipeline_feed_queued": [_H, c_char_p, POINTER(c_int64)],
}


# --- finding and loading ---------------------------------------------------------------

def _package_dir():
    return os.path.dirname(os.path.abspath(__file__))


def search_dirs():
    """Returns the folders searched for the library, in order."""
    here = _package_dir()
    return [os.path.join(here, "lib"), os.path.normpath(os.path.join(here, "..", "..", "build"))]


# The CUDA driver's status codes a user meets when probing (cuda.h's CUresult).
_CUDA_ERRORS = {
    3: "the CUDA driver is not initialized",
    34: "the CUDA driver stub library was loaded instead of the real driver",
    35: "the installed NVIDIA driver is older than the CUDA runtime needs",
    100: "no CUDA device",
    101: "invalid CUDA device ordinal (check CUDA_VISIBLE_DEVICES)",
    304: "the operating system refused the CUDA call",
    999: "unknown CUDA error",
}


def _cuda_error_text(st):
    """"no CUDA device (CUDA error 100)" for the codes a probe meets."""
    what = _CUDA_ERRORS.get(st)
    return "%s (CUDA error %d)" % (what, st) if what else "CUDA error %d" % st


def probe_cuda():
    """Asks libcuda whether a CUDA device works, without loading godali.

    Returns (ok, reason, devices) where devices is a list of device names.
    """
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return False, "libcuda.so.1 cannot be loaded (%s)" % e, []
    try:
        st = cuda.cuInit(0)
        if st != 0:
            return False, "cuInit(0) failed: %s" % _cuda_error_text(st), []
        n = c_int(0)
        st = cuda.cuDeviceGetCount(byref(n))
        if st != 0:
            return False, "cuDeviceGetCount failed: %s" % _cuda_error_text(st), []
        if n.value <= 0:
            return False, "no CUDA device is visible", []
        names = []
        for i in range(n.value):
            dev = c_int(0)
            buf = ctypes.create_string_buffer(256)
            if cuda.cuDeviceGet(byref(dev), i) == 0 and \
                    cuda.cuDeviceGetName(buf, 256, dev) == 0:
                names.append(buf.value.decode(errors="replace"))
            else:
                names.append("device %d" % i)
        return True, "", names
    except AttributeError as e:
        return False, "libcuda.so.1 lacks %s" % e, []


def _dlopen_lazy(path):
    """dlopen(path, RTLD_LAZY | RTLD_LOCAL) and wrap the handle as a ctypes.CDLL.

    RTLD_LAZY matters for the CUDA flavour, which references NVML symbols that older
    drivers do not export; ctypes.CDLL would bind them all at load time and fail.
    """
    try:
        libc = ctypes.CDLL(None)
        dlopen = libc.dlopen
    except (OSError, AttributeError):
        libc = ctypes.CDLL("libdl.so.2")
        dlopen = libc.dlopen
    dlopen.restype = c_void_p
    dlopen.argtypes = [c_char_p, c_int]
    dlerror = libc.dlerror
    dlerror.restype = c_char_p
    dlerror.argtypes = []
    handle = dlopen(os.fsencode(path), _RTLD_LAZY | _RTLD_LOCAL)
    if not handle:
        msg = dlerror()
        raise OSError("dlopen %s: %s" % (path, msg.decode(errors="replace") if msg else "failed"))
    return ctypes.CDLL(path, handle=handle)


def _preload_bundled_deps(folder):
    # A wheel carries libjpeg.so.62 next to libgodali; loading it first lets the dynamic
    # loader satisfy libgodali's dependency by soname on hosts without libjpeg-turbo.
    dep = os.path.join(folder, "libjpeg.so.62")
    if os.path.isfile(dep):
        try:
            _dlopen_lazy(dep)
        except OSError as e:
            log.debug("godali: could not preload %s: %s", dep, e)


def _newest(paths, tried):
    """The first existing path, unless a later one is newer: in a source checkout where
    `make python` once copied the library into the package, a later `make` must not be
    shadowed by that stale copy."""
    tried.extend(paths)
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        return None
    best = found[0]
    for p in found[1:]:
        if os.path.getmtime(p) > os.path.getmtime(best):
            best = p
    return best


def choose_library(environ=None, probe=probe_cuda):
    """Decides which library file to load.

    Returns (path, flavour, tried, note): tried lists every path looked at; note explains a
    fallback from the CUDA flavour. Raises ImportError when nothing usable exists.
    """
    env = os.environ if environ is None else environ
    forced = env.get("GODALI_FLAVOUR", "").strip().lower()
    if forced not in ("", "cpu", "cuda"):
        raise ImportError("godali: GODALI_FLAVOUR must be 'cpu' or 'cuda', not %r" % forced)
    tried = []

    explicit = env.get("GODALI_LIBRARY", "").strip()
    if explicit:
        candidates = []
        if os.path.isdir(explicit):
            for name in (CUDA_NAME, CPU_NAME):
                candidates.append(os.path.join(explicit, name))
        else:
            candidates.append(explicit)
        for path in candidates:
            tried.append(path)
            if not os.path.isfile(path):
                continue
            flavour = "cuda" if "cuda" in os.path.basename(path) else "cpu"
            if forced and flavour != forced:
                continue
            if flavour == "cuda":
                ok, reason, _ = probe()
                if not ok:
                    if len(candidates) > 1 and not forced:
                        continue
                    raise ImportError(
                        "godali: GODALI_LIBRARY=%s is the CUDA flavour, but CUDA does not "
                        "work here (%s); loading it would terminate this process. Point "
                        "GODALI_LIBRARY at libgodali.so instead." % (path, reason))
            return path, flavour, tried, ""
        raise ImportError("godali: GODALI_LIBRARY=%s: no usable library; tried: %s"
                          % (explicit, ", ".join(tried)))

    dirs = search_dirs()
    note = ""
    if forced in ("", "cuda"):
        path = _newest([os.path.join(d, CUDA_NAME) for d in dirs], tried)
        if path is not None:
            ok, reason, _ = probe()
            if ok:
                return path, "cuda", tried, ""
            if forced == "cuda":
                raise ImportError(
                    "godali: GODALI_FLAVOUR=cuda but CUDA does not work here (%s); loading "
                    "%s would terminate this process" % (reason, path))
            note = ("godali: %s exists but CUDA is unusable (%s); using the CPU flavour"
                    % (path, reason))
        elif forced == "cuda":
            raise ImportError("godali: GODALI_FLAVOUR=cuda but %s was not found; tried: %s"
                              % (CUDA_NAME, ", ".join(tried)))
    path = _newest([os.path.join(d, CPU_NAME) for d in dirs], tried)
    if path is not None:
        return path, "cpu", tried, note
    raise ImportError(
        "godali: the library was not found. Build it with `make -C <repo>` (and `make "
        "python` before `pip install ./python`), or set GODALI_LIBRARY to its path. "
        "Tried: %s%s" % (", ".join(tried), (". " + note) if note else ""))


class Library:
    """The loaded libgodali: typed C functions behind status and fork checks.

    Each C function godali_X is available as the attribute X (godali_version and
    godali_flavour as version_raw and flavour_raw): a callable that refuses to run in a
    forked child and raises the GodaliError subclass matching a negative status, with the
    library's message. It returns the status otherwise (GODALI_END_OF_EPOCH included).
    """

    def __init__(self, path, flavour, cdll):
        self.path = path
        self.flavour = flavour
        self.pid = os.getpid()
        self._getpid = os.getpid  # kept: in_owner_process also runs at interpreter exit
        self._cdll = cdll
        f = cdll.godali_last_error
        f.argtypes = []
        f.restype = c_char_p
        self._last_error = f
        for name, argtypes in _SIGNATURES.items():
            try:
                f = getattr(cdll, name)
            except AttributeError as e:
                raise ImportError("godali: %s does not export %s; is it an older build?"
                                  % (path, name)) from e
            f.argtypes = argtypes
            f.restype = c_int
            short = name[len("godali_"):]
            if short in ("version", "flavour"):
                short += "_raw"
            setattr(self, short, self._checked(name, f))
        reported = self.reported_flavour()
        if reported in ("cpu", "cuda"):
            self.flavour = reported

    def _checked(self, name, cfunc):
        pid = self.pid
        getpid = os.getpid
        last_error = self._last_error
        forked = self._forked

        def call(*args):
            if getpid() != pid:
                forked()
            status = cfunc(*args)
            if status < 0:
                msg = last_error()
                text = msg.decode("utf-8", errors="replace") if msg else ""
                if not text:
                    text = "%s failed: %s" % (name, _STATUS_NAMES.get(status, status))
                cls = _ERRORS.get(status, GodaliError)
                if status == ERROR_STATE and _REENTRANT_MARK in text:
                    cls = ReentrantCallError
                raise cls(text, status)
            return status

        call.__name__ = name
        call.__qualname__ = name
        return call

    def _forked(self):
        raise ForkedProcessError(
            "godali: the library was loaded in process %d; it cannot be used in a forked "
            "child (process %d): the Go runtime inside it does not survive fork(). Create "
            "pipelines after the fork, in the child, or use the 'spawn' or 'forkserver' "
            "multiprocessing start method (torch DataLoader: multiprocessing_context="
            "'spawn')." % (self.pid, os.getpid()))

    def in_owner_process(self):
        """Tells whether this process is the one that loaded the library."""
        return self._getpid() == self.pid

    def version(self):
        a, b, c = c_int(), c_int(), c_int()
        self.version_raw(byref(a), byref(b), byref(c))
        return a.value, b.value, c.value

    def reported_flavour(self):
        out = c_char_p()
        self.flavour_raw(byref(out))
        return out.value.decode("utf-8")

    def schemas_json(self):
        out = c_char_p()
        self.operator_schemas(byref(out))
        return out.value.decode("utf-8")

    def memory_stats_dict(self, device_type=_dlpack.kDLCPU):
        s = PoolStats()
        self.memory_stats(device_type, byref(s))
        return struct_dict(s)

    def checkpoint_text(self, handle):
        """The pipeline's checkpoint (godali_pipeline_checkpoint) as a str."""
        ptr, n = c_void_p(), c_size_t()
        self.pipeline_checkpoint(handle, byref(ptr), byref(n))
        try:
            return ctypes.string_at(ptr.value, n.value).decode("utf-8")
        finally:
            self.free(ptr)

    def tuning_text(self, handle, call="pipeline_tuning"):
        """The pipeline's tuning (godali_pipeline_tuning), or another call of the same
        form (godali_pipeline_memory_plan), as JSON text."""
        ptr, n = c_void_p(), c_size_t()
        getattr(self, call)(handle, byref(ptr), byref(n))
        try:
            return ctypes.string_at(ptr.value, n.value).decode("utf-8")
        finally:
            self.free(ptr)

    def skipped_json(self, handle):
        """The current batch's skipped samples (godali_pipeline_skipped) as JSON text."""
        ptr, n = c_void_p(), c_size_t()
        self.pipeline_skipped(handle, byref(ptr), byref(n))
        try:
            return ctypes.string_at(ptr.value, n.value).decode("utf-8")
        finally:
            self.free(ptr)

    def profile_json(self, handle):
        """The pipeline's per-node times (godali_pipeline_profile) as JSON text."""
        ptr, n = c_void_p(), c_size_t()
        self.pipeline_profile(handle, byref(ptr), byref(n))
        try:
            return ctypes.string_at(ptr.value, n.value).decode("utf-8")
        finally:
            self.free(ptr)

    def live_pipeline_count(self):
        n = c_int64()
        self.live_pipelines(byref(n))
        return n.value


_lib = None
_lib_lock = threading.Lock()
note = ""


def _pyav_ffmpeg_dirs():
    """Where PyAV's wheel keeps its FFmpeg libraries (site-packages/av.libs), without
    importing av. The video operators try them after the system's (codec/video)."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("av")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin:
        return []
    d = os.path.join(os.path.dirname(os.path.dirname(spec.origin)), "av.libs")
    return [d] if os.path.isdir(d) else []


def _load():
    dirs = _pyav_ffmpeg_dirs()
    if dirs and "GODALI_FFMPEG_PYAV_DIRS" not in os.environ:
        os.environ["GODALI_FFMPEG_PYAV_DIRS"] = os.pathsep.join(dirs)
    path, flavour, tried, fallback_note = choose_library()
    if fallback_note:
        # A GPU machine where CUDA fails deserves a visible warning; a machine without a
        # GPU is simply a CPU machine and gets an info line.
        gpu_here = os.path.exists("/dev/nvidia0") or "CUDA_VISIBLE_DEVICES" in os.environ
        log.log(logging.WARNING if gpu_here else logging.INFO, "%s", fallback_note)
    _preload_bundled_deps(os.path.dirname(path))
    try:
        cdll = _dlopen_lazy(path)
    except OSError as e:
        hint = ""
        if "static TLS" in str(e):
            hint = (" [the library's thread-local storage does not fit glibc's static TLS "
                    "reserve; as a workaround start Python with GLIBC_TUNABLES="
                    "glibc.rtld.optional_static_tls=16384]")
        raise ImportError("godali: cannot load %s: %s%s (tried: %s)"
                          % (path, e, hint, ", ".join(tried))) from e
    return Library(path, flavour, cdll), fallback_note


def get():
    """Returns the process's Library, loading it on first use."""
    global _lib, note
    lib = _lib
    if lib is not None:
        return lib
    with _lib_lock:
        if _lib is None:
            _lib, note = _load()
            atexit.register(_host_shutdown, _lib)
        return _lib


def _host_shutdown(lib):
    # At interpreter exit: from now on the library calls no Python function (a
    # python_function, a feed's deleter), so that none of its threads enters the
    # interpreter once it is finalized (godali_host_shutdown).
    try:
        if lib.in_owner_process():
            lib.host_shutdown()
    except Exception:  # noqa: BLE001 - nothing to report to at exit
        pass


def loaded():
    """Returns the Library if it has been loaded, else None (never loads it)."""
    return _lib
