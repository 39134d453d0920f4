"""DALI's @augmentation for Python functions (nvidia.dali.auto_aug.core.augmentation).

A decorated function `op(sample, param, **extra)` is composed of fn operators; calling
the augmentation with `magnitude_bin` (an int or a per-sample DataNode) and
`num_magnitude_bins` gives `op` the parameter of that bin: the magnitude range is split
into `num_magnitude_bins` values (or given explicitly as an array), optionally mapped by
`mag_to_param`, and, with `randomly_negate`, negated for the bins that `signed_bin` marks
(or for random samples when the bin carries no sign). The parameters of all bins form a
constant table indexed per sample.
"""

import inspect
import warnings

import numpy as np

from .. import types as _types

_UNSET = object()
_DEFAULTS = {"mag_range": None, "randomly_negate": False, "mag_to_param": None,
             "param_device": "cpu"}


class _SignedBin:
    """A magnitude bin with a sign (signed_bin): `random_sign` 1 negates the magnitude."""

    def __init__(self, magnitude_bin, random_sign=None, seed=None, shape=None):
        if isinstance(magnitude_bin, _SignedBin):
            magnitude_bin, random_sign = magnitude_bin.bin, magnitude_bin.random_sign
        self.bin = magnitude_bin
        if random_sign is None:
            from .. import fn
            kw = {"shape": shape} if shape else {}
            if seed is not None:
                kw["seed"] = seed
            random_sign = fn.random.coin_flip(probability=0.5, dtype=_types.INT32, **kw)
        self.random_sign = random_sign

    def __getitem__(self, idx):
        """The signed bin of one step of a sequence whose bins and signs were drawn at
        once (DALI's _SignedMagnitudeBin indexing)."""
        b = self.bin if isinstance(self.bin, (int, np.integer)) else self.bin[idx]
        return _SignedBin(b, self.random_sign[idx])


def signed_bin(magnitude_bin, random_sign=None, seed=None, shape=None):
    """DALI's signed_bin: marks `magnitude_bin` with a sign (0: as is, 1: negated; drawn
    at random, with `seed`, when not given) for augmentations declared with
    randomly_negate=True."""
    return _SignedBin(magnitude_bin, random_sign, seed, shape)


def _positional(fun):
    params = inspect.signature(fun).parameters.values()
    return [p for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class Augmentation:
    """A Python augmentation: `op(sample, param, **extra)` with its magnitude setup."""

    def __init__(self, op, mag_range=None, randomly_negate=False, mag_to_param=None,
                 param_device="cpu", name=None):
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = bool(randomly_negate)
        self._mag_to_param = mag_to_param
        self._param_device = param_device or "cpu"
        self._name = name or op.__name__

    op = property(lambda self: self._op)
    mag_range = property(lambda self: self._mag_range)
    randomly_negate = property(lambda self: self._randomly_negate)
    mag_to_param = property(lambda self: self._mag_to_param)
    param_device = property(lambda self: self._param_device)
    name = property(lambda self: self._name)

    def augmentation(self, mag_range=_UNSET, randomly_negate=_UNSET, mag_to_param=_UNSET,
                     param_device=_UNSET, name=_UNSET, augmentation_cls=None):
        """A copy with some settings replaced; a setting given as None is reset to its
        default (DALI's Augmentation.augmentation)."""
        cur = {"mag_range": self._mag_range, "randomly_negate": self._randomly_negate,
               "mag_to_param": self._mag_to_param, "param_device": self._param_device,
               "name": self._name}
        new = {"mag_range": mag_range, "randomly_negate": randomly_negate,
               "mag_to_param": mag_to_param, "param_device": param_device, "name": name}
        for k, v in new.items():
            if v is _UNSET:
                new[k] = cur[k]
            elif v is None:
                new[k] = _DEFAULTS.get(k, self._op.__name__)
        cls = augmentation_cls or type(self)
        return cls(self._op, **new)

    def _extra_params(self):
        return list(inspect.signature(self._op).parameters.values())[2:]

    def _required_kwargs(self):
        return [p.name for p in self._extra_params() if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def _accepted_kwargs(self):
        return [p.name for p in self._extra_params()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def _get_magnitudes(self, num_magnitude_bins):
        """The magnitude of each bin (DALI's): the explicit array given as mag_range, or
        float32 linspace over the (lo, hi) range; None without a mag_range."""
        mr = self._mag_range
        if mr is None:
            return None
        if isinstance(mr, tuple):
            if num_magnitude_bins is None:
                raise Exception("The augmentation `%s` has `mag_range` given as a (lo, hi) "
                                "range: `num_magnitude_bins` must be passed to the call"
                                % self._name)
            lo, hi = mr
            return np.linspace(lo, hi, num_magnitude_bins, dtype=np.float32)
        return np.asarray(mr)

    _magnitudes = _get_magnitudes

    def _map_mag_to_param(self, magnitude):
        """The parameter of one magnitude: mag_to_param's result (or the magnitude) as an
        array."""
        return self._param_table([magnitude])[0]

    def _map_mags_to_params(self, magnitudes):
        return self._param_table(magnitudes)

    def _param_table(self, magnitudes):
        to_param = self._mag_to_param if self._mag_to_param is not None else np.array
        table = []
        for mag in magnitudes:
            p = to_param(mag)
            try:
                arr = np.asarray(p)
            except Exception:
                arr = np.asarray(None)
            if arr.dtype == object:
                raise Exception(
                    "The `mag_to_param` callback must return parameter that is `np.ndarray` "
                    "or a number (or a list of numbers) (it is called once per magnitude bin, before the pipeline "
                    "runs); the augmentation `%s` got %s" % (self._name, type(p).__name__))
            table.append(arr)
        ref = table[0]
        for mag, p in zip(magnitudes, table):
            if p.shape != ref.shape or p.dtype != ref.dtype:
                raise Exception(
                    "The `mag_to_param` of `%s` augmentation must return the arrays of "
                    "the same type and shape for every magnitude: for magnitude %r it "
                    "returned an array of shape %s and type %s, for magnitude %r it has "
                    "shape %s and type %s." % (self._name, magnitudes[0], ref.shape,
                                               ref.dtype, mag, p.shape, p.dtype))
        return np.stack(table)

    def __call__(self, data, *, magnitude_bin=None, num_magnitude_bins=None, **kwargs):
        missing = [k for k in self._required_kwargs() if k not in kwargs]
        if missing:
            raise Exception("The augmentation `%s` requires the following arguments that "
                            "were not provided to the call: %s"
                            % (self._name, ", ".join(missing)))
        accepted = set(self._accepted_kwargs())
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        if self._mag_range is None:
            return self._op(data, None, **kwargs)
        if magnitude_bin is None:
            raise Exception("The augmentation `%s` has a magnitude range: pass "
                            "`magnitude_bin` to the call" % self._name)
        sign = None
        if isinstance(magnitude_bin, _SignedBin):
            magnitude_bin, sign = magnitude_bin.bin, magnitude_bin.random_sign
        if self._randomly_negate and sign is None:
            warnings.warn(
                "The augmentation `%s` was declared with `randomly_negate=True`, but unsigned "
                "`magnitude_bin` was passed to the augmentation call; the magnitude will be "
                "randomly negated. Use `signed_bin` to control the sign." % self._name,
                Warning)
            sign = _SignedBin(magnitude_bin).random_sign
        magnitudes = self._magnitudes(num_magnitude_bins)
        table = self._param_table(magnitudes)
        nbins = len(magnitudes)
        idx = magnitude_bin
        if self._randomly_negate:
            table = np.concatenate([table, self._param_table(-magnitudes)])
            idx = magnitude_bin + sign * nbins
        if isinstance(idx, (int, np.integer)):
            param = _types.Constant(table[int(idx)])
        else:
            param = _types.Constant(table)[idx]
        if self._param_device == "gpu":
            param = param.gpu()
        return self._op(data, param, **kwargs)

    def __repr__(self):
        return "Augmentation(name=%r, mag_range=%r, randomly_negate=%r)" % (
            self._name, self._mag_range, self._randomly_negate)


def augmentation(function=None, *, mag_range=None, randomly_negate=None, mag_to_param=None,
                 param_device=None, name=None, augmentation_cls=None):
    """DALI's decorator: makes an Augmentation of a function `op(sample, param, ...)`
    composed of fn operators (see the module's doc)."""
    from ._core import _Augmentation
    if isinstance(function, (Augmentation, _Augmentation)):
        raise Exception("The `@augmentation` was applied to already decorated Augmentation.")

    def decorate(fun):
        n = len(_positional(fun))
        if n < 2:
            raise Exception(
                "The function `%s` accepts %d positional argument(s), but the functions "
                "decorated with `@augmentation` must accept at least two positional "
                "arguments: the samples and the parameter" % (fun.__name__, n))
        cls = augmentation_cls or Augmentation
        return cls(fun, mag_range=mag_range, randomly_negate=bool(randomly_negate),
                   mag_to_param=mag_to_param, param_device=param_device or "cpu",
                   name=name)

    if function is None:
        return decorate
    return decorate(function)

