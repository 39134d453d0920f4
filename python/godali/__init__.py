"""godali: a GPU-first image data-loading engine with NVIDIA DALI's Python API.

A DALI user changes only the import::

    from godali import pipeline_def, fn, types
    from godali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

The library (libgodali.so, or libgodali_cuda.so where a GPU works) is loaded on first use,
for example the first fn.* attribute: importing godali alone starts nothing, so a process
may import it before forking workers that create their own pipelines.
"""

from . import types
from ._lib import (CUDAError, DataError, ForkedProcessError, GodaliError,
                   InternalError, InvalidArgumentError, InvalidHandleError,
                   InvalidPipelineError, NoCUDAError, OutOfMemoryError,
                   ReentrantCallError, StateError)
from ._graph import DataNode, newaxis  # noqa: F401  (DALI: nvidia.dali.newaxis)
from .pipeline import (BatchInfo, OperatorConcurrency, Pipeline, StreamPolicy,  # noqa: F401
                       live_pipelines, memory_stats, pipeline_def)
from .tensors import (Tensor, TensorCPU, TensorGPU, TensorList, TensorListCPU,
                      TensorListGPU)
from . import backend, data_node, fn, ops, plugin_manager, tfrecord

__version__ = "0.1.0"

__all__ = [
    "BatchInfo", "CUDAError", "DataError", "DataNode", "ForkedProcessError", "GodaliError",
    "InternalError", "InvalidArgumentError", "InvalidHandleError",
    "InvalidPipelineError", "NoCUDAError", "OutOfMemoryError", "Pipeline",
    "ReentrantCallError", "StateError", "Tensor", "TensorCPU",
    "TensorGPU", "TensorList", "TensorListCPU", "TensorListGPU", "backend", "data_node", "fn",
    "library_info", "live_pipelines", "memory_stats", "ops", "pipeline_def", "plugin_manager",
    "types",
]


def library_info():
    """Loads the library if needed and describes it: version, path, flavour, devices."""
    from . import _lib
    lib = _lib.get()
    major, minor, patch = lib.version()
    info = {
        "package_version": __version__,
        "library_version": "%d.%d.%d" % (major, minor, patch),
        "library_path": lib.path,
        "flavour": lib.flavour,
        "cuda_devices": [],
    }
    if lib.flavour == "cuda":
        ok, reason, names = _lib.probe_cuda()
        info["cuda_devices"] = names
    if _lib.note:
        info["note"] = _lib.note
    return info


def __getattr__(name):
    # The torch-dependent loader is imported on demand: `import godali` must not need torch.
    if name == "ImageFolderLoader":
        from .plugin.pytorch import ImageFolderLoader
        return ImageFolderLoader
    if name == "math":
        # DALI's math namespace, imported on first use.
        import importlib
        return importlib.import_module(".math", __name__)
    raise AttributeError("module 'godali' has no attribute %r" % name)
