"""The framework-neutral part of the iterators (DALI's nvidia.dali.plugin.base_iterator).

_GodaliBaseIterator keeps DALI's arguments, checks and epoch bookkeeping (size, reader
metadata, LastBatchPolicy, auto_reset, reset() and iter() semantics) and hands its
subclasses, per step, the pipelines' TensorLists with how many leading samples of each
to keep. The PyTorch iterators (godali.plugin.pytorch) turn those into torch tensors.

Epochs follow DALI, and the engine counts them: the iterator hands each pipeline its
LastBatchPolicy (the engine's last_batch_policy) and reads, per batch, how many samples
are the epoch's (batch_info.valid) and whether the epoch ends (last_in_epoch). With
pad_last_batch an epoch is one pass over the shard, the last batch filled with the last
sample repeated, the next epoch starting the next shard (unless stick_to_shard) at its
beginning. Without it a reader is one endless stream, as DALI's: the last batch of an
epoch is filled with the next samples of the stream, and the next epoch goes on after
them; where each epoch starts and how many batches it has are DALI's iterator counters,
per policy, which the engine computes (ops/readers/stream.go), so that len(), the
batches per epoch, what PARTIAL keeps and DROP drops, and reset() are DALI's.
"""

import enum
import json
import logging
import warnings

from .. import external_source as _ext
from ..pipeline import Pipeline
from .. import types  # noqa: F401  (DALI's module exposes it)

log = logging.getLogger("godali")

__all__ = ["LastBatchPolicy", "IteratorArgumentError", "NoDataError"]


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


class IteratorArgumentError(ValueError, AssertionError):
    """Arguments that DALI's iterators reject. DALI raises them with `assert`, so this is
    both a ValueError and an AssertionError: code written for either catches it."""


class NoDataError(RuntimeError, AssertionError):
    """The iterator can produce no batch at all (DALI's "no data in the pipeline"), for
    example LastBatchPolicy.DROP with a batch larger than the shard."""


def _batch_len(outs, default):
    """The number of samples of one pipeline's batch (its first output's): batch_size, or
    fewer when external sources were fed a smaller batch."""
    if not outs:
        return default
    try:
        return len(outs[0])
    except TypeError:
        return default


def _auto_reset_flag(auto_reset):
    if auto_reset is None or auto_reset is False or auto_reset == "no":
        return False
    if auto_reset is True or auto_reset == "yes":
        return True
    raise ValueError("godali: unsupported value for auto_reset: %r (expected True, False, "
                     "None, \"yes\" or \"no\")" % (auto_reset,))


def _lazy_build(p, size):
    """Whether pipeline p may be built at the first next() instead of now: it is not built
    yet, an external source would be polled by the build (to learn its dtype and ndim),
    and its size does not come from a reader's metadata."""
    if p._built or p._closed:
        return False
    if p._outputs is None:
        p.description()  # runs define_graph / checks the outputs
    if not any(g.source is not None and not g.resolved() for g in _ext.groups(p)):
        return False
    return size > 0 or not p.reader_names()


def _prefetch(p):
    """DALI schedules the next run as soon as a batch is taken, so an external source is
    polled one batch ahead and its StopIteration is known when the epoch's last batch is
    returned. Sized iterators rely on this to restart the source at reset()."""
    if _ext.groups(p) and p._handle:
        _ext.top_up(p)


def _source_ended(p):
    """True when p's external sources have all ended and nothing is left queued: its next
    outputs() call would only report the end of the epoch."""
    gs = [g for g in _ext.groups(p) if g.source is not None]
    return bool(gs) and all(g.exhausted and g.ahead == 0 for g in gs)


class _GodaliBaseIterator:
    """DALI's _DaliBaseIterator over godali pipelines; subclasses implement _convert."""

    _steps = None  # batches of the current epoch, as the engine counts them (readers)

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        if pipelines is None:
            raise IteratorArgumentError("godali: the iterator needs at least one pipeline")
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise IteratorArgumentError("godali: the iterator needs at least one pipeline")
        for p in pipelines:
            if not isinstance(p, Pipeline):
                raise TypeError("godali: expected godali.Pipeline objects, got %s"
                                % type(p).__name__)
        self._pipes = list(pipelines)
        self._num_gpus = len(self._pipes)
        self.batch_size = self._pipes[0].max_batch_size
        if any(p.max_batch_size != self.batch_size for p in self._pipes):
            raise IteratorArgumentError("godali: all pipelines must have the same "
                                        "batch_size, got %r"
                                        % [p.max_batch_size for p in self._pipes])

        if isinstance(output_map, str):
            output_map = [output_map]
        if output_map is None or not all(isinstance(x, str) for x in output_map):
            raise IteratorArgumentError("godali: output_map must be a list of output names "
                                        "(strings), got %r" % (output_map,))
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise IteratorArgumentError("godali: output_map names must be distinct: %r"
                                        % (self.output_map,))

        self._auto_reset = _auto_reset_flag(auto_reset)
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated; use last_batch_policy",
                          Warning, stacklevel=3)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else \
                LastBatchPolicy.PARTIAL
        elif type(last_batch_policy) is not LastBatchPolicy:
            raise ValueError("godali: Wrong type for `last_batch_policy`. Expected %s, got %s"
                             % (LastBatchPolicy.__module__ + ".LastBatchPolicy",
                                type(last_batch_policy).__name__))
        self._policy = last_batch_policy
        self._last_batch_padded = bool(last_batch_padded)

        size = int(size)
        if size == 0:
            raise IteratorArgumentError("godali: Size cannot be 0")
        if reader_name is not None and size > 0:
            raise IteratorArgumentError("godali: when reader_name is given, size must not "
                                        "be set")
        if reader_name is not None and last_batch_padded:
            raise IteratorArgumentError("godali: when reader_name is given, "
                                        "last_batch_padded must not be set: it comes from "
                                        "the reader's pad_last_batch")
        if reader_name is not None and not isinstance(reader_name, str):
            raise TypeError("godali: reader_name must be a string")
        self._reader_name = reader_name

        for p in self._pipes:
            if not prepare_first_batch and reader_name is None and _lazy_build(p, size):
                # DALI: with prepare_first_batch=False nothing runs (no source is polled)
                # before the first next(); the pipeline is built then.
                n = len(p._outputs)
            else:
                p.build()
                n = p._num_outputs
            if n != len(self.output_map):
                raise IteratorArgumentError(
                    "godali: output_map has %d names (%s) but the pipeline has %d outputs"
                    % (len(self.output_map), ", ".join(self.output_map), n))

        self._meta = None
        if reader_name is not None:
            self._meta_from([reader_name] * self._num_gpus)
            # With several readers, reader_name's epochs are the iterator's.
            for p in self._pipes:
                p._set_epoch_reader(reader_name)
        elif size < 0:
            # godali: a pipeline with exactly one reader sizes its epochs without
            # reader_name (DALI would need reader_name or size here).
            names = [p.reader_names() for p in self._pipes]
            if all(len(x) == 1 for x in names):
                self._meta_from([x[0] for x in names])
            elif self._num_gpus > 1:
                raise IteratorArgumentError("godali: Negative size is supported only for a "
                                            "single pipeline: with several pipelines give "
                                            "reader_name or size")
        else:
            warnings.warn("godali: set reader_name rather than size (and last_batch_padded) "
                          "whenever possible; size counts samples without knowing the "
                          "shards and may miss or repeat some", Warning, stacklevel=3)
        self._size_mode = size > 0
        self._size = size if size > 0 else self._reader_size()

        self._counter = 0      # samples delivered this epoch (size mode: DALI's counter)
        self._batches = 0      # batches delivered this epoch
        self._ended = False
        self._ever_consumed = False
        self._restore_state()

        if self._meta is not None and self._policy == LastBatchPolicy.DROP and \
                self._size // self.batch_size == 0:
            # DALI finds this when it prepares the first batch.
            # DALI's wording (its tests match it), then the particulars.
            msg = ("godali: It seems that there is no data in the pipeline. This may happen "
                   "if `last_batch_policy` is set to PARTIAL and the requested batch size is "
                   "greater than the shard size. (no batch can be produced: LastBatchPolicy.DROP "
                   "with batch_size %d and shards of %d sample(s) drops every batch)"
                   % (self.batch_size, self._size))
            if prepare_first_batch:
                raise NoDataError(msg)
            self._ended = True
        elif self._size_mode and self._policy == LastBatchPolicy.DROP and \
                self._size < self.batch_size * self._num_gpus and prepare_first_batch:
            # The same with size=: one step of all the pipelines is more than size, so the
            # first batch DALI prepares is dropped.
            raise NoDataError(
                "godali: It seems that there is no data in the pipeline. This may happen if "
                "`last_batch_policy` is set to PARTIAL and the requested batch size is "
                "greater than the shard size. (no batch can be produced: LastBatchPolicy.DROP "
                "with size=%d and %d pipeline(s) of batch_size %d drops every batch)"
                % (self._size, self._num_gpus, self.batch_size))
        if self._meta is not None and not self._ended:
            for p in self._pipes:
                p._set_last_batch_policy(self._policy.name.lower())
            self._count_steps()
        if prepare_first_batch:
            # Only scheduled, not taken: a checkpoint must not count a batch the caller
            # has not seen.
            for p in self._pipes:
                p.schedule_run()
            if self._restored() and self._epoch_over():
                # DALI prepares the first batch here: an iterator restored at the end of
                # its epoch meets that end now, and with auto_reset starts the next epoch
                # (its first `for` loop then runs a whole epoch, as the original's next
                # one does).
                self._ended = True
                # DALI counts that attempt as consumed: the first `for` loop over a
                # restored iterator without auto_reset starts the next epoch.
                self._ever_consumed = True
                if self._auto_reset:
                    self.reset()

    # -- checkpoints --------------------------------------------------------------------

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

    def _restored(self):
        return any(p._iterator_state is not None for p in self._pipes)

    def _epoch_over(self):
        """Whether the current epoch has returned all its batches."""
        return self._ended or (self._size_mode and self._counter >= self._size) or \
            (self._meta is not None and self._batches >= len(self))

    def skipped(self):
        """The samples of the batch returned last that failed and were replaced
        (on_error="skip"): one list per pipeline of Pipeline.skipped()'s dicts (sample,
        file, node, error)."""
        return [p.skipped() for p in self._pipes]

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
                raise IteratorArgumentError("godali: the reader should have the same %s in "
                                            "all the pipelines" % key)
        self._meta = {
            "n": m0["epoch_size"], "k": m0["number_of_shards"], "pad": m0["pad_last_batch"],
            "stick": m0["stick_to_shard"], "shards": [m["shard_id"] for m in metas],
        }
        self._last_batch_padded = bool(m0["pad_last_batch"])

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

    def _count_steps(self):
        """The engine's batches in the epoch about to start (a reader without
        pad_last_batch: they vary from epoch to epoch under FILL, and DALI's size with
        them). With pad_last_batch and DROP, DALI counts the smallest shard's full
        batches on every shard (_reader_size), not each shard's own."""
        if self._meta is None or (self._meta["pad"] and self._policy == LastBatchPolicy.DROP):
            return
        self._steps = self._pipes[0]._epoch_batches()
        if not self._meta["pad"] and self._policy == LastBatchPolicy.FILL:
            self._size = self._steps * self.batch_size

    @property
    def size(self):
        """Samples per epoch (per shard with a reader), as DALI's iterator reports it."""
        return self._size

    def __len__(self):
        if self._size < 0:
            raise TypeError("godali: this iterator has no length: give size= or "
                            "reader_name=")
        if self._steps is not None:
            return self._steps
        per = self.batch_size * (self._num_gpus if self._size_mode else 1)
        if self._policy == LastBatchPolicy.DROP:
            return self._size // per
        return -(-self._size // per)

    # -- iteration ----------------------------------------------------------------------

    def __iter__(self):
        # DALI: iter() on an iterator that has delivered data starts the next epoch (a
        # second `for` loop over an iterator without auto_reset runs a new epoch; mid-epoch
        # the reset is ignored with a warning).
        if self._ever_consumed and (self._batches or self._ended):
            self.reset()
        return self

    def __next__(self):
        self._ever_consumed = True
        outs, keep = self._next_outputs()
        return self._convert(outs, keep)

    def next(self):
        """Returns the next batch (DALI's iterator.next())."""
        return self.__next__()

    def _convert(self, outs, keep):
        raise NotImplementedError

    def _end(self):
        self._ended = True
        if self._auto_reset:
            self.reset()
        raise StopIteration

    def _next_outputs(self):
        """The pipelines' outputs for the next step and, per pipeline, how many leading
        samples belong to the epoch (the batch size when all of them do)."""
        if self._ended:
            self._end()
        bs = self.batch_size
        size_mode = self._size_mode
        if size_mode:
            if self._counter >= self._size:
                self._end()
        elif self._meta is not None and self._batches >= len(self):
            self._end()

        outs = []
        keep = []
        for j, p in enumerate(self._pipes):
            if size_mode:
                # DALI's readers never stop: size slices an endless stream; an external
                # source's StopIteration still ends the epoch.
                try:
                    outs.append(p.outputs())
                except StopIteration:
                    self._end()
                _prefetch(p)
                keep.append(_batch_len(outs[-1], bs))
                continue
            try:
                outs.append(p._epoch_outputs())
            except StopIteration:
                self._end()
            # The engine's batch info: the samples that are the epoch's (without the
            # copies pad_last_batch adds; under PARTIAL, those left of the shard).
            keep.append(p.batch_info.valid if self._meta is not None
                        else _batch_len(outs[-1], bs))

        # Each pipeline's batch may be smaller than batch_size (an external source's
        # variable batch size): got holds the sizes, keep what of them is returned.
        got = [_batch_len(o, bs) for o in outs]
        if size_mode:
            before = self._counter
            self._counter += sum(got) + bs * (self._num_gpus - len(got))
            if self._counter > self._size:
                if self._policy == LastBatchPolicy.DROP:
                    self._end()
                # Samples still owed: whole pipelines first, the last one partially.
                owed = self._size - before
                keep = [max(0, min(g, owed - j * bs)) for j, g in enumerate(got)]
                if self._policy == LastBatchPolicy.PARTIAL:
                    # DALI returns only the pipelines that still owe samples.
                    n = max(1, sum(1 for k in keep if k > 0))
                    outs, keep = outs[:n], keep[:n]
        else:
            if self._policy == LastBatchPolicy.DROP and self._meta is not None and \
                    any(k < bs for k in keep):
                self._end()
            self._counter += sum(keep)
            if self._meta is not None and all(p.batch_info.last_in_epoch
                                              for p in self._pipes):
                # The engine's next call would only report the end of the epoch.
                self._ended = True
        self._batches += 1
        if self._policy != LastBatchPolicy.PARTIAL:
            keep = got[:len(keep)]
        return outs, keep

    def reset(self):
        """Starts the next epoch, once the current one is over (DALI ignores, with a
        warning, a reset in the middle of an epoch; so does godali)."""
        if not self._epoch_over():
            log.warning("godali: the iterator does not support resetting while the epoch "
                        "is not finished; ignoring reset()")
            return
        if self._size_mode:
            for p in self._pipes:
                if not getattr(p, "_ext_epoch_over", False) and _source_ended(p):
                    # The source's StopIteration came with the prefetch of the batch after
                    # the epoch's last (as in DALI): take the end, then restart it.
                    try:
                        p.outputs()
                    except StopIteration:
                        pass
                if getattr(p, "_ext_epoch_over", False):
                    p.reset()  # an external source ended the epoch
            if self._policy == LastBatchPolicy.FILL and not self._last_batch_padded:
                self._counter = self._counter % self._size
            else:
                self._counter = 0
        else:
            for p in self._pipes:
                p.reset()
            self._counter = 0
            self._count_steps()
        self._batches = 0
        self._ended = False
