"""PyTorch integration (DALI's nvidia.dali.plugin.pytorch).

GodaliGenericIterator / GodaliClassificationIterator (also under DALI's names) turn
pipeline outputs into torch tensors without a copy, with DALI's LastBatchPolicy semantics
and len(). ImageFolderLoader replaces DataLoader(ImageFolder(root, transform)) in one line.
"""

import logging
import os

import torch

from ... import fn as _fn
from ... import types as _types
from ...pipeline import Pipeline
from ...tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU
from ..base_iterator import (IteratorArgumentError, LastBatchPolicy, NoDataError,
                             _GodaliBaseIterator, _shard_range)

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
    """DataLoader(ImageFolder(root, transform), batch_size, shuffle, drop_last), in godali.

    Yields (images, labels): images float32 [N, 3, image_size, image_size] normalised with
    the ImageNet mean and std (torchvision's ToTensor + Normalize), labels int64 [N].

    train=True: RandomResizedCrop(image_size) (area [0.08, 1], aspect [3/4, 4/3], 10
    attempts) + RandomHorizontalFlip; train=False: Resize(image_size * 256 / 224) +
    CenterCrop(image_size). Samples are reshuffled every epoch when shuffle (default:
    train); set_epoch(n) selects epoch n's order reproducibly, as DistributedSampler's.

    Sharding: shard_id/num_shards default to torch.distributed's rank and world size when
    it is initialised. Every rank runs len(loader) steps (ceil(ceil(n/k) / batch_size)), and
    together the ranks see every sample exactly once per epoch: the reader pads shards to
    equal length (pad_last_batch) and the padding copies are cut from the last batches,
    which may therefore be smaller, or even empty on a rank whose shard is one sample
    shorter. drop_last=True gives every rank floor(floor(n/k) / batch_size) full batches.

    device="cuda": with the CUDA flavour, images are decoded on the GPU ("mixed"); with the
    CPU flavour, batches are copied from pinned memory with .cuda(non_blocking=True).
    """

    def __init__(self, root, batch_size, train=True, image_size=224, device="cpu",
                 num_threads=None, shuffle=None, seed=None, shard_id=None, num_shards=None,
                 drop_last=False, prefetch_queue_depth=2, on_error="raise"):
        self.root = os.fspath(root)
        self.batch_size = int(batch_size)
        if self.batch_size <= 0:
            raise ValueError("godali: batch_size must be > 0")
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
        self.num_threads = int(num_threads) if num_threads else len(os.sched_getaffinity(0))
        self.shuffle = self.train if shuffle is None else bool(shuffle)
        rank, world = _default_shard()
        self.shard_id = rank if shard_id is None else int(shard_id)
        self.num_shards = world if num_shards is None else int(num_shards)
        if not 0 <= self.shard_id < self.num_shards:
            raise ValueError("godali: shard_id must be in [0, num_shards)")
        if seed is None:
            if self.num_shards > 1:
                seed = 0  # every rank must shuffle alike, as DistributedSampler's seed=0
            else:
                # DataLoader's RandomSampler draws from torch's generator: manual_seed
                # makes both reproducible.
                seed = int(torch.empty((), dtype=torch.int64).random_().item()) % (1 << 31)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.prefetch_queue_depth = int(prefetch_queue_depth)
        self.on_error = on_error
        self.classes, self.class_to_idx = _find_classes(self.root)

        self._epoch = 0          # the epoch the next __iter__ delivers
        self._pipe = None
        self._pipe_epoch = None  # the epoch the pipeline delivers next, if at a boundary
        self._last_epoch = -1    # the epoch most recently started
        self._meta = None

    # -- pipeline -----------------------------------------------------------------------

    def _use_gpu_decode(self):
        """GPU decoding needs the CUDA flavour and GPU variants of every operator used;
        otherwise the CPU pipeline runs and batches are copied to the GPU."""
        from ... import _graph, _lib
        if self.device.type != "cuda" or _lib.get().flavour != "cuda":
            return False
        ops = _graph.schemas().ops
        decoder = "decoders.image_random_crop" if self.train else "decoders.image"
        return ("mixed" in ops[decoder].devices and "gpu" in ops["resize"].devices
                and "gpu" in ops["crop_mirror_normalize"].devices)

    def _make_pipeline(self, first_epoch):
        gpu = self._use_gpu_decode()
        s = self.image_size
        pipe = Pipeline(batch_size=self.batch_size, num_threads=self.num_threads,
                        device_id=self.device.index if gpu else None,
                        seed=self.seed + self.shard_id,
                        prefetch_queue_depth=self.prefetch_queue_depth,
                        on_error=self.on_error, first_epoch=first_epoch)
        with pipe:
            jpegs, labels = _fn.readers.file(
                file_root=self.root, shuffle_after_epoch=self.shuffle, seed=self.seed,
                shard_id=self.shard_id, num_shards=self.num_shards,
                pad_last_batch=True, name="Reader")
            decode_device = "mixed" if gpu else "cpu"
            if self.train:
                images = _fn.decoders.image_random_crop(
                    jpegs, device=decode_device, output_type=_types.RGB,
                    random_area=[0.08, 1.0], random_aspect_ratio=[3 / 4, 4 / 3],
                    num_attempts=10)
                images = _fn.resize(images, resize_x=s, resize_y=s,
                                    interp_type=_types.INTERP_TRIANGULAR)
                mirror = _fn.random.coin_flip(probability=0.5)
            else:
                images = _fn.decoders.image(jpegs, device=decode_device,
                                            output_type=_types.RGB)
                images = _fn.resize(images, resize_shorter=int(s * 256 / 224),
                                    interp_type=_types.INTERP_TRIANGULAR)
                mirror = 0
            images = _fn.crop_mirror_normalize(
                images, dtype=_types.FLOAT, output_layout="CHW", crop=(s, s),
                mean=list(IMAGENET_MEAN), std=list(IMAGENET_STD), mirror=mirror)
            pipe.set_outputs(images, labels)
        pipe.build()
        return pipe

    def _ensure_pipeline(self, epoch):
        """A pipeline whose next batch is the first of `epoch`."""
        if self._pipe is not None and self._pipe_epoch == epoch:
            return self._pipe
        if self._pipe is not None and self._pipe_epoch is None:
            # Abandoned mid-epoch: the engine drops what it prepared and moves on.
            self._pipe.reset()
            self._pipe_epoch = self._last_epoch + 1
            if self._pipe_epoch == epoch:
                return self._pipe
        if self._pipe is not None:
            self._pipe.close()
        self._pipe = self._make_pipeline(epoch)
        self._pipe_epoch = epoch
        return self._pipe

    def _reader_meta(self):
        if self._meta is None:
            pipe = self._ensure_pipeline(self._epoch)
            self._meta = pipe.reader_meta("Reader")
        return self._meta

    # -- DataLoader API -----------------------------------------------------------------

    def __len__(self):
        m = self._reader_meta()
        n, k = m["epoch_size"], m["number_of_shards"]
        if self.drop_last:
            return (n // k) // self.batch_size
        return -(-(-(-n // k)) // self.batch_size)

    def set_epoch(self, epoch):
        """Selects the epoch the next iteration delivers: its shuffle and shard order
        depend only on (seed, epoch), as with DistributedSampler.set_epoch."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("godali: epoch must be >= 0")
        self._epoch = epoch

    @property
    def num_samples(self):
        """Samples in the whole data set (all shards)."""
        return self._reader_meta()["epoch_size"]

    def __iter__(self):
        epoch = self._epoch
        pipe = self._ensure_pipeline(epoch)
        if self._meta is None:
            self._meta = pipe.reader_meta("Reader")
        steps = len(self)
        n, k = self._meta["epoch_size"], self._meta["number_of_shards"]
        self._epoch = epoch + 1
        self._pipe_epoch = None
        self._last_epoch = epoch
        to_cuda = self.device.type == "cuda" and not self._use_gpu_decode()
        bs = self.batch_size
        shard = (self.shard_id + epoch) % k
        begin, end = _shard_range(n, shard, k)
        real = end - begin
        done = 0
        while done < steps:
            try:
                images, labels = pipe.outputs()
            except StopIteration:
                break
            info = pipe.batch_info
            if info.epoch != epoch or info.iteration != done:
                raise RuntimeError("godali: ImageFolderLoader expected batch %d of epoch %d, "
                                   "got batch %d of epoch %d" % (done, epoch, info.iteration,
                                                                  info.epoch))
            keep = max(0, min(bs, real - done * bs, info.valid))
            x = images._as_torch()
            y = labels._as_torch().reshape(-1)
            if keep < bs:
                if self.drop_last:
                    break
                x = x[:keep]
                y = y[:keep]
            y = y.to(torch.int64)
            if to_cuda:
                x = (x if x.is_pinned() else x.pin_memory()).to(self.device,
                                                                non_blocking=True)
                y = y.pin_memory().to(self.device, non_blocking=True)
            elif self.device.type == "cuda":
                y = y.to(self.device, non_blocking=True)
            done += 1
            yield x, y
        # Reached only when the epoch was consumed to the end.
        self._drain(pipe, epoch)

    def _drain(self, pipe, epoch):
        pipe.reset()
        self._pipe_epoch = epoch + 1

    def close(self):
        """Stops the pipeline's threads now (also done when the loader is collected)."""
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
            self._pipe_epoch = None

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
