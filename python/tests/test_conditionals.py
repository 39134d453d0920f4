"""enable_conditionals: `if` on pipeline data in @pipeline_def functions, compared sample
by sample with numpy / the unconditional operators (exact)."""

import numpy as np
import pytest

import godali
from godali import fn, types

from conftest import make_jpeg


def _outs(pipe, n):
    res = pipe.run()
    got = [[np.array(o[i].as_array()) for i in range(n)] for o in res]
    pipe.close()
    return got


def test_if_on_coin_flip_selects_per_sample(tmp_path):
    files = [make_jpeg(str(tmp_path / ("c%d.jpg" % i)), 20 + i, 30, seed=i) for i in range(8)]

    @godali.pipeline_def(batch_size=8, num_threads=2, seed=7, enable_conditionals=True)
    def pipe_with_if():
        jpegs, _ = fn.readers.file(files=files)  # `files` is a closure variable
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        c = fn.random.coin_flip()
        if c:
            out = fn.flip(images)
        else:
            out = images
        return images, c, out

    imgs, c, out = _outs(pipe_with_if(), 8)
    flips = [int(x) for x in c]
    assert 0 < sum(flips) < 8
    for i in range(8):
        want = imgs[i][:, ::-1] if flips[i] else imgs[i]
        np.testing.assert_array_equal(out[i], want)


def test_elif_chain_nested_and_one_sided_assignment():
    @godali.pipeline_def(batch_size=32, num_threads=1, seed=3, enable_conditionals=True)
    def p(scale):
        v = fn.random.uniform(range=[0, 3])
        y = v * 0 - 1          # kept where no branch assigns y
        z = v + 0
        if v < 1:
            y = v * 10
        elif v < 2:
            if v < 1.5:
                y = v * 100
            else:
                z = v * 1000
        if scale > 1:          # a Python condition stays plain Python
            z = z * scale
        return v, y, z

    v, y, z = _outs(p(scale=2), 32)
    for i in range(32):
        x = np.float32(v[i])
        wy = x * np.float32(10) if x < 1 else (x * np.float32(100) if x < 1.5 else np.float32(-1))
        wz = (x * np.float32(1000) if 1.5 <= x < 2 else x) * np.float32(2)
        assert y[i] == wy and z[i] == wz, (x, y[i], z[i])
    assert any(a < 1 for a in v) and any(1 <= a < 1.5 for a in v) and any(a >= 2 for a in v)


def test_early_returns_become_per_sample_choices():
    @godali.pipeline_def(batch_size=16, num_threads=1, seed=4, enable_conditionals=True)
    def with_return():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            return v, v * 3
        elif v > 0.25:
            if v > 0.4:
                return v, v + 100
        return v, v * 2

    v, w = _outs(with_return(), 16)
    for x, y in zip(v, w):
        x = np.float32(x)
        want = x * np.float32(3) if x > 0.5 else (
            x + np.float32(100) if 0.4 < x <= 0.5 else x * np.float32(2))
        assert y == want, (x, y)


def test_one_branch_variable_may_stay_unused_but_not_be_used():
    @godali.pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def unused():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            w = v * 2  # noqa: F841  (DALI accepts a branch-local variable)
        return v

    unused().build()

    @godali.pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def one_sided():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            w = v * 2
        return w + 1

    with pytest.raises(RuntimeError, match="Variable 'w' must also be initialized in the "
                                           "`else` branch"):
        one_sided()

    @godali.pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def returned_unassigned():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            w = v * 2
        return v, w

    with pytest.raises(RuntimeError, match="Variable 'w' must also be initialized"):
        returned_unassigned()

    @godali.pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def one_return():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            return v

    with pytest.raises(RuntimeError, match="The `else` branch must also have a return"):
        one_return()


def test_helpers_lambdas_nests_and_attributes_are_converted():
    class Box:
        pass

    def helper(x, box):
        box.a = x * 0
        box.b = x * 0
        if x > 0.5:
            box.a = x + 1
            out = {"k": (x, x * 10)}
        else:
            box.b = x - 1
            out = {"k": (x * 2, x)}
        return out

    pipe_fn = lambda: helper(fn.random.uniform(range=[0, 1]), Box())  # noqa: E731

    @godali.pipeline_def(batch_size=16, num_threads=1, seed=9, enable_conditionals=True)
    def p():
        v = fn.random.uniform(range=[0, 1])
        box = Box()
        d = helper(v, box)
        return (v, d["k"][0], d["k"][1], box.a, box.b)

    v, k0, k1, a, b = _outs(p(), 16)
    for i in range(16):
        x = np.float32(v[i])
        f = np.float32
        hi = x > 0.5
        assert k0[i] == (x if hi else f(x * f(2))) and k1[i] == (f(x * f(10)) if hi else x)
        assert a[i] == (f(x + f(1)) if hi else 0) and b[i] == (0 if hi else f(x - f(1)))
    lam = godali.pipeline_def(batch_size=4, num_threads=1, enable_conditionals=True)(
        lambda: pipe_fn()["k"][0])
    assert len(_outs(lam(), 4)[0]) == 4


def test_branches_of_different_types_fail_clearly():
    @godali.pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def mixed_types():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            w = fn.cast(v, dtype=types.INT32)
        else:
            w = v
        return w

    with pytest.raises(Exception, match="same type"):
        mixed_types().build()


def test_without_enable_conditionals_if_still_fails():
    @godali.pipeline_def(batch_size=2, num_threads=1)
    def p():
        v = fn.random.uniform(range=[0, 1])
        if v > 0.5:
            v = v * 2
        return v

    with pytest.raises(TypeError, match="enable_conditionals"):
        p()


def test_autograph_artifacts_and_parallel_sources():
    # Functions defined inside a rewritten pipeline function are artifacts of the
    # rewrite (DALI: of AutoGraph); a parallel external_source refuses them as DALI does.
    import numpy as np
    from godali._autograph import is_autograph_artifact
    from godali.pipeline import do_not_convert

    seen = {}

    @do_not_convert
    def factory():
        def outside(si):
            return np.full((2,), 3)
        return outside

    def make(parallel, use_factory):
        @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None,
                             enable_conditionals=True)
        def pipe():
            def inside(si):
                return np.full((2,), 1)
            src = factory() if use_factory else inside
            seen["src"] = src
            return fn.external_source(source=src, parallel=parallel, batch=False)
        return pipe()

    (out,) = make(False, False).run()
    assert is_autograph_artifact(seen["src"]) is True
    assert np.array_equal(out.as_array(), np.full((2, 2), 1))
    with pytest.raises(ValueError, match="it must remain unconverted"):
        make(True, False)
    (out,) = make(True, True).run()
    assert is_autograph_artifact(seen["src"]) is False
    assert np.array_equal(out.as_array(), np.full((2, 2), 3))


# --- the batch is split (DALI's semantics; found by tests/compat/cond_oracle.py) ---------

def _fed(values):
    return fn.external_source(source=[[np.int32(v) for v in values]], cycle=False, batch=True)


def test_batch_permutation_in_a_branch_permutes_the_branch():
    xs = [3, -1, 4, -1, 5, -9, 2, 6]

    @godali.pipeline_def(batch_size=8, num_threads=2, seed=5, device_id=None,
                         enable_conditionals=True)
    def p():
        x = _fed(xs)
        if x > 0:
            perm = fn.batch_permutation()
        else:
            perm = x * 0 - 1
        empty = x * 0 - 1
        if x > 100:  # no sample takes it
            empty = fn.batch_permutation()
        return perm, empty

    perm, empty = _outs(p(), 8)
    taken = [i for i, v in enumerate(xs) if v > 0]
    # a permutation of the branch's 5 samples (DALI), not of the batch's 8
    assert sorted(int(perm[i]) for i in taken) == list(range(len(taken)))
    assert all(int(perm[i]) == -1 for i in range(8) if i not in taken)
    assert [int(v) for v in empty] == [-1] * 8


def test_and_or_evaluate_the_right_operand_only_where_needed():
    xs = [-5, 0, 1, 2, 3, 7, -1, 2]

    @godali.pipeline_def(batch_size=8, num_threads=1, device_id=None,
                         enable_conditionals=True)
    def p():
        x = _fed(xs)
        # x[...] with an index out of 0..2 fails: only the samples the left side leaves
        # reach it
        a = (x >= 0) and (x <= 2) and (fn.stack(x, x * 2, x * 3)[x] > 1)
        o = (x < 0) or (x > 2) or (fn.stack(x, x * 2, x * 3)[x] > 3)
        if (x >= 0) & (x <= 2):
            y = fn.stack(x, x * 2, x * 3)[x]
        else:
            y = x
        return a, o, y

    a, o, y = _outs(p(), 8)
    for i, v in enumerate(xs):
        inside = 0 <= v <= 2
        picked = [v, 2 * v, 3 * v][v] if inside else None
        assert bool(a[i]) == (inside and picked > 1), (i, v)
        assert bool(o[i]) == (not inside or picked > 3), (i, v)
        assert int(y[i]) == (picked if inside else v), (i, v)
        assert a[i].dtype == np.bool_ and o[i].dtype == np.bool_


def test_values_from_outside_used_only_in_an_unused_branch():
    # z, made outside the function, feeds only a branch whose result is not returned:
    # it is not in the graph and is not fed (DALI prunes it too)
    xs = fn.external_source(source=[[np.int32(v) for v in range(4)]], cycle=False, batch=True)
    zs = fn.external_source(source=[[np.int32(1)] * 4], cycle=False, batch=True)

    def f(x, z):
        if (x <= 1) and (z != -3):
            w = z
        else:
            w = x
        return x * 3

    pipe = godali.pipeline_def(batch_size=4, num_threads=1, device_id=None,
                               enable_conditionals=True)(f)(xs, zs)
    (out,) = _outs(pipe, 4)
    assert [int(v) for v in out] == [0, 3, 6, 9]


def test_one_node_returned_twice():
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        y = _fed([1, 2]) + 1
        return y, y

    a, b = _outs(p(), 2)
    assert [int(v) for v in a] == [int(v) for v in b] == [2, 3]


def test_python_function_in_a_branch_gets_the_branch_samples():
    xs = [3, -1, 4, -2, 5]
    seen = []

    def only_nonneg(batch):
        seen.append(len(batch))
        assert all(np.asarray(b) >= 0 for b in batch), batch
        return [np.asarray(b) * 2 for b in batch]

    @godali.pipeline_def(batch_size=5, num_threads=1, device_id=None, exec_async=False,
                         exec_pipelined=False, enable_conditionals=True)
    def p():
        x = _fed(xs)
        if x >= 0:
            y = fn.cast(fn.python_function(x, function=only_nonneg, batch_processing=True),
                        dtype=types.INT32)
        else:
            y = x
        return y

    (y,) = _outs(p(), 5)
    assert [int(v) for v in y] == [6, -1, 8, -2, 10]
    assert seen == [3]  # the function saw the branch's 3 samples, not the batch's 5


# --- DALI's conditionals test files, imports swapped (branch e29cond, docs/operators.md) ---

def test_select_applies_each_samples_operation():
    # DALI's auto_aug.core.select: ops[idx](*args, **kwargs) per sample, the batch halved
    # by `if idx <= mid` (here 3 ops: {0, 1} | {2}, then {0} | {1}); tuple results merge
    # element by element; each op sees only its samples
    from godali.auto_aug.core import select
    xs, idx = [5, 6, 7, 8, 9, 10, 11], [2, 0, 1, 1, 0, 2, 0]
    seen = []

    def minus(a, b):
        seen.append("minus")
        return a - b, b

    def times(a, b):
        return a * b, b * 0

    def plus(a, b):
        return a + 100, b + 1

    @godali.pipeline_def(batch_size=7, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        x = _fed(xs)
        i = _fed(idx)
        return select([minus, times, plus], i, x, b=_fed([2] * 7))

    a, b = _outs(p(), 7)
    ref = [(x - 2, 2) if k == 0 else (x * 2, 0) if k == 1 else (x + 100, 3)
           for x, k in zip(xs, idx)]
    assert [int(v) for v in a] == [r[0] for r in ref]
    assert [int(v) for v in b] == [r[1] for r in ref]
    assert seen == ["minus"]  # traced once (each op once, not per sample)


def test_select_python_index_and_refusals():
    from godali.auto_aug.core import select
    ops = [lambda v: v + 1, lambda v: v * 10]

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def plain():
        return select(ops, 1, _fed([1, 2]))  # a Python index: no conditionals needed

    assert [int(v) for v in _outs(plain(), 2)[0]] == [10, 20]

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def no_conditionals():
        return select(ops, _fed([0, 1]), _fed([1, 2]))

    # DALI: a DataNode index needs enable_conditionals (DataNode in conditional context)
    with pytest.raises(TypeError, match="enable_conditionals"):
        no_conditionals()
    with pytest.raises(ValueError, match="`ops` is empty"):
        select([], 0)


@pytest.mark.parametrize("expr", ["and_left", "and_right", "or_left", "or_right", "not"])
def test_logical_expression_on_gpu_data_refused_when_traced(expr):
    # DALI 2.4 (_conditionals._validate_logical) raises this RuntimeError while the
    # function is traced, before any GPU is needed
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        c = fn.random.coin_flip(dtype=types.BOOL)
        g = c.gpu()
        if expr == "and_left":
            return g and c
        elif expr == "and_right":
            return c and g
        elif expr == "or_left":
            return g or c
        elif expr == "or_right":
            return c or g
        return not g

    side = expr.split("_")[1] if "_" in expr else "only"
    with pytest.raises(RuntimeError, match=r"Logical expression `%s` is restricted to scalar "
                       r"\(0-d tensors\) inputs of `bool` type, that are placed on CPU. Got a "
                       r"GPU input as the %s argument" % (expr.split("_")[0], side)):
        p()


def test_gpu_condition_refused_as_dali_does():
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        c = fn.random.coin_flip(dtype=types.BOOL)
        if c.gpu() | False:
            y = np.array(1)
        else:
            y = np.array(0)
        return y

    # DALI 2.4: ValueError 'Invalid device "gpu" for argument 'predicate' ...'
    with pytest.raises(ValueError, match="Named arguments must be on CPU"):
        p()


def test_condition_stack_splits_per_level_with_dalis_names():
    # DALI's _conditionals._ConditionStack API (its tests drive it with hand-made
    # DataNodes): a value is split once per level between where it was made and the
    # branch that uses it; each split's outputs are recorded in their own branch
    from godali import _conditionals as c
    from godali.data_node import DataNode
    st = c._ConditionStack()
    outer, inner, made_in_if = DataNode("outer"), DataNode("inner"), DataNode("in_if")
    assert (outer.name, outer.device, outer.source) == ("outer", "cpu", None)
    st.register_data_nodes([outer, (inner,)])
    assert st.push_predicate(outer) is outer and st.stack_depth() == 2
    st.track_true_branch()
    st.register_data_nodes({"k": made_in_if})
    assert st._find_closest(made_in_if) == 1 and st._find_closest(inner) == 0
    pred2 = st.push_predicate(inner)  # inner split by outer for the true branch
    assert pred2 is not inner and st._find_closest(inner) == 1
    assert st.preprocess_input(inner) is pred2  # cached: one split per level
    level1 = st.levels[1]
    t, f = level1.splits[c._data_node_repr(inner)]
    assert c._data_node_repr(f) in level1._produced[False]
    assert c._data_node_repr(f) not in level1._produced[True]
    st.track_false_branch()
    split_in_else = st.preprocess_input(made_in_if)  # made in level 1's true branch
    assert split_in_else.source.op == "_conditional.split"
    assert len(st.top().produced) == 1
    st.track_merge(pred2)
    assert len(st.top().produced) == 3  # both splits' outputs and the predicate
    st.pop()
    st.pop()
    assert len(st.top().produced) == 2


def test_hand_made_data_node_in_a_pipeline_is_refused():
    from godali.data_node import DataNode

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        return fn.cast(DataNode("nothing"), dtype=types.INT32)

    with pytest.raises(ValueError, match="DataNode 'nothing', made by hand"):
        p()


def test_split_of_a_constant():
    # DALI accepts a constant as _conditional.split's input (a Constant node)
    @godali.pipeline_def(batch_size=4, num_threads=1, device_id=None)
    def p():
        x = _fed([1, -2, 3, -4])
        pred = x > 0
        t, _ = fn._conditional.split(x, predicate=pred)
        _, f = fn._conditional.split(np.int32(7), predicate=pred)
        return fn._conditional.merge(t, f, predicate=pred)

    assert [int(v) for v in _outs(p(), 4)[0]] == [1, 7, 3, 7]
    with pytest.raises(TypeError, match="input must be a DataNode or a constant"):
        fn._conditional.split("text", predicate=_fed([1]) > 0)


def test_functions_and_lambdas_defined_inside_are_converted():
    # DALI (AutoGraph) converts the functions and lambdas a converted function defines;
    # godali rewrote only the outer one, so `and` / `if` in a helper defined inside the
    # pipeline function hit DataNode.__bool__ (tests/compat/cond_oracle.py: nested_*)
    xs, zs = [3, -1, 0, 2], [1, 1, -2, 0]

    @godali.pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        x, z = _fed(xs), _fed(zs)
        both = lambda a, b: (a > 0) and (b > 0)  # noqa: E731

        def clamp(v):
            if v < 0:
                return v * 0
            return v + 10

        return both(x, z), clamp(x)

    b, c = _outs(p(), 4)
    assert [bool(v) for v in b] == [x > 0 and z > 0 for x, z in zip(xs, zs)]
    assert [int(v) for v in c] == [0 if x < 0 else x + 10 for x in xs]

    from godali.pipeline import do_not_convert

    @godali.pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    def kept():
        @do_not_convert
        def raw(v):
            return v and v

        return raw(_fed(xs) > 0)

    with pytest.raises(TypeError, match="conditional context"):
        kept()


def _throwing_helper():
    raise ValueError("I am throwing")


def test_errors_of_converted_code_name_the_users_frames():
    # DALI 2.4 (AutoGraph) re-raises an error of the converted pipeline function with the
    # same type and "in user code:" + the user's frames (converted ones marked `*`), then
    # "    ValueError: <message>"; a branch's line is the one written in the function
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        if fn.random.coin_flip():
            x = np.full((1, 1), 10)
        else:
            x = _throwing_helper()
        return x

    with pytest.raises(ValueError) as info:
        p()
    msg = str(info.value)
    assert msg.startswith("in user code:\n\n")
    assert "line %d, in p  *\n        x = _throwing_helper()\n" % (
        p.__wrapped__.__code__.co_firstlineno + 5) in msg
    assert 'in _throwing_helper  *\n        raise ValueError("I am throwing")\n' in msg
    assert msg.endswith("\n    ValueError: I am throwing\n")
    assert "godali" + "/_conditionals.py" not in msg  # godali's own frames are left out

    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def plain():
        _throwing_helper()

    with pytest.raises(ValueError) as info:
        plain()  # not converted: the error as it was raised
    assert str(info.value) == "I am throwing"


def test_gpu_argument_input_refused_with_dalis_message():
    @godali.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def p():
        a = fn.random.uniform(range=[0, 10])
        return fn.rotate(_fed([1, 2]), angle=a.gpu())

    # DALI 2.4: ValueError when the operator is called
    with pytest.raises(ValueError, match="Invalid device \"gpu\" for argument 'angle' of "
                                         "operator 'godali.fn.rotate'. Named arguments must "
                                         "be on CPU."):
        p()


def test_chained_comparisons_are_per_sample():
    # DALI converts `a < b < c` to `(a < b) and (b < c)` (b once; per sample, lazily)
    xs, zs = [3, -1, 0, 2, 1, 0], [4, 0, 0, 1, 2, 5]
    calls = []

    def middle(v):
        calls.append(1)
        return v

    @godali.pipeline_def(batch_size=6, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        x, z = _fed(xs), _fed(zs)
        if -1 < x <= middle(z) < 3:
            y = x * 10
        else:
            y = z
        return y, 0 < 1 < 2 > 5

    y, plain = _outs(p(), 6)
    assert [int(v) for v in y] == [x * 10 if -1 < x <= z < 3 else z for x, z in zip(xs, zs)]
    assert [bool(v) for v in plain] == [False] * 6  # Python values: Python's chain
    assert len(calls) == 1  # the middle operand evaluated once


class _Shift:
    def __init__(self, k):
        self.k = k

    def __call__(self, v):
        if v > 0:
            return v + self.k
        return v

    def either(self, a):
        return (a > self.k) or (a < -1)

    @classmethod
    def flip(cls, v):
        if v < 0:
            v = -v
        return v


class _Shift3(_Shift):
    def __call__(self, v):
        if v < 2:
            v = super().__call__(v) * 3  # zero-argument super() inside a branch
        return v


def test_methods_and_callable_objects_are_converted():
    # DALI (AutoGraph) converts bound methods, classmethods and callable objects the
    # pipeline function calls; godali converted plain functions only
    xs = [3, -1, 0, 2, -4, 5]

    @godali.pipeline_def(batch_size=6, num_threads=1, device_id=None, enable_conditionals=True)
    def p():
        x = _fed(xs)
        s = _Shift(2)
        return s(x), s.either(x), _Shift.flip(x), _Shift3(1)(x)

    a, b, c, d = _outs(p(), 6)
    assert [int(v) for v in a] == [x + 2 if x > 0 else x for x in xs]
    assert [bool(v) for v in b] == [x > 2 or x < -1 for x in xs]
    assert [int(v) for v in c] == [abs(x) for x in xs]
    assert [int(v) for v in d] == [((x + 1 if x > 0 else x) * 3) if x < 2 else x for x in xs]


def test_branch_operator_output_keeps_its_type_across_batches():
    # An operator of the outer `else` (erase) whose output crosses into the phase after the
    # nested split: the worker loaded "no value" for the samples of the `if` branch, which
    # wiped the operator's output type; in the next batch it ran with an output of no type
    # and no memory (internal error: slice bounds out of range) - DALI's auto_aug select
    # test hit it. The last sample of each batch is on the `if` side, one worker.
    @godali.pipeline_def(batch_size=6, num_threads=1, device_id=None, prefetch_queue_depth=1,
                         enable_conditionals=True)
    def p():
        k = fn.external_source(lambda s: np.array((s.idx_in_batch + 1) % 3, dtype=np.int32),
                               batch=False)
        image = fn.external_source(lambda s: np.full((4, 5, 1), s.idx_in_batch, np.uint8),
                                   batch=False, layout="HWC")
        if k <= 1:
            if k <= 0:
                out = fn.flip(image, horizontal=1)
            else:
                out = fn.flip(image, vertical=1)
        else:
            out = fn.erase(image, shape=[2, 2], anchor=[0, 0], fill_value=99)
        return out

    pipe = p()
    pipe.build()
    for _ in range(3):
        out = pipe.run()[0]
        assert [int(np.array(out[i])[0, 0, 0]) for i in range(6)] == [0, 99, 2, 3, 99, 5]
