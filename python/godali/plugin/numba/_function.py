"""numba_function on godali's python_function operator (see the package docstring)."""

from ... import types as _types
from ... import _pyfunc


def _jit(f):
    """f compiled with numba.njit when numba is installed, else f itself."""
    if f is None:
        return None
    try:
        import numba
    except ImportError:
        return f
    return numba.njit(f)


def _dtype_list(v, what):
    if not isinstance(v, (list, tuple)):
        v = [v]
    out = []
    for t in v:
        try:
            out.append(_types.to_numpy_dtype(_types.DALIDataType(t)))
        except (TypeError, ValueError, KeyError):
            raise TypeError("godali: numba_function: %s must be types.DALIDataType values, "
                            "got %r" % (what, t)) from None
    return out


def _int_list(v, n, what):
    if not isinstance(v, (list, tuple)):
        v = [v]
    v = [int(x) for x in v]
    if len(v) != n:
        raise ValueError("godali: numba_function: %s must have %d entries (one per %s), "
                         "got %d" % (what, n, what.split("_")[0].rstrip("s") or what, len(v)))
    return v


class _Batch:
    """The per-batch work: shapes from setup_fn, outputs allocated, run_fn called."""

    def __init__(self, run_fn, setup_fn, out_dtypes, in_dtypes, outs_ndim, ins_ndim, batch):
        self.run_fn, self.setup_fn = run_fn, setup_fn
        self.out_dtypes, self.in_dtypes = out_dtypes, in_dtypes
        self.outs_ndim, self.ins_ndim = outs_ndim, ins_ndim
        self.batch = batch

    def _check_inputs(self, ins):
        import numpy as np
        for k, samples in enumerate(ins):
            for i, s in enumerate(samples):
                if s.dtype != self.in_dtypes[k]:
                    raise TypeError("numba_function: input %d sample %d is %s; in_types says "
                                    "%s" % (k, i, s.dtype, np.dtype(self.in_dtypes[k])))
                if s.ndim != self.ins_ndim[k]:
                    raise ValueError("numba_function: input %d sample %d has %d dimensions; "
                                     "ins_ndim says %d" % (k, i, s.ndim, self.ins_ndim[k]))

    def _out_shapes(self, ins, n):
        import numpy as np
        nout = len(self.out_dtypes)
        if self.setup_fn is None:
            if len(ins) == 0:
                raise ValueError("numba_function: without inputs, setup_fn must give the "
                                 "output shapes")
            shapes = []
            for o in range(nout):
                src = ins[o] if o < len(ins) else ins[0]
                shapes.append([s.shape for s in src])
            return shapes
        outs_shapes = [np.zeros((n, self.outs_ndim[o]), dtype=np.int64) for o in range(nout)]
        ins_shapes = [np.array([s.shape for s in samples], dtype=np.int64).reshape(
            n, self.ins_ndim[k]) for k, samples in enumerate(ins)]
        self.setup_fn(outs_shapes, ins_shapes)
        # DALI's default: an output shape setup_fn leaves at zero... is what it wrote.
        return [[tuple(int(d) for d in row) for row in outs_shapes[o]] for o in range(nout)]

    def __call__(self, *ins):
        import numpy as np
        ins = [list(x) for x in ins]
        n = len(ins[0]) if ins else 0
        self._check_inputs(ins)
        shapes = self._out_shapes(ins, n)
        outs = [[np.zeros(shapes[o][i], dtype=self.out_dtypes[o]) for i in range(n)]
                for o in range(len(self.out_dtypes))]
        if self.batch:
            self.run_fn(*outs, *ins)
        else:
            for i in range(n):
                self.run_fn(*[o[i] for o in outs], *[x[i] for x in ins])
        if len(outs) == 1:
            return outs[0]
        return tuple(outs)


def numba_function(*inputs, run_fn=None, out_types=None, in_types=None, outs_ndim=None,
                   ins_ndim=None, setup_fn=None, device="cpu", batch_processing=False,
                   blocks=None, threads_per_block=None, name=None, **kwargs):
    """DALI's numba_function: run_fn(out0, ..., in0, ...) fills preallocated outputs.

    out_types / in_types: types.DALIDataType per output / input; outs_ndim / ins_ndim:
    their numbers of dimensions. setup_fn(outs_shapes, ins_shapes), when given, writes each
    output sample's shape (outs_shapes[o][i]) from the inputs' (ins_shapes[k][i]); without
    it every output has its input's shape. batch_processing=False (default): run_fn is
    called per sample with arrays; True: once per batch with a list of arrays per output
    and input. Host only (device='cpu'); blocks / threads_per_block are DALI's GPU launch
    settings and must stay unset."""
    kwargs.pop("bytes_per_sample_hint", None)
    kwargs.pop("seed", None)
    if kwargs:
        raise TypeError("godali: numba_function got unknown arguments: %s"
                        % ", ".join(sorted(kwargs)))
    if run_fn is None or not callable(run_fn):
        raise TypeError("godali: numba_function: run_fn must be a function, got %r" % (run_fn,))
    if setup_fn is not None and not callable(setup_fn):
        raise TypeError("godali: numba_function: setup_fn must be a function, got %r"
                        % (setup_fn,))
    if device not in (None, "cpu") or blocks is not None or threads_per_block is not None:
        raise ValueError("godali: numba_function runs on the host only (device='cpu', no "
                         "blocks/threads_per_block)")
    if out_types is None or in_types is None or outs_ndim is None or ins_ndim is None:
        raise TypeError("godali: numba_function needs out_types, in_types, outs_ndim and "
                        "ins_ndim")
    out_dtypes = _dtype_list(out_types, "out_types")
    in_dtypes = _dtype_list(in_types, "in_types")
    if len(in_dtypes) != len(inputs):
        raise ValueError("godali: numba_function: in_types has %d entries for %d inputs"
                         % (len(in_dtypes), len(inputs)))
    outs_ndim = _int_list(outs_ndim, len(out_dtypes), "outs_ndim")
    ins_ndim = _int_list(ins_ndim, len(in_dtypes), "ins_ndim")
    work = _Batch(_jit(run_fn), _jit(setup_fn), out_dtypes, in_dtypes, outs_ndim, ins_ndim,
                  bool(batch_processing))
    return _pyfunc.python_function(*inputs, function=work, num_outputs=len(out_dtypes),
                                   batch_processing=True, name=name)
