"""DALI API parity: fn namespace from the schemas, argument checks at the call site,
Pipeline/pipeline_def defaults and behaviour, the JSON description."""

import inspect
import json

import numpy as np
import pytest

import godali
from godali import _graph, fn, pipeline_def, types


def test_fn_namespace_follows_the_schemas(lib):
    names = {op for op in _graph.schemas().ops if not op.startswith("_")}
    assert {"readers.file", "decoders.image", "decoders.image_random_crop", "resize",
            "crop_mirror_normalize", "random.coin_flip"} <= names
    for name in names:
        obj = fn
        for part in name.split("."):
            obj = getattr(obj, part)
        assert callable(obj)
        assert obj.__doc__ and obj.schema.name == name
    assert "readers" in dir(fn) and "file" in dir(fn.readers)


def test_signature_and_doc_come_from_the_schema():
    sig = inspect.signature(fn.decoders.image_random_crop)
    p = sig.parameters
    assert p["random_area"].default == [0.08, 1.0]
    assert p["num_attempts"].default == 10
    assert p["random_aspect_ratio"].default == pytest.approx([3 / 4, 4 / 3])
    assert p["output_type"].default == "RGB"
    assert "device" in p and "name" in p
    assert p["inputs"].kind == inspect.Parameter.VAR_POSITIONAL
    doc = fn.crop_mirror_normalize.__doc__
    assert "mirror" in doc and "per-sample input allowed" in doc
    assert "readers" not in inspect.signature(fn.random.coin_flip).parameters


def test_types_serialise_to_their_names():
    assert types.FLOAT.json == "FLOAT" and str(types.FLOAT16) == "FLOAT16"
    assert types.RGB.json == "RGB" and types.GRAY.json == "GRAY"
    assert types.INTERP_TRIANGULAR.json == "INTERP_TRIANGULAR"
    assert {types.UINT8.json, types.INT32.json, types.BGR.json, types.INTERP_LINEAR.json,
            types.INTERP_CUBIC.json, types.INTERP_NN.json} == {
        "UINT8", "INT32", "BGR", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_NN"}
    assert types.NCHW == "CHW"


def test_pipeline_defaults_are_dalis():
    sig = inspect.signature(godali.Pipeline.__init__).parameters
    assert sig["batch_size"].default == -1
    assert sig["num_threads"].default == -1
    assert sig["device_id"].default == -1
    assert sig["seed"].default == -1
    assert sig["prefetch_queue_depth"].default == 2
    assert sig["exec_pipelined"].default is True
    assert sig["exec_async"].default is True
    p = godali.Pipeline(batch_size=8)
    assert (p.batch_size, p.max_batch_size, p.seed, p.prefetch_queue_depth) == (8, 8, -1, 2)


def _simple(root, **kw):
    pipe = godali.Pipeline(batch_size=2, num_threads=1, seed=3, **kw)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=16, resize_y=16)
        pipe.set_outputs(images, labels)
    return pipe


def test_json_description(image_folder):
    pipe = _simple(image_folder, max_image_pixels=1000000, on_error="skip", first_epoch=3)
    d = json.loads(pipe.to_json())
    assert d["batch_size"] == 2 and d["num_threads"] == 1 and d["seed"] == 3
    assert d["device_id"] is None  # device_id=-1 and no GPU operator: CPU only
    assert (d["max_image_pixels"], d["on_error"], d["first_epoch"]) == (1000000, "skip", 3)
    ops = {o["op"]: o for o in d["ops"]}
    assert ops["readers.file"]["name"] == "Reader"
    assert ops["decoders.image"]["args"] == {"output_type": "RGB"}
    assert ops["decoders.image"]["inputs"] == [ops["readers.file"]["outputs"][0]]
    assert ops["resize"]["args"] == {"resize_x": 16.0, "resize_y": 16.0}
    assert d["outputs"] == [ops["resize"]["outputs"][0], ops["readers.file"]["outputs"][1]]


def test_arg_inputs_and_unreachable_nodes(image_folder):
    pipe = godali.Pipeline(batch_size=2)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=image_folder)
        img = fn.decoders.image(jpegs)
        fn.random.uniform(range=[0, 1])  # not an output's ancestor: left out
        flip = fn.random.coin_flip(probability=0.25, name="coin")
        out = fn.crop_mirror_normalize(img, crop=(8, 8), mirror=flip, dtype=types.FLOAT)
        pipe.set_outputs(out)
    d = pipe.description()
    cmn = [o for o in d["ops"] if o["op"] == "crop_mirror_normalize"][0]
    assert cmn["arg_inputs"] == {"mirror": "coin:" + _graph.schemas().ops[
        "random.coin_flip"].outputs[0]}
    assert "random.uniform" not in {o["op"] for o in d["ops"]}
    assert cmn["args"]["crop"] == [8.0, 8.0] and cmn["args"]["dtype"] == "FLOAT"


def test_unknown_argument_fails_at_the_call_site():
    pipe = godali.Pipeline(batch_size=1)
    with pipe:
        jpegs, _ = fn.readers.file(files=["a.jpg"])
        with pytest.raises(TypeError) as e:
            fn.decoders.image_random_crop(jpegs, random_areaa=[0.1, 1])
    msg = str(e.value)
    # The engine's checker (godali_check_node), in DALI's words (its KeyError), with the
    # nearest declared name and the valid ones.
    assert isinstance(e.value, KeyError)
    assert "fn.decoders.image_random_crop" in msg
    assert 'Argument "random_areaa" is not defined for operator' in msg
    assert 'Did you mean "random_area"?' in msg and "num_attempts" in msg


def test_wrong_types_fail_at_the_call_site():
    pipe = godali.Pipeline(batch_size=1)
    with pipe:
        jpegs, _ = fn.readers.file(files=["a.jpg"])
        with pytest.raises(TypeError, match=r"fn.resize: argument 'resize_x' \(float\)"):
            fn.resize(jpegs, resize_x="big")
        with pytest.raises(TypeError, match="types.DALIInterpType"):
            fn.resize(jpegs, interp_type=types.FLOAT)
        with pytest.raises(TypeError, match="'num_attempts'.*expected an int"):
            fn.decoders.image_random_crop(jpegs, num_attempts=2.5)
        with pytest.raises(TypeError, match="'file_root'.*expected a string"):
            fn.readers.file(file_root=3)
        with pytest.raises(TypeError, match="expects from 1 to 1 inputs, but received 0"):
            fn.decoders.image()
        with pytest.raises(TypeError, match="must be a DataNode"):
            fn.decoders.image("a.jpg")
        flip = fn.random.coin_flip()
        with pytest.raises(TypeError, match="'num_attempts' must be a constant"):
            fn.decoders.image_random_crop(jpegs, num_attempts=flip)
        # Accepted forms: enum names as strings, numpy scalars and arrays, scalar lists.
        fn.resize(jpegs, interp_type="triangular", resize_x=np.float32(4))
        fn.crop_mirror_normalize(jpegs, mean=np.array([1, 2, 3]), std=2)
        with pytest.raises(ValueError, match="unique"):
            fn.readers.file(files=["b.jpg"], name=_graph.current_pipeline()._nodes[0].name)


def test_unknown_operator_lists_valid_ones():
    with pytest.raises(AttributeError) as e:
        fn.decoders.imagee
    assert "did you mean 'image'" in str(e.value)
    with pytest.raises(AttributeError, match="readers"):
        fn.no_such_op


def test_operators_outside_a_pipeline_wait_for_one():
    # DALI builds nodes outside a pipeline too; set_outputs adopts them.
    flip = fn.random.coin_flip(probability=1.0)
    assert flip.source.pipeline is None
    pipe = godali.Pipeline(batch_size=2, num_threads=1)
    pipe.set_outputs(flip)
    assert flip.source.pipeline is pipe
    (out,) = pipe.run()
    assert [int(out.at(j)) for j in range(2)] == [1, 1]


def test_gpu_requests_on_the_cpu_flavour(lib):
    if lib.flavour == "cuda":
        pytest.skip("CPU flavour behaviour")
    # As in DALI, the refusal comes at build(), naming the line of the op call.
    for make in (lambda jpegs, labels: fn.decoders.image(jpegs, device="mixed"),
                 lambda jpegs, labels: labels.gpu()):
        pipe = godali.Pipeline(batch_size=1)
        with pipe:
            jpegs, labels = fn.readers.file(files=["a.jpg"])
            pipe.set_outputs(make(jpegs, labels))
        with pytest.raises(godali.NoCUDAError, match="CUDA flavour.*made at .*test_api.py:"):
            pipe.build()


def test_pipeline_def_splits_arguments(image_folder):
    @pipeline_def
    def pipe_fn(root, size=8):
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        return fn.resize(fn.decoders.image(jpegs), resize_x=size, resize_y=size), labels

    pipe = pipe_fn(image_folder, size=12, batch_size=3, num_threads=1, seed=5,
                   on_error="skip")
    assert isinstance(pipe, godali.Pipeline)
    assert (pipe.batch_size, pipe.num_threads, pipe.seed) == (3, 1, 5)
    images, labels = pipe.run()
    assert images.as_tensor().shape() == [3, 12, 12, 3]
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        pipe_fn(image_folder, bogus=1, batch_size=1)

    @pipeline_def(batch_size=4, seed=1)
    def with_defaults():
        return fn.random.coin_flip()

    assert with_defaults().batch_size == 4
    assert with_defaults(batch_size=2).batch_size == 2


def test_legacy_define_graph(image_folder):
    class Legacy(godali.Pipeline):
        def define_graph(self):
            _, labels = fn.readers.file(file_root=image_folder)
            return labels

    pipe = Legacy(batch_size=5, num_threads=1)
    (labels,) = pipe.run()
    assert labels.as_array().shape == (5, 1)


def test_run_goes_on_across_epochs(image_folder):
    pipe = _simple(image_folder)
    pipe.build()
    assert pipe.epoch_size("Reader") == 10
    assert pipe.epoch_size() == {"Reader": 10}
    meta = pipe.reader_meta("Reader")
    assert meta == {"epoch_size": 10, "epoch_size_padded": 10, "shard_size": 10,
                    "shard_id": 0, "number_of_shards": 1, "pad_last_batch": False,
                    "stick_to_shard": False}
    for epoch in range(2):
        seen = []
        for it in range(5):
            images, labels = pipe.run()
            info = pipe.batch_info
            assert (info.epoch, info.iteration, info.valid) == (epoch, it, 2)
            assert info.last_in_epoch == (it == 4)
            seen.extend(labels.as_array().ravel().tolist())
        assert sorted(seen) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    # As DALI's readers, the pipeline goes on into the next epoch by itself...
    assert (pipe.batch_info.epoch, pipe.batch_info.iteration) == (1, 4)
    pipe.run()
    assert (pipe.batch_info.epoch, pipe.batch_info.iteration) == (2, 0)
    # ... and reset() mid-epoch moves to the next one.
    pipe.reset()
    pipe.schedule_run()
    images, labels = pipe.outputs()
    assert pipe.batch_info.epoch == 3
    assert pipe.output_names() == pipe.description()["outputs"]
    with pytest.raises(godali.InvalidArgumentError, match="no reader named"):
        pipe.epoch_size("Nope")
    pipe.close()
    pipe.close()
    with pytest.raises(RuntimeError, match="closed"):
        pipe.run()


def test_first_epoch_starts_there(image_folder):
    def labels_of(first_epoch):
        pipe = godali.Pipeline(batch_size=10, num_threads=1, seed=9,
                               first_epoch=first_epoch)
        with pipe:
            _, labels = fn.readers.file(file_root=image_folder, shuffle_after_epoch=True)
            pipe.set_outputs(labels)
        out = pipe.run()[0].as_array().ravel().tolist()
        epoch = pipe.batch_info.epoch
        pipe.close()
        return epoch, out

    # Resuming at epoch 2 gives what a pipeline reaches after two resets.
    pipe = godali.Pipeline(batch_size=10, num_threads=1, seed=9)
    with pipe:
        _, labels = fn.readers.file(file_root=image_folder, shuffle_after_epoch=True)
        pipe.set_outputs(labels)
    orders = []
    for _ in range(3):
        orders.append(pipe.run()[0].as_array().ravel().tolist())
        pipe.reset()
    assert labels_of(2) == (2, orders[2])
    assert labels_of(0) == (0, orders[0])


def test_engine_rejections_raise_at_build(image_folder):
    pipe = godali.Pipeline(batch_size=2)
    with pipe:
        _, labels = fn.readers.file(file_root=image_folder, shard_id=3, num_shards=2)
        pipe.set_outputs(labels)
    with pytest.raises(godali.InvalidPipelineError, match="shard_id"):
        pipe.build()
    with pytest.raises(ValueError, match="batch_size"):
        godali.Pipeline().to_json()
    with pytest.raises(RuntimeError, match="no outputs"):
        godali.Pipeline(batch_size=1).build()


def test_pipeline_output_layout_and_dali_properties():
    # DALI 2.4 refuses an output whose layout differs from output_layout (RuntimeError at
    # run) and echoes its executor settings as properties.
    import numpy as np

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None, output_layout="HW",
                         concurrency=godali.OperatorConcurrency.FULL)
    def pipe(layout):
        return godali.fn.external_source(source=lambda: [np.zeros((2, 3), np.uint8)] * 2,
                                         layout=layout)

    good = pipe("HW")
    good.build()
    assert good.run()[0].layout() == "HW"
    bad = pipe("AB")
    bad.build()
    with pytest.raises(RuntimeError, match="Expected: HW. Received: AB"):
        bad.run()
    assert (good.cpu_queue_size, good.gpu_queue_size, good.num_outputs) == (2, 2, 1)
    assert good.concurrency is godali.OperatorConcurrency.FULL and good.exec_dynamic is True
    with pytest.raises(TypeError, match="output_layout"):
        godali.Pipeline(batch_size=2, output_layout=3)
