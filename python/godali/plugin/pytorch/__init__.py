"""PyTorch integration (DALI's nvidia.dali.plugin.pytorch).

GodaliGenericIterator / GodaliClassificationIterator (also under DALI's names) turn
pipeline outputs into torch tensors without a copy, with DALI's LastBatchPolicy semantics
and len(). ImageFolderLoader replaces DataLoader(ImageFolder(root, transform)) in one line
(a front of godali.torch).
"""

import logging
import os

import torch

from ... import types as _types
from ...tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU
from ..base_iterator import (IteratorArgumentError, LastBatchPolicy, NoDataError,
                             _GodaliBaseIterator)

log = logging.getLogger("godali")

__all__ = ["LastBatchPolicy", "GodaliGenericIterator", "GodaliClassificationIterator",
           "GodaliRaggedIterator", "DALIGenericIterator", "DALIClassificationIterator",
           "DALIRaggedIterator", "ImageFolderLoader", "feed_ndarray", "to_torch_type",
           "IteratorArgumentError", "NoDataError"]


class GodaliGenericIterator(_GodaliBaseIterator):
    """Iterates over pipelines' outputs as torch tensors (DALI's DALIGenericIterator).

    Yields, per step, a list with one dict per pipeline: {output_map[j]: tensor}. Tensors
    share the engine's memory (zero copy) and live on the device the pipeline produced
    them on. Arguments and semantics are DALI's (see godali.plugin.base_iterator for the
    one difference, at epoch boundaries without pad_last_batch); godali also gives len()
    for a pipeline with exactly one reader without reader_name or size.

    size: samples per epoch when reader_name is not given (DALI's counter semantics).
    reader_name: the reader node's name; epoch length, sharding and padding come from its
    metadata, and PARTIAL returns exactly each shard's samples, without the copies that
    pad_last_batch adds, so that the shards together hold every sample once.
    auto_reset: True/"yes" resets at the end of each epoch; False/None/"no" raises
    StopIteration until reset() or iter() is called.
    prepare_first_batch: the pipelines start preparing batches when the iterator is
    created (no batch is taken from them before the first next()).
    dynamic_shape: accepted for compatibility (godali never copies, so shapes may vary).

    Checkpoints (DALI's): checkpoints() returns one checkpoint per pipeline, which also
    carries this iterator's counters; an iterator created with the same arguments over
    pipelines created with checkpoint=<those> goes on with the batch this one would
    have returned next.
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)

    def _convert(self, outs, keep):
        bs = self.batch_size
        names = self.output_map
        result = []
        for o, k in zip(outs, keep):
            if k < bs:
                result.append({name: tl._as_torch()[:k] for name, tl in zip(names, o)})
            else:
                result.append({name: tl._as_torch() for name, tl in zip(names, o)})
        return result


class GodaliClassificationIterator(GodaliGenericIterator):
    """GodaliGenericIterator with output_map ["data", "label"] (DALI's
    DALIClassificationIterator): the pipeline returns images and labels."""

    def __init__(self, pipelines, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        super().__init__(pipelines, ["data", "label"], size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         dynamic_shape=dynamic_shape, last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)


class GodaliRaggedIterator(_GodaliBaseIterator):
    """Iterates over outputs whose samples may differ in shape (DALI's
    DALIRaggedIterator). output_types gives, per output, DENSE_TAG (one [N, ...] tensor),
    SPARSE_LIST_TAG (a list of per-sample tensors, zero copy) or SPARSE_COO_TAG (a torch
    sparse COO tensor: index (sample, element) of the samples' 1-D data, as DALI builds
    it); default: all dense. Other arguments as GodaliGenericIterator."""

    DENSE_TAG = "dense"
    SPARSE_LIST_TAG = "sparse_list"
    SPARSE_COO_TAG = "sparse_coo"

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, output_types=None,
                 auto_reset=False, fill_last_batch=None, dynamic_shape=False,
                 last_batch_padded=False, last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True):
        tags = {self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG}
        if output_types is not None:
            output_types = list(output_types)
            if not set(output_types) <= tags:
                raise IteratorArgumentError("godali: output_types may only hold DENSE_TAG, "
                                            "SPARSE_LIST_TAG and SPARSE_COO_TAG, got %r"
                                            % (output_types,))
            n = 1 if isinstance(output_map, str) else len(output_map)
            if len(output_types) != n:
                raise IteratorArgumentError("godali: output_types has %d entries but "
                                            "output_map %d" % (len(output_types), n))
        self._output_types = output_types
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)

    def _convert(self, outs, keep):
        from ...tensors import _torch_from
        types_ = self._output_types or [self.DENSE_TAG] * len(self.output_map)
        result = []
        for o, k in zip(outs, keep):
            d = {}
            for name, tag, tl in zip(self.output_map, types_, o):
                if tag == self.DENSE_TAG:
                    d[name] = tl._as_torch()[:k]
                    continue
                samples = [_torch_from(tl[i]._buf) for i in range(min(k, len(tl)))]
                if tag == self.SPARSE_COO_TAG:
                    d[name] = _coo(samples)
                else:
                    d[name] = samples
            result.append(d)
        return result


def _coo(samples):
    if not samples:
        return torch.sparse_coo_tensor(torch.zeros((2, 0), dtype=torch.int64), [])
    flat = [s.reshape(-1) if s.dim() != 1 else s for s in samples]
    values = torch.cat(flat)
    rows = torch.cat([torch.full((len(s),), i, dtype=torch.int64)
                      for i, s in enumerate(flat)])
    cols = torch.cat([torch.arange(len(s), dtype=torch.int64) for s in flat])
    idx = torch.stack([rows, cols]).to(values.device)
    return torch.sparse_coo_tensor(idx, values)


DALIGenericIterator = GodaliGenericIterator
DALIClassificationIterator = GodaliClassificationIterator
DALIRaggedIterator = GodaliRaggedIterator


to_torch_type = {
    _types.UINT8: torch.uint8, _types.INT8: torch.int8, _types.INT16: torch.int16,
    _types.INT32: torch.int32, _types.INT64: torch.int64, _types.FLOAT16: torch.float16,
    _types.FLOAT: torch.float32, _types.FLOAT64: torch.float64, _types.BOOL: torch.bool,
}


class FeedNdarrayError(TypeError, ValueError, AssertionError):
    """feed_ndarray's element type or shape mismatch. DALI raises these with `assert`;
    godali's is also a TypeError/ValueError, so code written for either catches it."""


def feed_ndarray(tensor_or_tl, arr, cuda_stream=None):
    """Copies a godali Tensor or dense TensorList into the torch tensor `arr` (DALI's
    feed_ndarray) and returns arr. godali's iterators do not need it: they share memory
    instead. cuda_stream (a torch.cuda.Stream or a stream handle) makes the copy
    asynchronous on that stream."""
    from ...tensors import Tensor, TensorList, _torch_from
    if isinstance(tensor_or_tl, TensorList):
        buf = tensor_or_tl._dense_buffer()
    elif isinstance(tensor_or_tl, Tensor):
        buf = tensor_or_tl._buf
    else:
        raise TypeError("godali: feed_ndarray expects a godali Tensor or TensorList, got %s"
                        % type(tensor_or_tl).__name__)
    src = _torch_from(buf)
    if src.dtype != arr.dtype:
        raise FeedNdarrayError("godali: feed_ndarray: The element type of DALI Tensor/TensorList "
                               "doesn't match the element type of the target PyTorch Tensor: "
                               "%s vs %s" % (src.dtype, arr.dtype))
    if list(src.shape) != list(arr.shape):
        raise FeedNdarrayError("godali: feed_ndarray: Shapes do not match: DALI tensor has size "
                               "%s, but PyTorch Tensor has size %s"
                               % (list(src.shape), list(arr.shape)))
    if cuda_stream is not None and arr.is_cuda:
        if not isinstance(cuda_stream, torch.cuda.Stream):
            cuda_stream = torch.cuda.ExternalStream(int(cuda_stream), device=arr.device)
        with torch.cuda.stream(cuda_stream):
            arr.copy_(src, non_blocking=True)
    else:
        arr.copy_(src)
    return arr


# --- ImageFolderLoader -----------------------------------------------------------------

IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
IMAGENET_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


def _find_classes(root):
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise FileNotFoundError("godali: couldn't find any class folder in %s" % root)
    return classes, {c: i for i, c in enumerate(classes)}


def _default_shard():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class ImageFolderLoader:
    """DataLoader(ImageFolder(root, transform), batch_size, shuffle, drop_last), in one
    call: a thin front of godali.torch (godali.torch.ImageFolder with torchvision's
    standard ImageNet transforms, godali.torch.DistributedSampler and
    godali.torch.DataLoader), so it behaves as they do.

    Yields (images, labels): images float32 [N, 3, image_size, image_size] normalised with
    the ImageNet mean and std (torchvision's ToTensor + Normalize), labels int64 [N].

    train=True: RandomResizedCrop(image_size) + RandomHorizontalFlip; train=False:
    Resize(int(image_size * 256 / 224)) + CenterCrop(image_size), pixel for pixel as
    torchvision. Samples are reshuffled every epoch when shuffle (default: train); each
    iteration delivers the next epoch, and set_epoch(n) selects epoch n's order
    reproducibly (DistributedSampler.set_epoch).

    num_workers (or its older name num_threads): engine threads (default: the CPUs this
    process may use). Sharding: shard_id/num_shards default to torch.distributed's rank
    and world size when it is initialised, and follow torch's DistributedSampler: every
    rank gets ceil(n / k) samples per epoch (floor(n / k) with drop_last), padded with
    repeats of the first ones, so every rank runs len(loader) steps.

    device="cuda" (or "cuda:N"): the batches are CUDA tensors on that device. With the
    CUDA flavour of godali the images are decoded on the GPU (nvJPEG, device "mixed") and
    resized, cropped, flipped and normalised there, from the same random draws as on the
    CPU; with the CPU flavour they are decoded on the CPU and copied from pinned memory,
    which the log says once (godali.torch.DataLoader's device=, docs/pytorch.md#gpu).
    """

    def __init__(self, root, batch_size, train=True, image_size=224, device="cpu",
                 num_threads=None, shuffle=None, seed=None, shard_id=None, num_shards=None,
                 drop_last=False, prefetch_queue_depth=2, on_error="raise", *,
                 num_workers=None):
        from ... import torch as gtorch  # godali.torch
        import torchvision.transforms as T
        if num_threads is not None and num_workers is not None:
            raise ValueError("godali: ImageFolderLoader: give num_workers or num_threads "
                             "(the same thing: engine threads), not both")
        workers = num_workers if num_workers is not None else num_threads
        if workers is None:
            workers = len(os.sched_getaffinity(0))
        self.root = os.fspath(root)
        self.train = bool(train)
        self.image_size = int(image_size)
        device = str(device)
        if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
            raise ValueError("godali: device must be 'cpu' or 'cuda', not %r" % device)
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("godali: ImageFolderLoader(device=%r), but torch sees no CUDA "
                               "device" % device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.shuffle = self.train if shuffle is None else bool(shuffle)
        rank, world = _default_shard()
        self.shard_id = rank if shard_id is None else int(shard_id)
        self.num_shards = world if num_shards is None else int(num_shards)
        if seed is None:
            if self.num_shards > 1:
                seed = 0  # every rank must shuffle alike, as DistributedSampler's seed=0
            else:
                # DataLoader's RandomSampler draws from torch's generator: manual_seed
                # makes both reproducible.
                seed = int(torch.empty((), dtype=torch.int64).random_().item()) % (1 << 31)
        self.seed = int(seed)
        self.drop_last = drop_last
        s = self.image_size
        norm = [T.ToTensor(), T.Normalize([m / 255 for m in IMAGENET_MEAN],
                                          [v / 255 for v in IMAGENET_STD])]
        if self.train:
            tf = T.Compose([T.RandomResizedCrop(s), T.RandomHorizontalFlip()] + norm)
        else:
            tf = T.Compose([T.Resize(int(s * 256 / 224)), T.CenterCrop(s)] + norm)
        self.dataset = gtorch.ImageFolder(self.root, transform=tf)
        self.classes, self.class_to_idx = self.dataset.classes, self.dataset.class_to_idx
        self.sampler = gtorch.DistributedSampler(self.dataset, num_replicas=self.num_shards,
                                                 rank=self.shard_id, shuffle=self.shuffle,
                                                 seed=self.seed, drop_last=bool(drop_last))
        self._loader = gtorch.DataLoader(self.dataset, batch_size=batch_size,
                                         sampler=self.sampler, num_workers=workers,
                                         drop_last=drop_last, seed=self.seed,
                                         device=self.device)
        self._loader._queue_depth = int(prefetch_queue_depth)
        self._loader._on_error = on_error
        self.batch_size = self._loader.batch_size
        self.num_workers = workers
        self.num_threads = workers

    def __len__(self):
        return len(self._loader)

    def set_epoch(self, epoch):
        """Selects the epoch the next iteration delivers: its shuffle and shard order
        depend only on (seed, epoch), as with DistributedSampler.set_epoch."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("godali: epoch must be >= 0")
        self.sampler.set_epoch(epoch)

    @property
    def num_samples(self):
        """Samples in the whole data set (all shards)."""
        return len(self.dataset)

    def __iter__(self):
        it = iter(self._loader)
        self.sampler.set_epoch(self.sampler.epoch + 1)  # the next iteration's epoch
        yield from it  # on self.device: the DataLoader puts them there

    def close(self):
        """Stops the pipeline's threads now (also done when the loader is collected)."""
        self._loader.close()

    def __repr__(self):
        return ("godali.ImageFolderLoader(root=%r, batch_size=%d, train=%s, image_size=%d, "
                "device=%s, shard %d/%d)" % (self.root, self.batch_size, self.train,
                                            self.image_size, self.device, self.shard_id,
                                            self.num_shards))


def __getattr__(name):
    # DALI's plugin.pytorch.TorchPythonFunction and plugin.pytorch.fn.torch_python_function,
    # made when first used (they need the library's schemas).
    if name == "TorchPythonFunction":
        from ... import ops as _ops
        return _ops.TorchPythonFunction
    if name == "fn":
        import types as _pytypes
        from ... import _pyfunc
        ns = _pytypes.SimpleNamespace(torch_python_function=_pyfunc.torch_python_function)
        globals()["fn"] = ns
        return ns
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
