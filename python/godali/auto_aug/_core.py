"""The pieces godali.auto_aug policies are built from: augmentations and Policy.

DALI's nvidia.dali.auto_aug.core, on godali's engine: an augmentation names a kernel of
the engine's `_auto_aug` operator together with its magnitude range, whether the
magnitude is randomly negated, and how a magnitude maps to the kernel's parameter. The
per-sample random choices (which sub-policy, which stages run, signs, bins) are drawn
inside the operator from the pipeline's random stream, with the distributions DALI's
conditionals give.
"""

import json
import warnings

import numpy as np

from .. import _graph
from .. import types as _types

# Parameter mappings the engine implements, by DALI's function names.
_PARAMS = {None: "", "shift_enhance_range": "shift_enhance",
           "sharpness_kernel": "", "sharpness_kernel_shifted": "sharpness_shifted",
           "poster_mask_uint8": "poster_mask", "warp_x_param": "", "warp_y_param": "",
           "solarize_add_shift": ""}


_KEEP = object()


class _Op:
    """What an augmentation does (DALI's Augmentation.op): one per augmentation of the
    suite, shared by the copies `.augmentation(...)` makes (translate_x and
    translate_x_no_shape are different operations)."""

    def __init__(self, name):
        self.__name__ = name

    def __repr__(self):
        return "<auto_aug operation %s>" % self.__name__


class _Augmentation:
    """One augmentation: a kernel of the engine with its magnitude range."""

    def __init__(self, name, kernel, mag_range=None, randomly_negate=False, mag_to_param=None,
                 rel=False, op=None):
        self.name = name
        self.kernel = kernel
        self.mag_range = tuple(mag_range) if mag_range is not None else None
        self.randomly_negate = bool(randomly_negate)
        self.mag_to_param = mag_to_param
        self.rel = rel
        self.op = op if op is not None else _Op(name)

    def augmentation(self, mag_range=_KEEP, randomly_negate=_KEEP, mag_to_param=_KEEP,
                     param_device=_KEEP, name=_KEEP, augmentation_cls=None):
        """A copy with the settings given replaced, the others kept (DALI's
        Augmentation.augmentation): an explicit None removes the magnitude range or the
        mapping. param_device is accepted for DALI's signature (the engine's operator
        keeps the parameters with the data)."""
        def pick(v, cur):
            return cur if v is _KEEP else v
        return _Augmentation(pick(name, self.name), self.kernel,
                             pick(mag_range, self.mag_range),
                             pick(randomly_negate, self.randomly_negate),
                             pick(mag_to_param, self.mag_to_param), self.rel, self.op)

    def _get_magnitudes(self, num_magnitude_bins):
        """The magnitude of each bin (DALI's: float32 linspace over mag_range), None
        for an augmentation without magnitudes."""
        if self.mag_range is None:
            return None
        lo, hi = self.mag_range
        return np.linspace(lo, hi, num_magnitude_bins, dtype=np.float32)

    def _map_mag_to_param(self, magnitude):
        """The parameter of one magnitude: mag_to_param's, or the magnitude itself."""
        if self.mag_to_param is None:
            return np.array(magnitude)
        return np.array(self.mag_to_param(magnitude))

    def _map_mags_to_params(self, magnitudes):
        return np.array([self._map_mag_to_param(m) for m in magnitudes])

    def _param_name(self):
        key = getattr(self.mag_to_param, "__name__", self.mag_to_param)
        if key not in _PARAMS:
            raise ValueError(
                "godali.auto_aug: augmentation %r: mag_to_param %r is not supported (godali "
                "runs the augmentations in its engine; supported: %s)"
                % (self.name, key, ", ".join(k for k in _PARAMS if k)))
        if self.kernel == "sharpness" and key is None:
            # DALI's sharpness without a mapping takes the kernel's magnitude as is.
            return ""
        return _PARAMS[key]

    def _spec(self):
        lo, hi = self.mag_range if self.mag_range is not None else (0.0, 0.0)
        return {"name": self.kernel, "lo": float(lo), "hi": float(hi),
                "negate": self.randomly_negate, "param": self._param_name(), "rel": self.rel}

    def __call__(self, sample, magnitude_bin=None, num_magnitude_bins=None, **kwargs):
        """Applies the augmentation to every sample at magnitude bin `magnitude_bin` (an
        int, or a DataNode with one bin per sample) of `num_magnitude_bins` (the sign is
        drawn per sample when randomly_negate is set)."""
        kwargs = {k: v for k, v in kwargs.items() if k in _ENGINE_KWARGS}
        if self.kernel == "identity":
            return sample
        if hasattr(magnitude_bin, "random_sign"):  # signed_bin: the engine draws the sign
            magnitude_bin = magnitude_bin.bin
        if self.mag_range is None:
            magnitude_bin, num_magnitude_bins = None, None
        elif magnitude_bin is None or num_magnitude_bins is None:
            raise ValueError("godali.auto_aug: %s needs magnitude_bin and num_magnitude_bins"
                             % self.name)
        policy = {"scheme": "rand", "bins": int(num_magnitude_bins or 1),
                  "augs": [self._spec()], "n": 1, "m": 0}
        if isinstance(magnitude_bin, _graph.DataNode):
            kwargs["magnitude_bin"] = magnitude_bin
        else:
            policy["m"] = int(magnitude_bin or 0)
        return _apply(policy, sample, **kwargs)

    def _accepted_kwargs(self):
        return sorted(_ENGINE_KWARGS)

    def __repr__(self):
        return "Augmentation(name=%r, mag_range=%r, randomly_negate=%r)" % (
            self.name, self.mag_range, self.randomly_negate)


# The keyword arguments the engine's augmentations take from a policy call.
_ENGINE_KWARGS = frozenset(("fill_value", "interp_type", "shape"))


def _is_augmentation(aug):
    from ._decorator import Augmentation
    return isinstance(aug, (_Augmentation, Augmentation))


def _on_engine(augs):
    """Whether the engine's _auto_aug operator runs all of augs (the suites'
    augmentations) rather than conditionals and select (Python ones)."""
    return all(isinstance(aug, _Augmentation) for aug in augs)


def _missing_shape(augs, kwargs, call_name, ref_suite_name):
    """DALI's error for a relative translation called without `shape`."""
    if kwargs.get("shape") is not None:
        return
    for aug in augs:
        if isinstance(aug, _Augmentation) and aug.rel:
            raise Exception(
                "The augmentation `%s` requires `shape` argument that describes image shape "
                "(in HWC layout). Please provide it as `shape` argument to `%s` call. You can "
                "get the image shape from encoded images with `fn.peek_image_shape`. "
                "Alternatively, you can use `translate_x_no_shape`/`translate_y_no_shape` "
                "that does not rely on image shape, but uses offset from fixed range: for "
                "reference see `%s` and its `use_shape` argument. "
                % (aug.name, call_name, ref_suite_name))


class Policy:
    """AutoAugment policy: sub-policies, each a list of (augmentation, probability,
    magnitude bin or None)."""

    def __init__(self, name, num_magnitude_bins, sub_policies):
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
            raise Exception("The `num_magnitude_bins` must be a positive integer, got %s."
                            % (num_magnitude_bins,))
        if not isinstance(sub_policies, (list, tuple)):
            raise Exception("The `sub_policies` must be a list or tuple of sub policies, "
                            "got %s." % (type(sub_policies),))
        for sp in sub_policies:
            if not isinstance(sp, (list, tuple)):
                raise Exception("Each sub policy must be a list or tuple, got %s." % (sp,))
            for stage in sp:
                if not isinstance(stage, (list, tuple)) or len(stage) != 3:
                    raise Exception("Each operation in sub policy must be specified as a "
                                    "triple: (augmentation, probability, magnitude). Got %s."
                                    % (stage,))
                aug, prob, mbin = stage
                if not _is_augmentation(aug):
                    raise Exception("Each augmentation in sub policies must be an instance of "
                                    "Augmentation. Got `%s`. Did you forget to use "
                                    "`@augmentation` decorator?" % (aug,))
                if isinstance(prob, bool) or not isinstance(prob, (float, int)) or \
                        not 0 <= prob <= 1:
                    raise Exception("Probability of applying the augmentation must be a "
                                    "number from `[0, 1]` range. Got `%s` for augmentation "
                                    "`%s`." % (prob, aug.name))
                if prob == 0:
                    warnings.warn("The augmentation `%s` in policy `%s` is used with "
                                  "probability 0 in one of the sub-policies." % (aug.name, name))
                if mbin is None:
                    if aug.mag_range is not None:
                        raise Exception("The augmentation `%s` has `mag_range` specified, so "
                                        "the magnitude bin is required. However, got `None` in "
                                        "the policy `%s`." % (aug.name, name))
                    continue
                if aug.mag_range is None:
                    warnings.warn("The magnitude bin `%s` for augmentation `%s` in policy `%s` "
                                  "will be ignored. The augmentation does not accept "
                                  "magnitudes (as it has no `mag_range` specified). You can "
                                  "specify `None` instead of `%s` to silence this warning."
                                  % (mbin, aug.name, name, mbin))
                if not isinstance(mbin, int) or not 0 <= mbin < num_magnitude_bins:
                    raise Exception("Magnitude of the augmentation must be an integer from "
                                    "`[0, %d]` range. Got `%s` for augmentation `%s`."
                                    % (num_magnitude_bins - 1, mbin, aug.name))
        self.sub_policies = _unique_names(sub_policies)

    @property
    def augmentations(self):
        """The augmentations of the sub-policies by name (DALI's)."""
        augs = {id(aug): aug for sp in self.sub_policies for aug, _, _ in sp}
        return {aug.name: aug for aug in sorted(augs.values(), key=lambda aug: aug.name)}

    def _spec(self):
        augs, index = [], {}
        for sp in self.sub_policies:
            for aug, _, _ in sp:
                if id(aug) not in index:
                    index[id(aug)] = len(augs)
                    augs.append(aug._spec())
        subs = [[[index[id(a)], p, -1 if b is None else b] for a, p, b in sp]
                for sp in self.sub_policies]
        return {"scheme": "auto", "bins": self.num_magnitude_bins, "augs": augs,
                "sub_policies": subs}

    def __repr__(self):
        subs = ",\n\t".join(repr([(aug.name, p, mbin) for aug, p, mbin in sp])
                             for sp in self.sub_policies)
        augs = ",\n\t".join("'%s': %r" % (n, aug) for n, aug in self.augmentations.items())
        return "Policy(name=%r, num_magnitude_bins=%r, sub_policies=[%s%s], augmentations={%s%s})" % (
            self.name, self.num_magnitude_bins, "\n\t" if subs else "", subs,
            "\n\t" if augs else "", augs)


def _unique_names(sub_policies):
    """The sub-policies as tuples, the augmentations renamed `<i>__<name>` (in order of
    first use) when two different ones share a name (DALI's presentation)."""
    order = {}
    for sp in sub_policies:
        for aug, _, _ in sp:
            order.setdefault(id(aug), aug)
    if len({aug.name for aug in order.values()}) == len(order):
        return tuple(tuple(sp) for sp in sub_policies)
    digits = len(str(len(order) - 1))
    renamed = {k: aug.augmentation(name="%s__%s" % (str(i).zfill(digits), aug.name))
               for i, (k, aug) in enumerate(order.items())}
    return tuple(tuple((renamed[id(aug)], p, mbin) for aug, p, mbin in sp)
                 for sp in sub_policies)


def _sub_policy_to_augmentation_matrix_map(policy):
    """(m, augments): augments[stage] lists the different augmentations the sub-policies
    use at that stage, then identity; m[sub_policy, stage] indexes it (identity past a
    sub-policy's end), as DALI's function of the same name."""
    from . import augmentations as a
    subs = policy.sub_policies
    depth = max(len(sp) for sp in subs)
    augments = []
    for stage in range(depth):
        seen = {}
        for sp in subs:
            if stage < len(sp):
                seen.setdefault(id(sp[stage][0]), sp[stage][0])
        augments.append(list(seen.values()) + [a.identity])
    m = np.array([[len(augments[st]) - 1 for st in range(depth)] for _ in subs], dtype=np.int32)
    for i, sp in enumerate(subs):
        for stage, (aug, _, _) in enumerate(sp):
            m[i, stage] = next(k for k, x in enumerate(augments[stage]) if x is aug)
    return m, augments


_INTERP = {"INTERP_LINEAR": "LINEAR", "INTERP_NN": "NN"}


def _apply(policy, sample, seed=None, fill_value=128, interp_type=None, shape=None,
           magnitude_bin=None):
    """Adds the engine's _auto_aug node. `shape` is accepted for DALI's signature: the
    engine knows each sample's shape, so a relative translation needs no shape input.
    magnitude_bin (per-sample DataNode) replaces a rand policy's m."""
    kwargs = {"policy": json.dumps(policy)}
    if magnitude_bin is not None:
        kwargs["magnitude_bin"] = magnitude_bin
    if fill_value is not None:
        kwargs["fill_value"] = float(fill_value)
    if interp_type is not None:
        kwargs["interp_type"] = interp_type
    if seed is not None:
        if not isinstance(seed, int) or seed < 0:
            raise ValueError("godali.auto_aug: seed must be a non-negative integer, got %r"
                             % (seed,))
        kwargs["seed"] = seed
    op = _graph.make_op_function(_graph.schemas().ops["_auto_aug"])
    return op(sample, **kwargs)


def _translations(use_shape, default_abs, default_rel, max_abs, max_rel, translate_x,
                  translate_y):
    """DALI's translate_x / translate_y with the magnitude range of a suite: relative to
    the image's width/height when a shape is given, else absolute pixels."""
    if use_shape:
        if max_abs is not None:
            raise Exception("The argument `max_translate_abs` cannot be used with image "
                            "shapes. You may use `max_translate_rel` instead.")
        lim = default_rel if max_rel is None else max_rel
    else:
        if max_rel is not None:
            raise Exception("The argument `max_translate_rel` cannot be used without image "
                            "shapes. You may use `max_translate_abs` instead.")
        lim = default_abs if max_abs is None else max_abs
    lim_h, lim_w = (lim, lim) if not isinstance(lim, (tuple, list)) else lim
    tx = translate_x.augmentation(mag_range=(0, lim_w), randomly_negate=True)
    ty = translate_y.augmentation(mag_range=(0, lim_h), randomly_negate=True)
    tx.rel = ty.rel = use_shape
    return [tx, ty]


from ._decorator import augmentation, signed_bin  # noqa: E402,F401

__all__ = ["augmentation", "Policy", "signed_bin"]
_ = _types
