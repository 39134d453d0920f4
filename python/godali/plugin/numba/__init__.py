"""DALI's nvidia.dali.plugin.numba: numba_function (fn.experimental.numba_function here).

DALI compiles the user's run_fn/setup_fn with numba and calls them on the pipeline's
memory. godali runs them on the python_function operator (godali.fn.python_function with
batch processing): each batch, output shapes come from setup_fn (or equal the inputs'),
outputs are allocated with out_types, and run_fn fills them in place. When the numba
package is installed, run_fn and setup_fn are compiled with numba.njit first (as DALI
does); without it they run as plain Python, with the same results, only slower.
"""

from ._function import numba_function  # noqa: F401

__all__ = ["numba_function"]
