"""DALI-style operator functions: fn.readers.file, fn.decoders.image_random_crop, ...

The functions are generated from the loaded library's operator schemas the first time an
attribute of this module is used (that is when the library is loaded). Each takes the
operator's inputs positionally and its arguments as keywords, plus `device` and `name`;
help(fn.resize) shows the arguments, their types and defaults.
"""

import threading

from . import _graph

_lock = threading.Lock()
_root = None


def _ensure():
    global _root
    if _root is None:
        with _lock:
            if _root is None:
                root = _graph.build_namespace(_graph.schemas())
                if "external_source" in root._members:
                    # Python sources and feed_input: a function of its own, not the
                    # schema's generated one.
                    from .external_source import external_source
                    external_source.schema = root._members["external_source"].schema
                    external_source._schema_name = "external_source"
                    root._add("external_source", external_source)
                if "python_function" in root._members:
                    # Python callables: functions of their own (_pyfunc.py).
                    from . import _pyfunc
                    for fname, func in _pyfunc.FUNCTIONS.items():
                        func.schema = root._members["python_function"].schema
                        root._add(fname, func)
                readers = root._members.get("readers")
                if readers is not None and "video" in readers._members and "resize" in root._members:
                    # DALI's readers.video_resize: readers.video + resize (_video.py).
                    from ._video import make_video_resize
                    sch = _graph.schemas()
                    readers._add("video_resize", make_video_resize(
                        sch, readers._members["video"], root._members["resize"], root._members["cast"]))
                if "_conditional.split" in _graph.schemas().ops:
                    # DALI's explicit conditional operators (what `if` on data calls).
                    from . import _conditionals
                    root._add("_conditional", _conditionals.namespace())
                exp = root._members.get("experimental")
                if exp is not None and "resize" not in exp._members and "resize" in root._members:
                    # DALI's experimental.resize (GPU-only there): resize, on the CPU too.
                    exp._add("resize", root._members["resize"])
                from ._missing import add_missing
                add_missing(root, _graph.Namespace)
                globals().update(root._members)
                _root = root
    return _root


# DALI's schema names whose words are not split at each capital (fn._to_snake_case)
_SNAKE_WORDS = (("BBox", "Bbox"), ("TFRecord", "Tfrecord"), ("MXNet", "Mxnet"))


def _to_snake_case(pascal):
    """DALI's fn._to_snake_case: an operator's schema name (PascalCase) as the name of
    its fn function: a word starts at a capital after a lower-case letter, or at a
    capital followed by a lower-case letter (RandomBBoxCrop -> random_bbox_crop,
    DLTensorPythonFunction -> dl_tensor_python_function)."""
    for word, repl in _SNAKE_WORDS:
        pascal = pascal.replace(word, repl)
    out = []
    for i, c in enumerate(pascal):
        if c.isupper() and i > 0 and pascal[i - 1] != "_":
            prev_lower = pascal[i - 1].islower()
            next_lower = i + 1 < len(pascal) and pascal[i + 1].islower()
            if prev_lower or next_lower:
                out.append("_")
        out.append(c.lower())
    return "".join(out)


# Operator groups import as modules (`import godali.fn.transforms as T`, as in DALI).
__path__ = []
_graph.install_namespace_importer(__name__, lambda: _ensure())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    root = _ensure()
    if name in root._members:
        return root._members[name]
    return getattr(root, name)  # raises with the list of operators


def __dir__():
    return sorted(set(globals()) | set(_ensure()._members))
