"""DALI's nvidia.dali.plugin.numba.experimental: the NumbaFunction ops class."""

from ._function import numba_function


class NumbaFunction:
    """ops-style NumbaFunction: created with numba_function's arguments, called on inputs."""

    def __init__(self, run_fn, out_types, in_types, outs_ndim, ins_ndim, setup_fn=None,
                 device="cpu", batch_processing=False, **kwargs):
        self._spec = dict(kwargs, run_fn=run_fn, out_types=out_types, in_types=in_types,
                          outs_ndim=outs_ndim, ins_ndim=ins_ndim, setup_fn=setup_fn,
                          device=device, batch_processing=batch_processing)

    def __call__(self, *inputs, **kwargs):
        args = dict(self._spec)
        args.update(kwargs)
        return numba_function(*inputs, **args)


__all__ = ["NumbaFunction"]
