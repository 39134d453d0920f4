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
import json as _json
import math
import os
import warnings

import torch as _torch

from . import fn as _fn
from . import types as _types
from ._lib import GodaliError as _GodaliError
from .pipeline import Pipeline as _Pipeline
from .plugin.pytorch import _find_classes

__all__ = ["DataLoader", "ImageFolder", "DistributedSampler", "datasets",
           "SUPPORTED_TRANSFORMS", "UnsupportedTransformError"]

# torchvision's IMG_EXTENSIONS (torchvision.datasets.folder).
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

SUPPORTED_TRANSFORMS = (
    "Compose", "RandomResizedCrop", "Resize", "CenterCrop", "RandomCrop",
    "RandomHorizontalFlip", "RandomVerticalFlip", "ToTensor", "PILToTensor",
    "ConvertImageDtype", "Normalize", "ColorJitter", "RandomRotation", "GaussianBlur",
    "RandomGrayscale", "Grayscale(num_output_channels=3)", "AutoAugment", "RandAugment",
    "TrivialAugmentWide",
)


class UnsupportedTransformError(ValueError):
    """A torchvision transform (or one of its parameters) that godali cannot run
    with torchvision's exact semantics."""


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

    The loader reads shard `rank` of `num_replicas` (readers.file's shard_id/num_shards):
    per epoch every rank gets ceil(n / num_replicas) samples (floor with drop_last), the
    shards together cover the data set, and set_epoch(e) selects epoch e's order (a
    function of seed and epoch). Which samples a rank gets differs from torch's (torch
    deals indices round-robin; godali gives contiguous blocks of the shuffled order, and
    the padding repeats a shard's last sample rather than the first ones).
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
        raise TypeError("godali.torch.DistributedSampler drives a godali.torch.DataLoader; "
                        "it does not yield indices itself")


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


def _round_half_even(x):
    return int(round(x))


def _one_fill(fill, what):
    if fill is None:
        return 0.0
    if isinstance(fill, (int, float)):
        return float(fill)
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


def _tv_augs(space, bins):
    """space: "auto" (AutoAugment: no Identity, Invert last), "rand" (RandAugment) or
    "wide" (TrivialAugmentWide)."""
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
        out.append(d)
    return out


def _flatten(transform):
    if transform is None:
        return []
    name = type(transform).__name__
    if name == "Compose":
        out = []
        for t in transform.transforms:
            out.extend(_flatten(t))
        return out
    if isinstance(transform, (list, tuple)):
        out = []
        for t in transform:
            out.extend(_flatten(t))
        return out
    return [transform]


class _Translator:
    """Turns a list of torchvision transforms into godali operators inside the current
    pipeline. Images are HWC uint8 until the tensor conversion, which becomes the final
    crop_mirror_normalize (ToTensor's /255 and Normalize fold into its mean and std)."""

    def __init__(self, transforms, approximate):
        self.ts = transforms
        self.approx = approximate
        self.size = None       # (h, w) when every image has the same, known size
        self.tensor = None     # None (PIL image), "uint8" or a float dtype name
        self.mean = 0.0        # the output is (x - mean) / std, x the uint8 value
        self.std = 1.0
        self.mean_c = None     # per-channel, after a Normalize
        self.std_c = None
        self.geo = []          # pending geometric steps (kind, args) for the tail fold

    # The tail of the graph: crop/flip steps that commute with normalisation are kept
    # pending, so that a final CenterCrop and horizontal flip fold into
    # crop_mirror_normalize.
    def run(self, jpegs):
        ts = list(self.ts)
        if ts and type(ts[0]).__name__ == "RandomResizedCrop":
            images = self._rrc(jpegs, ts.pop(0), decode=True)
        else:
            images = _fn.decoders.image(jpegs, output_type=_types.RGB)
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
                images = _fn.crop(images, **a)
            elif kind == "flip":
                images = _fn.flip(images, **a)
        self.geo = []
        return images

    def _one(self, images, t):
        name = type(t).__name__
        meth = getattr(self, "_t_" + name, None)
        if meth is None:
            raise _unsupported(name)
        if self.tensor is not None and name not in ("Normalize", "ConvertImageDtype",
                                                     "RandomHorizontalFlip",
                                                     "RandomVerticalFlip", "CenterCrop"):
            raise _unsupported("%s after ToTensor/PILToTensor" % name,
                               "godali runs image transforms before the tensor conversion; "
                               "move %s before ToTensor()" % name)
        return meth(images, t)

    # -- geometry -------------------------------------------------------------------

    def _rrc(self, images, t, decode):
        h, w = _pair(t.size, "RandomResizedCrop")
        scale = [float(x) for x in t.scale]
        ratio = [float(x) for x in t.ratio]
        interp = _interp(t.interpolation, "RandomResizedCrop")
        if decode:
            # torchvision's get_params: 10 attempts, then a center crop with the ratio
            # clamped; the decoder implements exactly that and decodes only the window.
            images = _fn.decoders.image_random_crop(
                images, output_type=_types.RGB, random_area=scale,
                random_aspect_ratio=ratio, num_attempts=10)
            # PIL images are always resized with antialiasing (torchvision ignores
            # antialias for them).
            images = _fn.resize(images, resize_x=w, resize_y=h, interp_type=interp,
                                antialias=True)
        else:
            images = self._flush(images)
            images = _fn.random_resized_crop(images, size=[h, w], random_area=scale,
                                             random_aspect_ratio=ratio, num_attempts=10,
                                             interp_type=interp, antialias=True)
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
            images = _fn.resize(images, interp_type=interp, antialias=True, **kw)
            self.size = None
        else:
            if max_size is not None:
                raise ValueError("godali.torch: Resize: max_size is only supported when "
                                 "size is an int (as torchvision)")
            h, w = _pair(size, "Resize")
            images = _fn.resize(images, resize_x=w, resize_y=h, interp_type=interp,
                                antialias=True)
            self.size = (h, w)
        return images

    def _t_CenterCrop(self, images, t):
        ch, cw = _pair(t.size, "CenterCrop")
        a = {"crop": [ch, cw], "out_of_bounds_policy": "pad", "fill_values": [0]}
        if self.size is not None:
            # torchvision: top = int(round((h - ch) / 2)) (half to even); the engine's
            # start is floor(pos * (h - ch) + 0.5): pick pos to land on the same pixel.
            h, w = self.size
            for dim, full, c in (("y", h, ch), ("x", w, cw)):
                d = full - c
                if d > 0:
                    a["crop_pos_" + dim] = _round_half_even(d / 2.0) / d
                elif d < 0:
                    # torchvision pads (c - full) // 2 on the top/left when too small:
                    # start = -((c - full) // 2) = floor(pos * d + 0.5).
                    start = -((c - full) // 2)
                    a["crop_pos_" + dim] = (start - 0.25) / d if start else 0.0
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
            images = _fn.crop(images, crop=[th, tw], random_offset=True, **kw)
            self.size = (th, tw)
            return images
        h, w = self.size
        if left or top or right or bottom:
            H, W = h + top + bottom, w + left + right
            images = _fn.crop(images, crop=[H, W], out_of_bounds_policy="pad",
                              fill_values=[fill],
                              crop_pos_x=left / (left + right) if left + right else 0.5,
                              crop_pos_y=top / (top + bottom) if top + bottom else 0.5)
            h, w = H, W
        if t.pad_if_needed and (w < tw or h < th):
            # torchvision pads (tw - w) on both the left and the right (and likewise
            # vertically): the padded image is w + 2 * (tw - w) wide.
            px, py = max(0, tw - w), max(0, th - h)
            H, W = h + 2 * py, w + 2 * px
            images = _fn.crop(images, crop=[H, W], out_of_bounds_policy="pad",
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
        images = _fn.crop(images, crop=[th, tw], **pos)
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
            return _fn.rotate(images, angle=angle, fill_value=fill, interp_type=interp)
        return _fn.rotate(images, angle=angle, keep_size=True, fill_value=fill,
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
        return _internal_op("_tv_color_jitter")(images, **kw)

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
            return _fn.hsv(images, saturation=0.0)
        # saturation 0 gives every channel the luma 0.299 R + 0.587 G + 0.114 B: PIL's "L".
        sat = _fn.random.choice([0.0, 1.0], p=[p, 1.0 - p], dtype=_types.FLOAT)
        return _fn.hsv(images, saturation=sat)

    def _t_Grayscale(self, images, t):
        if int(t.num_output_channels) != 3:
            raise _unsupported("Grayscale(num_output_channels=%d)" % t.num_output_channels,
                               "only 3 output channels")
        images = self._flush(images)
        return _fn.hsv(images, saturation=0.0)

    def _t_GaussianBlur(self, images, t):
        images = self._flush(images)
        kx, ky = [int(k) for k in t.kernel_size]
        lo, hi = [float(s) for s in t.sigma]
        sigma = lo if lo == hi else _fn.random.uniform(range=[lo, hi])
        # torchvision's kernel_size is (x, y); godali's window_size is (height, width).
        return _fn.gaussian_blur(images, window_size=[ky, kx], sigma=sigma)

    # -- AutoAugment family -----------------------------------------------------------

    def _tv_auto_aug(self, images, what, t, policy):
        images = self._flush(images)
        interp = _interp(t.interpolation, what)
        if interp != _types.INTERP_NN:
            if interp != _types.INTERP_LINEAR:
                raise _unsupported("%s(interpolation=%s)" % (what, t.interpolation),
                                   "godali's auto-augment warps are NEAREST and BILINEAR")
            if not self.approx:
                raise _inexact("%s(interpolation=BILINEAR)" % what,
                               "the geometric augmentations blend like DALI's warp_affine, "
                               "not like PIL's bilinear transform near the border")
        fill = _one_fill(t.fill, what)
        policy["torchvision"] = True
        op = _internal_op("_auto_aug")
        return op(images, policy=_json.dumps(policy), fill_value=fill, interp_type=interp)

    def _t_AutoAugment(self, images, t):
        name = getattr(t.policy, "value", str(t.policy))
        table = _tv_augs("auto", 10)
        subs = []
        for sp in t._get_policies(t.policy):
            subs.append([[_TV_AUG_ORDER.index(op), float(p), -1 if b is None else int(b)]
                         for op, p, b in sp])
        policy = {"scheme": "auto", "bins": 10, "augs": table, "sub_policies": subs}
        return self._tv_auto_aug(images, "AutoAugment(policy=%s)" % name, t, policy)

    def _t_RandAugment(self, images, t):
        bins, n, m = int(t.num_magnitude_bins), int(t.num_ops), int(t.magnitude)
        if bins < 2:
            raise ValueError("godali.torch: RandAugment: num_magnitude_bins must be >= 2, "
                             "got %d" % bins)
        if not 0 <= m < bins:
            raise ValueError("godali.torch: RandAugment: magnitude must be in [0, %d] "
                             "(num_magnitude_bins - 1), got %d" % (bins - 1, m))
        policy = {"scheme": "rand", "bins": bins, "augs": _tv_augs("rand", bins),
                  "n": n, "m": m}
        return self._tv_auto_aug(images, "RandAugment", t, policy)

    def _t_TrivialAugmentWide(self, images, t):
        bins = int(t.num_magnitude_bins)
        if bins < 2:
            raise ValueError("godali.torch: TrivialAugmentWide: num_magnitude_bins must be "
                             ">= 2, got %d" % bins)
        policy = {"scheme": "trivial", "bins": bins, "augs": _tv_augs("wide", bins)}
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
        if geo and geo[-1][0] == "flip" and geo[-1][1]["vertical"] == 0:
            kw["mirror"] = geo.pop()[1]["horizontal"]
        if geo and geo[-1][0] == "crop":
            a = geo.pop()[1]
            kw["crop"] = a["crop"]
            kw["out_of_bounds_policy"] = "pad"
            for k in ("crop_pos_x", "crop_pos_y"):
                if k in a:
                    kw[k] = a[k]
        self.geo = geo
        images = self._flush(images)
        dtype = {"uint8": _types.UINT8, "float32": _types.FLOAT,
                 "float16": _types.FLOAT16}[self.tensor]
        mean = self.mean_c or [self.mean]
        std = self.std_c or [self.std]
        return _fn.crop_mirror_normalize(images, dtype=dtype, output_layout="CHW",
                                         mean=mean, std=std, **kw)


def translate(transform, jpegs, approximate=False):
    """Adds to the current pipeline the operators that apply the torchvision `transform`
    to the encoded images `jpegs` (a DataNode); returns the images DataNode."""
    return _Translator(_flatten(transform), approximate).run(jpegs)


# --- DataLoader ------------------------------------------------------------------------

_FORMAT = "godali.torch.DataLoader"


def _dataset_parts(dataset):
    """(root, samples, transform, target_transform, approximate, explicit_files)."""
    if isinstance(dataset, ImageFolder):
        return (dataset.root, dataset.samples, dataset.transform, dataset.target_transform,
                dataset.approximate, dataset.is_valid_file is not None)
    mod = type(dataset).__module__ or ""
    if type(dataset).__name__ == "ImageFolder" and mod.startswith("torchvision"):
        from torchvision.datasets.folder import default_loader, pil_loader
        if dataset.loader not in (default_loader, pil_loader):
            raise ValueError("godali.torch.DataLoader: the ImageFolder's loader= (%r) is not "
                             "supported: godali decodes the files itself (PIL's RGB loader)"
                             % (dataset.loader,))
        return (dataset.root, dataset.samples, dataset.transform, dataset.target_transform,
                False, True)
    raise TypeError("godali.torch.DataLoader: the dataset must be godali.torch.ImageFolder "
                    "or torchvision.datasets.ImageFolder, not %s (godali reads image "
                    "folders itself; other datasets need torch's DataLoader)"
                    % type(dataset).__name__)


def _is_distributed_sampler(s):
    return type(s).__name__ == "DistributedSampler" and hasattr(s, "num_replicas") \
        and hasattr(s, "rank")


class DataLoader:
    """torch.utils.data.DataLoader for image folders, run by godali's engine.

    Takes torch's arguments. dataset: godali.torch.ImageFolder or
    torchvision.datasets.ImageFolder (its transform is translated into godali operators).
    num_workers: engine threads (0 -> 1). shuffle: a new order every epoch, drawn from
    torch's generator (or generator=). sampler: None, a SequentialSampler/RandomSampler of
    the dataset, or a DistributedSampler (torch's or godali.torch's: shard rank of
    num_replicas; its seed, shuffle, drop_last and set_epoch are followed). drop_last:
    the last incomplete batch is dropped. prefetch_factor: batches prepared ahead
    (prefetch_queue_depth). pin_memory: host batches are pinned when CUDA is available.
    persistent_workers, timeout, multiprocessing_context and pin_memory_device are accepted
    and have no effect. Custom collate_fn, batch_sampler, other samplers and
    worker_init_fn raise errors naming them.

    Yields (images, labels): images [N, C, H, W] as the transform's ToTensor /
    PILToTensor produce them, labels int64 [N] (or target_transform's results collated).

    state_dict() / load_state_dict(): torchdata's StatefulDataLoader protocol. A loader
    given the state of another (same data set and arguments) yields exactly the batches
    the other would have yielded next, mid-epoch included.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 seed=None):
        root, samples, transform, target_transform, approx, explicit = \
            _dataset_parts(dataset)
        self.dataset = dataset
        if batch_size is None:
            raise ValueError("godali.torch.DataLoader: batch_size=None (no batching) is not "
                             "supported; give a batch size")
        if batch_sampler is not None:
            raise ValueError("godali.torch.DataLoader: batch_sampler is not supported: godali "
                             "forms the batches itself (use batch_size, shuffle, drop_last)")
        if collate_fn is not None and collate_fn is not _default_collate():
            raise ValueError("godali.torch.DataLoader: a custom collate_fn (%r) is not "
                             "supported: batches are collated by the engine (images "
                             "[N, C, H, W], labels [N]); apply your function to the batches "
                             "the loader yields instead" % (collate_fn,))
        if worker_init_fn is not None:
            raise ValueError("godali.torch.DataLoader: worker_init_fn is not supported: godali "
                             "has no worker processes (num_workers sets engine threads)")
        self.batch_size = int(batch_size)
        if self.batch_size <= 0:
            raise ValueError("godali.torch.DataLoader: batch_size should be a positive "
                             "integer value, but got batch_size=%r" % (batch_size,))
        n = len(samples)
        self.num_shards, self.shard_id = 1, 0
        self.sampler = sampler
        self._dist = None
        if sampler is not None:
            if shuffle:
                raise ValueError("sampler option is mutually exclusive with shuffle")
            sname = type(sampler).__name__
            if _is_distributed_sampler(sampler):
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
                raise ValueError("godali.torch.DataLoader: sampler %s is not supported: godali "
                                 "reads the data set in order, shuffled (shuffle=True) or "
                                 "sharded (DistributedSampler)" % sname)
        self.shuffle = bool(shuffle)
        self.num_workers = int(num_workers)
        if self.num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        self.pin_memory = bool(pin_memory)
        self.drop_last = bool(drop_last)
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = bool(persistent_workers)
        self.timeout = timeout
        self.generator = generator
        self.collate_fn = collate_fn
        self._root = root
        self._samples = samples
        self._files = [os.path.relpath(p, root) for p, _ in samples] if explicit else None
        self._labels = [c for _, c in samples] if explicit else None
        self._transform = transform
        self._target_transform = target_transform
        self._approx = approx
        if seed is None:
            g = generator
            seed = int(_torch.empty((), dtype=_torch.int64).random_(generator=g).item()) \
                % (1 << 31)
        self._seed = int(seed)       # augmentations (per shard: + shard_id)
        # The order: DistributedSampler's seed is shared by every rank; otherwise a seed
        # drawn once, with epochs giving new orders, as RandomSampler's per-epoch draws.
        self._order_seed = int(self._dist.seed) if self._dist is not None else self._seed
        self._epoch = 0              # the epoch the next __iter__ starts (no sampler case)
        self._pipe = None
        self._pipe_at = None         # (epoch, batches) the pipeline delivers next
        self._pipe_ckpt = None       # the checkpoint it was restored from
        self._iter = None            # the live iterator
        self._pending = None         # a loaded state, used by the next __iter__

    # -- sizes --------------------------------------------------------------------------

    def _per_rank(self):
        n, k = len(self._samples), self.num_shards
        if self._dist is not None and self._dist.drop_last:
            return n // k
        return -(-n // k)

    def __len__(self):
        m = self._per_rank()
        if self.drop_last:
            return m // self.batch_size
        return -(-m // self.batch_size)

    # -- pipeline -----------------------------------------------------------------------

    def _make_pipeline(self, epoch, checkpoint=None, seed=None, order_seed=None):
        # seed, order_seed: a state's being checked (default: the loader's).
        seed = self._seed if seed is None else seed
        order_seed = self._order_seed if order_seed is None else order_seed
        threads = max(1, self.num_workers)
        depth = max(2, int(self.prefetch_factor)) if self.prefetch_factor else 2
        pipe = _Pipeline(batch_size=self.batch_size, num_threads=threads, device_id=None,
                         seed=seed + self.shard_id, prefetch_queue_depth=depth,
                         first_epoch=epoch, enable_checkpointing=True,
                         checkpoint=checkpoint)
        rargs = {"shard_id": self.shard_id, "num_shards": self.num_shards,
                 "pad_last_batch": True, "seed": order_seed, "name": "Reader"}
        if self.shuffle:
            rargs["shuffle_after_epoch"] = True
        elif self.num_shards > 1:
            rargs["stick_to_shard"] = True  # torch's unshuffled sampler: same shard
        if self._files is not None:
            rargs.update(file_root=self._root, files=self._files, labels=self._labels)
        else:
            rargs.update(file_root=self._root, file_filters=["*" + e for e in IMG_EXTENSIONS])
        with pipe:
            jpegs, labels = _fn.readers.file(**rargs)
            images = translate(self._transform, jpegs, self._approx)
            pipe.set_outputs(images, labels)
        try:
            pipe.build()
        except BaseException:
            pipe.close()
            raise
        got = pipe.reader_meta("Reader")["epoch_size"]
        if got != len(self._samples):
            pipe.close()
            raise RuntimeError("godali.torch.DataLoader: godali's reader lists %d files in %s "
                               "but the dataset has %d samples" % (got, self._root,
                                                                  len(self._samples)))
        return pipe

    def _pipeline_for(self, epoch, batches, checkpoint):
        if self._pipe is not None and self._pipe_at == (epoch, batches) and \
                self._pipe_ckpt == checkpoint:
            return self._pipe  # at the epoch's start, or restored by load_state_dict
        self.close()
        self._pipe = self._make_pipeline(epoch, checkpoint)
        self._pipe_at = (epoch, batches)
        self._pipe_ckpt = checkpoint
        return self._pipe

    def _next_epoch(self):
        if self._dist is not None:
            return int(self._dist.epoch)
        return self._epoch

    def __iter__(self):
        if self._iter is not None:
            self._iter._invalidate()
        st, self._pending = self._pending, None
        if st is not None and st["checkpoint"] is not None:
            it = _LoaderIter(self, st["epoch"], st["batches"], st["checkpoint"])
        else:
            epoch = st["epoch"] if st is not None else self._next_epoch()
            it = _LoaderIter(self, epoch, 0, None)
        self._iter = it
        return it

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
        if st["checkpoint"] is not None:
            try:
                pipe = self._make_pipeline(st["epoch"], st["checkpoint"], st["seed"],
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
        self.close()
        if pipe is not None:
            self._pipe, self._pipe_at, self._pipe_ckpt = pipe, (st["epoch"], st["batches"]), \
                st["checkpoint"]
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

    def close(self):
        """Stops the engine's threads now (also done when the loader is collected)."""
        if self._pipe is not None:
            self._pipe.close()
        self._pipe = None
        self._pipe_at = None
        self._pipe_ckpt = None

    def __repr__(self):
        return "godali.torch.DataLoader(%r, batch_size=%d, shuffle=%s, shard %d/%d)" % (
            self.dataset, self.batch_size, self.shuffle, self.shard_id, self.num_shards)


def _default_collate():
    try:
        from torch.utils.data import default_collate
    except ImportError:  # torch < 1.11
        from torch.utils.data.dataloader import default_collate
    return default_collate


class _LoaderIter:
    """One epoch of a godali.torch.DataLoader (its state_dict() is the loader's)."""

    def __init__(self, loader, epoch, batches, checkpoint):
        self._loader = loader
        self._epoch = epoch
        self._done = batches
        self._steps = len(loader)
        self._valid = True
        self._finished = False
        self._per_rank = loader._per_rank()
        self._pipe = loader._pipeline_for(epoch, batches, checkpoint)
        loader._pipe_at = None  # in use: not at the start of an epoch any more
        if loader._dist is None:
            loader._epoch = epoch + 1
        self._to_pin = loader.pin_memory and _torch.cuda.is_available()
        self._collate = _default_collate() if loader._target_transform is not None else None

    def _invalidate(self):
        self._valid = False

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
        if not self._valid:
            raise RuntimeError("godali.torch.DataLoader: this iterator was replaced by a "
                               "newer iter(loader)")
        ld = self._loader
        if self._done >= self._steps:
            self._finish()
            raise StopIteration
        pipe = self._pipe
        try:
            images, labels = pipe._epoch_outputs()
        except StopIteration:
            self._finish()
            raise
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
        if self._to_pin:
            x = x if x.is_pinned() else x.pin_memory()
            y = y.pin_memory()
        if self._collate is not None:
            tt = ld._target_transform
            y = self._collate([tt(int(v)) for v in y.tolist()])
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
        if ld._pipe is self._pipe:
            # Consumed to the end: the pipeline moves on to the next epoch, reusable when
            # that is the one asked for next.
            try:
                while True:
                    self._pipe._epoch_outputs()
            except StopIteration:
                pass
            self._pipe.reset()
            ld._pipe_at = (self._epoch + 1, 0)
