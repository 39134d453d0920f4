"""godali.torch: the PyTorch user's way in, with the names torch users type.

    from godali.torch import DataLoader, ImageFolder, DistributedSampler
    import torchvision.transforms as T

    ds = ImageFolder(root, transform=T.Compose([T.RandomResizedCrop(224),
                                                T.RandomHorizontalFlip(), T.ToTensor(),
                                                T.Normalize(mean, std)]))
    loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=8, drop_last=True)

The torchvision transform is not run in Python: it is translated, parameter by parameter,
into a godali pipeline (readers.file, decoders, resize, crop, flip, color operators,
crop_mirror_normalize) that runs on the engine's threads and yields the batches that
DataLoader's default collate would: images [N, C, H, W] (float32 after ToTensor, uint8
after PILToTensor) and int64 labels [N]. `torchvision.datasets.ImageFolder` objects are
accepted as well as godali.torch.ImageFolder. What cannot be translated exactly is refused
with an error naming it (see SUPPORTED_TRANSFORMS and docs/pytorch.md); approximate=True
on ImageFolder accepts the documented approximations instead.

Loaders and their iterators follow torchdata's StatefulDataLoader protocol:
state_dict() / load_state_dict() resume mid-epoch with exactly the remaining batches,
built on the engine's checkpoints (docs/pipeline.md#checkpoints).
"""

# This module is godali.torch; `import torch` below is the real PyTorch (absolute imports).
import enum
import json as _json
import logging
import math
import os
import types as types_mod
import warnings
import weakref

import torch as _torch

from . import fn as _fn
from . import types as _types
from ._lib import DataError as _DataError
from ._lib import GodaliError as _GodaliError
from .pipeline import Pipeline as _Pipeline
from .plugin.pytorch import _find_classes

__all__ = ["DataLoader", "ImageFolder", "DistributedSampler", "datasets", "install",
           "uninstall", "SUPPORTED_TRANSFORMS", "UnsupportedTransformError",
           "UnsupportedDatasetError", "UnsupportedArgumentError"]

# torchvision's IMG_EXTENSIONS (torchvision.datasets.folder).
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

SUPPORTED_TRANSFORMS = (
    "Compose", "RandomResizedCrop", "Resize", "CenterCrop", "RandomCrop",
    "RandomHorizontalFlip", "RandomVerticalFlip", "ToTensor", "PILToTensor",
    "ConvertImageDtype", "Normalize", "ColorJitter", "RandomRotation", "GaussianBlur",
    "RandomGrayscale", "Grayscale(num_output_channels=3)", "AutoAugment", "RandAugment",
    "TrivialAugmentWide", "RandomErasing (last)",
    "presets whose __call__ is only `return self.transforms(img)`",
    "weights.transforms() (ImageClassification)",
    "transforms.v2: Compose, RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip, "
    "RandomVerticalFlip, PILToTensor, ToImage, ToDtype, Normalize, RandomErasing, ToPureTensor",
)


# The one difference from torchvision's pixels that godali.torch serves by default (the
# log line of install() names it, docs/pytorch.md#transforms gives the measurement;
# exact=True removes it).
RANDOM_CROP_DCT_NOTE = (
    "RandomResizedCrop decodes JPEG windows at least twice the output size scaled down in "
    "the DCT domain (faster; such crops differ from torchvision's by about 2 levels on "
    "average, single pixels by up to 63 on the test photographs; exact=True gives "
    "torchvision's pixels)")


class UnsupportedTransformError(ValueError):
    """A torchvision transform (or one of its parameters) that godali cannot run
    with torchvision's exact semantics."""


class UnsupportedDatasetError(TypeError):
    """A dataset godali.torch.DataLoader cannot read itself (under install(), torch's
    DataLoader takes it)."""


class UnsupportedArgumentError(ValueError):
    """A DataLoader argument godali cannot honour with torch's semantics (batch_sampler,
    worker_init_fn, an unknown sampler, batch_size=None)."""


def _internal_op(name):
    """An engine operator that the fn namespace hides (names starting with "_")."""
    from . import _graph
    return _graph.make_op_function(_graph.schemas().ops[name])


def _unsupported(what, why=None):
    msg = "godali.torch: %s is not supported" % what
    if why:
        msg += ": " + why
    msg += ". Supported transforms: %s" % ", ".join(SUPPORTED_TRANSFORMS)
    return UnsupportedTransformError(msg)


def _inexact(what, why):
    return UnsupportedTransformError(
        "godali.torch: %s cannot be translated exactly: %s. Pass approximate=True to "
        "ImageFolder to accept the approximation, or remove it" % (what, why))


# --- datasets ------------------------------------------------------------------------


def _make_samples(root, class_to_idx, is_valid_file):
    """torchvision's make_dataset: sorted walk of every class folder."""
    if is_valid_file is None:
        def is_valid_file(p):
            return p.lower().endswith(IMG_EXTENSIONS)
    samples = []
    empty = []
    for cls in sorted(class_to_idx):
        d = os.path.join(root, cls)
        n0 = len(samples)
        for dp, _, fnames in sorted(os.walk(d, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(dp, fname)
                if is_valid_file(path):
                    samples.append((path, class_to_idx[cls]))
        if len(samples) == n0:
            empty.append(cls)
    if empty:
        raise FileNotFoundError("godali.torch: found no valid file for the classes %s in %s "
                                "(supported extensions: %s)"
                                % (", ".join(empty), root, ", ".join(IMG_EXTENSIONS)))
    return samples


class ImageFolder:
    """torchvision.datasets.ImageFolder(root, transform, target_transform, loader,
    is_valid_file), run by godali when given to godali.torch.DataLoader.

    classes, class_to_idx, samples, targets and imgs are torchvision's. Indexing
    (dataset[i]) runs the transform in Python on the PIL image, as torchvision does (the
    reference the translated pipeline is tested against). loader= must be None (PIL's
    RGB decoding, which godali's decoders reproduce); is_valid_file is honoured.
    approximate=True (godali only) accepts transforms godali can only approximate
    (RandomCrop(pad_if_needed=True) on images of varying size, RandomRotation(expand=True));
    see docs/pytorch.md.
    """

    def __init__(self, root, transform=None, target_transform=None, loader=None,
                 is_valid_file=None, *, approximate=False):
        if loader is not None:
            raise ValueError("godali.torch.ImageFolder: loader= is not supported: godali "
                             "decodes the files itself (as PIL's RGB loader does); leave "
                             "loader=None")
        self.root = os.fspath(root)
        self.transform = transform
        self.target_transform = target_transform
        self.is_valid_file = is_valid_file
        self.approximate = bool(approximate)
        self.classes, self.class_to_idx = _find_classes(self.root)
        self.samples = _make_samples(self.root, self.class_to_idx, is_valid_file)
        self.targets = [s[1] for s in self.samples]
        self.imgs = self.samples
        self.loader = _pil_rgb_loader

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        img = self.loader(path)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        return "godali.torch.ImageFolder(root=%r, %d samples, %d classes)" % (
            self.root, len(self.samples), len(self.classes))


def _pil_rgb_loader(path):
    from PIL import Image
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


class _Datasets:
    """godali.torch.datasets.ImageFolder, as torchvision.datasets.ImageFolder."""
    ImageFolder = ImageFolder


datasets = _Datasets()


class DistributedSampler:
    """torch.utils.data.distributed.DistributedSampler(dataset, num_replicas, rank,
    shuffle, seed, drop_last) for godali.torch.DataLoader (torch's own class is accepted
    too). num_replicas and rank default to torch.distributed's world size and rank.

    Iterating it gives the indices torch's DistributedSampler gives (the same shuffle,
    torch.randperm seeded with seed + epoch, the same padding and round-robin dealing),
    and the loader reads exactly those samples in that order: per epoch every rank gets
    ceil(n / num_replicas) samples (floor with drop_last), and set_epoch(e) selects
    epoch e's order.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            dist = _torch.distributed
            if not (dist.is_available() and dist.is_initialized()):
                raise RuntimeError("godali.torch.DistributedSampler: num_replicas and rank "
                                   "are needed when torch.distributed is not initialised")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        num_replicas, rank = int(num_replicas), int(rank)
        if num_replicas <= 0 or not 0 <= rank < num_replicas:
            raise ValueError("godali.torch.DistributedSampler: invalid rank %d, rank should "
                             "be in the interval [0, %d]" % (rank, num_replicas - 1))
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        """This rank's indices for the current epoch, as torch's DistributedSampler
        deals them (the loader reads exactly these samples, in this order)."""
        n = len(self.dataset)
        if self.shuffle:
            g = _torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            order = _torch.randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        else:
            pad = self.total_size - n
            while pad > 0:  # repeat from the start (several times over if need be)
                order += order[:pad]
                pad = self.total_size - len(order)
        return iter(order[self.rank:self.total_size:self.num_replicas])


# --- transforms ------------------------------------------------------------------------


def _interp(mode, what):
    name = getattr(mode, "value", mode)
    if isinstance(name, int):  # PIL's constants, still accepted by torchvision 0.14
        name = {0: "nearest", 2: "bilinear", 3: "bicubic", 1: "lanczos"}.get(name, str(name))
    name = str(name).lower()
    table = {"nearest": _types.INTERP_NN, "bilinear": _types.INTERP_LINEAR,
             "bicubic": _types.INTERP_CUBIC, "lanczos": _types.INTERP_LANCZOS3}
    if name not in table:
        raise _unsupported("%s(interpolation=%s)" % (what, name),
                           "godali's filters are NEAREST, BILINEAR, BICUBIC and LANCZOS")
    return table[name]


def _pair(v, what):
    """torchvision's size convention: int -> (v, v); (h, w) sequence."""
    if isinstance(v, (int, float)):
        return int(v), int(v)
    v = list(v)
    if len(v) == 1:
        return int(v[0]), int(v[0])
    if len(v) != 2:
        raise ValueError("godali.torch: %s: size must be an int or (h, w), got %r" % (what, v))
    return int(v[0]), int(v[1])


def _one_fill(fill, what):
    if isinstance(fill, dict):
        # transforms.v2 keeps the fill per input type ({type: fill}, a defaultdict when
        # one value was given): the PIL image's.
        from PIL import Image
        try:
            fill = fill[Image.Image]
        except KeyError:
            raise _unsupported("%s(fill=%r)" % (what, fill),
                               "no fill for PIL images") from None
    if fill is None:
        return 0.0
    if isinstance(fill, (int, float)):
        return float(fill)
    if isinstance(fill, dict):  # transforms.v2: a fill per input type
        raise _unsupported("%s(fill=%r)" % (what, fill), "one fill value for every input")
    vals = [float(f) for f in fill]
    if len(set(vals)) != 1:
        raise _unsupported("%s(fill=%r)" % (what, fill),
                           "godali pads with one value for every channel")
    return vals[0]


# torchvision's augmentation spaces (transforms/autoaugment.py) as _auto_aug augmentations,
# in torchvision's order (RandAugment and TrivialAugmentWide draw an index into it):
# magnitude linspace(lo, hi, bins), randomly negated when signed. The policy's
# "torchvision" flag selects PIL's definitions in the engine (see ops/image/autoaug.go).
_TV_AUG_ORDER = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
                 "Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize",
                 "AutoContrast", "Equalize", "Invert"]


def _tv_augs(space, bins, v2=False):
    """space: "auto" (AutoAugment: no Identity, Invert last), "rand" (RandAugment) or
    "wide" (TrivialAugmentWide). v2: transforms.v2's tables, which differ in Solarize
    only (the threshold is 255.0 * linspace(1, 0)[bin], in double, where v1 has
    linspace(255, 0)[bin] in float32)."""
    wide = space == "wide"
    big = 0.99 if wide else 0.9

    def a(name, lo=0.0, hi=0.0, negate=False, param="", rel=False):
        return {"name": name, "lo": lo, "hi": hi, "negate": negate, "param": param,
                "rel": rel}
    tr = (a("translate_x", 0.0, 32.0, True), a("translate_y", 0.0, 32.0, True)) if wide else \
        (a("translate_x", 0.0, 150.0 / 331.0, True, rel=True),
         a("translate_y", 0.0, 150.0 / 331.0, True, rel=True))
    table = {
        "Identity": a("identity"),
        "ShearX": a("shear_x", 0.0, 0.99 if wide else 0.3, True),
        "ShearY": a("shear_y", 0.0, 0.99 if wide else 0.3, True),
        "TranslateX": tr[0], "TranslateY": tr[1],
        "Rotate": a("rotate", 0.0, 135.0 if wide else 30.0, True),
        "Brightness": a("brightness", 0.0, big, True, "shift_enhance"),
        "Color": a("color", 0.0, big, True, "shift_enhance"),
        "Contrast": a("contrast", 0.0, big, True, "shift_enhance"),
        "Sharpness": a("sharpness", 0.0, big, True, "shift_enhance"),
        # 8 - round(arange(bins) / ((bins - 1) / 4)): linspace(8, 4) rounded half to even
        # (8 is even), which poster_mask does.
        "Posterize": a("posterize", 8.0, 2.0 if wide else 4.0, False, "poster_mask"),
        "Solarize": a("solarize", 255.0, 0.0),
        "AutoContrast": a("auto_contrast"),
        "Equalize": a("equalize"),
        "Invert": a("invert"),
    }
    # AutoAugment's sub-policies index the whole list; RandAugment and
    # TrivialAugmentWide draw from their 14 operations (no Invert).
    names = _TV_AUG_ORDER if space == "auto" else _TV_AUG_ORDER[:-1]
    # torchvision's own float32 tables where they do not depend on the image size.
    import torchvision.transforms as _T
    ref = (_T.TrivialAugmentWide()._augmentation_space(bins) if wide else
           _T.RandAugment()._augmentation_space(bins, (1, 1)))
    out = []
    for n in names:
        d = dict(table[n])
        mags = ref.get(n, (None,))[0]
        if mags is not None and mags.ndim > 0 and not d["rel"]:
            d["mags"] = [float(v) for v in mags.tolist()]
        if v2 and n == "Solarize":
            d["mags"] = [255.0 * float(v) for v in _torch.linspace(1.0, 0.0, bins)]
        out.append(d)
    return out


# The methods whose override changes what a transform does: a subclass of a torchvision
# transform that overrides one of them is the user's own transform, not torchvision's.
_BEHAVIOUR = ("forward", "__call__", "get_params", "_get_params", "make_params", "_transform",
              "transform", "_get_policies", "_augmentation_space")


def _tv_classes():
    """{class: name} of torchvision's own transform classes (torchvision.transforms and,
    where it exists, torchvision.transforms.v2), the classes godali recognises."""
    global _TV_CLASSES
    if _TV_CLASSES is None:
        table = {}
        mods = []
        try:
            import torchvision.transforms as _T
            mods.append(_T)
        except ImportError:
            pass
        try:
            import torchvision.transforms.v2 as _T2
            mods.append(_T2)
        except ImportError:
            pass
        for mod in mods:
            for name in dir(mod):
                obj = getattr(mod, name)
                if isinstance(obj, type) and \
                        obj.__module__.startswith("torchvision.transforms"):
                    table[obj] = obj.__name__
        _TV_CLASSES = table
    return _TV_CLASSES


_TV_CLASSES = None


def _tv_name(t):
    """The name of the torchvision transform `t` is, recognised by identity: its class is
    torchvision's own, or a subclass of one that overrides none of its behaviour (the
    methods in _BEHAVIOUR). A class that merely shares a torchvision name (timm's
    ToTensor, a user's CenterCrop) is not torchvision's: UnsupportedTransformError
    naming it and why."""
    cls = type(t)
    table = _tv_classes()
    if cls in table:
        return table[cls]
    for base in cls.__mro__[1:]:
        if base in table:
            for meth in _BEHAVIOUR:
                if getattr(cls, meth, None) is not getattr(base, meth, None):
                    raise UnsupportedTransformError(
                        "godali.torch: transform %s.%s subclasses torchvision's %s and "
                        "overrides %s, which godali would not run"
                        % (cls.__module__, cls.__qualname__, table[base], meth))
            return table[base]
    if cls.__name__ in SUPPORTED_TRANSFORMS or cls.__name__ in ("Compose", "Grayscale"):
        raise UnsupportedTransformError(
            "godali.torch: transform %s.%s is not torchvision's %s (it is only named so): "
            "godali runs torchvision's transforms only"
            % (cls.__module__, cls.__qualname__, cls.__name__))
    raise _unsupported("transform %s.%s" % (cls.__module__, cls.__qualname__)
                       if cls.__module__ not in ("builtins", "__main__") else
                       cls.__qualname__)


def _delegate_reference(self, img):
    return self.transforms(img)


def _only_delegates(func):
    """True when func is a plain function whose body is exactly
    `return self.transforms(<its one argument>)` (compared bytecode for bytecode with such
    a function compiled by this interpreter: names of the parameters and a docstring may
    differ, nothing else)."""
    import types
    if not isinstance(func, types.FunctionType):
        return False
    c, r = func.__code__, _delegate_reference.__code__
    return (c.co_code == r.co_code and c.co_names == r.co_names and
            c.co_argcount == 2 and c.co_posonlyargcount == 0 and
            c.co_kwonlyargcount == 0 and (c.co_flags & 0x0C) == 0 and  # no *args, **kw
            c.co_nlocals == 2 and not c.co_freevars and not c.co_cellvars)


def _plain_module(t):
    """True unless t is a torch.nn.Module whose call would run more than its forward
    (hooks, an overridden __call__, a forward set on the instance)."""
    nn = _torch.nn
    if not isinstance(t, nn.Module):
        return True
    if type(t).__call__ is not nn.Module.__call__ or "forward" in vars(t):
        return False
    if getattr(t, "_forward_hooks", None) or getattr(t, "_forward_pre_hooks", None):
        return False
    g = nn.modules.module
    return not (getattr(g, "_global_forward_hooks", None) or
                getattr(g, "_global_forward_pre_hooks", None))


def _delegated(t):
    """The object a preset-style wrapper delegates to (torchvision's reference
    ClassificationPresetTrain/Eval: a class whose __call__, or forward for a Module, is
    only `return self.transforms(img)`), or None when t is not such a wrapper."""
    return _delegation(t)[0]


def _delegation(t):
    """(the object t delegates to, None) or (None, why t is not a plain preset)."""
    import inspect
    cls = type(t)
    module = isinstance(t, _torch.nn.Module)
    if module and not _plain_module(t):
        return None, "a module with hooks, or whose __call__ or forward is replaced"
    body = inspect.getattr_static(cls, "forward" if module else "__call__", None)
    if not _only_delegates(body):
        return None, ("its %s does more than return self.transforms(img)"
                      % ("forward" if module else "__call__"))
    if cls.__getattribute__ not in (object.__getattribute__,
                                    _torch.nn.Module.__getattribute__):
        return None, "it overrides __getattribute__"
    static = inspect.getattr_static(cls, "transforms", None)
    if hasattr(type(static), "__get__") and hasattr(type(static), "__set__"):
        return None, ".transforms is a property, not a plain attribute"
    d = vars(t)
    if "transforms" in d:
        return d["transforms"], None
    mods = d.get("_modules") if module else None
    if mods is not None and "transforms" in mods:
        return mods["transforms"], None
    return None, ".transforms is not an attribute of the object"


def _preset_steps(t):
    """torchvision's weights.transforms() for classification
    (torchvision.transforms._presets.ImageClassification, the class itself, not a
    subclass) as the transforms its forward runs on a PIL image: resize the shorter side
    to resize_size, centre crop, pil_to_tensor, convert_image_dtype(float), normalize.
    (Its antialias argument only matters for tensor inputs: PIL always antialiases.)
    None for anything else."""
    try:
        from torchvision.transforms import _presets
        import torchvision.transforms as T
    except ImportError:
        return None
    if type(t) is not getattr(_presets, "ImageClassification", None) or \
            not _plain_module(t):
        return None
    return [T.Resize(list(t.resize_size), interpolation=t.interpolation),
            T.CenterCrop(list(t.crop_size)), T.PILToTensor(),
            T.ConvertImageDtype(_torch.float), T.Normalize(list(t.mean), list(t.std))]


def _flatten(transform, depth=0):
    """The transforms of `transform` in order, as (torchvision name, transform) pairs:
    Compose (torchvision's) and lists opened, preset wrappers (an object whose __call__ is
    only `return self.transforms(img)`) replaced by what they wrap, torchvision's
    ImageClassification preset by its steps."""
    if transform is None:
        return []
    if depth > 50:
        raise _unsupported("a transform nested %d levels deep" % depth)
    if isinstance(transform, (list, tuple)):
        out = []
        for t in transform:
            out.extend(_flatten(t, depth + 1))
        return out
    inner, why = _delegation(transform)
    if inner is not None:
        return _flatten(inner, depth + 1)
    steps = _preset_steps(transform)
    if steps is not None:
        return [pair for st in steps for pair in _flatten(st, depth + 1)]
    try:
        name = _tv_name(transform)
    except UnsupportedTransformError:
        table = _tv_classes()
        if hasattr(transform, "transforms") and \
                not any(c in table for c in type(transform).__mro__):
            raise _unsupported(type(transform).__qualname__,
                               "it has a .transforms but is not a plain preset (%s), so "
                               "godali cannot tell what it computes" % why) from None
        raise
    if name == "Compose":
        out = []
        for t in transform.transforms:
            out.extend(_flatten(t, depth + 1))
        return out
    return [(name, transform)]


def _v2():
    """torchvision.transforms.v2, or None (torchvision before 0.15)."""
    try:
        from torchvision.transforms import v2
    except ImportError:
        return None
    return v2


def _host_step(t):
    """True for the transforms godali applies to the tensors of the batch in Python,
    sample after sample, after the engine: torchvision's RandomErasing (v1 and v2) and
    v2's ToPureTensor (nothing to do: godali's tensors are plain)."""
    try:
        import torchvision.transforms as T
    except ImportError:
        return False
    v2 = _v2()
    cls = type(t)
    if cls is T.RandomErasing or (v2 is not None and cls is v2.RandomErasing):
        return _plain_module(t)
    return v2 is not None and cls is getattr(v2, "ToPureTensor", None)


def _split_steps(transform):
    """(engine steps, host steps) of a transform: the flattened transforms without their
    trailing RandomErasing/ToPureTensor, and the RandomErasing objects among those."""
    ts = _flatten(transform)
    k = len(ts)
    while k > 0 and _host_step(ts[k - 1][1]):
        k -= 1
    v2 = _v2()
    tail = [t for _, t in ts[k:] if not (v2 is not None and
                                         type(t) is getattr(v2, "ToPureTensor", None))]
    return ts[:k], tail


def _run_host_steps(x, steps):
    """Applies the host steps (RandomErasing objects) to every sample of the batch x
    [N, C, H, W], sample after sample as torch's DataLoader does (their random draws come
    from torch's generator of this process); x is updated in place and returned."""
    for i in range(x.shape[0]):
        s = x[i]
        out = s
        for t in steps:
            out = t(out)
        if out is not s:
            x[i].copy_(out)
    return x


class _Translator:
    """Turns a list of torchvision transforms into godali operators inside the current
    pipeline. Images are HWC uint8 until the tensor conversion, which becomes the final
    crop_mirror_normalize (ToTensor's /255 and Normalize fold into its mean and std)."""

    def __init__(self, transforms, approximate, gpu_from=None, exact=False):
        self.ts = transforms
        self.approx = approximate
        self.exact = exact        # no DCT-domain downscaling in the random-crop decoder
        self.dct = False          # the CPU random-crop decoder may downscale in the DCT domain
        self.gpu_from = gpu_from  # index in self.used of the first image operator on the GPU
        self.used = []         # the image operators added, in graph order (decoder first)
        self.size = None       # (h, w) when every image has the same, known size
        self.tensor = None     # None (PIL image), "uint8" or a float dtype name
        self.mean = 0.0        # the output is (x - mean) / std, x the uint8 value
        self.std = 1.0
        self.mean_c = None     # per-channel, after a Normalize
        self.std_c = None
        self.geo = []          # pending geometric steps (kind, args) for the tail fold

    def _op(self, name, images, **kw):
        """Adds image operator `name` (fn's dotted name, or an internal "_" one) on
        `images`. Operators from index gpu_from on run on the GPU: the decoder as "mixed"
        (nvJPEG) when gpu_from is 0, else the images move there (.gpu()) before that
        operator. Arguments and random draws are the CPU operator's either way."""
        k = len(self.used)
        self.used.append(name)
        if self.gpu_from is not None and k >= self.gpu_from:
            if k == 0:
                kw["device"] = "mixed"
            else:
                if k == self.gpu_from:
                    images = images.gpu()
                kw["device"] = "gpu"
        if name.startswith("_"):
            return _internal_op(name)(images, **kw)
        op = _fn
        for part in name.split("."):
            op = getattr(op, part)
        return op(images, **kw)

    # The tail of the graph: crop/flip steps that commute with normalisation are kept
    # pending, so that a final CenterCrop and horizontal flip fold into
    # crop_mirror_normalize.
    def run(self, jpegs):
        ts = list(self.ts)
        if ts and ts[0][0] == "RandomResizedCrop":
            first = ts.pop(0)[1]
            if type(first).__module__.startswith("torchvision.transforms.v2"):
                self._v2_own(first, "RandomResizedCrop")
            images = self._rrc(jpegs, first, decode=True)
        else:
            # like_pil: PIL's Image.open + convert("RGB") (torchvision's loader): no EXIF
            # orientation (but TIFF's, which PIL applies on load), 16-bit grey clipped.
            images = self._op("decoders.image", jpegs, output_type=_types.RGB,
                              like_pil=True)
        for t in ts:
            images = self._one(images, t)
        if self.tensor is None:
            raise UnsupportedTransformError(
                "godali.torch: the transform must end with ToTensor() or PILToTensor() (then "
                "optionally ConvertImageDtype and Normalize): DataLoader's default collate "
                "needs tensors, not PIL images")
        return self._finish(images)

    def _flush(self, images):
        for kind, a in self.geo:
            if kind == "crop":
                images = self._op("crop", images, **a)
            elif kind == "flip":
                images = self._op("flip", images, **a)
        self.geo = []
        return images

    def _one(self, images, nt):
        name, t = nt
        if type(t).__module__.startswith("torchvision.transforms.v2"):
            return self._v2_one(images, t, name)
        meth = getattr(self, "_t_" + name, None)
        if meth is None:
            if name in ("RandomErasing", "ToPureTensor"):
                raise _unsupported("%s other than at the end (or with hooks)" % name,
                                   "godali applies RandomErasing to the batch's tensors "
                                   "after everything else")
            if hasattr(t, "transforms"):
                raise _unsupported(name, "it has a .transforms but is not a plain preset (%s), "
                                   "so godali cannot tell what it computes"
                                   % _delegation(t)[1])
            raise _unsupported(name)
        if self.tensor is not None and name not in ("Normalize", "ConvertImageDtype",
                                                     "RandomHorizontalFlip",
                                                     "RandomVerticalFlip", "CenterCrop"):
            raise _unsupported("%s after ToTensor/PILToTensor" % name,
                               "torchvision then runs its tensor kernels (not PIL's, which "
                               "godali's operators follow); godali runs image transforms "
                               "before ToTensor/PILToTensor")
        return meth(images, t)

    # -- torchvision.transforms.v2 ----------------------------------------------------

    # v2 classes translated, by identity: on a PIL image (what ImageFolder gives) they
    # run the same PIL operations with the same random draws as their v1 namesakes
    # (v2's ToDtype(float32, scale=True) multiplies by 1/255 where ConvertImageDtype
    # divides by 255: within the documented float32 rounding).
    _V2_SAME = ("RandomResizedCrop", "Resize", "CenterCrop", "RandomHorizontalFlip",
                "RandomVerticalFlip", "PILToTensor", "Normalize")

    @staticmethod
    def _v2_own(t, name):
        v2 = _v2()
        if v2 is None or type(t) is not getattr(v2, name, None) or not _plain_module(t):
            raise _unsupported("%s.%s" % (type(t).__module__, name),
                               "not one of torchvision.transforms.v2's own classes")

    def _v2_one(self, images, t, name):
        self._v2_own(t, name)
        if name in ("ToImage", "ToDtype", "ToPureTensor"):
            meth = getattr(self, "_v2_" + name)
        elif name in ("TrivialAugmentWide", "RandAugment", "AutoAugment"):
            # v2's operations on a PIL image are v1's (the same PIL calls); the random
            # choices draw from the same distributions; Solarize's thresholds differ.
            def meth(images, t, m=getattr(self, "_t_" + name)):
                return m(images, t, v2=True)
        elif name in self._V2_SAME:
            meth = getattr(self, "_t_" + name)
        else:
            raise _unsupported("transforms.v2.%s" % name,
                               "the v2 classes godali translates are %s, "
                               "TrivialAugmentWide, RandAugment, AutoAugment, ToImage, "
                               "ToDtype, ToPureTensor and RandomErasing (last)"
                               % ", ".join(self._V2_SAME))
        if self.tensor is not None and name not in ("Normalize", "ToDtype", "ToPureTensor",
                                                     "RandomHorizontalFlip",
                                                     "RandomVerticalFlip", "CenterCrop"):
            raise _unsupported("transforms.v2.%s after the tensor conversion" % name,
                               "torchvision then runs its tensor kernels, godali's "
                               "operators follow PIL's")
        if name == "Resize" and getattr(t, "size", 0) is None:
            raise _unsupported("transforms.v2.Resize(size=None, max_size=...)")
        return meth(images, t)

    def _v2_ToImage(self, images, t):
        if self.tensor is not None:
            raise _unsupported("transforms.v2.ToImage of a tensor")
        return self._t_PILToTensor(images, t)

    def _v2_ToPureTensor(self, images, t):
        if self.tensor is None:
            raise _unsupported("transforms.v2.ToPureTensor of a PIL image")
        return images

    def _v2_ToDtype(self, images, t):
        dt = t.dtype
        if self.tensor is None:
            raise UnsupportedTransformError("godali.torch: transforms.v2.ToDtype needs a "
                                            "tensor: put ToImage() or PILToTensor() before it")
        if not isinstance(dt, _torch.dtype):
            raise _unsupported("transforms.v2.ToDtype(dtype=%r)" % (dt,),
                               "one torch.dtype for the image")
        if dt == _torch.uint8:
            if self.tensor != "uint8":
                raise _unsupported("transforms.v2.ToDtype(torch.uint8) of a float image")
            return images
        names = {_torch.float32: "float32", _torch.float16: "float16"}
        if dt not in names:
            raise _unsupported("transforms.v2.ToDtype(%s)" % dt, "float32 and float16 only")
        # uint8 -> float: divided by 255 with scale=True, the values as they are without;
        # float -> float: a cast (the range of both is [0, 1]).
        if self.tensor == "uint8" and getattr(t, "scale", False):
            self.std = 255.0
        self.tensor = names[dt]
        return images

    # -- geometry -------------------------------------------------------------------

    def _rrc(self, images, t, decode):
        h, w = _pair(t.size, "RandomResizedCrop")
        scale = [float(x) for x in t.scale]
        ratio = [float(x) for x in t.ratio]
        interp = _interp(t.interpolation, "RandomResizedCrop")
        if decode:
            # torchvision's get_params: 10 attempts, then a center crop with the ratio
            # clamped; the decoder implements exactly that and decodes only the window.
            # dct_downscale (unless exact): a JPEG window at least twice the output is
            # scaled down while it is decoded (RANDOM_CROP_DCT_NOTE).
            images = self._op(
                "decoders.image_random_crop", images, output_type=_types.RGB,
                random_area=scale, random_aspect_ratio=ratio, num_attempts=10,
                like_pil=True, dct_downscale=not self.exact)
            self.dct = not self.exact and (self.gpu_from is None or self.gpu_from > 0)
            # PIL images are always resized with antialiasing (torchvision ignores
            # antialias for them).
            images = self._op("resize", images, resize_x=w, resize_y=h,
                              interp_type=interp, antialias=True)
        else:
            images = self._flush(images)
            images = self._op("random_resized_crop", images, size=[h, w],
                              random_area=scale, random_aspect_ratio=ratio,
                              num_attempts=10, interp_type=interp, antialias=True)
        self.size = (h, w)
        return images

    def _t_RandomResizedCrop(self, images, t):
        return self._rrc(images, t, decode=False)

    def _t_Resize(self, images, t):
        images = self._flush(images)
        interp = _interp(t.interpolation, "Resize")
        max_size = getattr(t, "max_size", None)
        size = t.size
        if isinstance(size, (list, tuple)) and len(size) == 1:
            size = size[0]
        if isinstance(size, (int, float)):
            # size_rounding="truncate": torchvision's int(size * long / short).
            kw = {"resize_shorter": int(size), "size_rounding": "truncate"}
            if max_size is not None:
                if int(max_size) <= int(size):
                    raise ValueError("godali.torch: Resize: max_size = %d must be strictly "
                                     "greater than the requested size %d" % (max_size, size))
                kw["max_size"] = [int(max_size), int(max_size)]
            images = self._op("resize", images, interp_type=interp, antialias=True, **kw)
            self.size = None
        else:
            if max_size is not None:
                raise ValueError("godali.torch: Resize: max_size is only supported when "
                                 "size is an int (as torchvision)")
            h, w = _pair(size, "Resize")
            images = self._op("resize", images, resize_x=w, resize_y=h,
                              interp_type=interp, antialias=True)
            self.size = (h, w)
        return images

    def _t_CenterCrop(self, images, t):
        ch, cw = _pair(t.size, "CenterCrop")
        # torchvision: top = int(round((H - ch) / 2.0)), Python's round (half to even),
        # and (ch - H) // 2 rows of padding on top when the image is smaller: the
        # engine's crop_rounding="torchvision", per image, whatever its size.
        a = {"crop": [ch, cw], "out_of_bounds_policy": "pad", "fill_values": [0],
             "crop_rounding": "torchvision"}
        self.geo.append(("crop", a))
        self.size = (ch, cw)
        return images

    def _t_RandomCrop(self, images, t):
        th, tw = _pair(t.size, "RandomCrop")
        if getattr(t, "padding_mode", "constant") != "constant":
            raise _unsupported("RandomCrop(padding_mode=%r)" % t.padding_mode,
                               "godali pads with a constant fill only")
        fill = _one_fill(t.fill, "RandomCrop")
        pad = t.padding
        if pad is not None:
            if isinstance(pad, int):
                pad = [pad] * 4
            pad = list(pad)
            if len(pad) == 1:
                pad = pad * 4
            elif len(pad) == 2:
                pad = [pad[0], pad[1], pad[0], pad[1]]
            left, top, right, bottom = [int(p) for p in pad]
        else:
            left = top = right = bottom = 0
        images = self._flush(images)
        if self.size is None:
            if left or top or right or bottom:
                raise _unsupported("RandomCrop(padding=...) on images of varying size",
                                   "the padding needs the size; put a fixed-size Resize((h, w)), "
                                   "CenterCrop or RandomResizedCrop before it")
            kw = {}
            if t.pad_if_needed:
                if not self.approx:
                    raise _inexact("RandomCrop(pad_if_needed=True) on images of varying size",
                                   "torchvision pads an image smaller than the crop on both "
                                   "sides and then draws the offset; godali centres it in the "
                                   "padding. Put a fixed-size Resize((h, w)), CenterCrop or "
                                   "RandomResizedCrop before it")
                kw = {"out_of_bounds_policy": "pad", "fill_values": [fill]}
            # random_offset: torchvision's offsets, uniform integers in [0, W - w] and
            # [0, H - h] (an image smaller than the crop is an error, as in torchvision).
            images = self._op("crop", images, crop=[th, tw], random_offset=True, **kw)
            self.size = (th, tw)
            return images
        h, w = self.size
        if left or top or right or bottom:
            H, W = h + top + bottom, w + left + right
            images = self._op("crop", images, crop=[H, W], out_of_bounds_policy="pad",
                              fill_values=[fill],
                              crop_pos_x=left / (left + right) if left + right else 0.5,
                              crop_pos_y=top / (top + bottom) if top + bottom else 0.5)
            h, w = H, W
        if t.pad_if_needed and (w < tw or h < th):
            # torchvision pads (tw - w) on both the left and the right (and likewise
            # vertically): the padded image is w + 2 * (tw - w) wide.
            px, py = max(0, tw - w), max(0, th - h)
            H, W = h + 2 * py, w + 2 * px
            images = self._op("crop", images, crop=[H, W], out_of_bounds_policy="pad",
                              fill_values=[fill], crop_pos_x=0.5, crop_pos_y=0.5)
            h, w = H, W
        if h < th or w < tw:
            raise ValueError("godali.torch: RandomCrop: required crop size %s is larger than "
                             "the input image size %s" % ((th, tw), (h, w)))
        # torchvision: offsets uniform in {0, ..., h - th}: exact through discrete values.
        pos = {}
        for dim, d in (("y", h - th), ("x", w - tw)):
            if d == 0:
                pos["crop_pos_" + dim] = 0.5
            else:
                pos["crop_pos_" + dim] = _fn.random.uniform(
                    values=[k / d for k in range(d + 1)])
        images = self._op("crop", images, crop=[th, tw], **pos)
        self.size = (th, tw)
        return images

    def _coin(self, p):
        p = float(p)
        if p >= 1:
            return 1
        if p <= 0:
            return 0
        return _fn.random.coin_flip(probability=p)

    def _t_RandomHorizontalFlip(self, images, t):
        c = self._coin(t.p)
        if isinstance(c, int) and c == 0:
            return images
        self.geo.append(("flip", {"horizontal": c, "vertical": 0}))
        return images

    def _t_RandomVerticalFlip(self, images, t):
        c = self._coin(t.p)
        if isinstance(c, int) and c == 0:
            return images
        self.geo.append(("flip", {"horizontal": 0, "vertical": c}))
        return images

    def _t_RandomRotation(self, images, t):
        images = self._flush(images)
        if getattr(t, "center", None) is not None:
            raise _unsupported("RandomRotation(center=%r)" % (t.center,),
                               "godali rotates about the image centre")
        lo, hi = [float(d) for d in t.degrees]
        interp = _interp(t.interpolation, "RandomRotation")
        if interp not in (_types.INTERP_NN, _types.INTERP_LINEAR):
            raise _unsupported("RandomRotation(interpolation=%s)" % t.interpolation,
                               "godali's rotate has NEAREST and BILINEAR")
        fill = _one_fill(t.fill, "RandomRotation")
        angle = lo if lo == hi else _fn.random.uniform(range=[lo, hi])
        if t.expand:
            if not self.approx:
                raise _inexact("RandomRotation(expand=True)",
                               "the expanded size follows DALI's rule (bounding box, "
                               "parity of the input kept), which may be one pixel larger "
                               "than PIL's")
            self.size = None
            return self._op("rotate", images, angle=angle, fill_value=fill,
                            interp_type=interp)
        return self._op("rotate", images, angle=angle, keep_size=True, fill_value=fill,
                        interp_type=interp)

    # -- colour -----------------------------------------------------------------------

    def _t_ColorJitter(self, images, t):
        images = self._flush(images)
        # _tv_color_jitter is torchvision's PIL path bit for bit: ImageEnhance's float32
        # blends with truncation, Contrast's int(mean(L) + 0.5) grey, adjust_hue's uint8
        # HSV shift, and a random order of the four per sample (randperm(4)).
        kw = {}
        for name in ("brightness", "contrast", "saturation", "hue"):
            r = getattr(t, name)
            if r is not None:
                kw[name] = [float(r[0]), float(r[1])]
        if not kw:
            return images
        return self._op("_tv_color_jitter", images, **kw)

    def _uniform(self, r):
        lo, hi = float(r[0]), float(r[1])
        if lo == hi:
            return lo
        return _fn.random.uniform(range=[lo, hi])

    def _t_RandomGrayscale(self, images, t):
        images = self._flush(images)
        p = float(t.p)
        if p <= 0:
            return images
        if p >= 1:
            return self._op("hsv", images, saturation=0.0)
        # saturation 0 gives every channel the luma 0.299 R + 0.587 G + 0.114 B: PIL's "L".
        sat = _fn.random.choice([0.0, 1.0], p=[p, 1.0 - p], dtype=_types.FLOAT)
        return self._op("hsv", images, saturation=sat)

    def _t_Grayscale(self, images, t):
        if int(t.num_output_channels) != 3:
            raise _unsupported("Grayscale(num_output_channels=%d)" % t.num_output_channels,
                               "only 3 output channels")
        images = self._flush(images)
        return self._op("hsv", images, saturation=0.0)

    def _t_GaussianBlur(self, images, t):
        images = self._flush(images)
        kx, ky = [int(k) for k in t.kernel_size]
        lo, hi = [float(s) for s in t.sigma]
        sigma = lo if lo == hi else _fn.random.uniform(range=[lo, hi])
        # torchvision's kernel_size is (x, y); godali's window_size is (height, width).
        return self._op("gaussian_blur", images, window_size=[ky, kx], sigma=sigma)

    # -- AutoAugment family -----------------------------------------------------------

    def _tv_auto_aug(self, images, what, t, policy):
        images = self._flush(images)
        interp = _interp(t.interpolation, what)
        # BILINEAR: the engine's torchvision mode runs PIL's bilinear transform filter
        # with PIL's matrices (bit-exact, tests/test_tv_autoaug.py).
        if interp not in (_types.INTERP_NN, _types.INTERP_LINEAR):
            raise _unsupported("%s(interpolation=%s)" % (what, t.interpolation),
                               "godali's auto-augment warps are NEAREST and BILINEAR")
        fill = _one_fill(t.fill, what)
        policy["torchvision"] = True
        return self._op("_auto_aug", images, policy=_json.dumps(policy), fill_value=fill,
                        interp_type=interp)

    def _t_AutoAugment(self, images, t, v2=False):
        name = getattr(t.policy, "value", str(t.policy))
        table = _tv_augs("auto", 10, v2)
        subs = []
        for sp in t._get_policies(t.policy):
            subs.append([[_TV_AUG_ORDER.index(op), float(p), -1 if b is None else int(b)]
                         for op, p, b in sp])
        policy = {"scheme": "auto", "bins": 10, "augs": table, "sub_policies": subs}
        return self._tv_auto_aug(images, "AutoAugment(policy=%s)" % name, t, policy)

    def _t_RandAugment(self, images, t, v2=False):
        bins, n, m = int(t.num_magnitude_bins), int(t.num_ops), int(t.magnitude)
        if bins < 2:
            raise ValueError("godali.torch: RandAugment: num_magnitude_bins must be >= 2, "
                             "got %d" % bins)
        if not 0 <= m < bins:
            raise ValueError("godali.torch: RandAugment: magnitude must be in [0, %d] "
                             "(num_magnitude_bins - 1), got %d" % (bins - 1, m))
        policy = {"scheme": "rand", "bins": bins, "augs": _tv_augs("rand", bins, v2),
                  "n": n, "m": m}
        return self._tv_auto_aug(images, "RandAugment", t, policy)

    def _t_TrivialAugmentWide(self, images, t, v2=False):
        bins = int(t.num_magnitude_bins)
        if bins < 2:
            raise ValueError("godali.torch: TrivialAugmentWide: num_magnitude_bins must be "
                             ">= 2, got %d" % bins)
        policy = {"scheme": "trivial", "bins": bins, "augs": _tv_augs("wide", bins, v2)}
        return self._tv_auto_aug(images, "TrivialAugmentWide", t, policy)

    def _t_AugMix(self, images, t):
        raise _unsupported("AugMix", "godali's auto-augment operator applies one chain of "
                           "augmentations; AugMix's Dirichlet-weighted mixture of several "
                           "chains has no engine equivalent yet")

    # -- tensor conversion --------------------------------------------------------------

    def _t_ToTensor(self, images, t):
        self.tensor = "float32"
        self.std = 255.0
        return images

    def _t_PILToTensor(self, images, t):
        self.tensor = "uint8"
        return images

    def _t_ConvertImageDtype(self, images, t):
        if self.tensor is None:
            raise UnsupportedTransformError("godali.torch: ConvertImageDtype needs a tensor: "
                                            "put PILToTensor() before it")
        dt = t.dtype
        if dt == _torch.uint8:
            if self.tensor != "uint8":
                raise _unsupported("ConvertImageDtype(torch.uint8) of a float image")
            return images
        names = {_torch.float32: "float32", _torch.float16: "float16"}
        if dt not in names:
            raise _unsupported("ConvertImageDtype(%s)" % dt, "float32 and float16 only")
        if self.tensor == "uint8":
            self.std = 255.0
        self.tensor = names[dt]
        return images

    def _t_Normalize(self, images, t):
        if self.tensor in (None, "uint8"):
            raise UnsupportedTransformError(
                "godali.torch: Normalize needs a float tensor: put ToTensor() (or "
                "PILToTensor() and ConvertImageDtype(torch.float)) before it")
        m = [float(x) for x in (t.mean if hasattr(t.mean, "__len__") else [t.mean])]
        s = [float(x) for x in (t.std if hasattr(t.std, "__len__") else [t.std])]
        if any(x == 0 for x in s):
            raise ValueError("godali.torch: Normalize: std evaluated to zero, leading to "
                             "division by zero")
        mc = self.mean_c or [self.mean] * 3
        sc = self.std_c or [self.std] * 3
        if len(m) == 1:
            m = m * 3
        if len(s) == 1:
            s = s * 3
        if len(m) != 3 or len(s) != 3:
            raise ValueError("godali.torch: Normalize: mean and std need 1 or 3 values")
        # ((x - M) / S - m) / s == (x - (M + m S)) / (S s)
        self.mean_c = [M + mi * S for M, mi, S in zip(mc, m, sc)]
        self.std_c = [S * si for S, si in zip(sc, s)]
        return images

    def _finish(self, images):
        kw = {}
        # A trailing (CenterCrop, horizontal flip) folds into crop_mirror_normalize, which
        # crops first and mirrors the window.
        geo = list(self.geo)
        # (a flip's "vertical" is 0, 1 or a coin flip's DataNode, which has no truth value)
        if geo and geo[-1][0] == "flip" and isinstance(geo[-1][1]["vertical"], int) and \
                geo[-1][1]["vertical"] == 0:
            kw["mirror"] = geo.pop()[1]["horizontal"]
        if geo and geo[-1][0] == "crop":
            a = geo.pop()[1]
            kw["crop"] = a["crop"]
            kw["out_of_bounds_policy"] = "pad"
            for k in ("crop_pos_x", "crop_pos_y", "crop_rounding"):
                if k in a:
                    kw[k] = a[k]
        self.geo = geo
        images = self._flush(images)
        dtype = {"uint8": _types.UINT8, "float32": _types.FLOAT,
                 "float16": _types.FLOAT16}[self.tensor]
        mean = self.mean_c or [self.mean]
        std = self.std_c or [self.std]
        return self._op("crop_mirror_normalize", images, dtype=dtype, output_layout="CHW",
                        mean=mean, std=std, **kw)


def translate(transform, jpegs, approximate=False, gpu_from=None, exact=False):
    """Adds to the current pipeline the operators that apply the torchvision `transform`
    to the encoded images `jpegs` (a DataNode); returns the images DataNode.

    gpu_from (see gpu_placement): the image operators from that index on run on the GPU
    (0: the decoder too, as device "mixed"); None: all on the CPU."""
    return _Translator(_split_steps(transform)[0], approximate, gpu_from, exact).run(jpegs)


def gpu_placement(transform, approximate=False):
    """Where the translation of `transform` can run on the GPU: (operators, gpu_from).

    operators lists the image operators of the translation in graph order, the decoder
    first; gpu_from is the index of the first one of the GPU part: every operator after
    the last one without a GPU variant (0: all of them, decoding with nvJPEG), None when
    this process has no GPU operators (the CPU flavour). The GPU variants compute what the
    CPU ones do, from the same random draws (docs/cuda.md): only nvJPEG's IDCT and the CPU
    random-crop decoder's DCT-domain downscaling differ (docs/pytorch.md#gpu)."""
    from . import _graph
    used = _check_translation(transform, approximate).used
    ops = _graph.schemas().ops
    if "_to_gpu" not in ops:
        return used, None
    gpu_from = 0
    for k, name in enumerate(used):
        if ("mixed" if k == 0 else "gpu") not in ops[name].devices:
            gpu_from = k + 1
    return used, gpu_from


# --- DataLoader ------------------------------------------------------------------------

_FORMAT = "godali.torch.DataLoader"


class _Source:
    """What a dataset resolves to: its (path, label) samples (a copy of the list, read in
    that order: the reader gets the explicit file list), one transform for all of them,
    and the target_transform applied to the labels."""

    def __init__(self, samples, transform, target_transform, approximate):
        self.samples = list(samples)
        self.transform = transform
        self.target_transform = target_transform
        self.approximate = approximate


def _common_root(paths):
    """(root, relative paths): the deepest folder holding every path (absolute), and
    each path relative to it (root joined with it is the absolute path). String
    operations only, fast on a million paths."""
    absp = [p if os.path.isabs(p) else os.path.abspath(p) for p in map(os.fspath, paths)]
    prefix = os.path.commonprefix([min(absp), max(absp)])
    root = prefix[:prefix.rfind(os.sep) + 1]  # up to a separator: a folder of every path
    n = len(root)
    rel = [p[n:] for p in absp]
    return (root.rstrip(os.sep) or os.sep), rel


def _tv_folder_class():
    try:
        from torchvision.datasets import DatasetFolder
    except ImportError:
        return None
    return DatasetFolder


def _resolve(dataset):
    """The _Source of a dataset godali serves faithfully; UnsupportedDatasetError naming
    the dataset (or the part of it) otherwise."""
    if isinstance(dataset, ImageFolder):
        return _Source(dataset.samples, dataset.transform, dataset.target_transform,
                       dataset.approximate)
    folder = _tv_folder_class()
    if folder is not None and isinstance(dataset, folder):
        return _resolve_tv_folder(dataset, folder)
    tud = _torch.utils.data
    if isinstance(dataset, tud.Subset):
        inner = _resolve(dataset.dataset)
        n = len(inner.samples)
        picked = []
        for i in dataset.indices:
            i = int(i)
            if not -n <= i < n:
                raise IndexError("godali.torch: Subset index %d is out of range for a "
                                 "dataset of %d samples" % (i, n))
            picked.append(inner.samples[i])
        return _Source(picked, inner.transform, inner.target_transform, inner.approximate)
    if isinstance(dataset, tud.ConcatDataset):
        parts = [_resolve(d) for d in dataset.datasets]
        first = parts[0]
        for k, p in enumerate(parts[1:], 1):
            for what in ("transform", "target_transform"):
                a, b = getattr(first, what), getattr(p, what)
                if a is not b and repr(a) != repr(b):
                    raise UnsupportedDatasetError(
                        "godali.torch.DataLoader: ConcatDataset part %d has another %s "
                        "(%r) than part 0 (%r): godali runs one transform for the whole "
                        "data set" % (k, what, b, a))
            if p.approximate != first.approximate:
                raise UnsupportedDatasetError("godali.torch.DataLoader: ConcatDataset "
                                              "parts differ in approximate=")
        return _Source([s for p in parts for s in p.samples], first.transform,
                       first.target_transform, first.approximate)
    raise UnsupportedDatasetError(
        "godali.torch.DataLoader: dataset %s.%s is not one godali reads (it reads "
        "godali.torch.ImageFolder, torchvision's ImageFolder/DatasetFolder and their "
        "subclasses with the default loader, ImageNet, and Subset/ConcatDataset of those); "
        "use torch's DataLoader for it" % (type(dataset).__module__, type(dataset).__name__))


def _resolve_tv_folder(dataset, folder):
    from torchvision.datasets.folder import default_loader, pil_loader
    name = type(dataset).__name__
    if dataset.loader not in (default_loader, pil_loader):
        raise UnsupportedDatasetError(
            "godali.torch.DataLoader: the %s's loader= (%r) is not supported: godali "
            "decodes the files itself, as torchvision's default (PIL RGB) loader"
            % (name, dataset.loader))
    if type(dataset).__getitem__ is not folder.__getitem__:
        raise UnsupportedDatasetError(
            "godali.torch.DataLoader: %s overrides __getitem__, which godali would not run"
            % name)
    return _Source(dataset.samples, dataset.transform, dataset.target_transform, False)


def _describe(dataset):
    try:
        n = len(dataset)
    except Exception:  # noqa: BLE001 - only for a log line
        n = "?"
    root = getattr(dataset, "root", None)
    if root is None and hasattr(dataset, "dataset"):
        root = getattr(dataset.dataset, "root", None)
    where = " %r" % os.fspath(root) if isinstance(root, (str, os.PathLike)) else ""
    return "%s%s, %s samples" % (type(dataset).__name__, where, n)


def _is_distributed_sampler(s):
    return type(s).__name__ == "DistributedSampler" and hasattr(s, "num_replicas") \
        and hasattr(s, "rank") and hasattr(s, "set_epoch")


def _torch_prefetch_default():
    import inspect
    try:
        p = inspect.signature(_TorchDataLoader().__init__).parameters["prefetch_factor"]
        return p.default
    except (KeyError, ValueError, TypeError):
        return None


def _TorchDataLoader():
    """torch's own DataLoader class, also while install() has replaced the name."""
    if _installed is not None:
        return _installed["orig"]
    return _torch.utils.data.DataLoader


def _check_arguments(batch_size, shuffle, sampler, batch_sampler, num_workers,
                     drop_last, timeout, prefetch_factor, persistent_workers):
    """torch's DataLoader argument checks: the same exception types and words."""
    if num_workers == "auto":  # godali's: the engine chooses its threads (num_threads="auto")
        num_workers = 1
    if not isinstance(num_workers, int) or isinstance(num_workers, bool):
        raise TypeError("godali.torch.DataLoader: num_workers should be an int or \"auto\", "
                        "got %r" % (num_workers,))
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                         "to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor not in (None, _torch_prefetch_default()):
        raise ValueError("prefetch_factor option could only be specified in "
                         "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                         "otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and not (isinstance(prefetch_factor, int) and
                                            prefetch_factor > 0):
        raise ValueError("prefetch_factor should be a positive integer, got %r"
                         % (prefetch_factor,))
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
        raise UnsupportedArgumentError(
            "godali.torch.DataLoader: batch_sampler is not supported: godali forms the "
            "batches itself (use batch_size, shuffle, drop_last)")
    if batch_size is None:
        if drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        raise UnsupportedArgumentError("godali.torch.DataLoader: batch_size=None (no "
                                       "batching) is not supported; give a batch size")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError("batch_size should be a positive integer value, but got "
                         "batch_size=%r" % (batch_size,))
    if not isinstance(drop_last, bool):
        raise ValueError("drop_last should be a boolean value, but got drop_last=%r"
                         % (drop_last,))


class DataLoader:
    """torch.utils.data.DataLoader for image folders, run by godali's engine.

    Takes torch's arguments, checked as torch checks them (same exception types and
    messages). dataset: godali.torch.ImageFolder, torchvision's ImageFolder/DatasetFolder
    (subclasses and ImageNet included) with the default loader, or a Subset/ConcatDataset
    of those; the transform is translated into godali operators. num_workers: engine
    threads (0 -> 1; "auto": num_threads and, without prefetch_factor,
    prefetch_queue_depth "auto", chosen by the engine, loader.tuning() says how). shuffle: a new order every epoch, drawn from torch's generator (or
    generator=). sampler: None, a SequentialSampler/RandomSampler of the dataset, or a
    DistributedSampler (torch's or godali.torch's): the loader reads exactly the indices
    it deals to this rank, in its order (set_epoch included). drop_last: the last
    incomplete batch is dropped. prefetch_factor: batches prepared ahead
    (prefetch_queue_depth). pin_memory: host batches are pinned when CUDA is available.
    persistent_workers, timeout, multiprocessing_context and pin_memory_device are accepted
    and have no effect. device (godali only, as seed): "cpu" (default: host tensors, as
    torch's DataLoader) or "cuda"/"cuda:N": the batches are CUDA tensors on that device.
    With the CUDA flavour of godali the images are decoded there (nvJPEG) and the
    transform runs on the GPU from the last step without a GPU operator on (all of it for
    the standard ImageNet transforms; see gpu_placement and docs/pytorch.md#gpu); with the
    CPU flavour the batches are decoded on the CPU and copied from pinned memory, which
    the log says once. collate_fn: called, as torch calls it, on the list of
    (image, target) samples of each batch (the images are the batch's, one by one; the
    targets ints or target_transform's results), in this process. A RandomErasing at the
    end of the transform runs here too, on each sample of the batch. batch_sampler, other
    samplers and worker_init_fn raise UnsupportedArgumentError naming them; other datasets
    UnsupportedDatasetError; transforms godali cannot run exactly
    UnsupportedTransformError (all when the loader is created).

    Yields (images, labels): images [N, C, H, W] as the transform's ToTensor /
    PILToTensor produce them, labels int64 [N] (or target_transform's results collated).
    loader.sampler is the sampler given, or the SequentialSampler / RandomSampler torch
    would have made (for len() and inspection; godali does the shuffling itself), and
    loader.batch_sampler torch's BatchSampler of it.

    As torch's, every iter(loader) reads the dataset as it is then: a changed transform
    or samples list gives a new pipeline (or, for a transform godali does not serve,
    torch's DataLoader reads that epoch; logged). A file that cannot be decoded fails
    its batch with what PIL raises on it (an OSError / PIL.UnidentifiedImageError that is
    also a godali.DataError, naming the file) and the next batch follows. Several
    iterators may be live at once, each reading its own epoch.

    state_dict() / load_state_dict(): torchdata's StatefulDataLoader protocol. A loader
    given the state of another (same data set and arguments) yields exactly the batches
    the other would have yielded next, mid-epoch included.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 seed=None, device=None, exact=None):
        _check_arguments(batch_size, shuffle, sampler, batch_sampler, num_workers,
                         drop_last, timeout, prefetch_factor, persistent_workers)
        if worker_init_fn is not None:
            raise UnsupportedArgumentError(
                "godali.torch.DataLoader: worker_init_fn is not supported: godali has no "
                "worker processes (num_workers sets engine threads)")
        src = _resolve(dataset)
        self.dataset = dataset
        self.batch_size = batch_size
        n = len(src.samples)
        if n == 0:
            raise ValueError("godali.torch.DataLoader: the dataset %s has no samples"
                             % _describe(dataset))
        self.num_shards, self.shard_id = 1, 0
        self._dist = None
        if sampler is None:
            tud = _torch.utils.data
            sampler = tud.RandomSampler(dataset, generator=generator) if shuffle else \
                tud.SequentialSampler(dataset)
        else:
            sname = type(sampler).__name__
            if _is_distributed_sampler(sampler):
                if len(sampler.dataset) != n:
                    raise UnsupportedArgumentError(
                        "godali.torch.DataLoader: the DistributedSampler is over %d samples, "
                        "the dataset has %d" % (len(sampler.dataset), n))
                self._dist = sampler
                self.num_shards, self.shard_id = int(sampler.num_replicas), int(sampler.rank)
                shuffle = bool(sampler.shuffle)
            elif sname == "SequentialSampler" and len(sampler) == n:
                shuffle = False
            elif sname == "RandomSampler" and len(sampler) == n and \
                    not getattr(sampler, "replacement", False) and \
                    getattr(sampler, "_num_samples", None) is None:
                shuffle = True
                generator = getattr(sampler, "generator", None) or generator
            else:
                raise UnsupportedArgumentError(
                    "godali.torch.DataLoader: sampler %s is not supported: godali reads the "
                    "data set in order, shuffled (shuffle=True, RandomSampler) or as a "
                    "DistributedSampler deals it" % sname)
        self.sampler = sampler
        # torch's: the BatchSampler its DataLoader makes from the sampler (godali forms
        # the batches itself, of the same indices).
        self.batch_sampler = _torch.utils.data.BatchSampler(sampler, batch_size, drop_last)
        self.shuffle = bool(shuffle)
        self.num_workers = num_workers
        self.pin_memory = bool(pin_memory)
        self.drop_last = drop_last
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = bool(persistent_workers)
        self.timeout = timeout
        self.generator = generator
        self.collate_fn = collate_fn
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory_device = pin_memory_device
        self._src = src
        self._samples = src.samples
        self._transform = src.transform
        # RandomErasing at the end of the transform: applied to the batch's tensors here,
        # sample after sample (see _run_host_steps).
        self._host_steps = _split_steps(src.transform)[1]
        # A collate_fn other than default_collate gets the list of (image, target) samples
        # torch would give it: the batch's images one by one, the targets as ints (or
        # target_transform's results).
        self._collate_fn = None if collate_fn in (None, _default_collate()) else collate_fn
        self._target_transform = src.target_transform
        self._approx = src.approximate
        self._tkey = _fingerprint(src.transform)  # what the pipelines are built from
        self._refused = None         # (fingerprint, reason) of a changed transform refused
        self._queue_depth = None     # godali's ImageFolderLoader sets it
        self._on_error = "raise"
        # Transforms godali cannot run exactly are refused now, not at the first batch.
        self.device = _torch_device(device)
        # exact (godali only): torchvision's pixels also where the DCT-domain downscale
        # of RandomResizedCrop's decoder would differ; None: install(exact=...)'s choice.
        self.exact = bool(_exact_default if exact is None else exact)
        self._gpu = None             # (device index, gpu_from) when the GPU runs the transform
        if self.device.type == "cuda":
            self._gpu = _gpu_for(self.device, src.transform, src.approximate)
        tr = _check_translation(src.transform, src.approximate, self.exact)
        # What the log line of install() names: the differences from torch's pixels (the
        # DCT-domain downscale happens in the CPU decoder only, not in nvJPEG's).
        gpu_decodes = self._gpu is not None and self._gpu[1] == 0
        self._notes = [RANDOM_CROP_DCT_NOTE] if tr.dct and not gpu_decodes else []
        if seed is None:
            g = generator
            seed = int(_torch.empty((), dtype=_torch.int64).random_(generator=g).item()) \
                % (1 << 31)
        self._seed = int(seed)       # augmentations (per shard: + shard_id)
        # The order without a DistributedSampler: a seed drawn once, with epochs giving
        # new orders, as RandomSampler's per-epoch draws.
        self._order_seed = int(self._dist.seed) if self._dist is not None else self._seed
        self._epoch = 0              # the epoch the next __iter__ starts (no sampler case)
        self._pipe = None
        self._pipe_at = None         # (epoch, batches) the pipeline delivers next
        self._pipe_idx = None        # the sampler's indices the pipeline reads
        self._pipe_ckpt = None       # the checkpoint it was restored from
        self._pipe_user = None       # weak reference to the iterator reading self._pipe
        self._iter = None            # the latest iterator (state_dict() is its)
        self._pending = None         # a loaded state, used by the next __iter__

    # -- sizes --------------------------------------------------------------------------

    def _per_rank(self):
        if self._dist is not None:
            return len(self._dist)
        return len(self._samples)

    def __len__(self):
        # torch's: len(sampler) batched (the dataset's current length for the samplers
        # torch makes; the DistributedSampler's share of it).
        m = len(self._dist) if self._dist is not None else len(self.sampler)
        if self.drop_last:
            return m // self.batch_size
        return -(-m // self.batch_size)

    # -- pipeline -----------------------------------------------------------------------

    def _dist_indices(self, epoch):
        """The indices the DistributedSampler deals this rank in `epoch`."""
        s = self._dist
        old = s.epoch
        try:
            s.epoch = epoch
            return tuple(int(i) for i in iter(s))
        finally:
            s.epoch = old

    def _make_pipeline(self, epoch, checkpoint=None, indices=None, seed=None, order_seed=None,
                       gpu=False):
        # seed, order_seed: a state's being checked (default: the loader's). gpu: (device
        # index, gpu_from) to place the transform on the GPU (default: self._gpu).
        gpu = self._gpu if gpu is False else gpu
        seed = self._seed if seed is None else seed
        order_seed = self._order_seed if order_seed is None else order_seed
        auto = self.num_workers == "auto"
        threads = "auto" if auto else min(256, max(1, self.num_workers))
        depth = self._queue_depth or \
            (max(2, int(self.prefetch_factor)) if self.prefetch_factor else
             ("auto" if auto else 2))
        pipe = _Pipeline(batch_size=self.batch_size, num_threads=threads,
                         device_id=None if gpu is None else gpu[0],
                         seed=seed + self.shard_id, prefetch_queue_depth=depth,
                         first_epoch=epoch, enable_checkpointing=True,
                         checkpoint=checkpoint, on_error=self._on_error)
        rargs = {"pad_last_batch": True, "seed": order_seed, "name": "Reader"}
        if indices is not None:
            samples = [self._samples[i] for i in indices]  # read as dealt, unshuffled
        else:
            samples = self._samples
            if self.shuffle:
                rargs["shuffle_after_epoch"] = True
        # The explicit file list, in the samples' order (torchvision's sorted os.walk,
        # symbolic links followed as the listing followed them), never a listing of
        # its own.
        root, files = _common_root([p for p, _ in samples])
        rargs.update(file_root=root, files=files, labels=[int(c) for _, c in samples])
        with pipe:
            jpegs, labels = _fn.readers.file(**rargs)
            images = translate(self._transform, jpegs, self._approx,
                               None if gpu is None else gpu[1], self.exact)
            pipe.set_outputs(images, labels)
        try:
            pipe.build()
        except BaseException:
            pipe.close()
            raise
        got = pipe.reader_meta("Reader")["epoch_size"]
        if got != len(samples):
            pipe.close()
            raise RuntimeError("godali.torch.DataLoader: godali's reader lists %d files in %s "
                               "but the dataset has %d samples" % (got, root, len(samples)))
        return pipe

    def _pipeline_for(self, epoch, batches, checkpoint):
        """(pipeline, shared): the pipeline an iterator starting at (epoch, batches)
        reads. shared: it is self._pipe (parked at the next epoch when the iterator ends);
        else the iterator's own, because another live iterator reads self._pipe."""
        idx = self._dist_indices(epoch) if self._dist is not None else None
        if self._pipe_busy():
            # torch lets several iterators of one loader run at once: this one gets a
            # pipeline of its own.
            return self._make_pipeline(epoch, checkpoint, idx), False
        if self._pipe is not None and self._pipe_at == (epoch, batches) and \
                self._pipe_ckpt == checkpoint and idx == self._pipe_idx:
            return self._pipe, True  # at the epoch's start, or restored by load_state_dict
        self._release()
        self._pipe = self._make_pipeline(epoch, checkpoint, idx)
        self._pipe_at = (epoch, batches)
        self._pipe_ckpt = checkpoint
        self._pipe_idx = idx
        return self._pipe, True

    def _pipe_busy(self):
        """The live iterator reading self._pipe, or None."""
        it = self._pipe_user() if self._pipe_user is not None else None
        if it is None or it._finished or it._pipe is not self._pipe:
            return None
        return it

    def _release(self):
        """Lets go of self._pipe: closed, or left to the live iterator reading it (which
        closes it when it ends)."""
        it = self._pipe_busy()
        if it is not None:
            it._own = True
            self._pipe = None
            self._pipe_at = None
            self._pipe_ckpt = None
        else:
            self.close()
        self._pipe_user = None

    def _next_epoch(self):
        if self._dist is not None:
            return int(self._dist.epoch)
        return self._epoch

    def __iter__(self):
        st, self._pending = self._pending, None
        if st is not None and st["checkpoint"] is not None:
            it = _LoaderIter(self, st["epoch"], st["batches"], st["checkpoint"])
        else:
            epoch = st["epoch"] if st is not None else self._next_epoch()
            why = self._refresh(epoch)
            if why is not None:
                return self._torch_epoch(epoch)
            it = _LoaderIter(self, epoch, 0, None)
        self._iter = it
        return it

    # -- the dataset, read again at every epoch (as torch's DataLoader reads it) --------

    def _refresh(self, epoch):
        """Reads the dataset again, as torch's DataLoader does at every epoch: a changed
        transform (another object, or the same one with other parameters), samples
        (ds.samples replaced or edited: curricula, relabelling) or approximate= gives a
        new pipeline; target_transform is applied as it is now. Returns None when godali
        serves the epoch, else the reason torch's DataLoader reads it (logged once per
        reason)."""
        try:
            src = _resolve(self.dataset)
        except UnsupportedDatasetError as e:
            return self._refuse(epoch, ("dataset", str(e)), _first_sentence(e))
        self._target_transform = src.target_transform
        n = len(src.samples)
        if self._dist is None and n != len(self.sampler):
            return self._refuse(epoch, ("length", n, len(self.sampler)),
                                "the dataset lists %d samples but its sampler %d"
                                % (n, len(self.sampler)))
        if n == 0:
            return self._refuse(epoch, ("empty",), "the dataset has no samples")
        key = _fingerprint(src.transform)
        changed = []
        if key != self._tkey:
            changed.append("transform")
        if src.approximate != self._approx:
            changed.append("approximate")
        if src.samples != self._samples:
            changed.append("samples")
        if not changed:
            self._refused = None
            return None
        gpu = self._gpu
        if "transform" in changed or "approximate" in changed:
            try:
                if self.device.type == "cuda":
                    gpu = _gpu_for(self.device, src.transform, src.approximate)
                else:
                    _check_translation(src.transform, src.approximate)
            except UnsupportedTransformError as e:
                return self._refuse(epoch, ("transform", key, src.approximate),
                                    "its transform changed to one godali does not serve: "
                                    "%s" % _first_sentence(e))
        _log.info("DataLoader(%s): epoch %d: the dataset's %s changed: godali builds its "
                  "pipeline again", _describe(self.dataset), epoch, " and ".join(changed))
        self._release()
        self._src = src
        self._samples = src.samples
        self._transform = src.transform
        self._approx = src.approximate
        self._tkey = key
        self._gpu = gpu
        self._refused = None
        return None

    def _refuse(self, epoch, what, reason):
        if self._refused is None or self._refused[0] != what:
            _log.info("DataLoader(%s): epoch %d: %s: torch's DataLoader reads this epoch "
                      "(godali serves the next one it can)", _describe(self.dataset), epoch,
                      reason)
        self._refused = (what, reason)
        return reason

    def _torch_epoch(self, epoch):
        """One epoch read by torch's own DataLoader, with this loader's arguments and
        sampler (its batches moved to `device` for a CUDA loader)."""
        kw = {}
        workers = self.num_workers
        if workers == "auto":
            workers = len(os.sched_getaffinity(0))
        if workers > 0:
            if self.prefetch_factor is not None:
                kw["prefetch_factor"] = self.prefetch_factor
            if self.multiprocessing_context is not None:
                kw["multiprocessing_context"] = self.multiprocessing_context
        loader = _TorchDataLoader()(
            self.dataset, batch_size=self.batch_size, sampler=self.sampler,
            num_workers=workers, collate_fn=self.collate_fn,
            pin_memory=self.pin_memory, drop_last=self.drop_last, timeout=self.timeout,
            generator=self.generator, **kw)
        if self._dist is None:
            self._epoch = epoch + 1
        self._iter = None
        return _TorchEpoch(loader, self.device if self.device.type == "cuda" else None)

    # -- StatefulDataLoader protocol ------------------------------------------------------

    def state_dict(self):
        """The state to resume from: the live iterator's position, or (before iterating,
        or after an epoch ended) the start of the next epoch."""
        if self._pending is not None:
            return dict(self._pending)
        if self._iter is not None and not self._iter._finished:
            return self._iter.state_dict()
        return self._state(self._next_epoch(), 0, None)

    def _state(self, epoch, batches, checkpoint):
        return {"format": _FORMAT, "version": 1, "epoch": int(epoch), "batches": int(batches),
                "seed": self._seed, "order_seed": self._order_seed,
                "shard": [self.shard_id, self.num_shards], "batch_size": self.batch_size,
                "samples": len(self._samples), "checkpoint": checkpoint}

    def load_state_dict(self, state):
        """Makes the next iter(loader) continue from `state` (from state_dict() of this
        or another loader over the same data set with the same arguments).

        The whole state is checked before anything changes: a state refused with
        ValueError (naming the key) leaves the loader as it was. A mid-epoch state's
        checkpoint is checked by the engine here, and the pipeline restored from it is
        the one the next iter(loader) reads."""
        st = self._checked_state(state)
        pipe = None
        idx = self._dist_indices(st["epoch"]) if self._dist is not None else None
        if st["checkpoint"] is not None:
            why = self._refresh(st["epoch"])  # the pipeline of the dataset as it is now
            if why is not None:
                raise ValueError("godali.torch.DataLoader.load_state_dict: a state %d "
                                 "batches into epoch %d needs godali's pipeline, but %s"
                                 % (st["batches"], st["epoch"], why))
            try:
                pipe = self._make_pipeline(st["epoch"], st["checkpoint"], idx, st["seed"],
                                           st["order_seed"])
            except (_GodaliError, RuntimeError) as e:
                raise ValueError("godali.torch.DataLoader.load_state_dict: key 'checkpoint': "
                                 "the pipeline refuses it: %s" % e) from None
        # Everything checked: apply.
        self._seed = st["seed"]
        self._order_seed = st["order_seed"]
        self._epoch = st["epoch"]
        if self._dist is not None:
            self._dist.set_epoch(st["epoch"])
        self._release()
        if pipe is not None:
            self._pipe, self._pipe_at, self._pipe_ckpt = pipe, (st["epoch"], st["batches"]), \
                st["checkpoint"]
            self._pipe_idx = idx
        self._pending = st

    def _checked_state(self, state):
        """state, checked key by key (ValueError naming the key), as a new dict."""
        where = "godali.torch.DataLoader.load_state_dict"
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise ValueError("%s: not a state from godali.torch.DataLoader.state_dict() "
                             "(key 'format' is not %r)" % (where, _FORMAT))
        if state.get("version") != 1:
            raise ValueError("%s: key 'version': unsupported version %r"
                             % (where, state.get("version")))
        keys = ("format", "version", "epoch", "batches", "seed", "order_seed", "shard",
                "batch_size", "samples", "checkpoint")
        for key in keys:
            if key not in state:
                raise ValueError("%s: the state has no key %r" % (where, key))

        def integer(key, lo=None, hi=None, value=None):
            v = state[key] if value is None else value
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError("%s: key %r must be an int, got %r" % (where, key, v))
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise ValueError("%s: key %r is %d, expected %s to %s"
                                 % (where, key, v, lo, "any" if hi is None else hi))
            return v

        st = dict(state)
        for key in ("epoch", "seed", "order_seed", "batch_size", "samples"):
            st[key] = integer(key, lo=0, hi=(1 << 63) - 1)
        shard = state["shard"]
        if not isinstance(shard, (list, tuple)) or len(shard) != 2:
            raise ValueError("%s: key 'shard' must be [shard_id, num_shards], got %r"
                             % (where, shard))
        st["shard"] = [integer("shard", lo=0, value=x) for x in shard]
        for key, mine in (("batch_size", self.batch_size), ("samples", len(self._samples)),
                          ("shard", [self.shard_id, self.num_shards])):
            if st[key] != mine:
                raise ValueError("%s: the state is from a loader with %s %r, this one has "
                                 "%r" % (where, key, st[key], mine))
        steps = len(self)
        st["batches"] = integer("batches", lo=0, hi=max(steps - 1, 0))
        ckpt = state["checkpoint"]
        if st["batches"] == 0:
            if ckpt is not None:
                raise ValueError("%s: key 'checkpoint' must be None at the start of an epoch "
                                 "(batches 0)" % where)
            return st
        if not isinstance(ckpt, str):
            raise ValueError("%s: key 'checkpoint': a state %d batches into an epoch needs "
                             "the pipeline's checkpoint text, got %s"
                             % (where, st["batches"], type(ckpt).__name__))
        try:
            doc = _json.loads(ckpt)
            cst = doc["state"]
            at = (cst["epoch"], cst["iteration"], doc["pipeline"]["seed"])
        except (ValueError, TypeError, KeyError):
            raise ValueError("%s: key 'checkpoint' is not a godali pipeline checkpoint"
                             % where) from None
        want = (st["epoch"], st["batches"], st["seed"] + self.shard_id)
        if at != want:
            raise ValueError("%s: key 'checkpoint' is at epoch %r, batch %r, seed %r; the "
                             "state says epoch %d, batch %d, seed %d"
                             % ((where,) + at + want))
        return st

    def tuning(self):
        """The engine's num_threads / prefetch_queue_depth and why (Pipeline.tuning()),
        once an epoch has started; None before."""
        return self._pipe.tuning() if self._pipe is not None else None

    def close(self):
        """Stops the engine's threads now (also done when the loader is collected)."""
        if self._pipe is not None:
            self._pipe.close()
        self._pipe = None
        self._pipe_at = None
        self._pipe_ckpt = None
        self._pipe_user = None

    def __repr__(self):
        return "godali.torch.DataLoader(%r, batch_size=%d, shuffle=%s, shard %d/%d)" % (
            self.dataset, self.batch_size, self.shuffle, self.shard_id, self.num_shards)


def _pinned(obj):
    """The tensors in obj (a tensor, or lists, tuples and dicts of them, as default_collate
    makes) in pinned memory."""
    if isinstance(obj, _torch.Tensor):
        return obj if obj.is_cuda or obj.is_pinned() else obj.pin_memory()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_pinned(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _pinned(v) for k, v in obj.items()}
    return obj


def _moved(obj, device):
    """_pinned's structures with their tensors copied to device (asynchronously)."""
    if isinstance(obj, _torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_moved(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _moved(v, device) for k, v in obj.items()}
    return obj


def _torch_device(device):
    """DataLoader's device=: "cpu" (None) or a CUDA device of this process's torch."""
    if device is None:
        return _torch.device("cpu")
    try:
        dev = _torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError("godali.torch.DataLoader: device must be 'cpu' or 'cuda[:N]', not %r"
                         % (device,)) from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError("godali.torch.DataLoader: device must be 'cpu' or 'cuda[:N]', not %r"
                         % (device,))
    if dev.type == "cuda":
        if not _torch.cuda.is_available():
            raise RuntimeError("godali.torch.DataLoader: device=%r, but torch sees no CUDA "
                               "device" % (device,))
        if dev.index is None:
            dev = _torch.device("cuda", _torch.cuda.current_device())
    return dev


_cpu_fallback_said = False


def _gpu_for(device, transform, approximate):
    """(device index, gpu_from) to run the translation of transform on the CUDA device,
    or None when this process loaded the CPU flavour of godali (decode on the CPU, copy
    the batches from pinned memory: logged once per process)."""
    global _cpu_fallback_said
    _, gpu_from = gpu_placement(transform, approximate)
    if gpu_from is not None:
        return device.index, gpu_from
    if not _cpu_fallback_said:
        _cpu_fallback_said = True
        from . import _lib
        _log.warning("DataLoader(device=%r): godali's %s flavour is loaded (%s), which has no "
                  "GPU operators: images are decoded and transformed on the CPU and the "
                  "batches copied to the GPU from pinned memory (load libgodali_cuda.so for "
                  "GPU decoding: docs/pytorch.md#gpu)", str(device), _lib.get().flavour,
                  _lib.get().path)
    return None


def _default_collate():
    try:
        from torch.utils.data import default_collate
    except ImportError:  # torch < 1.11
        from torch.utils.data.dataloader import default_collate
    return default_collate


class _LoaderIter:
    """One epoch of a godali.torch.DataLoader (its state_dict() is the loader's).

    Several may be live at once (torch allows it): the first reads the loader's pipeline,
    the others one of their own each, closed when they end."""

    def __init__(self, loader, epoch, batches, checkpoint):
        self._loader = loader
        self._epoch = epoch
        self._done = batches
        self._steps = len(loader)
        self._finished = False
        self._per_rank = loader._per_rank()
        self._samples = loader._samples  # for naming a file that fails
        self._pipe, shared = loader._pipeline_for(epoch, batches, checkpoint)
        self._own = not shared   # True: this iterator closes its pipeline when it ends
        if shared:
            loader._pipe_at = None  # in use: not at the start of an epoch any more
            loader._pipe_user = weakref.ref(self)
        if loader._dist is None:
            loader._epoch = epoch + 1
        # device "cuda": the images come from the GPU, the labels (and, decoded on the CPU,
        # the images) are copied there from pinned memory.
        self._to_device = loader.device if loader.device.type == "cuda" else None
        self._to_pin = self._to_device is not None or \
            (loader.pin_memory and _torch.cuda.is_available())
        self._target_transform = loader._target_transform  # the dataset's, this epoch
        self._collate = _default_collate() if self._target_transform is not None else None

    def __iter__(self):
        return self

    def __len__(self):
        return self._steps

    def state_dict(self):
        ld = self._loader
        if self._finished or self._done >= self._steps:
            # With a DistributedSampler the sampler's epoch decides (torch repeats the
            # order until set_epoch is called).
            nxt = self._epoch + 1 if ld._dist is None else int(ld._dist.epoch)
            return ld._state(nxt, 0, None)
        if self._done == 0:
            return ld._state(self._epoch, 0, None)
        return ld._state(self._epoch, self._done, self._pipe.checkpoint())

    def __next__(self):
        ld = self._loader
        if self._finished or self._done >= self._steps:
            self._finish()
            raise StopIteration
        pipe = self._pipe
        try:
            images, labels = pipe._epoch_outputs()
        except StopIteration:
            self._finish()
            raise
        except _DataError as e:
            # As torch: the batch holding the bad file raises what PIL raises on it, and
            # the next next() goes on with the following batch.
            self._done += 1
            if self._done >= self._steps:
                self._finish()
            raise _torch_data_error(e, self._samples) from None
        info = pipe.batch_info
        if info.iteration != self._done:
            raise RuntimeError("godali.torch.DataLoader: expected batch %d of epoch %d, got "
                               "batch %d of epoch %d" % (self._done, self._epoch,
                                                         info.iteration, info.epoch))
        bs = ld.batch_size
        keep = max(0, min(bs, self._per_rank - self._done * bs))
        try:
            x = images._as_torch()
        except ValueError as e:
            raise RuntimeError("godali.torch.DataLoader: the images of a batch have different "
                               "sizes, which DataLoader's default collate cannot stack (%s): "
                               "end the transform with a fixed size (Resize((h, w)), "
                               "CenterCrop, RandomResizedCrop)" % e) from None
        y = labels._as_torch().reshape(-1)
        if keep < bs:
            x, y = x[:keep], y[:keep]
        y = y.to(_torch.int64)
        if ld._host_steps:
            x = _run_host_steps(x, ld._host_steps)
        if ld._collate_fn is not None:
            tt = ld._target_transform
            ys = [int(v) for v in y.tolist()]
            if tt is not None:
                ys = [tt(v) for v in ys]
            batch = ld._collate_fn([(x[i], v) for i, v in enumerate(ys)])
            if self._to_pin:
                batch = _pinned(batch)
            if self._to_device is not None:
                batch = _moved(batch, self._to_device)
            self._done += 1
            if self._done >= self._steps:
                self._finish()
            return batch
        if self._collate is not None:
            tt = self._target_transform
            y = self._collate([tt(int(v)) for v in y.tolist()])
        if self._to_pin:
            if not x.is_cuda:  # decoded on the GPU: already there
                x = x if x.is_pinned() else x.pin_memory()
            y = _pinned(y)
        if self._to_device is not None:
            x = x.to(self._to_device, non_blocking=True)  # nothing to do when there
            y = _moved(y, self._to_device)
        self._done += 1
        if self._done >= self._steps:
            self._finish()
        return x, y

    next = __next__

    def _finish(self):
        if self._finished:
            return
        self._finished = True
        ld = self._loader
        if self._own:
            self._pipe.close()
            return
        if ld._pipe is self._pipe:
            # Consumed to the end: the pipeline moves on to the next epoch, reusable when
            # that is the one asked for next.
            try:
                while True:
                    try:
                        self._pipe._epoch_outputs()
                    except _DataError:
                        pass  # a bad file in a batch past the last one kept
            except StopIteration:
                pass
            self._pipe.reset()
            ld._pipe_at = (self._epoch + 1, 0)
            ld._pipe_user = None


class _TorchEpoch:
    """An epoch that torch's DataLoader reads for a godali.torch.DataLoader (the dataset
    changed to something godali does not serve): its batches, moved to `device` when
    given."""

    def __init__(self, loader, device):
        self._loader = loader
        self._it = iter(loader)
        self._device = device

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        batch = next(self._it)
        if self._device is not None:
            batch = _moved(_pinned(batch), self._device)
        return batch

    next = __next__


# --- what the dataset looks like, to tell when it changed ------------------------------

def _fingerprint(obj, _seen=None, _depth=0):
    """A value that changes when `obj` (a transform) would behave differently: its
    class and, recursively, its attributes (sizes, probabilities, interpolation, the
    transforms of a Compose, edited in place or not). Functions, classes and objects
    without attributes count by identity."""
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return (type(obj).__name__, obj)
    if isinstance(obj, enum.Enum):
        return ("enum", type(obj).__qualname__, repr(obj.value))
    if isinstance(obj, _torch.dtype):
        return ("dtype", str(obj))
    if isinstance(obj, _torch.Tensor):
        t = obj.detach().cpu()
        return ("tensor", str(t.dtype), tuple(t.shape), tuple(t.reshape(-1).tolist()))
    if _depth > 12:
        return ("deep", id(obj))
    seen = _seen if _seen is not None else set()
    if id(obj) in seen:
        return ("cycle", id(obj))
    seen = seen | {id(obj)}

    def fp(v):
        return _fingerprint(v, seen, _depth + 1)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(fp(v) for v in obj))
    if isinstance(obj, dict):
        return ("dict", tuple(sorted(((repr(k), fp(v)) for k, v in obj.items()),
                                     key=lambda kv: kv[0])))
    if isinstance(obj, (set, frozenset)):
        return ("set", tuple(sorted(repr(fp(v)) for v in obj)))
    if isinstance(obj, (type, types_mod.FunctionType, types_mod.BuiltinFunctionType,
                        types_mod.MethodType)):
        return ("id", id(obj))
    attrs = getattr(obj, "__dict__", None)
    if not attrs:
        return ("obj", type(obj).__module__, type(obj).__qualname__, id(obj))
    return ("obj", type(obj).__module__, type(obj).__qualname__,
            tuple(sorted((k, fp(v)) for k, v in attrs.items())))


# --- a file that fails, raised as torch would raise it -------------------------------

_pil_error_classes = {}


def _pil_error_class(etype):
    """A DataError that is also an `etype` (what PIL raised): `except OSError` and
    `except PIL.UnidentifiedImageError` catch it as they catch torch's."""
    cls = _pil_error_classes.get(etype)
    if cls is None:
        name = etype.__name__
        if etype.__module__ == "builtins":
            name = "Image" + name  # ImageOSError, ImageSyntaxError, ...
        try:
            cls = type(name, (_DataError, etype), {
                "__module__": __name__,
                "__doc__": "A file godali could not decode, on which PIL raises %s.%s "
                           "(godali.DataError and %s alike)."
                           % (etype.__module__, etype.__qualname__, etype.__name__)})
        except TypeError:  # an exception class that cannot be mixed with DataError
            cls = _DataError
        _pil_error_classes[etype] = cls
    return cls


def _failed_file(message, samples):
    """The sample path an engine error message names ("<file>: node ...: why"), or
    None."""
    by_abs = {}
    for p, _ in samples:
        by_abs.setdefault(os.path.normpath(os.path.abspath(p)), p)
    at = message.find(": ")
    while at > 0:
        cand = os.path.normpath(message[:at])
        if cand in by_abs:
            return by_abs[cand]
        at = message.find(": ", at + 1)
    return None


def _torch_data_error(err, samples):
    """The exception torch's DataLoader would raise for the batch that failed with the
    engine's DataError `err`: what PIL (torchvision's loader) raises on the file, as a
    class that is both that exception and godali.DataError, naming the file."""
    msg = str(err)
    path = _failed_file(msg, samples)
    if path is None:
        return err
    try:
        _pil_rgb_loader(path)
    except Exception as pil:  # noqa: BLE001 - what PIL raises is what torch would raise
        text = "%s: %s (godali: %s)" % (path, pil, msg)
        try:
            e = _pil_error_class(type(pil))(text)
        except Exception:  # noqa: BLE001 - a class whose constructor wants more
            e = _DataError(text)
        e.status = getattr(err, "status", None)
        e.path = path
        return e
    e = _DataError("%s: godali cannot decode this file, which PIL reads (godali: %s)"
                   % (path, msg), getattr(err, "status", None))
    e.path = path
    return e


def _check_translation(transform, approximate, exact=False):
    """Translates `transform` into a throwaway graph (never built): raises the
    UnsupportedTransformError the loader would raise at its first batch; returns the
    _Translator (its .used: the image operators of the translation, in graph order;
    .dct: whether the CPU random-crop decoder may downscale in the DCT domain)."""
    pipe = _Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        jpegs, _ = _fn.readers.file(file_root=".", files=["_"], labels=[0])
        tr = _Translator(_split_steps(transform)[0], approximate, None, exact)
        tr.run(jpegs)
    return tr


# --- install(): torch.utils.data.DataLoader served by godali where it can -------------

_log = logging.getLogger("godali.torch")
_exact_default = False  # install(exact=...): DataLoader's exact when not given
_installed = None   # {"orig": torch's class, "cls": the dispatcher, "rebound": [(module, name)]}
# The errors that mean "godali cannot serve this faithfully": under install() torch's
# DataLoader takes such a loader; everything else (torch's own argument errors) is raised.
_NOT_SERVED = (UnsupportedDatasetError, UnsupportedArgumentError, UnsupportedTransformError)


def _first_sentence(e):
    msg = str(e).replace("godali.torch.DataLoader: ", "").replace("godali.torch: ", "")
    return msg.split(". Supported transforms:")[0]


def _dispatch(orig, args, kwargs):
    import inspect
    try:
        bound = inspect.signature(orig.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return orig(*args, **kwargs)  # torch says what is wrong with the call
    given = dict(bound.arguments)
    given.pop(next(iter(given)))  # self
    extra = given.pop("kwargs", None) or {}
    given.update(extra)
    dataset = given.get("dataset")
    known = set(inspect.signature(DataLoader.__init__).parameters) - \
        {"self", "seed", "device", "exact"}
    unknown = sorted(set(given) - known)
    if unknown:
        reason = "argument %s is not one godali takes" % ", ".join(unknown)
    else:
        try:
            loader = DataLoader(**given)
        except _NOT_SERVED as e:
            reason = _first_sentence(e)
        else:
            here = [type(t).__name__ for t in loader._host_steps]
            if loader._collate_fn is not None:
                here.append("collate_fn")
            _log.info("DataLoader(%s, batch_size=%s): served by godali%s%s",
                      _describe(dataset), loader.batch_size,
                      "".join("; " + n for n in loader._notes),
                      "; %s on each batch in this process, drawing from torch's generator"
                      % " and ".join(here) if here else "")
            return loader
    loader = orig(*args, **kwargs)
    _log.info("DataLoader(%s, batch_size=%s): torch's DataLoader keeps it: %s",
              _describe(dataset), getattr(loader, "batch_size", "?"), reason)
    return loader


def _make_dispatcher(orig):
    meta = type(orig)

    class _DispatchMeta(meta):
        # isinstance(loader, torch.utils.data.DataLoader) holds for godali's loaders too.
        def __instancecheck__(cls, obj):
            if cls is holder[0]:
                return isinstance(obj, (orig, DataLoader))
            return meta.__instancecheck__(cls, obj)

        def __subclasscheck__(cls, sub):
            if cls is holder[0]:
                return issubclass(sub, (orig, DataLoader))
            return meta.__subclasscheck__(cls, sub)

    holder = []

    class InstalledDataLoader(orig, metaclass=_DispatchMeta):
        """torch.utils.data.DataLoader after godali.torch.install(): a
        godali.torch.DataLoader where godali serves the dataset, its transform and the
        arguments faithfully, torch's own DataLoader otherwise (one log line each).
        Subclasses of it are torch's DataLoader, unchanged."""

        def __new__(cls, *args, **kwargs):
            if cls is not holder[0]:
                return orig.__new__(cls)
            return _dispatch(orig, args, kwargs)

    InstalledDataLoader.__module__ = __name__
    holder.append(InstalledDataLoader)
    return InstalledDataLoader


def _ensure_log_handler():
    """The decision lines are INFO: shown on stderr unless the program configured
    logging itself."""
    if _log.handlers or logging.getLogger().handlers:
        if _log.level == logging.NOTSET and logging.getLogger().level > logging.INFO:
            _log.setLevel(logging.INFO)
        return
    h = logging.StreamHandler()
    h.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    _log.addHandler(h)
    _log.setLevel(logging.INFO)


# Where the two lines go, said by install()'s docstring, its log and docs/pytorch.md.
_PLACEMENT = ("the two lines `import godali.torch; godali.torch.install()` go after the "
              "module docstring and any `from __future__` imports, before anything that "
              "imports torch.utils.data's DataLoader")


def _is_library(mod):
    """True for modules install() leaves alone even when they bound torch's DataLoader:
    torch's and godali's own (torch.utils.data.dataloader's class refers to itself by that
    name), and code installed with Python (standard library, site-packages,
    dist-packages), whose use of the class (subclasses, isinstance checks, loaders made
    again from type(loader)) godali does not know. Modules without a file count too."""
    top = mod.__name__.partition(".")[0]
    if top in ("torch", "torchvision", "godali"):
        return True
    f = getattr(mod, "__file__", None)
    if not isinstance(f, str) or not f:
        return True
    f = os.path.realpath(f)
    parts = f.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    import sysconfig
    for key in ("stdlib", "platstdlib"):
        d = sysconfig.get_paths().get(key)
        if d and f.startswith(os.path.realpath(d) + os.sep):
            return True
    return False


def install(exact=False):
    """Makes torch.utils.data.DataLoader(...) return a godali.torch.DataLoader whenever
    godali serves the dataset, its transform and the arguments faithfully, and torch's
    own DataLoader otherwise, with one log line (logger "godali.torch", INFO) per loader
    saying which and, when torch keeps it, why.

    Where: after the module docstring and any `from __future__` imports (which must come
    first in a Python file), before anything imports torch.utils.data's DataLoader.
    Called later, it still works where it can: it replaces the attribute
    torch.utils.data.DataLoader (code that says torch.utils.data.DataLoader(...) is
    served, whenever it imported torch), and every name bound to torch's class in the
    module that calls install(), in __main__ and in the program's own modules already
    imported (those outside the standard library, site-packages and dist-packages).
    Libraries imported earlier that bound the name themselves (`from torch.utils.data
    import DataLoader` in Lightning, timm, ...) keep torch's class, as do torch's own
    modules (torch.utils.data.dataloader.DataLoader: torch's class refers to itself by
    that name); install() logs those it leaves, once. isinstance(loader,
    torch.utils.data.DataLoader) is true for godali's loaders through the replaced names.
    Samplers are used under their own names (torch.utils.data.distributed.
    DistributedSampler works as it is).
    exact=True: loaders give torchvision's pixels where godali's faster default differs
    (RandomResizedCrop as the first transform decodes a JPEG window at least twice the
    output size scaled down in the DCT domain: RANDOM_CROP_DCT_NOTE); the same as
    DataLoader(..., exact=True) for every loader made until uninstall().
    Calling it again only updates exact; uninstall() undoes it.
    """
    global _installed, _exact_default
    import sys
    _exact_default = bool(exact)
    if _installed is not None:
        return
    tud = _torch.utils.data
    orig = tud.DataLoader
    cls = _make_dispatcher(orig)
    rebound = [(tud, "DataLoader")]
    tud.DataLoader = cls
    caller = sys._getframe(1).f_globals.get("__name__")
    early, kept = [], []
    for modname, mod in list(sys.modules.items()):
        if mod is None or mod is tud:
            continue
        try:
            names = [n for n, v in list(vars(mod).items()) if v is orig]
        except TypeError:  # no __dict__
            continue
        if not names:
            continue
        mine = modname in (caller, "__main__") or not _is_library(mod)
        for name in names:
            if mine:
                setattr(mod, name, cls)
                rebound.append((mod, name))
                if modname != caller:
                    early.append("%s.%s" % (modname, name))
            elif modname.partition(".")[0] not in ("torch", "godali"):
                kept.append("%s.%s" % (modname, name))
    _installed = {"orig": orig, "cls": cls, "rebound": rebound}
    _ensure_log_handler()
    if early:
        _log.info("install(): %s (imported before install()) now name%s the installed "
                  "DataLoader", ", ".join(sorted(early)), "s" if len(early) == 1 else "")
    if kept:
        _log.info("install(): %s (librar%s imported before install()) keep%s torch's "
                  "DataLoader: %s", ", ".join(sorted(kept)),
                  "y" if len(kept) == 1 else "ies", "s" if len(kept) == 1 else "",
                  _PLACEMENT)


def uninstall():
    """Undoes install(): the names it replaced are torch's DataLoader again (where
    nothing else replaced them since). Loaders already made stay what they are."""
    global _installed, _exact_default
    _exact_default = False
    if _installed is None:
        return
    for mod, name in _installed["rebound"]:
        if getattr(mod, name, None) is _installed["cls"]:
            setattr(mod, name, _installed["orig"])
    _installed = None


def installed():
    """True between install() and uninstall()."""
    return _installed is not None
