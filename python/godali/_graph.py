"""The operator graph: schemas from the library, DataNode, and the fn.* functions.

fn.* functions are generated from godali_operator_schemas(), the single source of operator
names, arguments, defaults and documentation. Arguments are checked where the user calls
the operator, so a typo fails on that line with the valid names listed, not later inside
build().
"""

import difflib
import inspect
import json
import numbers
import os
import threading
import weakref

from . import _lib
from . import types as _types

_MEMORY_HINTS = ("tensor_init_bytes", "temp_buffer_hint", "minibatch_size")
_INTERNAL_OPS_PREFIX = "_"


_PACKAGE_DIR = __import__("os").path.dirname(__import__("os").path.abspath(__file__))


def caller_site():
    """"file.py:12" of the innermost frame outside the godali package: where the user's
    code called the operator (build-time errors name it, as the op call's line)."""
    import os
    import sys
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR + os.sep) and "<frozen" not in path:
            return "%s:%d" % (path, f.f_lineno)
        f = f.f_back
    return None


# DALI's operator names that its messages use, where they are not the schema name in
# CamelCase (decoders.image -> decoders__Image, external_source -> ExternalSource).
_DALI_NAMES = {"_arithmetic": "ArithmeticGenericOp", "_to_gpu": "MakeContiguous"}


def dali_op_name(schema_name):
    """DALI's C++ operator name of an operator (its messages name operators so)."""
    if schema_name in _DALI_NAMES:
        return _DALI_NAMES[schema_name]
    parts = schema_name.lstrip("_").split(".")
    last = "".join(w[:1].upper() + w[1:] for w in parts[-1].split("_"))
    return "__".join(parts[:-1] + [last])


_TO_GPU_STANDIN = None


def _to_gpu_schema():
    """The _to_gpu schema of the library, or (cpu flavour) a stand-in for the node that
    build() refuses."""
    global _TO_GPU_STANDIN
    op = schemas().ops.get("_to_gpu")
    if op is not None:
        return op, None
    if _TO_GPU_STANDIN is None:
        _TO_GPU_STANDIN = OpSchema({"name": "_to_gpu", "devices": ["mixed"], "min_inputs": 1,
                                    "max_inputs": 1, "outputs": ["data"]})
    lib = _lib.get()
    return _TO_GPU_STANDIN, ("moving data to the GPU needs the CUDA flavour of godali "
                             "(libgodali_cuda.so and a working GPU); this process loaded "
                             "the %s flavour from %s, which has no '_to_gpu' operator"
                             % (lib.flavour, lib.path))


def move_to_gpu(x, dali_name):
    """The node of x.gpu() (dali_name: the operator DALI's messages name for it, e.g.
    ExternalSource for external_source(device="gpu"))."""
    op, missing = _to_gpu_schema()
    device = "mixed" if "mixed" in op.devices else op.devices[0]
    node = OpNode(op, device, [x], {}, {}, x.source.pipeline, None, False)
    node.unavailable = missing
    node.dali_name = dali_name
    return node.outputs[0]


class ArgSchema:
    """One operator argument: name, type, default, doc, required, tensor_input."""

    __slots__ = ("name", "type", "default", "doc", "required", "tensor_input", "bool_string")

    def __init__(self, d):
        self.name = d["name"]
        self.type = d.get("type", "string")
        self.default = d.get("default")
        self.doc = d.get("doc", "")
        self.required = bool(d.get("required", False))
        self.tensor_input = bool(d.get("tensor_input", False))
        # a string argument that also takes a bool (DALI's enable_frame_num)
        self.bool_string = bool(d.get("bool_string", False))

    def describe(self):
        s = "%s (%s" % (self.name, self.type)
        if self.required:
            s += ", required"
        elif self.default is not None:
            s += ", default %s" % json.dumps(self.default)
        if self.tensor_input:
            s += ", per-sample input allowed"
        return s + ")"


class OpSchema:
    """One operator's schema."""

    def __init__(self, d):
        self.name = d["name"]
        self.doc = d.get("doc", "")
        self.devices = list(d.get("devices") or ["cpu"])
        self.min_inputs = int(d.get("min_inputs", 0))
        self.max_inputs = int(d.get("max_inputs", self.min_inputs))
        self.outputs = list(d.get("outputs") or [])
        self.is_reader = bool(d.get("is_reader", self.name.startswith("readers.")))
        self.host_only = bool(d.get("host_only", False))
        self.positional_args = list(d.get("positional_args") or [])
        self.output_if = dict(d.get("output_if") or {})
        # Facts DALI's OpSchema answers (backend.OpSchema): sequences taken frame by frame,
        # volumes, the layouts and element types input 0 may have, per backend where a
        # backend (gpu, mixed) declares its own.
        self.sequences = dict(d.get("sequences") or {})
        self.allows_sequences = bool(d.get("allows_sequences", self.sequences.get("per_frame", False)))
        self.volumetric = bool(d.get("volumetric", False))
        self.input_layouts = list(d.get("input_layouts") or [])
        self.input_dtypes = list(d.get("input_dtypes") or [])
        self.backends = {k: dict(v or {}) for k, v in (d.get("backends") or {}).items()}
        # One output per extension set (webdataset) or feature (tfrecord).
        self.variable_outputs = bool(d.get("variable_outputs", False))
        self.args = {}
        for a in d.get("args") or []:
            arg = ArgSchema(a)
            self.args[arg.name] = arg

    def _arg_value(self, args, name):
        v = args.get(name)
        if v is None and name in self.args:
            v = self.args[name].default
        return v

    def enabled_outputs(self, args, num_inputs):
        """The outputs a node with these arguments and inputs produces (output_if: the
        engine's typed conditions, engine.OutputCond)."""
        out = []
        for name in self.outputs:
            cond = self.output_if.get(name)
            kind = cond.get("kind") if cond else None
            cargs = (cond or {}).get("args") or []
            if cond is None:
                on = True
            elif kind == "arg":
                on = bool(self._arg_value(args, cargs[0]))
            elif kind == "arg_not":  # differs from value and from each of values
                v = self._arg_value(args, cargs[0])
                on = v != cond.get("value", "") and v not in (cond.get("values") or [])
            elif kind == "any_given":
                on = any(args.get(a) is not None for a in cargs)
            elif kind == "inputs_over":
                on = num_inputs > int(cond.get("inputs", 0))
            else:
                raise RuntimeError("godali: operator %s: output %s has a condition this package "
                                   "does not know (%r): the library is newer than the package"
                                   % (self.name, name, cond))
            if on:
                out.append(name)
        return out

    def docstring(self):
        lines = [self.doc.strip() or self.name, ""]
        lines.append("Devices: %s. Inputs: %s. Outputs: %s." % (
            ", ".join(self.devices),
            "%d" % self.min_inputs if self.min_inputs == self.max_inputs
            else "%d to %d" % (self.min_inputs, self.max_inputs),
            ", ".join(self.outputs) or "none"))
        facts = []
        if self.input_layouts or self.input_dtypes:
            facts.append("Input 0: %s." % " ".join(
                x for x in (" or ".join(self.input_layouts),
                            " or ".join(d.lower() for d in self.input_dtypes)) if x))
        if self.allows_sequences:
            facts.append("Takes sequences (F layouts) frame by frame.")
        if self.volumetric:
            facts.append("Takes volumes (a D axis).")
        for dev, b in sorted(self.backends.items()):
            if b.get("input_layouts") or b.get("input_dtypes"):
                facts.append("On %s (CUDA flavour): %s." % (dev, " ".join(
                    x for x in (" or ".join(b.get("input_layouts") or []),
                                " or ".join(d.lower() for d in b.get("input_dtypes") or [])) if x)))
        if facts:
            lines.append(" ".join(facts))
        lines.append("")
        lines.append("Keyword arguments:")
        for a in self.args.values():
            lines.append("    %s" % a.describe())
            if a.doc:
                lines.append("        %s" % a.doc.strip())
        lines.append("    device (string): one of %s" % ", ".join(self.devices))
        lines.append("    name (string): node name; readers are addressed by it")
        return "\n".join(lines)


class Schemas:
    """Every operator the loaded library offers, plus its pipeline-level keys."""

    def __init__(self, text):
        doc = json.loads(text)
        self.version = doc.get("version", "")
        self.flavour = doc.get("flavour", "")
        self.ops = {}
        for d in doc.get("operators") or []:
            op = OpSchema(d)
            self.ops[op.name] = op
        pipe = doc.get("pipeline")
        if isinstance(pipe, dict):
            pipe = pipe.get("args") or pipe.get("keys") or list(pipe.keys())
        keys = set()
        for k in pipe or []:
            keys.add(k["name"] if isinstance(k, dict) else str(k))
        self.pipeline_keys = keys
        self.raw = doc


_schemas = None
_schemas_lock = threading.Lock()


def schemas():
    """Returns the Schemas of the loaded library (loading it on first use)."""
    global _schemas
    if _schemas is None:
        with _schemas_lock:
            if _schemas is None:
                _schemas = Schemas(_lib.get().schemas_json())
    return _schemas


# --- the current pipeline --------------------------------------------------------------

_tls = threading.local()


def _stack():
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def push_pipeline(p):
    _stack().append(p)


def pop_pipeline(p):
    s = _stack()
    if s and s[-1] is p:
        s.pop()
    elif p in s:
        s.remove(p)


def current_pipeline():
    s = _stack()
    return s[-1] if s else None


# --- graph nodes -----------------------------------------------------------------------

def adopt(nodes, pipe):
    """Registers in `pipe` every operator feeding the DataNodes `nodes` that was created
    outside a pipeline, producers before consumers. Raises ValueError when one of them
    already belongs to another pipeline."""
    order = []
    seen = set()
    stack = [(x.source, False) for x in nodes if isinstance(x, DataNode)]
    while stack:
        op, done = stack.pop()
        if done:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.pipeline is not None:
            if op.pipeline is not pipe:
                raise ValueError("godali: fn.%s (node %r) belongs to another pipeline"
                                 % (op.op, op.name))
            continue
        stack.append((op, True))
        for x in list(op.inputs) + list(op.arg_inputs.values()):
            stack.append((x.source, False))
    for op in order:
        op.seq, op.name = pipe._register_node(op, op.name)
        op.pipeline = pipe
        if op.op == "external_source":
            from . import external_source as _ext
            _ext.adopted(op, pipe)


def bind(x, pipe, what):
    """The DataNode standing for `x` in `pipe`: x itself when it is pipe's or made outside
    any pipeline (then adopted); for a node made outside a pipeline and already adopted
    by another one (DALI builds each pipeline from what its outputs reach, so such a node
    may feed several), a copy of its operators in `pipe`."""
    op = x.source
    if op is None:
        raise ValueError("godali: %s is DataNode %r, made by hand: no operator produces it, "
                         "so no pipeline can run it" % (what, x.output_name))
    if op.pipeline is pipe:
        return x
    if op.pipeline is None:
        if pipe is not None:
            adopt([x], pipe)
        return x
    if pipe is None or not op.floating or op.op == "external_source":
        raise ValueError("godali: %s belongs to another pipeline" % what)
    clones = pipe.__dict__.setdefault("_clones", {})
    c = clones.get(id(op))
    if c is None:
        global _conditional_scope
        hook, _conditional_scope = _conditional_scope, None  # a clone is of no branch
        try:
            inputs = [bind(i, pipe, what) for i in op.inputs]
            arg_inputs = {k: bind(v, pipe, what) for k, v in op.arg_inputs.items()}
            c = OpNode(op.schema, op.device, inputs, arg_inputs, dict(op.args), pipe, None,
                       op.preserve, [o.output_name for o in op.outputs])
        finally:
            _conditional_scope = hook
        clones[id(op)] = c
    return c.outputs[x.index]
# The condition stacks of the `if` statements being traced (_conditionals.Scopes), set
# while one is open: OpNode asks it to split its inputs for the current branch.
_conditional_scope = None


def _pipeline_of(nodes):
    """The pipeline of the first DataNode in `nodes` that has one, else None."""
    for x in nodes:
        if isinstance(x, DataNode) and x.source is not None and x.source.pipeline is not None:
            return x.source.pipeline
    return None

def _num_outputs(op, args, n):
    """How many outputs an operator whose outputs depend on its arguments produces
    (DALI's readers.caffe / readers.caffe2); n for the others."""
    if op == "readers.caffe":
        return int(bool(args.get("image_available", True))) + int(bool(args.get("label_available", True)))
    if op == "readers.caffe2":
        return (int(bool(args.get("image_available", True))) + int(args.get("label_type", 0) != 4)
                + int(args.get("additional_inputs", 0)) + int(bool(args.get("bbox", False))))
    return n


class OpNode:
    """One operator instance in a pipeline graph."""

    __slots__ = ("schema", "op", "name", "device", "inputs", "arg_inputs", "args",
                 "outputs", "seq", "_pipeline", "preserve", "floating", "extra",
                 "site", "unavailable", "invalid", "dali_name", "__weakref__")

    # The pipeline holds its nodes; a node refers back to it weakly, so that a pipeline
    # nothing else references is freed (and its threads stopped) at once, not at the
    # next run of the cyclic garbage collector.
    @property
    def pipeline(self):
        ref = self._pipeline
        return ref() if ref is not None else None

    @pipeline.setter
    def pipeline(self, p):
        self._pipeline = weakref.ref(p) if p is not None else None

    def __init__(self, schema, device, inputs, arg_inputs, args, pipeline, name, preserve,
                 output_names=None):
        hook = _conditional_scope
        if hook is not None and pipeline is not None:
            # Inside an `if` on pipeline data (enable_conditionals): inputs made outside
            # the branch are split for it (_conditionals.py, DALI's condition stack).
            inputs, arg_inputs = hook.before(pipeline, schema, inputs, arg_inputs)
        self.schema = schema
        self.op = schema.name
        self.device = device
        self.inputs = inputs
        self.arg_inputs = arg_inputs
        self.args = args
        self.pipeline = pipeline
        self.preserve = preserve
        self.floating = pipeline is None  # made outside a pipeline (see bind)
        self.extra = None                 # external_source: its source group
        self.site = caller_site()         # "file.py:12", where the user made the node
        # Why this node cannot run in the loaded library (a GPU node in the cpu flavour):
        # DALI reports such problems at build(), and so does Pipeline.description().
        self.unavailable = None
        self.invalid = None               # argument errors DALI reports at build()
        self.dali_name = None             # DALI's operator name, where it is not derived
        if pipeline is None:
            # Called outside a pipeline (DALI allows it): the node waits, with the name
            # asked for, until a pipeline adopts it (set_outputs or a consumer inside one).
            self.seq, self.name = None, name
        else:
            self.seq, self.name = pipeline._register_node(self, name)
        out_device = "cpu" if device == "cpu" else "gpu"
        if schema.output_if:
            names = schema.enabled_outputs(args, len(inputs))
        else:
            names = schema.outputs[:_num_outputs(schema.name, args, len(schema.outputs))]
        self.outputs = [DataNode(out_name, out_device, self, i)
                        for i, out_name in enumerate(output_names or names)]
        if hook is not None and pipeline is not None:
            hook.after(pipeline, self)

    def to_json(self):
        d = {"op": self.op, "name": self.name, "device": self.device}
        if self.inputs:
            d["inputs"] = [x.name for x in self.inputs]
        if self.arg_inputs:
            d["arg_inputs"] = {k: v.name for k, v in self.arg_inputs.items()}
        d["outputs"] = [x.name for x in self.outputs]
        if self.args:
            d["args"] = dict(self.args)
        return d


class DataNode:
    """A symbolic batch inside a pipeline graph: an operator's output (DALI's DataNode)."""

    __slots__ = ("source", "index", "output_name", "device")

    def __init__(self, name, device="cpu", source=None, index=0, ndim=None, dtype=None,
                 layout=None):
        # DALI's signature. An operator names its outputs by its schema's output names;
        # a DataNode made by hand (no source) is a placeholder that no pipeline can run
        # (DALI's tests make them for its condition stack). ndim, dtype and layout are
        # DALI's hints: godali knows them from the graph when the pipeline is built.
        self.source = source
        self.index = index
        self.output_name = name
        self.device = device

    @property
    def name(self):
        if self.source is None:
            return self.output_name
        return "%s:%s" % (self.source.name, self.output_name)

    def gpu(self):
        """Returns this data moved to the GPU (needs the CUDA flavour and a device_id; a
        pipeline that cannot have it fails at build(), naming where .gpu() was called)."""
        if self.device == "gpu":
            return self
        return move_to_gpu(self, None)

    def shape(self, *, dtype=None, device="cpu"):
        """The shape of each sample, as a 1D tensor per sample (DALI's DataNode.shape():
        fn.shapes of this node; dtype INT64 unless given)."""
        kw = {"device": device}
        if dtype is not None:
            kw["dtype"] = dtype
        return _call_op(schemas().ops["shapes"], (self,), kw)

    def cpu(self):
        if self.device == "cpu":
            return self
        raise NotImplementedError("godali: moving GPU data back to the host inside a "
                                  "pipeline is not supported; call as_cpu() on the output")

    def __repr__(self):
        return "DataNode(name=%r, device=%r)" % (self.name, self.device)

    # Arithmetic (DALI's mathematical expressions): each operator adds an _arithmetic
    # node; Python numbers and types.Constant values become constant nodes.
    def __add__(self, o): return arithmetic("add", self, o)
    def __radd__(self, o): return arithmetic("add", o, self)
    def __sub__(self, o): return arithmetic("sub", self, o)
    def __rsub__(self, o): return arithmetic("sub", o, self)
    def __mul__(self, o): return arithmetic("mul", self, o)
    def __rmul__(self, o): return arithmetic("mul", o, self)
    def __truediv__(self, o): return arithmetic("div", self, o)
    def __rtruediv__(self, o): return arithmetic("div", o, self)
    def __floordiv__(self, o): return arithmetic("floordiv", self, o)
    def __rfloordiv__(self, o): return arithmetic("floordiv", o, self)
    def __mod__(self, o): return arithmetic("mod", self, o)
    def __rmod__(self, o): return arithmetic("mod", o, self)
    def __pow__(self, o): return arithmetic("pow", self, o)
    def __rpow__(self, o): return arithmetic("pow", o, self)
    def __and__(self, o): return arithmetic("bitand", self, o)
    def __rand__(self, o): return arithmetic("bitand", o, self)
    def __or__(self, o): return arithmetic("bitor", self, o)
    def __ror__(self, o): return arithmetic("bitor", o, self)
    def __xor__(self, o): return arithmetic("bitxor", self, o)
    def __rxor__(self, o): return arithmetic("bitxor", o, self)
    def __lshift__(self, o): return arithmetic("lshift", self, o)
    def __rlshift__(self, o): return arithmetic("lshift", o, self)
    def __rshift__(self, o): return arithmetic("rshift", self, o)
    def __rrshift__(self, o): return arithmetic("rshift", o, self)
    def __eq__(self, o): return arithmetic("eq", self, o)
    def __ne__(self, o): return arithmetic("ne", self, o)
    def __lt__(self, o): return arithmetic("lt", self, o)
    def __le__(self, o): return arithmetic("le", self, o)
    def __gt__(self, o): return arithmetic("gt", self, o)
    def __ge__(self, o): return arithmetic("ge", self, o)
    def __neg__(self): return arithmetic("neg", self)
    def __pos__(self): return arithmetic("pos", self)
    def __invert__(self): return arithmetic("invert", self)
    def __abs__(self): return arithmetic("abs", self)  # DALI: abs() is math.abs
    __hash__ = object.__hash__

    def __getitem__(self, key):
        """x[1:-1, ::2], x[..., 0], x[idx] (idx a DataNode of one integer per sample):
        Python's indexing of each sample (DALI's tensor subscript)."""
        return subscript(self, key)

    def __bool__(self):
        raise TypeError("\"DataNode\" was used in conditional context - it might have been "
                        "used in truth evaluation for `if` statement, logical expression or "
                        "cast to a boolean. To use conditional execution via `if` statements "
                        "you need to specify `enable_conditionals=True` in "
                        "`@godali.pipeline_def` decorator. You can read more about "
                        "conditional execution in specific section of the Pipeline "
                        "documentation. Bool conversion can be achieved with the `cast` "
                        "operator. "
                        "godali: a DataNode is symbolic and has no truth value. `if` on "
                        "pipeline data works in a @pipeline_def(enable_conditionals=True) "
                        "function (godali rewrites its `if`, `and`, `or` and `not`); `while` "
                        "and an `if` containing return/break/continue are not supported: "
                        "use comparisons with &, |, ~, or select per sample with operator "
                        "arguments (fn.flip(images, horizontal=fn.random.coin_flip()))")


# --- argument checking -----------------------------------------------------------------

class _ArgError(TypeError):
    pass


class UnknownArgumentError(TypeError, KeyError):
    """An argument the operator does not declare, in the engine's words (DALI's, with the
    nearest declared name): a TypeError as godali raised before, and a KeyError as
    DALI raises it."""
    __str__ = TypeError.__str__


def _unknown_argument(fname, op, key):
    """The engine's error for argument `key` of operator `op` (godali_check_node: the one
    argument checker, which godali_pipeline_create runs too)."""
    text = json.dumps({"op": op, "args": {key: None}}).encode("utf-8")
    try:
        _lib.get().check_node(text, len(text))
    except _lib.GodaliError as e:
        return UnknownArgumentError("godali: %s: %s" % (fname, e))
    raise AssertionError("godali: the engine accepts argument %r of %s" % (key, op))


class _InputCountError(TypeError, ValueError):
    """A wrong number of inputs: godali's TypeError, and DALI's ValueError."""


def _is_int(v):
    return isinstance(v, numbers.Integral)


def _conv_scalar(kind, v, enum_cls):
    if kind == "int":
        if _is_int(v):
            return int(v)
        if isinstance(v, numbers.Real) and not isinstance(v, bool) and float(v).is_integer():
            # DALI takes a float with an integral value for an int argument
            # (fn.reshape(shape=(160 / 2, 80 * 2, 3)) in its variable-batch test)
            return int(v)
        raise _ArgError("expected an int, got %s" % _show(v))
    if kind == "float":
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            return float(v)
        raise _ArgError("expected a number, got %s" % _show(v))
    if kind == "bool":
        if isinstance(v, bool) or type(v).__name__ == "bool_":
            return bool(v)
        if _is_int(v) and int(v) in (0, 1):
            return bool(v)
        raise _ArgError("expected a bool, got %s" % _show(v))
    if kind == "string":
        if isinstance(v, str):
            return v
        if isinstance(v, os.PathLike):  # pathlib.Path for a file name, as DALI takes it
            return os.fspath(v)
        raise _ArgError("expected a string, got %s" % _show(v))
    if enum_cls is not None:
        return _conv_enum(enum_cls, v)
    # An argument type this package does not know: pass JSON-compatible values through.
    if isinstance(v, (str, bool, int, float)):
        return v
    raise _ArgError("cannot pass %s" % _show(v))


def _conv_enum(enum_cls, v):
    if isinstance(v, enum_cls):
        return v.name
    names = [m.name for m in enum_cls if m.value >= 0]
    if isinstance(v, str):
        key = v.upper()
        for n in names:
            if n.upper() == key or n.upper() == "INTERP_" + key:
                return n
        raise _ArgError("expected one of types.%s, got %r" % (", types.".join(names), v))
    if isinstance(v, _types._Named):
        raise _ArgError("expected a types.%s value (%s), got types.%s"
                        % (enum_cls.__name__, ", ".join(names), v.name))
    raise _ArgError("expected a types.%s value (%s), got %s"
                    % (enum_cls.__name__, ", ".join(names), _show(v)))


def _show(v):
    r = repr(v)
    if len(r) > 60:
        r = r[:57] + "..."
    return "%s %s" % (type(v).__name__, r)


def convert_arg(arg, v):
    """Converts a Python value to the JSON value of schema argument `arg` (the engine
    checks it again when the pipeline is created)."""
    kind = arg.type
    enum_cls = _types.ENUM_OF_SCHEMA_TYPE.get(kind)
    if isinstance(v, _types.ScalarConstant):
        v = v.value
    if kind.endswith("_list"):
        elem = kind[:-len("_list")]
        if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
            if getattr(v, "ndim", 1) > 1 and hasattr(v, "reshape"):
                v = v.reshape(-1)  # DALI: an array for a list argument is read flat (a 2x3 matrix)
            v = v.tolist()
        if isinstance(v, (list, tuple)):
            out = [_conv_scalar(elem, x, _types.ENUM_OF_SCHEMA_TYPE.get(elem)) for x in v]
        else:
            # DALI broadcasts a scalar given for a list argument.
            out = _conv_scalar(elem, v, _types.ENUM_OF_SCHEMA_TYPE.get(elem))
    else:
        if hasattr(v, "item") and not isinstance(v, (str, bytes)) and \
                getattr(v, "shape", None) == ():
            v = v.item()
        if arg.bool_string and isinstance(v, bool):
            v = "true" if v else "false"
        out = _conv_scalar(kind, v, enum_cls)
    return out


def _suggest(word, choices):
    close = difflib.get_close_matches(word, list(choices), n=1)
    return "; did you mean %r?" % close[0] if close else ""


# --- operator functions ----------------------------------------------------------------

def _call_op(schema, inputs, kwargs):
    fname = "fn." + schema.name
    pipe = current_pipeline()
    if pipe is None:
        # Outside a pipeline (DALI allows it): the node joins its inputs' pipeline, or
        # waits for set_outputs to adopt it.
        pipe = _pipeline_of(list(inputs) + list(kwargs.values()))
    device = kwargs.pop("device", None)
    name = kwargs.pop("name", None)
    preserve = bool(kwargs.pop("preserve", False))
    kwargs.pop("bytes_per_sample_hint", None)  # a DALI memory hint godali has no use for
    for hint in _MEMORY_HINTS:
        # DALI's buffer-size and sub-batching hints of some operators (readers'
        # tensor_init_bytes, resize's temp_buffer_hint and minibatch_size): no effect on
        # results; godali's pools size themselves. Accepted where the schema lacks them.
        if hint not in schema.args:
            kwargs.pop(hint, None)
    if "seed" not in schema.args:
        # Every DALI operator takes `seed`; one that draws nothing has no use for it.
        kwargs.pop("seed", None)
    feature_names = None
    if schema.name == "readers.tfrecord" and isinstance(kwargs.get("features"), dict):
        from . import tfrecord as _tfrec
        feature_names = list(kwargs["features"])
        kwargs["features"] = _tfrec.encode_features(kwargs["features"])

    # DALI takes some arguments as positional constant inputs (random.choice's a).
    if schema.positional_args and inputs:
        if len(inputs) > len(schema.positional_args):
            raise TypeError("godali: %s takes at most %d positional argument%s (%s), got %d"
                            % (fname, len(schema.positional_args),
                               "" if len(schema.positional_args) == 1 else "s",
                               ", ".join(schema.positional_args), len(inputs)))
        node_inputs = []
        for key, value in zip(schema.positional_args, inputs):
            if key in kwargs:
                raise TypeError("godali: %s got %r both positionally and as a keyword"
                                % (fname, key))
            if isinstance(value, DataNode):
                if schema.max_inputs < 1:
                    raise TypeError("godali: %s: %r must be a constant (an int or a list of "
                                    "numbers); godali does not take it per sample"
                                    % (fname, key))
                node_inputs.append(value)  # per sample: the operator's input
                continue
            kwargs[key] = value
        inputs = tuple(node_inputs)
    if schema.positional_args and not inputs:
        for key in schema.positional_args[:1]:
            if kwargs.get(key) is None:
                raise TypeError("godali: %s: missing required argument %r" % (fname, key))

    inputs = list(inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, DataNode):
            if _is_constant_input(x):
                # DALI: a number, list or array given as an input is a constant node.
                inputs[i] = constant_node(x, pipe)
                continue
            raise TypeError("godali: %s: input %d must be a DataNode (the output of another "
                            "operator) or a constant (number, list or numpy array), got %s"
                            % (fname, i, _show(x)))
        inputs[i] = bind(x, pipe, "%s: input %d" % (fname, i))
    if not schema.min_inputs <= len(inputs) <= schema.max_inputs:
        want = ("%d" % schema.min_inputs if schema.min_inputs == schema.max_inputs
                else "%d to %d" % (schema.min_inputs, schema.max_inputs))
        raise _InputCountError("godali: %s takes %s input%s, got %d"
                               % (fname, want, "" if want == "1" else "s", len(inputs)))

    lib = _lib.get()
    if schema.host_only and device not in (None, "cpu"):
        raise ValueError("godali: %s has only a CPU implementation (device='cpu'), in every "
                         "godali flavour; device=%r is not available" % (fname, device))
    if device == "gpu" and schema.is_reader and "gpu" not in schema.devices \
            and "mixed" in schema.devices:
        device = "mixed"  # DALI's GPU readers (readers.video) say device="gpu"
    if device is None:
        # DALI: an operator with GPU inputs is a GPU operator.
        device = "gpu" if any(x.device == "gpu" for x in inputs) else "cpu"
    if not isinstance(device, str):
        raise TypeError("godali: %s: device must be a string ('cpu', 'mixed' or 'gpu'), "
                        "got %s" % (fname, _show(device)))
    unavailable = None
    if device != "cpu" and lib.flavour != "cuda":
        # DALI refuses GPU operators at build() (and in a CPU-only pipeline with its own
        # message): the node is made, and Pipeline.description() raises, naming this line.
        unavailable = ("%s(device=%r) needs the CUDA flavour of godali (libgodali_cuda.so "
                       "and a working GPU); this process loaded the %s flavour from %s"
                       % (fname, device, lib.flavour, lib.path))
    elif device not in schema.devices:
        msg = ("godali: %s does not run on device %r; it supports: %s"
               % (fname, device, ", ".join(schema.devices)))
        if pipe is not None and getattr(pipe, "_device_id", 0) in (None, _types.CPU_ONLY_DEVICE_ID):
            # A CPU-only pipeline refuses any GPU node at build() with DALI's message
            # (Pipeline.build checks that first), whatever the flavour offers.
            unavailable = msg
        else:
            raise ValueError(msg)
    for i, x in enumerate(inputs):
        if x.device == "gpu" and device != "gpu" and unavailable is None:
            raise ValueError("godali: %s(device=%r): input %d is on the GPU; a %s operator "
                             "takes host data" % (fname, device, i, device))

    if name is not None and not isinstance(name, str):
        raise TypeError("godali: %s: name must be a string, got %s" % (fname, _show(name)))

    args = {}
    arg_inputs = {}
    for key, value in kwargs.items():
        arg = schema.args.get(key)
        if arg is None:
            raise _unknown_argument(fname, schema.name, key)
        if isinstance(value, DataNode):
            if not arg.tensor_input:
                raise TypeError("godali: %s: argument %r must be a constant (%s); it cannot "
                                "be a DataNode" % (fname, key, arg.type))
            if value.device != "cpu":
                # DALI's message (its operator named with its module)
                raise ValueError("godali: Invalid device \"%s\" for argument %r of operator "
                                 "'%s'. Named arguments must be on CPU."
                                 % (value.device, key, ("godali." if fname.startswith("fn.")
                                                        else "") + fname))
            value = bind(value, pipe, "%s: argument input %r" % (fname, key))
            arg_inputs[key] = value
            continue
        if value is None:
            continue  # DALI: None means "not given"
        try:
            args[key] = convert_arg(arg, value)
        except _ArgError as e:
            raise TypeError("godali: %s: argument %r (%s): %s"
                            % (fname, key, arg.type, e)) from None
    # A missing required argument: DALI refuses it at build(), and so does the engine
    # when the pipeline is created (InvalidPipelineError, naming this call's line).

    output_names = None
    if schema.variable_outputs:
        output_names = _variable_outputs(schema, args, fname)
    node = OpNode(schema, device, list(inputs), arg_inputs, args, pipe, name, preserve,
                  output_names)
    node.unavailable = unavailable
    outs = node.outputs
    if feature_names is not None:
        return dict(zip(feature_names, outs))  # DALI's readers.tfrecord returns a dict
    if len(outs) == 1:
        return outs[0]
    return tuple(outs) if outs else None


def _variable_outputs(schema, args, fname):
    """Output names of an operator with one output per extension set or feature."""
    if schema.name == "python_function":
        return ["out%d" % i for i in range(max(int(args.get("num_outputs", 1)), 1))]
    if schema.name == "readers.tfrecord":
        try:
            n = len(json.loads(args.get("features", "[]")))
        except ValueError:
            raise TypeError("godali: %s: features must be a dict of godali.tfrecord features"
                            % fname) from None
    elif schema.name == "element_extract":
        m = args.get("element_map", [])
        n = len(m) if isinstance(m, list) else 1
    else:
        ext = args.get("ext", [])
        n = len(ext) if isinstance(ext, list) else 1
    return ["out%d" % i for i in range(max(n, 1))]


def _input_sets(schema, inputs):
    """The per-instance inputs when some input is a list/tuple of DataNodes, else None."""
    lists = [x for x in inputs if isinstance(x, (list, tuple)) and x
             and all(isinstance(e, DataNode) for e in x)]
    if not lists:
        return None
    n = len(lists[0])
    if any(len(x) != n for x in lists):
        raise ValueError("godali: %s: inputs given as lists of DataNodes (input sets) must "
                         "all have the same length, got lengths %s"
                         % (schema.name, ", ".join(str(len(x)) for x in lists)))
    return [tuple(x[i] if (isinstance(x, (list, tuple)) and any(x is l for l in lists)) else x
                  for x in inputs) for i in range(n)]


def make_op_function(schema):
    """Builds the fn.* function of one operator schema."""

    def op(*inputs, **kwargs):
        sets = _input_sets(schema, inputs)
        if sets is None:
            return _call_op(schema, inputs, kwargs)
        # DALI: an input given as a list of DataNodes makes one operator instance per
        # element (an "input set"); the outputs come back as a list, one per instance.
        outs = [_call_op(schema, s, dict(kwargs)) for s in sets]
        if isinstance(outs[0], tuple):
            return tuple(list(o) for o in zip(*outs))
        return outs

    short = schema.name.rsplit(".", 1)[-1]
    op.__name__ = short
    op.__qualname__ = schema.name
    op.__module__ = "godali.fn"
    op.__doc__ = schema.docstring()
    params = []
    if schema.max_inputs > 0 and not schema.positional_args:
        # (an operator with positional arguments takes its input through them: choice's a)
        params.append(inspect.Parameter("inputs", inspect.Parameter.VAR_POSITIONAL))
    for name in schema.positional_args:
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY))
    for a in schema.args.values():
        if a.name in schema.positional_args:
            continue
        default = inspect.Parameter.empty if a.required else a.default
        params.append(inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=default))
    params.append(inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))
    params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
    # DALI's arguments of every operator, which the graph accepts
    params.append(inspect.Parameter("bytes_per_sample_hint", inspect.Parameter.KEYWORD_ONLY,
                                    default=[0]))
    params.append(inspect.Parameter("preserve", inspect.Parameter.KEYWORD_ONLY, default=False))
    try:
        op.__signature__ = inspect.Signature(params)
    except ValueError:
        pass  # an argument name that is not a Python identifier
    op.schema = schema
    op._schema_name = schema.name  # DALI's fn functions carry it (its coverage tests read it)
    return op


class Namespace:
    """A group of operators (fn.readers, fn.decoders, fn.random, ...)."""

    def __init__(self, path):
        self._path = path
        self._members = {}

    def _add(self, name, value):
        self._members[name] = value
        setattr(self, name, value)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError("godali: %s has no operator %r%s; it has: %s"
                             % (self._path, name, _suggest(name, self._members),
                                ", ".join(sorted(self._members))))

    def __dir__(self):
        return sorted(self._members)

    def __repr__(self):
        return "<godali operator namespace %s: %s>" % (self._path,
                                                        ", ".join(sorted(self._members)))


def build_namespace(sch):
    """Returns the root Namespace holding every public operator of `sch`."""
    root = Namespace("godali.fn")
    for name in sorted(sch.ops):
        if name.startswith(_INTERNAL_OPS_PREFIX):
            continue
        parts = name.split(".")
        ns = root
        path = "godali.fn"
        for p in parts[:-1]:
            path += "." + p
            nxt = ns._members.get(p)
            if not isinstance(nxt, Namespace):
                nxt = Namespace(path)
                ns._add(p, nxt)
            ns = nxt
        ns._add(parts[-1], make_op_function(sch.ops[name]))
    # DALI's former flat names: the engine's aliases (godali_operator_schemas' "aliases",
    # registered in ops/all/aliases.go)
    for legacy, target in sorted((sch.raw.get("aliases") or {}).items()):
        if target in sch.ops and legacy not in root._members:
            root._add(legacy, _legacy_alias(legacy, make_op_function(sch.ops[target])))
    return root


class NamespaceImporter:
    """Makes operator groups importable as modules, as DALI's are (`import
    godali.fn.transforms as T`, `import godali.ops.transforms`): a meta path finder for
    names under `prefix` (godali.fn or godali.ops, which set `__path__ = []` so that the
    import system asks finders for their children) that resolves them in the module's
    namespace, built from the schemas on first use."""

    def __init__(self, prefix, ensure):
        self._prefix = prefix + "."
        self._ensure = ensure

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self._prefix):
            return None
        ns = self._ensure()
        for part in fullname[len(self._prefix):].split("."):
            ns = ns._members.get(part) if isinstance(ns, Namespace) else None
        if not isinstance(ns, Namespace):
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, _NamespaceLoader(ns), is_package=True)


class _NamespaceLoader:
    def __init__(self, ns):
        self._ns = ns

    def create_module(self, spec):
        return self._ns

    def exec_module(self, module):
        pass


def install_namespace_importer(prefix, ensure):
    """Registers a NamespaceImporter for prefix once."""
    import sys
    for f in sys.meta_path:
        if isinstance(f, NamespaceImporter) and f._prefix == prefix + ".":
            return
    sys.meta_path.append(NamespaceImporter(prefix, ensure))


def _legacy_alias(legacy, func):
    """fn.<legacy>: func under DALI's former name, warning as DALI does when called."""
    import functools
    import warnings
    msg = deprecation_message("godali.fn." + legacy, "godali.fn." + func.schema.name)

    @functools.wraps(func)
    def alias(*args, **kwargs):
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        return func(*args, **kwargs)

    alias.__name__ = legacy
    alias.__qualname__ = legacy
    alias.__doc__ = ("DALI's former name of fn.%s.\n\n" % func.schema.name) + \
        (func.__doc__ or "")
    return alias


def deprecation_message(old, new):
    """DALI's words for a former operator name."""
    return "WARNING: `%s` is now deprecated. Use `%s` instead." % (old, new)


# --- arithmetic and constants ----------------------------------------------------------

def constant_node(value, pipe, dtype=None, shape=None, layout=None):
    """Adds a `constant` node producing `value` (a number, list or array) for every sample.
    Without dtype: bool -> BOOL, int -> INT32, float -> FLOAT (DALI's types for Python
    values); a numpy array keeps its own type, except that 64-bit ones are narrowed to
    their 32-bit counterparts (float64 -> FLOAT, int64 -> INT32, uint64 -> UINT32), as
    DALI's types.Constant does: a 64-bit constant needs an explicit dtype."""
    import numpy as np
    if isinstance(value, _types.ScalarConstant):
        if dtype is None:
            dtype = value.dtype
        value = value.value
    if not isinstance(value, (np.ndarray, np.generic)) and hasattr(value, "__array__") \
            and hasattr(value, "dtype"):
        # An array of another library (a torch tensor): its data and type, as numpy's.
        value = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    if isinstance(value, (np.ndarray, np.generic)):
        # numpy scalars too (DALI: types.Constant(np.int64(5)) is INT32)
        narrow = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32,
                  np.dtype(np.uint64): np.uint32}.get(value.dtype)
        if narrow is not None:
            value = np.asarray(value).astype(narrow)
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError("godali: a constant must be numbers (bool, int, float or a numeric "
                        "array), got %s" % _show(value))
    if dtype is None:
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            dtype = _types.from_numpy_dtype(arr.dtype)
        elif arr.dtype.kind == "b":
            dtype = _types.BOOL
        elif arr.dtype.kind in "iu":
            dtype = _types.INT32
        else:
            dtype = _types.FLOAT
    dtype = _types.DALIDataType(dtype) if not isinstance(dtype, _types.DALIDataType) else dtype
    if dtype == _types.NO_TYPE:
        raise TypeError("godali: constant of unsupported type %s" % arr.dtype)
    if shape is None:
        shape = list(arr.shape)
    else:
        shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
    flat = arr.reshape(-1)
    args = {"shape": shape, "dtype": dtype.name}
    if dtype in (_types.FLOAT, _types.FLOAT16, _types.FLOAT64):
        if arr.dtype.kind == "f" and not np.isfinite(flat).all():
            raise ValueError("godali: a constant must be finite (the pipeline description "
                             "is JSON); compute inf or nan in the graph, e.g. c / 0.0")
        args["fdata"] = [float(x) for x in flat]
    else:
        args["idata"] = [int(x) for x in flat]
    if layout:
        args["layout"] = str(layout)
    op = schemas().ops["constant"]
    node = OpNode(op, "cpu", [], {}, args, pipe, None, False)
    return node.outputs[0]


def _is_constant_input(x):
    """A value DALI turns into a constant node where an input is expected."""
    if isinstance(x, (bool, int, float, _types.ScalarConstant)):
        return True
    if type(x).__module__ == "numpy" and hasattr(x, "dtype"):
        return x.dtype.kind in "biuf"
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(v, (bool, int, float)) or _is_constant_input(v) for v in x)
    return False


def _operand(x, pipe):
    if isinstance(x, DataNode):
        x = bind(x, pipe, "a DataNode of an arithmetic expression")
        return x
    if isinstance(x, (bool, int, float, _types.ScalarConstant)) or \
            type(x).__module__ == "numpy":
        return constant_node(x, pipe)
    if isinstance(x, (list, tuple)):
        raise TypeError("godali: wrap a list used in an expression in types.Constant(...), "
                        "as DALI asks, got %s" % _show(x))
    raise TypeError("godali: cannot use %s in an arithmetic expression; expected a "
                    "DataNode, a number or types.Constant" % _show(x))


def arithmetic(op, *operands):
    """Adds an _arithmetic node computing `op` over the operands (at least one DataNode)."""
    if not any(isinstance(x, DataNode) for x in operands):
        raise TypeError("godali: an arithmetic expression needs at least one DataNode "
                        "(the output of an operator)")
    pipe = _pipeline_of(operands) or current_pipeline()
    inputs = [_operand(x, pipe) for x in operands]
    sch = schemas().ops.get("_arithmetic")
    if sch is None:
        raise NotImplementedError("godali: this library has no arithmetic operator")
    on_gpu = any(x.device != "cpu" for x in inputs)
    node = OpNode(sch, "gpu" if on_gpu else "cpu", inputs, {}, {"op": op}, pipe, None, False)
    if on_gpu:
        # DALI has GPU arithmetic; godali's runs on the host. Refused at build() (DALI's
        # CPU-only message when device_id is None), naming the expression's line.
        node.invalid = ("arithmetic on GPU data is not supported; godali's arithmetic "
                        "runs on the host (compute before .gpu())")
    return node.outputs[0]


# --- subscripts ------------------------------------------------------------------------

def _subscript_int(v, what):
    if isinstance(v, DataNode) or v is None:
        return v
    if hasattr(v, "__index__") and not isinstance(v, bool):
        return int(v.__index__())
    raise TypeError("godali: DataNode subscript: %s must be an integer, a DataNode or "
                    "None, got %s" % (what, _show(v)))


class _NewAxis:
    """DALI's newaxis: x[newaxis] / x[:, newaxis("C")] inserts a dimension (with a
    one-letter layout name) there."""

    def __init__(self, name=None):
        if name is not None:
            if not isinstance(name, str):
                raise TypeError("Axis name must be a single-character string")
            if len(name) != 1:
                raise ValueError("Axis name must be a single-character string")
        self._name = name

    @property
    def name(self):
        return self._name

    def __call__(self, name=None):
        return _NewAxis(name)

    def __repr__(self):
        return "newaxis" if self._name is None else "newaxis(%r)" % self._name


newaxis = _NewAxis()


def subscript(node, key):
    """node[key] (see DataNode.__getitem__): _tensor_subscript for the indices and slices,
    then expand_dims for the newaxis entries, as DALI does. None is a full slice (DALI's
    meaning, not numpy's)."""
    items = list(key) if isinstance(key, tuple) else [key]
    items = [slice(None) if k is None else k for k in items]
    if not any(isinstance(k, _NewAxis) for k in items):
        return _subscript(node, items)
    if any(k is Ellipsis for k in items):
        raise IndexError("godali: DataNode subscript: newaxis cannot be combined with an "
                         "Ellipsis (...): the position of the new axis would depend on "
                         "each sample's number of dimensions")
    axes, names, rest, d = [], [], [], 0
    for k in items:
        if isinstance(k, _NewAxis):
            axes.append(d)
            if k.name is not None:
                names.append(k.name)
            d += 1
            continue
        rest.append(k)
        if isinstance(k, slice):
            d += 1
    if names and len(names) != len(axes):
        raise ValueError("New axis name must be specified for all axes or none.")
    sliced = _subscript(node, rest) if rest else node
    kw = {"axes": axes}
    if names:
        kw["new_axis_names"] = "".join(names)
    return _call_op(schemas().ops["expand_dims"], (sliced,), kw)


def _subscript(node, items):
    # `is`, never ==: a DataNode item compares element-wise.
    dots = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(dots) > 1:
        raise IndexError("godali: DataNode subscript: at most one Ellipsis (...)")
    lead = dots[0] if dots else len(items)
    items = [k for k in items if k is not Ellipsis]
    if not items:
        return node
    kind, lo, hi, step, has_lo, has_hi = [], [], [], [], [], []
    for i, k in enumerate(items):
        if isinstance(k, slice):
            a = _subscript_int(k.start, "a slice start")
            b = _subscript_int(k.stop, "a slice stop")
            c = _subscript_int(k.step, "a slice step")
            if isinstance(b, DataNode) or isinstance(c, DataNode):
                raise TypeError("godali: DataNode subscript: only the start of a slice may be "
                                "a DataNode")
            if c == 0:
                raise ValueError("godali: DataNode subscript: slice step cannot be zero")
            kind.append(1)
            lo.append(0 if a is None else a)
            hi.append(0 if b is None else b)
            step.append(1 if c is None else c)
            has_lo.append(int(a is not None))
            has_hi.append(int(b is not None))
        else:
            kind.append(0)
            lo.append(_subscript_int(k, "an index"))
            hi.append(0)
            step.append(1)
            has_lo.append(1)
            has_hi.append(0)
    pipe = node.source.pipeline or current_pipeline()
    if any(isinstance(v, DataNode) for v in lo):
        # One value per subscript and sample: the constants and DataNodes stacked.
        parts = [_call_op(schemas().ops["cast"], (v,), {"dtype": _types.INT64})
                 if isinstance(v, DataNode) else constant_node(v, pipe, dtype=_types.INT64)
                 for v in lo]
        parts = [_call_op(schemas().ops["reshape"], (p,), {"shape": [1]}) for p in parts]
        lo = parts[0] if len(parts) == 1 else _call_op(schemas().ops["cat"], tuple(parts), {})
    sch = schemas().ops.get("_tensor_subscript")
    if sch is None:
        raise NotImplementedError("godali: this library has no subscript operator")
    return _call_op(sch, (node,), {"kind": kind, "lo": lo, "hi": hi, "step": step,
                                   "has_lo": has_lo, "has_hi": has_hi, "lead": lead})
