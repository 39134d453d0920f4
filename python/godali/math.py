"""DALI's nvidia.dali.math: element-wise math on DataNodes.

These functions add arithmetic nodes to the graph. godali's engine has no arithmetic
operators yet, so each raises NotImplementedError naming itself; the names exist so that
a DALI script fails where it uses one, with that message, rather than at import.
"""

_NAMES = ("abs", "fabs", "floor", "ceil", "pow", "fpow", "min", "max", "clamp", "sqrt",
          "rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin",
          "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")

__all__ = list(_NAMES)


def _unsupported(name):
    def f(*args, **kwargs):
        raise NotImplementedError("godali: math.%s needs arithmetic operators on "
                                  "DataNodes, which godali's engine does not have" % name)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = "DALI's math.%s (not available in godali: no arithmetic operators)." % name
    return f


for _n in _NAMES:
    globals()[_n] = _unsupported(_n)
del _n
