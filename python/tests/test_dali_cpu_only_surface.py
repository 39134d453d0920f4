"""What DALI's test_dali_cpu_only.py asks of a CPU-only pipeline beyond the operators:
numba_function, GPU work refused at build() with DALI's messages (and the op call's line),
external_source(device='gpu'), fn._conditional, dump_image, subscript_dim_check.
Compared with numpy (exact)."""

import os

import numpy as np
import pytest

import godali
from godali import fn, ops, types
from godali.pipeline import Pipeline
from godali.plugin.numba.fn.experimental import numba_function

BS = 3


def _data():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (4 + i, 5, 3), dtype=np.uint8) for i in range(BS)]


def _run(pipe):
    pipe.build()
    out = pipe.run()
    res = [[np.array(o[i].as_array()) for i in range(BS)] for o in out]
    pipe.close()
    return res


def test_numba_function_per_sample_and_batch_match_numpy():
    data = _data()

    def double(out0, in0):  # per sample
        out0[:] = in0
        out0 *= 2  # in the output's type (uint16): no uint8 wrap-around

    def set_255_batch(out0, in0):  # batch_processing: lists
        for o in out0:
            o[:] = 255

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        a = numba_function(x, run_fn=double, out_types=[types.UINT16], in_types=[types.UINT8],
                           outs_ndim=[3], ins_ndim=[3])
        b = numba_function(x, run_fn=set_255_batch, out_types=[types.UINT8],
                           in_types=[types.UINT8], outs_ndim=[3], ins_ndim=[3],
                           batch_processing=True)
        pipe.set_outputs(a, b)
    a, b = _run(pipe)
    for i in range(BS):
        assert a[i].dtype == np.uint16
        np.testing.assert_array_equal(a[i], data[i].astype(np.uint16) * 2)
        np.testing.assert_array_equal(b[i], np.full(data[i].shape, 255, np.uint8))


def test_numba_function_setup_fn_sets_output_shapes():
    data = _data()

    def setup(outs_shapes, ins_shapes):  # output: the first row of each sample, flattened
        for i in range(len(ins_shapes[0])):
            outs_shapes[0][i][0] = ins_shapes[0][i][1] * ins_shapes[0][i][2]

    def first_row(out0, in0):
        out0[:] = in0[0].reshape(-1)

    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        pipe.set_outputs(numba_function(x, run_fn=first_row, setup_fn=setup,
                                        out_types=[types.UINT8], in_types=[types.UINT8],
                                        outs_ndim=[1], ins_ndim=[3]))
    (a,) = _run(pipe)
    for i in range(BS):
        np.testing.assert_array_equal(a[i], data[i][0].reshape(-1))


def test_numba_function_checks_in_types():
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=_data, layout="HWC")
        pipe.set_outputs(numba_function(x, run_fn=lambda o, i: None, out_types=[types.UINT8],
                                        in_types=[types.FLOAT], outs_ndim=[3], ins_ndim=[3]))
    pipe.build()
    with pytest.raises(RuntimeError, match="in_types says float32"):
        pipe.run()
    pipe.close()


def _cpu_only_build_error(make):
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        pipe.set_outputs(make())
    with pytest.raises(RuntimeError) as e:
        pipe.build()
    return str(e.value)


def test_cpu_only_pipeline_refuses_gpu_at_build_naming_the_line():
    here = os.path.abspath(__file__)
    msg = _cpu_only_build_error(lambda: fn.external_source(source=_data).gpu())
    assert msg.startswith("Cannot move the data node __ExternalSource_")
    assert "The `device_id` parameter is set to `CPU_ONLY_DEVICE_ID`" in msg
    assert here + ":" in msg
    msg = _cpu_only_build_error(
        lambda: fn.rotate(fn.external_source(source=_data).gpu(), angle=25))
    assert msg.startswith("Cannot add a GPU operator Rotate, device_id should not be equal "
                          "CPU_ONLY_DEVICE_ID.")
    msg = _cpu_only_build_error(lambda: fn.external_source(source=_data, device="gpu"))
    assert msg.startswith("Cannot add a GPU operator ExternalSource,")
    msg = _cpu_only_build_error(lambda: fn.external_source(source=_data) * 2 +
                                fn.external_source(source=_data).gpu())
    assert msg.startswith("Cannot add a GPU operator ArithmeticGenericOp,")
    msg = _cpu_only_build_error(lambda: fn.decoders.image(fn.external_source(source=_data),
                                                          device="mixed"))
    assert msg.startswith("Cannot add a mixed operator decoders__Image with a GPU output")
    # CPU_ONLY_DEVICE_ID is the same as None
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=types.CPU_ONLY_DEVICE_ID)
    with pipe:
        pipe.set_outputs(fn.external_source(source=_data).gpu())
    with pytest.raises(RuntimeError, match="Cannot move the data node"):
        pipe.build()


@pytest.mark.skipif(godali._lib.get().flavour == "cuda", reason="cpu flavour only")
def test_cpu_flavour_refuses_gpu_at_build_not_at_the_call():
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=0)
    with pipe:
        x = fn.external_source(source=_data)
        y = fn.rotate(x.gpu(), angle=10)  # no error here: DALI reports at build()
        pipe.set_outputs(y)
    with pytest.raises(godali.NoCUDAError, match="CUDA flavour.*made at .*test_dali_cpu_only_surface.py:"):
        pipe.build()


def test_explicit_conditional_ops_match_numpy():
    vals = [np.array([i], np.int32) for i in range(BS)]
    preds = [np.array(i % 2 == 0) for i in range(BS)]
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        v = fn.external_source(source=lambda: vals)
        p = fn.external_source(source=lambda: preds)
        pv = fn._conditional.validate_logical(p, expression_name="or", expression_side="right")
        t, f = fn._conditional.split(v, predicate=p)
        merged = fn._conditional.merge(t + 10, f, predicate=p)
        pipe.set_outputs(merged, fn._conditional.not_(p), pv)
    merged, neg, pv = _run(pipe)
    for i in range(BS):
        assert int(merged[i].reshape(-1)[0]) == (i + 10 if i % 2 == 0 else i)
        assert bool(neg[i]) == (i % 2 != 0)
        assert bool(pv[i]) == (i % 2 == 0)


def test_dump_image_writes_pnm_and_passes_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = _data()
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        pipe.set_outputs(fn.dump_image(x, suffix="dbg"))
    (out,) = _run(pipe)
    from PIL import Image
    for i in range(BS):
        np.testing.assert_array_equal(out[i], data[i])
        np.testing.assert_array_equal(np.array(Image.open(tmp_path / ("%d-dbg-0.ppm" % i))),
                                      data[i])


def test_subscript_dim_check():
    data = _data()
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        pipe.set_outputs(fn.subscript_dim_check(x, num_subscripts=3))
    (out,) = _run(pipe)
    for i in range(BS):
        np.testing.assert_array_equal(out[i], data[i])
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=lambda: data, layout="HWC")
        pipe.set_outputs(fn.subscript_dim_check(x, num_subscripts=4))
    with pytest.raises(ValueError, match="too many indices \\(4\\) for a 3-D input"):
        pipe.build()


def _uniform_values(pipe_seed, op_seed, threads, extra_nodes=0):
    pipe = Pipeline(batch_size=BS, num_threads=threads, device_id=None, seed=pipe_seed)
    with pipe:
        for _ in range(extra_nodes):
            fn.random.uniform(range=(0, 1))
        u = fn.random.uniform(range=(0, 100), shape=[3], seed=op_seed)
        pipe.set_outputs(u, fn.flip(fn.external_source(source=_data, layout="HWC"),
                                    seed=op_seed))  # seed on an op that draws nothing
    res = []
    pipe.build()
    for _ in range(2):
        (u, _f) = pipe.run()
        res.append([np.array(u[i].as_array()) for i in range(BS)])
    pipe.close()
    return np.array(res)


def test_operator_seed_gives_the_same_values_in_two_pipelines():
    a = _uniform_values(1, 42, 1)
    b = _uniform_values(2, 42, 3, extra_nodes=2)
    np.testing.assert_array_equal(a, b)
    c = _uniform_values(1, 43, 1)
    assert not np.array_equal(a, c)
    assert ((a >= 0) & (a < 100)).all()


def test_argument_errors_come_at_build_naming_the_call_line():
    here = os.path.abspath(__file__)
    # a value outside the argument's set: accepted at the call, refused at build()
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=_data, layout="HWC")
        y = fn.resize(x, resize_x=4, resize_y=4, mode="sideways")
        line = __import__("inspect").currentframe().f_lineno - 1
        pipe.set_outputs(y)
    with pytest.raises(RuntimeError, match="argument .mode.*made at %s:%d" % (here, line)):
        pipe.build()
    # a value the library refuses (the operator's own check): the node's line is added
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=None)
    with pipe:
        x = fn.external_source(source=_data, layout="HWC")
        c = fn.transpose(x, perm=[0, 0, 1])
        line = __import__("inspect").currentframe().f_lineno - 1
        pipe.set_outputs(c)
    with pytest.raises(RuntimeError, match="not a permutation.*made at %s:%d" % (here, line)):
        pipe.build()


def test_gpu_arithmetic_is_refused_at_build_with_a_device():
    pipe = Pipeline(batch_size=BS, num_threads=2, device_id=0)
    with pipe:
        x = fn.external_source(source=_data)
        pipe.set_outputs(x * 2 + x.gpu())  # no error at the call, as in DALI
    with pytest.raises(RuntimeError, match="arithmetic on GPU data|CUDA flavour"):
        pipe.build()


def test_former_operator_names_warn_as_dali():
    # DALI's former flat names still work, with a DeprecationWarning naming the new one.
    with pytest.warns(DeprecationWarning, match=r"`godali\.fn\.transform_translation` is "
                      r"now deprecated\. Use `godali\.fn\.transforms\.translation` instead"):
        pipe = Pipeline(batch_size=BS, num_threads=1, device_id=None)
        with pipe:
            m = fn.transform_translation(offset=(2, 3))
            pipe.set_outputs(m)
    (out,) = _run(pipe)
    np.testing.assert_array_equal(out[0], [[1, 0, 2], [0, 1, 3]])
    with pytest.warns(DeprecationWarning, match=r"`godali\.ops\.TransformTranslation` is "
                      r"now deprecated\. Use `godali\.ops\.transforms\.Translation`"):
        ops.TransformTranslation(offset=(0, 0))
