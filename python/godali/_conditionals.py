"""enable_conditionals: `if` statements on pipeline data inside @pipeline_def functions.

DALI rewrites the pipeline function (with AutoGraph) so that an `if` whose condition is a
DataNode splits the batch by the condition, runs each branch on its samples and merges
the results. godali rewrites the function's source with the ast module into the same
shape, but runs each branch on every sample and merges per sample (the internal
`_select` operator): results are the same because operators have no side effects; the
costs are that both branches are computed, and that a branch which fails on a sample
fails the batch even when that sample takes the other branch.

What is rewritten: `if`/`elif`/`else` statements (at any depth of the function body,
not inside nested functions or classes). Each variable assigned in a branch becomes
the per-sample choice between its values in the two branches; a variable assigned in
one branch only keeps its value from before the `if` in the other. An `if` containing
`return`, `break`, `continue`, `yield`, `global` or `nonlocal` is left as it is (so
such an `if` on a DataNode raises TypeError). `not`, `and`, `or` are rewritten too
(anywhere in the function body): on pipeline data they are per-sample logical
operations giving BOOL (both operands computed, as both branches are); on Python values
they keep Python's short-circuit semantics. A condition that is not a DataNode runs as
plain Python.
"""

import ast
import inspect
import textwrap

from . import _graph

_COND = "__godali_cond"
_AND, _OR, _NOT = "__godali_and", "__godali_or", "__godali_not"


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


def cond(pred, true_fn, false_fn, names, getters):
    """Runs an `if` rewritten by transform(): the branch Python picks for a plain
    condition; both branches and a per-sample merge for a DataNode condition."""
    vals = [_value(g) for g in getters]
    if not isinstance(pred, _graph.DataNode):
        return (true_fn if pred else false_fn)(*vals)
    if pred.device != "cpu":
        raise ValueError("godali: the condition of an `if` must be host data (not .gpu())")
    t = true_fn(*vals)
    f = false_fn(*vals)
    out = []
    for name, a, b in zip(names, t, f):
        if a is b:
            out.append(a)
            continue
        if a is UNDEFINED or b is UNDEFINED:
            raise TypeError("godali: with enable_conditionals, %r is assigned in only one "
                            "branch of an `if` on pipeline data and has no value before it; "
                            "assign it in both branches" % name)
        if not isinstance(a, _graph.DataNode) and not isinstance(b, _graph.DataNode):
            raise TypeError("godali: with enable_conditionals, %r takes different Python "
                            "values (%s, %s) in the branches of an `if` on pipeline data; "
                            "only pipeline data (DataNodes) can differ per sample"
                            % (name, _graph._show(a), _graph._show(b)))
        pipe = pred.source.pipeline
        a, b = _graph._operand(a, pipe), _graph._operand(b, pipe)
        sch = _graph.schemas().ops["_select"]
        node = _graph.OpNode(sch, "cpu", [pred, a, b], {}, {}, pipe, None, False)
        out.append(node.outputs[0])
    return tuple(out)


def _truth(x, pipe):
    """A DataNode as per-sample BOOL (non-zero is true, as DALI's logical operators)."""
    return _graph.arithmetic("ne", _graph._operand(x, pipe), 0)


def _plain(x):
    """A Python operand of a logical operation on pipeline data, as a bool constant."""
    return x if isinstance(x, _graph.DataNode) else bool(x)


def logical_and(left, right_fn):
    """`left and right` (rewritten): per sample on pipeline data, Python's otherwise."""
    if not isinstance(left, _graph.DataNode):
        return left and right_fn()
    pipe = left.source.pipeline
    right = _graph._operand(_plain(right_fn()), pipe)
    return _graph.arithmetic("bitand", _truth(left, pipe), _truth(right, pipe))


def logical_or(left, right_fn):
    """`left or right` (rewritten): per sample on pipeline data, Python's otherwise."""
    if not isinstance(left, _graph.DataNode):
        return left or right_fn()
    pipe = left.source.pipeline
    right = _graph._operand(_plain(right_fn()), pipe)
    return _graph.arithmetic("bitor", _truth(left, pipe), _truth(right, pipe))


def logical_not(x):
    """`not x` (rewritten): per sample on pipeline data, Python's otherwise."""
    if not isinstance(x, _graph.DataNode):
        return not x
    return _graph.arithmetic("eq", x, 0)


class _Assigned(ast.NodeVisitor):
    """Names a statement list binds, not looking into nested scopes."""

    def __init__(self):
        self.names = []
        self.escapes = False

    def _add(self, name):
        if name not in self.names and not name.startswith("__godali_"):
            self.names.append(name)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id)

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


class _Rewriter(ast.NodeTransformer):
    def __init__(self):
        self.count = 0

    def visit_FunctionDef(self, node):
        return node  # nested functions keep their own semantics

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

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
        call = ast.Call(func=ast.Name(id=_COND, ctx=ast.Load()),
                        args=[node.test, ast.Name(id=tname, ctx=ast.Load()),
                              ast.Name(id=fname, ctx=ast.Load()),
                              ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load()),
                              getters], keywords=[])
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


def _transform(func):
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
                        "`def`, not %s" % type(fdef).__name__)
    fdef.decorator_list = []
    rw = _Rewriter()
    fdef.body = [s for st in fdef.body for s in _as_list(rw.visit(st))]
    if rw.count == 0:
        return func
    free = list(func.__code__.co_freevars)
    factory = _funcdef(
        "__godali_factory",
        ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in
                                            [_COND, _AND, _OR, _NOT] + free],
                      vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))])
    mod = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(mod)
    first = func.__code__.co_firstlineno
    ast.increment_lineno(mod, first - 1)
    code = compile(mod, inspect.getsourcefile(func) or "<godali conditionals>", "exec")
    ns = {}
    exec(code, func.__globals__, ns)
    cells = [_cell(c) for c in (func.__closure__ or ())]
    new = ns["__godali_factory"](cond, logical_and, logical_or, logical_not, *cells)
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    new.__wrapped__ = func
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
# What DALI's rewritten `if` calls; scripts rarely call them directly. godali runs both
# branches on every sample (see the module docstring), so split() gives each branch the
# whole batch and merge() picks, per sample, the branch the predicate names: merged
# results are DALI's; split()'s outputs themselves hold every sample, not a subset.

def _pred_node(predicate, what):
    if not isinstance(predicate, _graph.DataNode):
        raise TypeError("godali: fn._conditional.%s: predicate must be a DataNode, got %s"
                        % (what, _graph._show(predicate)))
    return predicate


def split(input, predicate=None, **kwargs):
    """DALI's fn._conditional.split: (the true branch's input, the false branch's input)."""
    _pred_node(predicate, "split")
    return input, input


def merge(true_input, false_input, predicate=None, **kwargs):
    """DALI's fn._conditional.merge: per sample, true_input where predicate holds, else
    false_input."""
    pred = _pred_node(predicate, "merge")
    pipe = pred.source.pipeline or _graph.current_pipeline()
    a, b = _graph._operand(true_input, pipe), _graph._operand(false_input, pipe)
    sch = _graph.schemas().ops["_select"]
    node = _graph.OpNode(sch, "cpu", [_graph.bind(pred, pipe, "predicate"), a, b], {}, {},
                         pipe, None, False)
    return node.outputs[0]


def not_(input, **kwargs):
    """DALI's fn._conditional.not_: per-sample logical not, BOOL."""
    return logical_not(input)


def validate_logical(input, expression_name=None, expression_side=None, **kwargs):
    """DALI's fn._conditional.validate_logical: the operand of `and`/`or`/`not`, as
    per-sample BOOL (godali takes any number, non-zero being true; DALI asks for BOOL)."""
    if not isinstance(input, _graph.DataNode):
        raise TypeError("godali: fn._conditional.validate_logical: input must be a DataNode")
    return _truth(input, input.source.pipeline or _graph.current_pipeline())


def namespace():
    """The fn._conditional namespace."""
    ns = _graph.Namespace("godali.fn._conditional")
    for f in (split, merge, not_, validate_logical):
        f._schema_name = "_conditional." + f.__name__
        ns._add(f.__name__, f)
    return ns
