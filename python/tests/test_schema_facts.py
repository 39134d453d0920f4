"""Operator facts the engine's schemas declare (sequences, volumes, input layouts and
types per backend, typed output conditions), as godali.backend.OpSchema answers them
(DALI's AllowsSequences / SupportsVolumetric / GetSupportedLayouts)."""

import numpy as np
import pytest

from godali import _graph, backend, fn, pipeline_def


def test_sequence_and_volume_facts():
    assert backend.GetSchema("Resize").AllowsSequences()
    assert not backend.GetSchema("Resize").SupportsVolumetric()
    assert backend.GetSchema("Crop").SupportsVolumetric()
    assert backend.GetSchema("transforms__Rotation").AllowsSequences()
    assert not backend.GetSchema("decoders__Image").AllowsSequences()
    assert not backend.GetSchema("readers__COCO").AllowsSequences()
    assert backend.GetSchema("Resize").ArgSupportsPerFrameInput("resize_x")
    assert not backend.GetSchema("Cast").ArgSupportsPerFrameInput("dtype")


def test_supported_layouts_per_backend():
    resize = backend.GetSchema("Resize")
    assert resize.GetSupportedLayouts(0) == ["HWC", "FHWC"]
    # The gpu backends take HWC uint8 images only (their schema's Backends["gpu"]).
    for name in ("Resize", "Crop", "Flip", "CropMirrorNormalize", "BrightnessContrast"):
        s = backend.GetSchema(name)
        assert s.GetSupportedLayouts(0, backend="gpu") == ["HWC"], name
        assert s.GetSupportedInputTypes(0, backend="gpu") == ["UINT8"], name
    assert "FLOAT" in backend.GetSchema("BrightnessContrast").GetSupportedInputTypes(0)
    with pytest.raises(IndexError):
        resize.GetSupportedLayouts(3)


def test_backends_declared_on_the_schema():
    ops = _graph.schemas().ops
    assert set(ops["decoders.image"].backends) == {"mixed"}
    assert set(ops["crop"].backends) == {"gpu"}
    assert ops["experimental.decoders.image"].backends == {}
    assert not ops["rotate"].backends


def test_typed_output_conditions():
    coco = _graph.schemas().ops["readers.coco"]
    assert coco.output_if["polygons"] == {"kind": "arg", "args": ["polygon_masks"]}
    base = ["images", "bboxes", "labels"]
    assert coco.enabled_outputs({}, 0) == base
    assert coco.enabled_outputs({"polygon_masks": True}, 0) == base + ["polygons", "vertices"]
    rbc = _graph.schemas().ops["random_bbox_crop"]
    assert rbc.output_if["labels"] == {"kind": "inputs_over", "inputs": 1}
    assert "labels" not in rbc.enabled_outputs({}, 1)
    assert "labels" in rbc.enabled_outputs({}, 2)
    rob = _graph.schemas().ops["segmentation.random_object_bbox"]
    assert rob.enabled_outputs({}, 1) == ["anchor", "shape"]  # format="anchor_shape"
    assert rob.enabled_outputs({"format": "box"}, 1) == ["anchor"]
    assert rob.enabled_outputs({"format": "box", "output_class": True}, 1) == ["anchor", "label"]
    video = _graph.schemas().ops["readers.video"]
    assert video.output_if["labels"]["kind"] == "any_given"
    assert "labels" in video.enabled_outputs({"file_root": "x"}, 0)


def test_unknown_condition_kind_is_refused():
    op = _graph.OpSchema({"name": "x", "outputs": ["a", "b"], "output_if": {"b": {"kind": "given:y"}}})
    with pytest.raises(RuntimeError, match="condition this package does not know"):
        op.enabled_outputs({}, 1)


def test_random_bbox_crop_outputs_follow_the_inputs():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        boxes = fn.external_source(source=lambda: [np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)])
        labels = fn.external_source(source=lambda: [np.array([3], np.int32)])
        return fn.random_bbox_crop(boxes, labels, bbox_layout="xyXY")

    p = pipe()
    p.build()
    assert len(p.run()) == 4  # anchor, shape, bboxes, labels: two inputs enable labels
