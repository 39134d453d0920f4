"""DALI code runs with only the import changed: module layout, the ops class API, legacy
names, Pipeline's signature, DALI's output objects and the iterators' documented rules
(nvidia.dali.plugin.base_iterator)."""

import importlib
import warnings

import numpy as np
import pytest
import torch

import godali
from godali import fn, ops, types
from godali.plugin.pytorch import (DALIClassificationIterator, DALIGenericIterator,
                                   DALIRaggedIterator, LastBatchPolicy, feed_ndarray)


def _labels_pipe(files, labels, batch_size=2, pad=False, shard_id=0, num_shards=1,
                 stick=False, **pipe_kw):
    pipe = godali.Pipeline(batch_size=batch_size, num_threads=1, seed=1, **pipe_kw)
    with pipe:
        jpegs, lab = fn.readers.file(files=files, labels=labels, pad_last_batch=pad,
                                     shard_id=shard_id, num_shards=num_shards,
                                     stick_to_shard=stick, name="Reader")
        images = fn.resize(fn.decoders.image(jpegs), resize_x=4, resize_y=4)
        pipe.set_outputs(images, lab)
    return pipe


def _epoch(it, j=0):
    return [b[j]["label"].reshape(-1).tolist() for b in it]


# --- module layout -----------------------------------------------------------------------

@pytest.mark.parametrize("module,names", [
    ("godali.plugin.pytorch", ["DALIGenericIterator", "DALIClassificationIterator",
                               "DALIRaggedIterator", "LastBatchPolicy", "feed_ndarray",
                               "to_torch_type"]),
    ("godali.plugin.base_iterator", ["LastBatchPolicy"]),
    ("godali.plugin.pytorch.experimental.proxy", ["DALIServer", "DataLoader"]),
    ("godali.pipeline", ["Pipeline", "pipeline_def"]),
    ("godali.pipeline.experimental", ["pipeline_def"]),
    ("godali.backend", ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]),
    ("godali.tensors", ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]),
    ("godali.types", ["DALIDataType", "DALIImageType", "DALIInterpType", "TensorLayout",
                      "Constant", "ScalarConstant", "FLOAT", "UINT8", "RGB", "NCHW",
                      "INTERP_TRIANGULAR", "PipelineAPIType"]),
    ("godali.math", ["clamp", "sqrt", "abs"]),
])
def test_dali_module_layout(module, names):
    m = importlib.import_module(module)
    for n in names:
        assert hasattr(m, n), "%s.%s" % (module, n)


def test_one_last_batch_policy_everywhere():
    from godali.plugin.base_iterator import LastBatchPolicy as Base
    assert Base is LastBatchPolicy
    assert [p.value for p in LastBatchPolicy] == [0, 1, 2]  # DALI's values


def test_proxy_needs_a_pipeline():
    # The proxy itself is tested in test_proxy.py.
    from godali.plugin.pytorch.experimental import proxy
    with pytest.raises(TypeError, match="expects a godali Pipeline"):
        proxy.DALIServer(None)


def test_math_without_a_datanode_says_so():
    import godali.math as gm
    with pytest.raises(TypeError, match="at least one DataNode"):
        gm.clamp(1, 0, 2)


# --- legacy names and the ops class API --------------------------------------------------

def test_legacy_fn_names_build_the_same_graph(seven_files):
    files, labels = seven_files

    def build(reader, decoder, coin):
        pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=5)
        with pipe:
            j, lab = reader(files=files, labels=labels, name="Reader")
            img = decoder(j, output_type=types.RGB)
            pipe.set_outputs(fn.flip(img, horizontal=coin(probability=0.5)), lab)
        return pipe.description()

    new = build(fn.readers.file, fn.decoders.image, fn.random.coin_flip)
    old = build(fn.file_reader, fn.image_decoder, fn.coin_flip)
    assert old == new
    assert fn.uniform.schema.name == "random.uniform"
    assert fn.image_decoder_random_crop.schema.name == "decoders.image_random_crop"


class _LegacyPipe(godali.Pipeline):
    """DALI's legacy style: operator objects made in __init__, wired in define_graph."""

    def __init__(self, files, labels, names):
        super().__init__(batch_size=3, num_threads=1, device_id=0, seed=7)
        self.input = getattr(ops, names[0])(files=files, labels=labels) \
            if "." not in names[0] else ops.readers.File(files=files, labels=labels)
        self.decode = getattr(ops, names[1])(output_type=types.RGB) \
            if "." not in names[1] else ops.decoders.Image(output_type=types.RGB)
        self.res = ops.Resize(resize_x=6, resize_y=6, interp_type=types.INTERP_LINEAR)
        self.cmn = ops.CropMirrorNormalize(dtype=types.FLOAT, output_layout=types.NCHW,
                                           crop=(6, 6), mean=[1.0, 2.0, 3.0],
                                           std=[2.0, 2.0, 2.0])
        self.coin = ops.random.CoinFlip(probability=0.5)

    def define_graph(self):
        jpegs, labels = self.input(name="Reader")
        images = self.cmn(self.res(self.decode(jpegs)), mirror=self.coin())
        return images, labels


@pytest.mark.parametrize("names", [("readers.File", "decoders.Image"),
                                   ("FileReader", "ImageDecoder")])
def test_ops_class_api_matches_fn(seven_files, names):
    files, labels = seven_files
    legacy = _LegacyPipe(files, labels, names)
    legacy.build()
    assert legacy.epoch_size("Reader") == 7

    @godali.pipeline_def(batch_size=3, num_threads=1, device_id=0, seed=7)
    def modern():
        jpegs, lab = fn.readers.file(files=files, labels=labels, name="Reader")
        images = fn.resize(fn.decoders.image(jpegs, output_type=types.RGB), resize_x=6,
                           resize_y=6, interp_type=types.INTERP_LINEAR)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT,
                                          output_layout=types.NCHW, crop=(6, 6),
                                          mean=[1.0, 2.0, 3.0], std=[2.0, 2.0, 2.0],
                                          mirror=fn.random.coin_flip(probability=0.5))
        return images, lab

    ref = modern()
    for _ in range(3):
        a_img, a_lab = legacy.run()
        b_img, b_lab = ref.run()
        np.testing.assert_array_equal(a_lab.as_array(), b_lab.as_array())
        np.testing.assert_array_equal(a_img.as_array(), b_img.as_array())


def test_ops_argument_given_twice_is_refused(seven_files):
    files, labels = seven_files
    reader = ops.readers.File(files=files, labels=labels)
    pipe = godali.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        with pytest.raises(TypeError, match="given when the operator was created"):
            reader(files=files)
    # None means "not given", at construction or at the call (DALI's WarpAffine(size=None)
    # called with size=None)
    flip = ops.Flip(horizontal=None)
    with pipe:
        flip(types.Constant(np.zeros((2, 2, 1), np.uint8)), horizontal=None, vertical=None)
    jpegs, _ = reader()  # outside a pipeline, as DALI allows: adopted by set_outputs
    pipe.set_outputs(jpegs)
    assert len(pipe.run()[0]) == 2


# --- Pipeline ----------------------------------------------------------------------------

def test_pipeline_takes_dalis_signature(seven_files):
    files, labels = seven_files
    pipe = _labels_pipe(files, labels, exec_dynamic=True, exec_separated=False,
                        py_num_workers=4, py_start_method="spawn", set_affinity=True,
                        max_streams=2, default_cuda_stream_priority=0, bytes_per_sample=64,
                        enable_memory_stats=True, output_ndim=[3, 1],
                        output_dtype=[types.UINT8, types.INT32])
    images, lab = pipe.run()
    assert lab.as_array().ravel().tolist() == [1, 2]


def test_output_dtype_is_checked(seven_files):
    files, labels = seven_files
    pipe = _labels_pipe(files, labels, output_dtype=types.FLOAT)
    with pytest.raises(TypeError, match="output_dtype"):
        pipe.run()


def test_conditionals_without_the_flag_fail_clearly(seven_files):
    files, labels = seven_files

    @godali.pipeline_def(batch_size=2, num_threads=1)
    def pipe_with_if():
        jpegs, lab = fn.readers.file(files=files, labels=labels)
        images = fn.decoders.image(jpegs)
        if fn.random.coin_flip():
            images = fn.flip(images)
        return images

    # With enable_conditionals=True it works: python/tests/test_conditionals.py.
    with pytest.raises(TypeError, match="enable_conditionals"):
        pipe_with_if()


def test_current_pipeline_inside_pipeline_def(seven_files):
    files, labels = seven_files
    seen = []

    @godali.pipeline_def(batch_size=2, num_threads=1)
    def p():
        seen.append(godali.Pipeline.current())
        jpegs, lab = fn.readers.file(files=files, labels=labels)
        return lab

    pipe = p()
    assert seen == [pipe]
    assert godali.Pipeline.current() is None


def test_run_goes_on_across_epochs_like_dalis_readers(seven_files):
    files, labels = seven_files
    pipe = _labels_pipe(files, labels, batch_size=3, stick=True)
    got = [pipe.run()[1].as_array().ravel().tolist() for _ in range(4)]
    # DALI's endless stream: the last batch of epoch 0 is filled with the next epoch's
    # first samples, and epoch 1 goes on after them.
    assert got == [[1, 2, 3], [4, 5, 6], [7, 1, 2], [3, 4, 5]]
    assert pipe.batch_info.epoch == 1


# --- outputs -----------------------------------------------------------------------------

def test_tensorlist_is_dalis(seven_files):
    files, labels = seven_files
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=1)
    with pipe:
        jpegs, lab = fn.readers.file(files=files, labels=labels)
        img = fn.decoders.image(jpegs)
        chw = fn.crop_mirror_normalize(fn.resize(img, resize_x=4, resize_y=4),
                                       dtype=types.FLOAT, output_layout="CHW")
        pipe.set_outputs(img, chw, lab)
    img, chw, lab = pipe.run()
    assert isinstance(img, godali.backend.TensorListCPU)
    assert not isinstance(img, godali.backend.TensorListGPU)
    assert img.layout() == "HWC" and chw.layout() == "CHW" and lab.layout() == ""
    assert len(img) == 2 and img.is_dense_tensor()
    t = chw.as_tensor()
    assert isinstance(t, godali.backend.TensorCPU)
    assert t.shape() == [2, 3, 4, 4] and t.layout() == "NCHW"
    assert t.dtype == types.FLOAT
    arr = chw.as_array()
    np.testing.assert_array_equal(np.asarray(t), arr)
    np.testing.assert_array_equal(chw.at(1), arr[1])
    assert chw[1].shape() == [3, 4, 4] and chw[1].layout() == "CHW"
    np.testing.assert_array_equal(chw[1].as_array(), arr[1])
    assert chw.as_cpu() is chw
    # Zero copy into torch.
    assert torch.from_dlpack(t).data_ptr() == t.data_ptr() == chw.data_ptr()
    assert lab.at(0).tolist() == [1]


def test_tensor_constructors_share_memory():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = godali.backend.TensorCPU(a, "HWC")
    assert t.shape() == [2, 3, 4] and t.layout() == "HWC" and t.dtype == types.FLOAT
    assert t.data_ptr() == a.ctypes.data
    tl = godali.backend.TensorListCPU(a, "HW")
    assert len(tl) == 2 and tl.layout() == "HW"
    np.testing.assert_array_equal(tl.at(1), a[1])
    ragged = godali.backend.TensorListCPU([a[0], a[1, :2]])
    assert not ragged.is_dense_tensor() and ragged.shape() == [(3, 4), (2, 4)]
    # As DALI's, TensorCPU keeps the layout it is given without checking its length.
    assert godali.backend.TensorCPU(a, "HW").layout() == "HW"


def test_feed_ndarray_copies(seven_files):
    files, labels = seven_files
    images, lab = _labels_pipe(files, labels).run()
    dst = torch.zeros((2, 4, 4, 3), dtype=torch.uint8)
    out = feed_ndarray(images.as_tensor(), dst)
    assert out is dst
    np.testing.assert_array_equal(dst.numpy(), images.as_array())
    assert dst.data_ptr() != images.data_ptr()
    one = torch.zeros((4, 4, 3), dtype=torch.uint8)
    feed_ndarray(images[1], one)
    np.testing.assert_array_equal(one.numpy(), images.at(1))
    with pytest.raises(ValueError, match="Shapes do not match"):
        feed_ndarray(images, torch.zeros((1, 4, 4, 3), dtype=torch.uint8))


# --- iterators (DALI's base_iterator rules) ----------------------------------------------

def test_second_for_loop_runs_the_next_epoch(seven_files):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels), reader_name="Reader",
                                    last_batch_policy=LastBatchPolicy.PARTIAL)
    # Without auto_reset, iter() resets as DALI's; the reader is one stream, of which
    # each PARTIAL epoch reads 8 positions and keeps 7.
    assert _epoch(it) == [[1, 2], [3, 4], [5, 6], [7]]
    assert _epoch(it) == [[2, 3], [4, 5], [6, 7], [1]]
    assert _epoch(it) == [[3, 4], [5, 6], [7, 1], [2]]


def test_iter_on_a_fresh_iterator_does_not_skip(seven_files):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels), reader_name="Reader")
    it = iter(iter(it))
    assert next(it)[0]["label"].reshape(-1).tolist() == [1, 2]


@pytest.mark.parametrize("value,resets", [(True, True), ("yes", True), (False, False),
                                          ("no", False), (None, False)])
def test_auto_reset_values(seven_files, value, resets):
    files, labels = seven_files
    it = DALIClassificationIterator(_labels_pipe(files, labels), reader_name="Reader",
                                    auto_reset=value)
    for _ in it:
        pass
    if resets:  # the epoch's last batch was [7, 1]: the stream goes on
        assert next(it)[0]["label"].reshape(-1).tolist() == [2, 3]
    else:
        with pytest.raises(StopIteration):
            next(it)


def test_argument_errors_are_dalis(seven_files):
    files, labels = seven_files
    pipe = _labels_pipe(files, labels)
    with pytest.raises(ValueError, match="last_batch_policy"):
        DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy="PARTIAL")
    with pytest.raises(ValueError, match="auto_reset"):
        DALIClassificationIterator(pipe, reader_name="Reader", auto_reset="maybe")
    # DALI checks these with assert: the error is both an AssertionError and a ValueError.
    for kw in (dict(reader_name="Reader", size=7),
               dict(reader_name="Reader", last_batch_padded=True),
               dict(size=0)):
        with pytest.raises(AssertionError):
            DALIClassificationIterator(pipe, **kw)
        with pytest.raises(ValueError):
            DALIClassificationIterator(pipe, **kw)
    with pytest.raises(AssertionError, match="distinct"):
        DALIGenericIterator(pipe, ["a", "a"])
    with pytest.raises(AssertionError, match="output_map"):
        DALIGenericIterator(pipe, ["only_one"])
    other = godali.Pipeline(batch_size=3, num_threads=1)
    with other:
        other.set_outputs(*fn.readers.file(files=files, labels=labels))
    with pytest.raises(AssertionError, match="batch_size"):
        DALIGenericIterator([pipe, other], ["a", "b"], size=7)


def test_drop_with_a_batch_larger_than_the_shard_raises(seven_files):
    files, labels = seven_files
    # 7 samples in 3 shards: shards of 2 or 3, batch 4.
    pipes = [_labels_pipe(files, labels, batch_size=4, shard_id=i, num_shards=3)
             for i in range(3)]
    with pytest.raises(RuntimeError, match="no batch"):
        DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader",
                            last_batch_policy=LastBatchPolicy.DROP)
    it = DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader",
                             last_batch_policy=LastBatchPolicy.DROP,
                             prepare_first_batch=False)
    assert len(it) == 0
    assert list(it) == []


def test_legacy_arguments(seven_files):
    files, labels = seven_files
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        it = DALIClassificationIterator(_labels_pipe(files, labels), size=7,
                                        fill_last_batch=False, dynamic_shape=True)
    assert any("fill_last_batch" in str(x.message) for x in w)
    assert _epoch(it) == [[1, 2], [3, 4], [5, 6], [7]]   # fill_last_batch=False: PARTIAL


def _padded_drop_model(n, k, bs, shard_id, epoch):
    """DALI's LastBatchPolicy.DROP over a reader with pad_last_batch (labels 1..n): the
    reader reads padded epochs of R = ceil(ceil(n/k)/bs) batches (its shard, moving every
    reader epoch, then its last sample repeated); each iterator epoch returns L =
    floor(floor(n/k)/bs) of them and reads one more it drops when floor(n/k) is not a
    multiple of bs (D per epoch); a reset does not rewind the reader. So with n=7, k=3,
    bs=2 the second epoch is shard 0's padded batch [2, 2] (DALI 2.4, measured)."""
    r_len = -(-(-(-n // k)) // bs)
    d, l = -(-(n // k) // bs), (n // k) // bs
    out = []
    for c in range(l):
        g = epoch * d + c
        r, j = divmod(g, r_len)
        s = (shard_id + r) % k
        shard = list(range(n * s // k + 1, n * (s + 1) // k + 1))
        out += [shard[min(p, len(shard) - 1)] for p in range(j * bs, j * bs + bs)]
    return out


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("pad", [False, True])
def test_several_pipelines_cover_each_shard(seven_files, policy, pad):
    """DALI's test_fw_iterators shape: 3 shards of 7 samples, one pipeline each."""
    files, labels = seven_files
    k, bs = 3, 2
    pipes = [_labels_pipe(files, labels, batch_size=bs, pad=pad, shard_id=i, num_shards=k)
             for i in range(k)]
    it = DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader",
                             last_batch_policy=policy)
    n = 7
    if not pad:
        assert _run_epochs(it, 3) == _stream_model(n, k, bs, policy, False, list(range(k)), 3)
        return
    for epoch in range(3):
        per = [[] for _ in range(k)]
        steps = 0
        for batch in it:
            assert len(batch) == k
            for j in range(k):
                per[j].extend(batch[j]["label"].reshape(-1).tolist())
            steps += 1
        assert steps == len(it)
        for j in range(k):
            s = (j + epoch) % k          # shards move every epoch
            b, e = n * s // k, n * (s + 1) // k
            shard = list(range(b + 1, e + 1))
            if policy == LastBatchPolicy.PARTIAL:
                assert per[j] == shard
            elif policy == LastBatchPolicy.DROP:
                assert per[j] == _padded_drop_model(n, k, bs, j, epoch)
                assert len(per[j]) == (n // k) // bs * bs
            else:
                assert len(per[j]) == len(it) * bs
                assert per[j][:len(shard)] == shard
                if pad:
                    assert set(per[j][len(shard):]) <= {shard[-1]}
        if policy == LastBatchPolicy.PARTIAL:
            assert sorted(sum(per, [])) == list(range(1, n + 1))
        it.reset()


def test_size_mode_with_two_pipelines(seven_files):
    files, labels = seven_files
    pipes = [_labels_pipe(files, labels, shard_id=i, num_shards=2) for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = DALIGenericIterator(pipes, ["data", "label"], size=5,
                                 last_batch_policy=LastBatchPolicy.PARTIAL)
    assert len(it) == 2   # ceil(5 / (2 pipelines * 2))
    batches = list(it)
    assert [len(b) for b in batches] == [2, 1]   # the last step needs one pipeline only
    assert sum(len(d["label"]) for b in batches for d in b) == 5


def test_ragged_iterator(seven_files, tmp_path):
    from conftest import make_jpeg
    files = [make_jpeg(str(tmp_path / ("r%d.jpg" % i)), 6 + i, 5, seed=i) for i in range(3)]
    pipe = godali.Pipeline(batch_size=3, num_threads=1, seed=1)
    with pipe:
        jpegs, lab = fn.readers.file(files=files, labels=[0, 1, 2], name="Reader")
        pipe.set_outputs(fn.decoders.image(jpegs), jpegs, lab)
    it = DALIRaggedIterator(pipe, ["img", "raw", "label"], reader_name="Reader",
                            output_types=[DALIRaggedIterator.SPARSE_LIST_TAG,
                                          DALIRaggedIterator.SPARSE_COO_TAG,
                                          DALIRaggedIterator.DENSE_TAG])
    (batch,) = next(it)
    assert [tuple(t.shape) for t in batch["img"]] == [(6, 5, 3), (7, 5, 3), (8, 5, 3)]
    coo = batch["raw"]
    assert coo.is_sparse and coo.shape[0] == 3
    dense = coo.to_dense()
    for i, f in enumerate(files):
        data = open(f, "rb").read()
        assert bytes(dense[i, :len(data)].numpy().tobytes()) == data
    assert batch["label"].reshape(-1).tolist() == [0, 1, 2]
    with pytest.raises(AssertionError):
        DALIRaggedIterator(pipe, ["a", "b", "c"], output_types=["bogus"] * 3)


def _stream_model(n, k, bs, policy, stick, shard_ids, epochs):
    """DALI's readers without pad_last_batch and its iterator with reader_name, written
    from DALI's rules: every reader is an endless stream of passes over a shard (the
    next shard each pass unless stick_to_shard, labels = position + 1); the iterator
    counts samples per epoch with _counter and, for FILL, the samples every shard read
    ahead (_counter_per_gpu over all k shards, _shard_sizes_per_gpu rolled each epoch).
    Returns, per epoch, per step, per pipeline, the labels returned."""
    import math

    def stream(r):
        seg = 0
        while True:
            sh = r if stick else (r + seg) % k
            for x in range(n * sh // k, n * (sh + 1) // k):
                yield x + 1
            seg += 1

    sizes0 = [n * (i + 1) // k - n * i // k for i in range(k)]
    streams = [stream(r) for r in shard_ids]
    if policy == LastBatchPolicy.DROP:
        size = n // k
    else:
        size = math.ceil(math.ceil(n / k) / bs) * bs
    counter, ahead, sizes, sid = 0, [0] * k, list(sizes0), list(shard_ids)
    out = []
    for _ in range(epochs):
        ep = []
        while counter < size:
            batch = [[next(st) for _ in range(bs)] for st in streams]
            counter += bs
            if policy == LastBatchPolicy.DROP and \
                    any(a + counter > z for a, z in zip(ahead, sizes)):
                break
            if policy == LastBatchPolicy.PARTIAL:
                batch = [b[:max(0, bs - (counter - sizes0[i]))] for b, i in zip(batch, sid)]
            ep.append(batch)
        out.append(ep)
        if policy == LastBatchPolicy.FILL:
            read = counter - min(ahead)
            ahead = [a + read - z for a, z in zip(ahead, sizes)]
            counter = min(ahead)
        else:
            counter = 0
        if not stick:
            sid = [(i + 1) % k for i in sid]
        if policy == LastBatchPolicy.FILL:
            if not stick:
                sizes = sizes[-1:] + sizes[:-1]
            size = math.ceil(max(z - a for z, a in zip(sizes, ahead)) / bs) * bs
    return out


def _run_epochs(it, epochs):
    out = []
    for _ in range(epochs):
        ep = [[b["label"].reshape(-1).tolist() for b in batch] for batch in it]
        assert len(ep) <= len(it)
        out.append(ep)
        it.reset()
    return out


@pytest.mark.parametrize("policy", list(LastBatchPolicy))
@pytest.mark.parametrize("k,stick", [(1, False), (2, False), (2, True), (3, False),
                                     (3, True)])
@pytest.mark.parametrize("bs", [2, 3])
def test_continuous_stream_follows_dalis_iterator(seven_files, policy, k, stick, bs):
    """pad_last_batch=False: the reader stream goes on across epochs (the last batch is
    filled with the next samples) and the iterator's epochs are DALI's, over 5 epochs."""
    files, labels = seven_files
    if bs > 7 // k:
        pytest.skip("batches larger than a shard")
    pipes = [_labels_pipe(files, labels, batch_size=bs, shard_id=i, num_shards=k,
                          stick=stick) for i in range(k)]
    it = DALIGenericIterator(pipes, ["data", "label"], reader_name="Reader",
                             last_batch_policy=policy)
    want = _stream_model(7, k, bs, policy, stick, list(range(k)), 5)
    assert _run_epochs(it, 5) == want
    if policy == LastBatchPolicy.FILL:
        # FILL skips nothing: the epochs one after the other are the reader's stream.
        for j in range(k):
            got = [x for ep in want for step in ep for x in step[j]]
            seq = []
            seg = 0
            while len(seq) < len(got):
                sh = j if stick else (j + seg) % k
                seq += list(range(7 * sh // k + 1, 7 * (sh + 1) // k + 1))
                seg += 1
            assert got == seq[:len(got)]


def test_continuous_stream_checkpoint_every_step(seven_files):
    """A checkpoint taken after any step of the stream resumes the same batches."""
    files, labels = seven_files

    def make(ck=None):
        pipe = _labels_pipe(files, labels, batch_size=2, shard_id=1, num_shards=2,
                            enable_checkpointing=True, checkpoint=ck)
        return DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader",
                                   auto_reset=True)

    def take(it, steps):
        out = []
        for _ in range(steps):
            try:
                out.append(next(it)[0]["label"].reshape(-1).tolist())
            except StopIteration:  # auto_reset: the next call starts the next epoch
                out.append("end")
        return out

    ref = take(make(), 14)
    for cut in range(0, 12):
        it = make()
        first = take(it, cut)
        resumed = make(it.checkpoints()[0])
        want = ref[cut:]
        if want[0] == "end":
            # DALI 2.4 (measured): restored at the end of its epoch, the iterator meets
            # that end when it prepares its first batch and auto_reset goes on at once.
            want = want[1:]
        assert first + take(resumed, len(want)) == ref[:cut] + want, cut


def test_ops_compose_and_legacy_reader_names():
    # DALI's ops.Compose chains operators (DALI 2.4 gives 20 for this program), and its
    # flat legacy names of the sequence and video readers exist.
    import numpy as np
    from godali import ops

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: [np.full((8, 8, 3), 10, np.uint8)] * 2,
                               layout="HWC")
        return ops.Compose([ops.Flip(horizontal=1), ops.Brightness(brightness=2.0)])(x)

    p = pipe()
    p.build()
    assert (p.run()[0].as_array() == 20).all()
    assert ops.VideoReader and ops.SequenceReader and ops.BBoxRotate
    assert fn.video_reader.schema.name == "readers.video"
    assert fn.sequence_reader.schema.name == "readers.sequence"
    with pytest.raises(ValueError, match="at least one"):
        ops.Compose([])
