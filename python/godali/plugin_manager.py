"""DALI's nvidia.dali.plugin_manager.

DALI loads custom operators compiled against its C++ operator API from shared
libraries. godali's operators are Go code registered in the engine, so a DALI plugin
library cannot run here; load_library says so, naming the file, instead of failing
later on an unknown operator name.
"""

import os

__all__ = ["load_library", "load_directory"]


def load_library(library_path, global_symbols=False):
    """Refuses a DALI plugin library with a clear error (see the module doc)."""
    path = os.fspath(library_path)
    if not os.path.exists(path):
        raise FileNotFoundError("godali: plugin_manager.load_library: %r does not exist"
                                % path)
    raise NotImplementedError(
        "godali: plugin_manager.load_library(%r): DALI plugin libraries (custom operators "
        "built against DALI's C++ API) cannot be loaded by godali, whose operators are "
        "registered in its Go engine (docs/operators.md)" % path)


def load_directory(plugin_dir_path, global_symbols=False):
    """Refuses a folder of DALI plugin libraries, as load_library refuses one."""
    path = os.fspath(plugin_dir_path)
    if not os.path.isdir(path):
        raise FileNotFoundError("godali: plugin_manager.load_directory: %r is not a "
                                "directory" % path)
    raise NotImplementedError(
        "godali: plugin_manager.load_directory(%r): DALI plugin libraries (custom operators "
        "built against DALI's C++ API) cannot be loaded by godali, whose operators are "
        "registered in its Go engine (docs/operators.md)" % path)
