"""PyTorch integration (DALI's nvidia.dali.plugin.pytorch).

GodaliGenericIterator / GodaliClassificationIterator (also under DALI's names) turn
pipeline outputs into torch tensors without a copy, with DALI's LastBatchPolicy semantics
and len(). ImageFolderLoader replaces DataLoader(ImageFolder(root, transform)) in one line.
"""

import enum
import json
import logging
import os
import warnings

import torch

from .. import fn as _fn
from .. import types as _types
from ..pipeline import Pipeline

log = logging.getLogger("godali")

__all__ = ["LastBatchPolicy", "GodaliGenericIterator", "GodaliClassificationIterator",
           "DALIGenericIterator", "DALIClassificationIterator", "ImageFolderLoader",
           "feed_ndarray", "to_torch_type"]


class LastBatchPolicy(enum.Enum):
    """What an iterator does with the epoch's last, incomplete batch (DALI's values).

    FILL: the batch is returned full; the missing samples are the last sample repeated
    (when the reader pads: pad_last_batch=True) or the start of the data wrapped around.
    DROP: the batch is dropped and the epoch ends before it.
    PARTIAL: the batch is returned with only the samples that belong to the epoch.
    """

    FILL = 0
    DROP = 1
    PARTIAL = 2


def _shard_range(n, i, k):
    return n * i // k, n * (i + 1) // k


class GodaliGenericIterator:
    """Iterates over pipelines' outputs as torch tensors (DALI's DALIGenericIterator).

    Yields, per step, a list with one dict per pipeline: {output_map[j]: tensor}. Tensors
    share the engine's memory (zero copy) and live on the device the pipeline produced
    them on. See DALI's documentation for the arguments; godali differs only in that a
    pipeline with exactly one reader gives len() without reader_name or size.

    size: samples per epoch when reader_name is not given (DALI's counter semantics).
    reader_name: the reader node's name; epoch length, sharding and padding come from its
    metadata, and PARTIAL returns exactly each shard's samples, without the copies that
    pad_last_batch adds, so that the shards together hold every sample once.
    prepare_first_batch: the pipelines start preparing batches when the iterator is
    created (no batch is taken from them before the first next()).

    Checkpoints (DALI's): checkpoints() returns one checkpoint per pipeline, which also
    carries this iterator's counters; an iterator created with the same arguments over
    pipelines created with checkpoint=<those> goes on with the batch this one would
    have returned next.
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise ValueError("godali: the iterator needs at least one pipeline")
        for p in pipelines:
            if not isinstance(p, Pipeline):
                raise TypeError("godali: expected godali.Pipeline objects, got %s"
                                % type(p).__name__)
        self._pipes = list(pipelines)
        self.batch_size = self._pipes[0].max_batch_size
        for p in self._pipes:
            if p.max_batch_size != self.batch_size:
                raise ValueError("godali: all pipelines must have the same batch_size")
        if isinstance(output_map, str):
            output_map = [output_map]
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise ValueError("godali: output_map names must be unique: %r" % (output_map,))
        if auto_reset in (True, "yes"):
            self._auto_reset = True
        elif auto_reset in (False, "no"):
            self._auto_reset = False
        else:
            raise ValueError("godali: auto_reset must be True/False or 'yes'/'no', not %r"
                             % (auto_reset,))
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated; use last_batch_policy",
                          DeprecationWarning, stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else \
                LastBatchPolicy.PARTIAL
        if not isinstance(last_batch_policy, LastBatchPolicy):
            raise TypeError("godali: last_batch_policy must be a LastBatchPolicy")
        self._policy = last_batch_policy
        self._last_batch_padded = bool(last_batch_padded)
        size = int(size)
        if size > 0 and reader_name is not None:
            raise ValueError("godali: give either size or reader_name, not both")
        self._reader_name = reader_name

        for p in self._pipes:
            p.build()
            n = p._num_outputs
            if n != len(self.output_map):
                raise ValueError("godali: output_map has %d names but the pipeline has %d "
                                 "outputs" % (len(self.output_map), n))

        self._meta = None  # (n, k, pad, stick, shard ids) of the reader that sizes epochs
        if reader_name is None and size <= 0:
            names = [p.reader_names() for p in self._pipes]
            if all(len(x) == 1 for x in names):
                self._meta_from([x[0] for x in names])
        elif reader_name is not None:
            self._meta_from([reader_name] * len(self._pipes))
        self._size_mode = size > 0
        self._size = size if size > 0 else self._reader_size()

        self._counter = 0      # samples delivered this epoch (size mode: DALI's counter)
        self._batches = 0      # batches delivered this epoch
        self._ended = False
        self._restore_state()
        if prepare_first_batch:
            # Only scheduled, not taken: a checkpoint must not count a batch the caller
            # has not seen.
            for p in self._pipes:
                p.schedule_run()

    # -- checkpoints --------------------------------------------------------------------

    _STATE_KEYS = ("counter", "batches", "ended")

    def _restore_state(self):
        states = [p._iterator_state for p in self._pipes]
        if all(s is None for s in states):
            return
        if any(s != states[0] for s in states):
            raise ValueError("godali: the pipelines were restored from checkpoints of "
                             "different iterator states; pass the checkpoints that one "
                             "iterator's checkpoints() returned")
        st = states[0]
        try:
            self._counter = int(st["counter"])
            self._batches = int(st["batches"])
            self._ended = bool(st["ended"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("godali: the checkpoint's iterator state is malformed: %r"
                             % (st,)) from None

    def checkpoints(self):
        """One checkpoint per pipeline (DALI's iterator.checkpoints()): the state after
        the batches this iterator has returned, with its counters. Create the pipelines
        again with checkpoint=<each>, and this iterator with the same arguments over
        them, to resume. Needs pipelines with enable_checkpointing=True."""
        state = {"counter": self._counter, "batches": self._batches, "ended": self._ended}
        out = []
        for p in self._pipes:
            doc = json.loads(p.checkpoint())
            doc["iterator"] = state
            out.append(json.dumps(doc, indent=1))
        return out

    # -- sizing -------------------------------------------------------------------------

    def _meta_from(self, names):
        metas = [p.reader_meta(nm) for p, nm in zip(self._pipes, names)]
        m0 = metas[0]
        for key in ("epoch_size", "number_of_shards", "pad_last_batch", "stick_to_shard"):
            if any(m[key] != m0[key] for m in metas):
                raise ValueError("godali: the pipelines' readers disagree on %s" % key)
        self._meta = {
            "n": m0["epoch_size"], "k": m0["number_of_shards"], "pad": m0["pad_last_batch"],
            "stick": m0["stick_to_shard"], "shards": [m["shard_id"] for m in metas],
        }

    def _reader_size(self):
        """DALI's per-shard epoch size: what len() divides by the batch size."""
        m = self._meta
        if m is None:
            return -1
        n, k, bs = m["n"], m["k"], self.batch_size
        if self._policy == LastBatchPolicy.DROP:
            return n // k
        if m["pad"]:
            return -(-n // k)
        # The largest shard, rounded up to whole batches: every shard runs as many steps.
        return -(-(-(-n // k)) // bs) * bs

    @property
    def size(self):
        """Samples per epoch (per shard with a reader), as DALI's iterator reports it."""
        return self._size

    def __len__(self):
        if self._size < 0:
            raise TypeError("godali: this iterator has no length: give size= or "
                            "reader_name=")
        per = self.batch_size * (len(self._pipes) if self._size_mode else 1)
        if self._policy == LastBatchPolicy.DROP:
            return self._size // per
        return -(-self._size // per)

    # -- iteration ----------------------------------------------------------------------

    def __iter__(self):
        return self

    def __next__(self):
        return self._next_batch()

    next = __next__

    def _end(self):
        self._ended = True
        if self._auto_reset:
            self.reset()
        raise StopIteration

    def _real_valid(self, j, info):
        """Samples of batch `info` of pipeline j that belong to the shard, without the
        copies pad_last_batch adds."""
        m = self._meta
        if m is None:
            return info.valid
        n, k = m["n"], m["k"]
        shard = m["shards"][j]
        if not m["stick"]:
            shard = (shard + info.epoch) % k
        b, e = _shard_range(n, shard, k)
        left = (e - b) - info.iteration * self.batch_size
        return max(0, min(self.batch_size, left, info.valid))

    def _next_batch(self):
        if self._ended:
            self._end()
        bs = self.batch_size
        if self._size_mode:
            if self._counter >= self._size:
                self._end()
        elif self._meta is not None and self._batches >= len(self):
            self._end()

        outs = []
        keep = []
        for j, p in enumerate(self._pipes):
            try:
                o = p.outputs()
            except StopIteration:
                if not self._size_mode:
                    self._end()
                # DALI's readers never stop: size slices an endless stream.
                p.reset()
                o = p.outputs()
            outs.append(o)
            keep.append(bs if self._size_mode else self._real_valid(j, p.batch_info))

        if self._size_mode:
            before = self._counter
            self._counter += bs * len(self._pipes)
            overflow = self._counter - self._size
            if overflow > 0:
                if self._policy == LastBatchPolicy.DROP:
                    self._end()
                # Samples still owed: whole pipelines first, the last one partially.
                owed = self._size - before
                keep = [max(0, min(bs, owed - j * bs)) for j in range(len(self._pipes))]
        else:
            if self._policy == LastBatchPolicy.DROP and any(k < bs for k in keep):
                self._end()
            self._counter += sum(keep)
        self._batches += 1

        result = []
        for j, o in enumerate(outs):
            d = {}
            for name, tl in zip(self.output_map, o):
                t = tl.as_tensor()
                if self._policy == LastBatchPolicy.PARTIAL and keep[j] < bs:
                    t = t[:keep[j]]
                d[name] = t
            result.append(d)
        if self._size_mode and self._policy == LastBatchPolicy.PARTIAL and \
                self._counter > self._size:
            result = [r for r, k in zip(result, keep) if k > 0] or result[:1]
        if not self._size_mode and all(p.batch_info.last_in_epoch for p in self._pipes):
            # The engine's next call would only report the end of the epoch.
            self._ended = True
        return result

    def skipped(self):
        """The samples of the batch returned last that failed and were replaced
        (on_error="skip"): one list per pipeline of Pipeline.skipped()'s dicts (sample,
        file, node, error)."""
        return [p.skipped() for p in self._pipes]

    def reset(self):
        """Starts the next epoch, once the current one is over (DALI ignores, with a
        warning, a reset in the middle of an epoch; so does godali)."""
        done = self._ended or (self._size_mode and self._counter >= self._size) or \
            (self._meta is not None and self._batches >= len(self))
        if not done:
            log.warning("godali: the iterator does not support resetting while the epoch "
                        "is not finished; ignoring reset()")
            return
        if self._size_mode:
            if self._policy == LastBatchPolicy.FILL and not self._last_batch_padded:
                self._counter = self._counter % self._size
            else:
                self._counter = 0
        else:
            for p in self._pipes:
                p.reset()
            self._counter = 0
        self._batches = 0
        self._ended = False


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


DALIGenericIterator = GodaliGenericIterator
DALIClassificationIterator = GodaliClassificationIterator


_TORCH_TYPES = {
    _types.UINT8: torch.uint8, _types.INT8: torch.int8, _types.INT16: torch.int16,
    _types.INT32: torch.int32, _types.INT64: torch.int64, _types.FLOAT16: torch.float16,
    _types.FLOAT: torch.float32, _types.FLOAT64: torch.float64, _types.BOOL: torch.bool,
}


def to_torch_type(dtype):
    """The torch dtype of a types.DALIDataType."""
    return _TORCH_TYPES[dtype]


def feed_ndarray(tensor_list, arr, cuda_stream=None):
    """Copies a dense TensorList (or sample) into the torch tensor `arr` (DALI's
    feed_ndarray). godali's iterators do not need it: they share memory instead."""
    src = tensor_list.as_tensor()
    if tuple(src.shape) != tuple(arr.shape):
        raise ValueError("godali: feed_ndarray: shapes differ: %s vs %s"
                         % (tuple(src.shape), tuple(arr.shape)))
    arr.copy_(src, non_blocking=cuda_stream is not None)
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
        from .. import _graph, _lib
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
            x = images.as_tensor()
            y = labels.as_tensor().reshape(-1)
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
