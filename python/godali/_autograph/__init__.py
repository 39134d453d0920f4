"""DALI's nvidia.dali._autograph names that user code and DALI's tests use.

DALI converts a pipeline function with conditionals enabled (and what it calls) with its
fork of AutoGraph; godali rewrites the pipeline function's own source instead
(godali._conditionals). The functions that rewrite produces, and every function whose
code is defined inside it, are godali's "autograph artifacts"; is_autograph_artifact
answers for them as DALI answers for its converted functions. Functions the pipeline
function calls are not rewritten by godali (DALI converts those too).
"""

from .._conditionals import is_converted as _is_converted
from ..pipeline import do_not_convert  # noqa: F401  (DALI exports it from here as well)

__all__ = ["AutoGraphError", "autograph_artifact", "do_not_convert", "is_autograph_artifact"]


class AutoGraphError(Exception):
    """An error of the conditional rewrite (DALI's AutoGraphError)."""


def autograph_artifact(entity):
    """Marks entity as produced by the conversion (DALI's helper); returns it."""
    try:
        setattr(entity, "autograph_info__", True)
    except (AttributeError, TypeError):
        pass
    return entity


def is_autograph_artifact(entity):
    """Whether entity is a function godali's conditional rewrite produced (or one defined
    inside such a function), or was marked with autograph_artifact."""
    if getattr(entity, "autograph_info__", False):
        return True
    return _is_converted(entity)
