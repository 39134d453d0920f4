"""enable_conditionals: `if` statements on pipeline data inside @pipeline_def functions.

As DALI does, an `if` whose condition is a DataNode splits the batch by the condition:
the operators of the `if` branch run only on the samples whose condition is true, those
of the `else` branch on the others, and the variables the branches assign are merged back
into the batch's order. godali rewrites the function's source with the ast module (DALI
uses its fork of AutoGraph) so that the `if` calls cond(), which traces both branches
under a condition stack (DALI's _ConditionStack, kept per pipeline by Scopes): every operator
made inside a branch gets its inputs split for the branch (the engine's
_conditional.split, once per value and branch), and the branches' values are merged by
_conditional.merge. The engine runs a branch's operators on the branch's samples only
and shows them the branch as their batch (engine/conditional.go): batch operators
(batch_permutation, python_function) see the branch's samples, and an operator that
would fail on a sample of the other branch never runs on it. Operators without inputs
made in a branch (random generators) run on the whole batch and are split where used,
as in DALI; batch_permutation takes the branch's size (DALI's hidden `_scope`).

What is rewritten, as DALI does:
- `if`/`elif`/`else` statements at any depth of the function body. Each variable (and
  attribute, `obj.a`) assigned in a branch becomes the merge of its values in the two
  branches; tuples, lists and dicts are merged element by element and must have the same
  structure in both branches (ValueError otherwise); Python constants that differ become
  constant nodes. A variable assigned in one branch only keeps its value from before the
  `if`; without one it may stay unused, and any use raises DALI's RuntimeError naming it.
- `return` inside `if`: the code after the `if` is copied into the branch without a
  return, and the function returns one merged value (a path without a return raises
  DALI's "must also have a return statement" when its result is used). Returns inside
  loops, `with` or `try` are left as they are.
- the functions (and lambdas) the pipeline function calls, when they are the program's
  own (not godali's, numpy's or a library's), converted on first call (DALI's
  converted_call), bound methods, classmethods and callable objects included (a
  zero-argument super() in a method keeps working); a lambda given as the pipeline function too; the functions and
  lambdas a converted function defines, with it (in their own scope). `@do_not_convert`
  keeps a function as it is.
- `not`, `and`, `or` (anywhere in the function body): on pipeline data, `not` is the
  per-sample logical not; `a and b` / `a or b` split the batch by `a` and evaluate `b`
  only on the samples that need it (DALI's lazy_and / lazy_or), giving BOOL. On Python
  values they keep Python's semantics. A condition that is not a DataNode runs as plain
  Python.
- chained comparisons, `a < b < c`: `(a < b) and (b < c)`, b evaluated once (per sample
  on pipeline data, as DALI).
- errors raised while the function is traced: of the same type, their message prefixed
  with "in user code:" and the user's frames it went through (AutoGraph's, in DALI).
"""

import ast
import inspect
import operator as _operator
import textwrap
import types

from . import _graph

_COND = "__godali_cond"
_AND, _OR, _NOT = "__godali_and", "__godali_or", "__godali_not"
_CC, _SET = "__godali_cc", "__godali_set"
_NORET, _RESULT = "__godali_noreturn", "__godali_result"
_CHAIN = "__godali_chain"
_RETVAL = "godali_retval__"


class _Undefined:
    """The value of a variable not yet assigned before an `if`."""

    def __repr__(self):
        return "<godali: variable not assigned on this path>"


UNDEFINED = _Undefined()


def _value(getter):
    try:
        return getter()
    except NameError:  # unbound local / free variable: not assigned yet
        return UNDEFINED


class _Unassigned:
    """The value of a variable assigned in only one branch of an `if` on pipeline data
    (with no value before it). DALI accepts such a variable as long as it is not used
    after the `if`; so does godali: any use (an operation, an operator input, a pipeline
    output) raises DALI's RuntimeError, naming it and the branch that lacks it."""

    __slots__ = ("name", "branch")

    def __init__(self, name, branch):
        self.name = name
        self.branch = branch  # "if" or "else": the branch without a value

    def _fail(self, *args, **kwargs):
        raise RuntimeError(self.message())

    def message(self):
        if self.name == _RETVAL:
            what = "The `%s` branch must also have a return statement." % self.branch
        else:
            what = "Variable '%s' must also be initialized in the `%s` branch." % (
                self.name, self.branch)
        return ("Encountered inconsistent outputs out of the `if/else` control flow "
                "statement. Variables need to be initialized in every code path (both `if` "
                "branches). " + what)

    def __repr__(self):
        return "<godali: %s>" % self.message()

    def __bool__(self):
        raise RuntimeError(self.message())


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
            "lshift", "rshift", "matmul"):
    setattr(_Unassigned, "__%s__" % _op, _Unassigned._fail)
    setattr(_Unassigned, "__r%s__" % _op, _Unassigned._fail)
for _op in ("neg", "pos", "invert", "abs", "lt", "le", "gt", "ge", "getitem", "call",
            "iter", "len", "float", "int", "index"):
    setattr(_Unassigned, "__%s__" % _op, _Unassigned._fail)


def check_assigned(value):
    """Raises DALI's RuntimeError for a value that only one branch of an `if` gave
    (pipeline outputs and operator inputs are checked with it)."""
    if isinstance(value, _Unassigned):
        raise RuntimeError(value.message())


class _NoReturn:
    """The result of a path of a rewritten function that ends without `return`."""

    def __repr__(self):
        return "<godali: no return statement on this path>"


NO_RETURN = _NoReturn()


def _result(value):
    """A rewritten function's result: None where a path had no return statement."""
    if isinstance(value, _Unassigned):
        raise RuntimeError(value.message())
    return None if value is NO_RETURN else value


def _same_plain(a, b):
    """Whether two Python (non-DataNode) branch values are the same value."""
    try:
        import numpy as np
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return np.array_equal(np.asarray(a), np.asarray(b)) and \
                np.asarray(a).dtype == np.asarray(b).dtype
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


_DIVERGENT = ("Divergent data found in different branches of `if/else` control flow "
              "statement. Variables in all code paths are merged into common output batches. "
              "The values assigned to a given variable need to have the same nesting "
              "structure in every code path (both `if` branches).\n"
              "For variable '%s': The two structures don't have the same nested structure.\n%s")


def _is_nest(x):
    return isinstance(x, (tuple, list, dict))


def _structure_error(name, a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        why = ("The two dictionaries don't have the same set of keys. First structure has keys "
               "type=list str=%r, while second structure has keys type=list str=%r"
               % (list(a), list(b)))
    elif _is_nest(a) and _is_nest(b) and type(a) is type(b):
        why = ("The two structures don't have the same sequence length. First structure has "
               "length %d, while second structure has length %d" % (len(a), len(b)))
    else:
        why = ("The two structures don't have the same sequence type. First structure has type "
               "%s, while second structure has type %s" % (type(a), type(b)))
    return ValueError(_DIVERGENT % (name, why))


def _merge(name, st, pred, a, b):
    """The merge of a value of the true branch (a) and of the false branch (b) of the `if`
    on top of condition stack st (split by pred): DataNodes by _conditional.merge (each
    first split for its branch), tuples, lists and dicts element by element (DALI's nests;
    both branches must have the same structure), Python constants as constant nodes
    (equal ones as they are)."""
    if a is b:
        return a
    for x, branch in ((a, "if"), (b, "else")):
        if x is UNDEFINED or x is NO_RETURN:
            return _Unassigned(name, branch)
        if isinstance(x, _Unassigned):
            return x
    if _is_nest(a) or _is_nest(b):
        if type(a) is not type(b) or len(a) != len(b) or \
                (isinstance(a, dict) and list(a) != list(b) and set(a) != set(b)):
            raise _structure_error(name, a, b)
        if isinstance(a, dict):
            return type(a)((k, _merge(name, st, pred, a[k], b[k])) for k in a)
        vals = [_merge(name, st, pred, x, y) for x, y in zip(a, b)]
        if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple
            return type(a)(*vals)
        return type(a)(vals)
    if not isinstance(a, _graph.DataNode) and not isinstance(b, _graph.DataNode) and \
            _same_plain(a, b):
        return a
    pipe = st.pipeline
    top = st.top()
    try:
        top.branch = True
        a = st.preprocess_input(_graph._operand(a, pipe))
        top.branch = False
        b = st.preprocess_input(_graph._operand(b, pipe))
    except (TypeError, ValueError) as e:
        raise TypeError("godali: with enable_conditionals, %r takes values in the branches "
                        "of an `if` on pipeline data that cannot be pipeline data (%s)"
                        % (name, e)) from None
    finally:
        top.branch = None
    return _merge_node(a, b, pred, pipe)


def _merge_node(a, b, pred, pipe):
    sch = _graph.schemas().ops["_conditional.merge"]
    return _graph.OpNode(sch, "cpu", [a, b, pred], {}, {}, pipe, None, False).outputs[0]


# --- the condition stack (DALI's _ConditionStack, with its names) -------------------------

def _data_node_repr(data_node):
    """The key of a DataNode in the condition stack (DALI keys by repr; godali by
    identity, the stack keeping the nodes alive)."""
    return id(data_node)


_CURRENT = object()  # the branch being traced


class _StackEntry:
    """One `if` being traced: its (split) predicate, the branch being traced (True, False,
    or None while merging), the values made in each branch, and the splits of values from
    outer levels made for it (by key of the original value and of the value split)."""

    def __init__(self, predicate):
        self.predicate = predicate
        self.branch = None
        self._produced = {True: set(), False: set(), None: set()}
        self.splits = {}
        self.keep = []  # the DataNodes whose keys are here, kept alive

    @property
    def produced(self):
        """The keys of the DataNodes made in the branch being traced (while merging: in
        either branch or at the merge)."""
        if self.branch is None:
            return self._produced[True] | self._produced[False] | self._produced[None]
        return self._produced[self.branch]

    def add_produced(self, d, branch=_CURRENT):
        """Records d as made in the branch being traced (or in `branch`: True, False, or
        None for the merge)."""
        self._produced[self.branch if branch is _CURRENT else branch].add(_data_node_repr(d))
        self.keep.append(d)

    def has(self, d):
        return _data_node_repr(d) in self.produced or _data_node_repr(d) in self.splits

    def get(self, d):
        if _data_node_repr(d) in self.produced:
            return d
        if self.branch is None:  # merging: the value of the level itself
            return d
        return self.splits[_data_node_repr(d)][0 if self.branch else 1]


class _ConditionStack:
    """The `if` statements of one pipeline being traced, outermost first (the first entry:
    the whole batch). A DataNode used in a branch is split, once per level, from the level
    where it was made down to the branch (DALI's _ConditionStack)."""

    def __init__(self, pipeline=None):
        self.pipeline = pipeline
        self.levels = [_StackEntry(None)]
        self.suspended = False

    def top(self):
        return self.levels[-1]

    def stack_depth(self):
        return len(self.levels)

    def push_predicate(self, predicate):
        """Enters an `if` on `predicate`; returns the predicate as seen at the new level
        (split for the enclosing branches)."""
        pred = self.preprocess_input(predicate)
        self.levels.append(_StackEntry(pred))
        return pred

    def pop(self):
        return self.levels.pop()

    def track_true_branch(self):
        self.top().branch = True

    def track_false_branch(self):
        self.top().branch = False

    def no_branch(self):
        self.top().branch = None

    def track_merge(self, split_predicate):
        """Enters the merge of the top `if`: both branches' values and the predicate
        visible."""
        self.no_branch()
        self.top().add_produced(split_predicate)

    def register_data_nodes(self, data_nodes, global_scope=False):
        """Records the DataNodes in data_nodes (nested in tuples, lists and dicts) as made
        at the top level (or the outermost one)."""
        entry = self.levels[0] if global_scope else self.top()
        stack = [data_nodes]
        while stack:
            v = stack.pop()
            if isinstance(v, _graph.DataNode):
                entry.add_produced(v)
            elif isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, (list, tuple)):
                stack.extend(v)

    def _find_closest(self, d):
        """The innermost level where d is visible; 0 for a value made before any `if` (or
        outside the function: the whole batch), which DALI finds registered there."""
        for k in range(len(self.levels) - 1, 0, -1):
            if self.levels[k].has(d):
                return k
        return 0

    def _realize_split(self, d, stack_level):
        """d, visible at stack_level, split for each level below it down to the branch
        being traced (a level that is merging sees its enclosing branch's value)."""
        value = self.levels[stack_level].get(d) if stack_level else d
        sch = _graph.schemas().ops["_conditional.split"]
        for level in self.levels[stack_level + 1:]:
            if level.branch is None:
                break
            self.suspended = True
            try:
                node = _graph.OpNode(sch, "cpu", [value, level.predicate], {}, {},
                                     self.pipeline, None, False)
            finally:
                self.suspended = False
            t, f = node.outputs
            level.splits[_data_node_repr(d)] = level.splits[_data_node_repr(value)] = (t, f)
            level.keep += [d, value]
            level.add_produced(t, True)
            level.add_produced(f, False)
            value = t if level.branch else f
        return value

    def preprocess_input(self, d):
        """d as seen in the branch being traced: split (once per level) when it was made
        at an outer level."""
        if not isinstance(d, _graph.DataNode):
            return d
        # a value made outside the function (an external source passed in) joins the
        # pipeline first
        if self.pipeline is not None:
            d = _graph.bind(d, self.pipeline, "a value used in an `if` branch")
        if d.device != "cpu":
            return d
        k = self._find_closest(d)
        if k == len(self.levels) - 1:
            return self.levels[k].get(d) if k else d
        return self._realize_split(d, k)

    def scope_batch_size_tracker(self):
        """A value whose samples are those of the branch being traced (DALI's): the
        `_scope` of batch_permutation."""
        top = self.top()
        if top.branch is None:
            return top.predicate
        return self.preprocess_input(top.predicate)


# Operators whose output depends on the batch's size without any input: they take the
# branch's samples through the hidden `_scope` argument input (DALI's ImplicitScopeAttr).
_SCOPED = {"batch_permutation"}


class Scopes:
    """The condition stacks of the pipelines whose `if` statements are being traced
    (by thread and pipeline); _graph.OpNode calls before()/after() while one is open."""

    def __init__(self):
        import threading
        self._stacks = {}
        self._lock = threading.Lock()

    def _key(self, pipe):
        import threading
        return (threading.get_ident(), id(pipe))

    def stack(self, pipe):
        return self._stacks.get(self._key(pipe))

    def open(self, pipe):
        with self._lock:
            st = self._stacks.get(self._key(pipe))
            if st is None:
                st = self._stacks[self._key(pipe)] = _ConditionStack(pipe)
            _graph._conditional_scope = self
            return st

    def close(self, pipe):
        with self._lock:
            st = self._stacks.get(self._key(pipe))
            if st is not None and len(st.levels) == 1:
                del self._stacks[self._key(pipe)]
            if not self._stacks:
                _graph._conditional_scope = None

    def _active(self, pipe):
        st = self._stacks.get(self._key(pipe))
        if st is None or st.suspended or len(st.levels) == 1:
            return None
        return st

    def before(self, pipe, schema, inputs, arg_inputs):
        st = self._active(pipe)
        if st is None:
            return inputs, arg_inputs
        inputs = [st.preprocess_input(x) for x in inputs]
        arg_inputs = {k: st.preprocess_input(v) for k, v in (arg_inputs or {}).items()}
        if schema.name in _SCOPED and not inputs and not arg_inputs:
            arg_inputs["_scope"] = st.scope_batch_size_tracker()
        return inputs, arg_inputs

    def after(self, pipe, node):
        st = self._active(pipe)
        if st is None:
            return
        if any(isinstance(x, _graph.DataNode) for x in list(node.inputs) +
               list((node.arg_inputs or {}).values())):
            st.register_data_nodes(node.outputs)
        # without inputs: made for the whole batch (split where a branch uses it)

    def register(self, st, values):
        """Makes the merged values of an `if` visible at the level that encloses it."""
        if len(st.levels) > 1:
            st.register_data_nodes(values)


SCOPES = Scopes()


def check_nesting_support():
    """DALI: whether tuples, lists and dicts may be assigned in `if` branches (it needs
    dm-tree for that); godali merges them itself: always True."""
    return True


def conditionals_enabled():
    """DALI's: whether the pipeline being defined (the current one) was made by
    @pipeline_def(enable_conditionals=True)."""
    return bool(getattr(_graph.current_pipeline(), "_conditionals_enabled", False))


def choose(pred, true_fn, false_fn, name="<result>"):
    """What `true_fn() if pred else false_fn()` gives as an `if` statement of a converted
    function: for a DataNode pred, both traced (each on its samples, as cond() does) and
    their results merged; for a Python value, the one Python picks. godali's own code
    that branches on pipeline data (auto_aug.core.select) uses it, as the rewriting does
    not reach godali's functions. Without enable_conditionals a DataNode pred raises
    DALI's TypeError for a DataNode in conditional context."""
    if isinstance(pred, _graph.DataNode) and not conditionals_enabled():
        bool(pred)  # raises DataNode's TypeError
    return cond(pred, lambda _: (true_fn(),), lambda _: (false_fn(),), (name,),
                (lambda: UNDEFINED,))[0]


def _package_dir():
    import os
    return os.path.dirname(os.path.abspath(__file__)) + os.sep


def explain_user_error(e):
    """An exception raised while a converted pipeline function was traced, as DALI
    (AutoGraph) reports it: of the same type, its message prefixed with the frames of
    the user's code it went through ("in user code:", each converted function's frame
    marked with `*`); None where the type cannot be made from one message (the original
    is raised then) or the error already says it."""
    import traceback
    if getattr(e, "_godali_user_code", False):
        return None
    import linecache
    pkg = _package_dir()
    frames = []  # [path, line, function, converted]
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        code = frame.f_code
        path = code.co_filename
        if path.startswith(pkg) or path.startswith("<"):
            continue
        if code.co_name.startswith("__godali_"):
            # a branch (or operand) of a rewritten `if`/`and`/`or`: its lines are those of
            # the function it was written in
            if frames and frames[-1][0] == path:
                frames[-1][1] = lineno
            continue
        frames.append([path, lineno, code.co_name, code in _converted_codes])
    if not frames:
        return None
    lines = ['    File "%s", line %d, in %s%s\n        %s\n'
             % (path, n, name, "  *" if conv else "", linecache.getline(path, n).strip())
             for path, n, name, conv in frames]
    msg = str(e)
    text = "in user code:\n\n%s\n    %s: %s\n" % (
        "".join(lines), type(e).__name__, msg.replace("\n", "\n    "))
    try:
        new = type(e)(text)
    except Exception:
        return None
    if str(new) != text:
        return None
    try:
        new.__dict__.update(e.__dict__)
    except (AttributeError, TypeError):
        pass
    new._godali_user_code = True
    return new


def _get_composite(getter):
    try:
        return getter()
    except AttributeError:
        return UNDEFINED


def _set_composite(setter, value):
    setter(value)


def cond(pred, true_fn, false_fn, names, getters, cnames=(), cgetters=(), csetters=()):
    """Runs an `if` rewritten by transform(): the branch Python picks for a plain
    condition; for a DataNode condition, both branches traced under the condition stack
    (each on its own samples) and their values merged.

    names/getters: the plain variables the branches assign (passed in and returned);
    cnames/cgetters/csetters: the attributes they assign (obj.a), read and restored around
    each branch so that each branch starts from the values before the `if`."""
    vals = [_value(g) for g in getters]
    if not isinstance(pred, _graph.DataNode):
        return (true_fn if pred else false_fn)(*vals)
    if pred.device != "cpu":
        # DALI: ValueError, from the split's `predicate` argument
        raise ValueError("godali: Invalid device \"gpu\" for argument 'predicate' of operator "
                         "'godali.fn._conditional.split'. Named arguments must be on CPU. (The "
                         "condition of an `if` must be CPU data, not .gpu().)")
    pipe = pred.source.pipeline or _graph.current_pipeline()
    st = SCOPES.open(pipe)
    depth = len(st.levels)
    try:
        split_pred = st.push_predicate(pred)
        before = [_get_composite(g) for g in cgetters]
        st.track_true_branch()
        t = true_fn(*vals)
        tc = [_get_composite(g) for g in cgetters]
        for setter, v in zip(csetters, before):
            _set_composite(setter, v)
        st.track_false_branch()
        f = false_fn(*vals)
        fc = [_get_composite(g) for g in cgetters]
        st.track_merge(split_pred)
        merged_c = [_merge(cname, st, split_pred, x, y) for cname, x, y in zip(cnames, tc, fc)]
        merged = tuple(_merge(name, st, split_pred, x, y) for name, x, y in zip(names, t, f))
    finally:
        del st.levels[depth:]
        SCOPES.close(pipe)
    SCOPES.register(st, (merged_c, merged))
    for setter, v in zip(csetters, merged_c):
        _set_composite(setter, v)
    return merged


def _truth(x, pipe):
    """A DataNode as per-sample BOOL (non-zero is true, as DALI's logical operators)."""
    return _graph.arithmetic("ne", _graph._operand(x, pipe), 0)


def _plain(x):
    """A Python operand of a logical operation on pipeline data, as a bool constant."""
    return x if isinstance(x, _graph.DataNode) else bool(x)


def _lazy(left, right_fn, is_and):
    """`left and right` / `left or right` on pipeline data (DALI's lazy_and / lazy_or):
    the batch split by `left`; `right` evaluated only on the samples that need it (left
    true for `and`, false for `or`), the others keeping left's value; BOOL."""
    pipe = left.source.pipeline or _graph.current_pipeline()
    st = SCOPES.open(pipe)
    depth = len(st.levels)
    try:
        name = "and" if is_and else "or"
        a = _validate(left, name, "left", pipe)
        split_pred = st.push_predicate(a)
        top = st.top()
        top.branch = is_and
        right = st.preprocess_input(_validate(_plain(right_fn()), name, "right", pipe))
        top.branch = not is_and
        keep = st.preprocess_input(split_pred)
        st.track_merge(split_pred)
        out = _merge_node(right, keep, split_pred, pipe) if is_and else \
            _merge_node(keep, right, split_pred, pipe)
    finally:
        del st.levels[depth:]
        SCOPES.close(pipe)
    SCOPES.register(st, out)
    return out


def logical_and(left, right_fn):
    """`left and right` (rewritten): per sample, lazily, on pipeline data; Python's
    otherwise."""
    if not isinstance(left, _graph.DataNode):
        return left and right_fn()
    return _lazy(left, right_fn, True)


def logical_or(left, right_fn):
    """`left or right` (rewritten): per sample, lazily, on pipeline data; Python's
    otherwise."""
    if not isinstance(left, _graph.DataNode):
        return left or right_fn()
    return _lazy(left, right_fn, False)


_COMPARE = {"Eq": _operator.eq, "NotEq": _operator.ne, "Lt": _operator.lt,
            "LtE": _operator.le, "Gt": _operator.gt, "GtE": _operator.ge,
            "Is": _operator.is_, "IsNot": _operator.is_not,
            "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}


def compare_chain(first, ops, rest):
    """`a < b < c ...` (rewritten): `(a < b) and (b < c) ...` with each operand evaluated
    once and only when needed; on pipeline data the `and` is per sample (DALI converts
    chained comparisons so)."""
    right = rest[0]()
    result = _COMPARE[ops[0]](first, right)
    if len(ops) == 1:
        return result
    return logical_and(result, lambda: compare_chain(right, ops[1:], rest[1:]))


def _validate(x, name, side, pipe):
    """An operand of `and`/`or`/`not` on pipeline data, checked per sample by the engine
    (_conditional.validate_logical: a scalar, BOOL for `and`/`or`), as DALI does; GPU
    data is refused when the expression is traced (DALI's RuntimeError)."""
    if isinstance(x, _graph.DataNode) and x.device != "cpu":
        # DALI's message (its _validate_logical), when the expression is traced
        raise RuntimeError(
            "Logical expression `%s` is restricted to scalar (0-d tensors) inputs of `bool` "
            "type, that are placed on CPU. Got a GPU input as the %s argument in logical "
            "expression." % (name, side if name != "not" else "only"))
    x = _graph._operand(x, pipe)
    sch = _graph.schemas().ops["_conditional.validate_logical"]
    return _graph.OpNode(sch, "cpu", [x], {}, {"expression_name": name, "expression_side": side},
                         pipe, None, False).outputs[0]


def logical_not(x):
    """`not x` (rewritten): per sample on pipeline data, Python's otherwise."""
    if not isinstance(x, _graph.DataNode):
        return not x
    pipe = x.source.pipeline or _graph.current_pipeline()
    return _graph.arithmetic("eq", _validate(x, "not", "left", pipe), 0)


class _Assigned(ast.NodeVisitor):
    """Names a statement list binds, not looking into nested scopes."""

    def __init__(self):
        self.names = []
        self.composites = []  # (dotted name, the Attribute node) of obj.a = ... targets
        self.escapes = False

    def _add(self, name):
        if name not in self.names and not name.startswith("__godali_"):
            self.names.append(name)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Store):
            dotted = _dotted(node)
            if dotted is not None and dotted not in [c[0] for c in self.composites]:
                self.composites.append((dotted, node))
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        self._add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._add(node.name)

    def visit_Lambda(self, node):
        pass

    def visit_comprehension(self, node):
        pass

    def visit_ListComp(self, node):
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Import(self, node):
        for a in node.names:
            self._add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def _escape(self, node):
        self.escapes = True

    visit_Return = visit_Break = visit_Continue = visit_Yield = visit_YieldFrom = _escape
    visit_Global = visit_Nonlocal = visit_Await = _escape


def _dotted(node):
    """"obj.a.b" for an Attribute chain on a plain name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + parts[::-1])


def _noargs():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


class _Rewriter(ast.NodeTransformer):
    def __init__(self):
        self.count = 0
        self.calls = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id.startswith("__godali_"):
            return node
        # f(x) -> __godali_cc(f)(x): the functions a converted function calls are converted
        # too when they are the program's own (DALI's converted_call)
        self.calls += 1
        node.func = ast.copy_location(ast.Call(func=ast.Name(id=_CC, ctx=ast.Load()),
                                               args=[f], keywords=[]), f)
        return node

    def visit_FunctionDef(self, node):
        # A function defined inside a converted one is converted with it (as AutoGraph
        # converts nested functions), its own variables and returns rewritten in its own
        # scope; not a generator, nor one marked @do_not_convert.
        if _scan(node.body, (ast.Yield, ast.YieldFrom)) or any(
                (_dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[-1]
                == "do_not_convert" for d in node.decorator_list):
            return node
        node.body = _single_exit(node.body)
        node.body = [x for s in node.body for x in _as_list(self.visit(s))]
        return node

    def visit_Lambda(self, node):
        self.generic_visit(node)  # its `and`/`or`/`not` and calls, as the function's
        return node

    def visit_ClassDef(self, node):
        return node  # classes (and their methods) keep their own semantics

    visit_AsyncFunctionDef = visit_ClassDef

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        self.count += 1
        helper = _AND if isinstance(node.op, ast.And) else _OR
        noargs = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                               kw_defaults=[], kwarg=None, defaults=[])
        out = node.values[0]
        for v in node.values[1:]:  # a and b and c == (a and b) and c
            out = ast.Call(func=ast.Name(id=helper, ctx=ast.Load()),
                           args=[out, ast.Lambda(args=noargs, body=v)], keywords=[])
        return ast.copy_location(out, node)

    def visit_Compare(self, node):
        # a < b < c -> __godali_chain(a, ("Lt", "Lt"), (lambda: b, lambda: c)): Python's
        # `(a < b) and (b < c)`, b evaluated once, per sample on pipeline data (DALI)
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        self.count += 1
        ops = ast.Tuple(elts=[ast.Constant(value=type(o).__name__) for o in node.ops],
                        ctx=ast.Load())
        rest = ast.Tuple(elts=[ast.Lambda(args=_noargs(), body=c) for c in node.comparators],
                         ctx=ast.Load())
        return ast.copy_location(ast.Call(func=ast.Name(id=_CHAIN, ctx=ast.Load()),
                                          args=[node.left, ops, rest], keywords=[]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.count += 1
        return ast.copy_location(ast.Call(func=ast.Name(id=_NOT, ctx=ast.Load()),
                                          args=[node.operand], keywords=[]), node)

    def visit_If(self, node):
        node.test = self.visit(node.test)
        node.body = [x for s in node.body for x in _as_list(self.visit(s))]
        node.orelse = [x for s in node.orelse for x in _as_list(self.visit(s))]
        v = _Assigned()
        for s in node.body + node.orelse:
            v.visit(s)
        if v.escapes:
            return node
        names = v.names
        composites = v.composites
        self.count += 1
        k = self.count
        params = ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names],
                               vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                               defaults=[])
        ret = ast.Return(value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names],
                                         ctx=ast.Load()))

        def branch(name, body):
            return _funcdef(name, params, list(body or [ast.Pass()]) + [ret])
        tname, fname = "__godali_true_%d" % k, "__godali_false_%d" % k
        getters = ast.Tuple(elts=[ast.Lambda(args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
            defaults=[]), body=ast.Name(id=n, ctx=ast.Load())) for n in names], ctx=ast.Load())
        cargs = []
        if composites:
            import copy
            cnames = ast.Tuple(elts=[ast.Constant(value=d) for d, _ in composites], ctx=ast.Load())
            cget = ast.Tuple(elts=[ast.Lambda(args=_noargs(), body=ast.Attribute(
                value=copy.deepcopy(a.value), attr=a.attr, ctx=ast.Load()))
                for _, a in composites], ctx=ast.Load())
            vargs = ast.arguments(posonlyargs=[], args=[ast.arg(arg="__godali_v")], vararg=None,
                                  kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
            cset = ast.Tuple(elts=[ast.Lambda(args=vargs, body=ast.Call(
                func=ast.Name(id=_SET, ctx=ast.Load()),
                args=[copy.deepcopy(a.value), ast.Constant(value=a.attr),
                      ast.Name(id="__godali_v", ctx=ast.Load())], keywords=[]))
                for _, a in composites], ctx=ast.Load())
            cargs = [cnames, cget, cset]
        call = ast.Call(func=ast.Name(id=_COND, ctx=ast.Load()),
                        args=[node.test, ast.Name(id=tname, ctx=ast.Load()),
                              ast.Name(id=fname, ctx=ast.Load()),
                              ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load()),
                              getters] + cargs, keywords=[])
        if names:
            stmt = ast.Assign(targets=[ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names],
                                                 ctx=ast.Store())], value=call)
        else:
            stmt = ast.Expr(value=call)
        out = [branch(tname, node.body), branch(fname, node.orelse), stmt]
        for s in out:
            ast.copy_location(s, node)
        return out


# The code objects of rewritten pipeline functions and of every function defined inside
# them (_autograph.is_autograph_artifact). Pipelines are defined a handful of times per
# process: the set stays small.
_converted_codes = set()


def _register_converted(code):
    _converted_codes.add(code)
    for c in code.co_consts:
        if isinstance(c, type(code)):
            _register_converted(c)


def is_converted(entity):
    """Whether entity's code was produced by transform() (or defined inside it)."""
    code = getattr(getattr(entity, "__func__", entity), "__code__", None)
    return code is not None and code in _converted_codes


def transform(func):
    """Returns func with its `if` statements rewritten (see the module docs)."""
    new = _transform(func)
    _register_converted(new.__code__)
    return new


def _function_ast(func):
    """The FunctionDef of func's source (a lambda becomes a def returning its body)."""
    if func.__name__ == "<lambda>":
        return _lambda_ast(func)
    try:
        src = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as e:
        raise TypeError("godali: enable_conditionals needs the source of %s to rewrite its "
                        "`if` statements, and it is not available (%s)"
                        % (getattr(func, "__qualname__", func), e)) from None
    tree = ast.parse(src)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TypeError("godali: enable_conditionals can rewrite functions defined with "
                        "`def` or `lambda`, not %s" % type(fdef).__name__)
    return fdef, func.__code__.co_firstlineno - 1


def _lambda_ast(func):
    """A lambda's AST, found in its file by line and parameter names."""
    code = func.__code__
    try:
        path = inspect.getsourcefile(func)
        lines = inspect.findsource(func)[0]
    except (OSError, TypeError) as e:
        raise TypeError("godali: enable_conditionals needs the source of a lambda to rewrite "
                        "it, and it is not available (%s)" % e) from None
    tree = ast.parse("".join(lines), path or "<lambda>")
    argnames = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
             and n.lineno == code.co_firstlineno
             and [x.arg for x in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] == argnames]
    if len(found) != 1:
        raise TypeError("godali: enable_conditionals cannot tell which lambda of line %d is "
                        "%r (%d have its parameters)" % (code.co_firstlineno, func, len(found)))
    lam = found[0]
    fdef = _funcdef("__godali_lambda", lam.args, [ast.Return(value=lam.body)])
    ast.copy_location(fdef, lam)
    for n in ast.walk(fdef):
        if hasattr(n, "lineno"):
            n.lineno -= code.co_firstlineno - 1
            if getattr(n, "end_lineno", None) is not None:
                n.end_lineno -= code.co_firstlineno - 1
    return fdef, code.co_firstlineno - 1


# --- early returns ----------------------------------------------------------------------
# `if c: return a` followed by more code is rewritten as one `if` whose branches both end
# in a return (the code after it copied into the branch that lacked one), and such an `if`
# then assigns a result variable in both branches and returns it once after the `if`, so
# that a return inside an `if` on pipeline data becomes a per-sample choice.

def _scan(stmts, want):
    """Whether a statement list holds a node of type `want`, not looking into nested
    functions or classes."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, want):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _returns_in_loop(stmts):
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) \
                and _scan(n.body + getattr(n, "orelse", []) + getattr(n, "finalbody", []) +
                          [h for h in getattr(n, "handlers", [])], ast.Return):
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _terminates(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _terminates(last.body) and _terminates(last.orelse)


def _fold_returns(stmts):
    import copy
    for i, st in enumerate(stmts):
        if isinstance(st, ast.If) and _scan([st], ast.Return):
            rest = stmts[i + 1:]
            body = st.body if _terminates(st.body) else st.body + copy.deepcopy(rest)
            orelse = st.orelse if _terminates(st.orelse) else st.orelse + copy.deepcopy(rest)
            st.body = _fold_returns(body)
            st.orelse = _fold_returns(orelse)
            return stmts[:i] + [st]
    return stmts


def _assign_returns(stmts):
    out = []
    for st in stmts:
        if isinstance(st, ast.Return):
            out.append(ast.copy_location(ast.Assign(
                targets=[ast.Name(id=_RETVAL, ctx=ast.Store())],
                value=st.value if st.value is not None else ast.Constant(value=None)), st))
            continue
        if isinstance(st, ast.If):
            st.body = _assign_returns(st.body)
            st.orelse = _assign_returns(st.orelse)
        out.append(st)
    return out


def _single_exit(body):
    """Rewrites a function body's returns inside `if` statements (see above); leaves it as
    it is when a return sits in a loop, `with` or `try`."""
    if not _scan(body, ast.Return) or _returns_in_loop(body):
        return body
    if not any(isinstance(st, ast.If) and _scan([st], ast.Return) for st in body):
        return body
    if not _terminates(body):
        body = body + [ast.Return(value=ast.Name(id=_NORET, ctx=ast.Load()))]
    body = _fold_returns(body)
    last = body[-1]
    if isinstance(last, ast.If) and _terminates([last]):
        body = body[:-1] + _assign_returns([last]) + [ast.Return(value=ast.Call(
            func=ast.Name(id=_RESULT, ctx=ast.Load()),
            args=[ast.Name(id=_RETVAL, ctx=ast.Load())], keywords=[]))]
    return body


def _set(obj, attr, value):
    """Restores or sets obj.attr around the branches of an `if` (UNDEFINED: deletes it)."""
    if value is UNDEFINED:
        try:
            delattr(obj, attr)
        except AttributeError:
            pass
    else:
        setattr(obj, attr, value)


# --- converting the functions a pipeline calls (DALI's converted_call) ----------------------

# Top-level packages whose functions are never converted: godali's own operators, the
# numeric libraries, the standard library.
_NO_CONVERT = {"godali", "numpy", "torch", "torchvision", "PIL", "cv2", "scipy", "nvidia",
               "builtins", "functools", "itertools", "operator", "math", "random", "typing",
               "collections", "os", "sys", "re", "json", "copy", "inspect", "abc"}


def _user_function(f):
    if not isinstance(f, types.FunctionType):
        return False
    if getattr(f, "__dali_do_not_convert__", False) or f.__code__ in _converted_codes:
        return False
    if inspect.isgeneratorfunction(f) or inspect.iscoroutinefunction(f) or \
            inspect.isasyncgenfunction(f):
        return False
    mod = (getattr(f, "__module__", None) or "").split(".")[0]
    if mod in _NO_CONVERT:
        return False
    path = f.__code__.co_filename or ""
    if "site-packages" in path or "dist-packages" in path or path.startswith("<"):
        return False
    return True


_converted_cache = {}


def _converted_call(f):
    """f itself, or f with its `if` statements rewritten when it is the program's own
    function (its conversion cached by function object): a function, a bound method (of
    an instance, or a classmethod) or an instance with a __call__ method, as AutoGraph
    converts them."""
    if isinstance(f, types.MethodType):
        func = _converted_function(f.__func__)
        return f if func is f.__func__ else types.MethodType(func, f.__self__)
    if not isinstance(f, (types.FunctionType, type)):
        call = getattr(type(f), "__call__", None)
        if isinstance(call, types.FunctionType):
            func = _converted_function(call)
            if func is not call:
                return types.MethodType(func, f)
        return f
    return _converted_function(f)


def _converted_function(f):
    if not _user_function(f):
        return f
    key = id(f)
    hit = _converted_cache.get(key)
    if hit is not None and hit[0] is f:
        return hit[1]
    try:
        new = transform(f)
    except (TypeError, SyntaxError, OSError):
        new = f  # no source (or not rewritable): called as it is, as AutoGraph does
    _converted_cache[key] = (f, new)
    return new


class _ExplicitSuper(ast.NodeTransformer):
    """super() -> super(__class__, self) in a method's own statements: the rewritten
    `if` moves statements into branch functions, where a zero-argument super() would see
    the branch's first argument instead of the method's."""

    def __init__(self, first):
        self.first = first

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args \
                and not node.keywords:
            node.args = [ast.Name(id="__class__", ctx=ast.Load()),
                         ast.Name(id=self.first, ctx=ast.Load())]
        return node


def _transform(func):
    fdef, offset = _function_ast(func)
    fdef.decorator_list = []
    args = fdef.args.posonlyargs + fdef.args.args
    if "__class__" in func.__code__.co_freevars and args:
        fdef.body = [_ExplicitSuper(args[0].arg).visit(st) for st in fdef.body]
    fdef.body = _single_exit(fdef.body)
    rw = _Rewriter()
    fdef.body = [s for st in fdef.body for s in _as_list(rw.visit(st))]
    if rw.count == 0 and rw.calls == 0:
        return func
    free = list(func.__code__.co_freevars)
    factory = _funcdef(
        "__godali_factory",
        ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in
                                            [_COND, _AND, _OR, _NOT, _CC, _SET, _NORET,
                                             _RESULT, _CHAIN] + free],
                      vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))])
    mod = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(mod)
    ast.increment_lineno(mod, offset)
    code = compile(mod, inspect.getsourcefile(func) or "<godali conditionals>", "exec")
    ns = {}
    exec(code, func.__globals__, ns)
    cells = [_cell(c) for c in (func.__closure__ or ())]
    new = ns["__godali_factory"](cond, logical_and, logical_or, logical_not, _converted_call,
                                 _set, NO_RETURN, _result, compare_chain, *cells)
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    new.__wrapped__ = func
    if func.__name__ != "<lambda>":
        new.__name__, new.__qualname__ = func.__name__, func.__qualname__
    return new


def _funcdef(name, args, body):
    kw = {"name": name, "args": args, "body": body, "decorator_list": [], "returns": None}
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        kw["type_params"] = []
    return ast.FunctionDef(**kw)


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:  # an empty cell: a variable of the enclosing scope not yet bound
        return UNDEFINED


def _as_list(x):
    return x if isinstance(x, list) else [x]


# --- DALI's explicit conditional operators (fn._conditional.*) ------------------------------
# What DALI's rewritten `if` calls; scripts rarely call them directly. They are the
# engine's _conditional.split and _conditional.merge: the operators that read split()'s
# outputs run on those samples only.

def _pred_node(predicate, what):
    if not isinstance(predicate, _graph.DataNode):
        raise TypeError("godali: fn._conditional.%s: predicate must be a DataNode, got %s"
                        % (what, _graph._show(predicate)))
    return predicate


def split(input, predicate=None, **kwargs):
    """DALI's fn._conditional.split: (the samples whose predicate is true, the others)."""
    pred = _pred_node(predicate, "split")
    pipe = pred.source.pipeline or _graph.current_pipeline()
    if not isinstance(input, _graph.DataNode) and not isinstance(input, (bool, int, float)) \
            and type(input).__module__ != "numpy":
        raise TypeError("godali: fn._conditional.split: input must be a DataNode or a "
                        "constant (a number or a numpy array), got %s" % _graph._show(input))
    # a constant input becomes a constant node, as DALI does for an operator's input
    sch = _graph.schemas().ops["_conditional.split"]
    node = _graph.OpNode(sch, "cpu", [_graph._operand(input, pipe),
                                      _graph.bind(pred, pipe, "predicate")], {}, {},
                         pipe, None, False)
    return tuple(node.outputs)


def merge(true_input, false_input, predicate=None, **kwargs):
    """DALI's fn._conditional.merge: per sample, true_input where predicate holds, else
    false_input."""
    pred = _pred_node(predicate, "merge")
    pipe = pred.source.pipeline or _graph.current_pipeline()
    a, b = _graph._operand(true_input, pipe), _graph._operand(false_input, pipe)
    return _merge_node(a, b, _graph.bind(pred, pipe, "predicate"), pipe)


def not_(input, **kwargs):
    """DALI's fn._conditional.not_: per-sample logical not, BOOL."""
    return logical_not(input)


def validate_logical(input, expression_name=None, expression_side=None, **kwargs):
    """DALI's fn._conditional.validate_logical: the operand of `and`/`or`/`not` as it is,
    each sample checked to be a scalar (BOOL for `and`/`or`)."""
    if not isinstance(input, _graph.DataNode):
        raise TypeError("godali: fn._conditional.validate_logical: input must be a DataNode")
    return _validate(input, expression_name or "and", expression_side or "left",
                     input.source.pipeline or _graph.current_pipeline())


def namespace():
    """The fn._conditional namespace."""
    ns = _graph.Namespace("godali.fn._conditional")
    for f in (split, merge, not_, validate_logical):
        f._schema_name = "_conditional." + f.__name__
        ns._add(f.__name__, f)
    return ns
