"""DALI's nvidia.dali.math: element-wise math on DataNodes.

Each function adds an arithmetic node to the graph. Arguments are DataNodes, Python
numbers or types.Constant values (at least one a DataNode); results follow DALI's type
promotions: floating-point functions give FLOAT for integer inputs (FLOAT64 stays).
"""

from . import _graph

_UNARY = ("abs", "fabs", "floor", "ceil", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2",
          "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
          "asinh", "acosh", "atanh")
_BINARY = ("pow", "fpow", "min", "max", "atan2")

__all__ = list(_UNARY + _BINARY + ("clamp",))


def _unary(name):
    def f(input):
        return _graph.arithmetic(name, input)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = "Element-wise %s of a DataNode (DALI's math.%s)." % (name, name)
    return f


def _binary(name):
    def f(left, right):
        return _graph.arithmetic(name, left, right)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = ("Element-wise %s of two operands, with DALI's type promotions and "
                 "broadcasting (DALI's math.%s)." % (name, name))
    return f


def clamp(value, lo, hi):
    """min(max(value, lo), hi), element-wise; the type is the promotion of all three."""
    return _graph.arithmetic("clamp", value, lo, hi)


for _n in _UNARY:
    globals()[_n] = _unary(_n)
for _n in _BINARY:
    globals()[_n] = _binary(_n)
del _n
