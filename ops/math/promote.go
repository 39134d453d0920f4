package math

import (
	"fmt"

	"github.com/godali/godali/engine"
)

// Promote is the result type of a binary operation on a and b, by DALI's table: equal
// types stay; a float wins over a non-float, the wider float over the narrower; integers
// of one signedness take the wider width; a signed intX with an unsigned uintY gives
// int(2Y) when X <= Y (int64 at most) and intX otherwise. BOOL counts as a one-bit
// unsigned integer. The promotion is commutative.
func Promote(a, b engine.DType) engine.DType {
	if a == b {
		return a
	}
	switch {
	case a.IsFloat() && b.IsFloat():
		if a.Size() >= b.Size() {
			return a
		}
		return b
	case a.IsFloat():
		return a
	case b.IsFloat():
		return b
	case a.IsSigned() && b.IsSigned(), a.IsUnsigned() && b.IsUnsigned():
		if a.Bits() >= b.Bits() {
			return a
		}
		return b
	}
	s, u := a, b
	if b.IsSigned() {
		s, u = b, a
	}
	if s.Bits() > u.Bits() {
		return s
	}
	return signedOfBits(2 * u.Bits())
}

func signedOfBits(bits int) engine.DType {
	switch {
	case bits <= 8:
		return engine.Int8
	case bits <= 16:
		return engine.Int16
	case bits <= 32:
		return engine.Int32
	}
	return engine.Int64
}

// floatOf is the float type a floating-point function of t returns: t itself when it is
// a float, else FLOAT (float32), as DALI does for integer inputs.
func floatOf(t engine.DType) engine.DType {
	if t.IsFloat() {
		return t
	}
	return engine.Float32
}

func isIntegral(t engine.DType) bool { return t.IsSigned() || t.IsUnsigned() }

type opKind int

const (
	kArith    opKind = iota // result: promoted type
	kTrueDiv                // result: promoted type made float
	kFloatFn                // result: promoted type made float
	kCompare                // result: BOOL
	kBitwise                // integral inputs only; result: promoted type
	kShift                  // integral, not two bools; result: promoted type
	kSameType               // unary, result: the input type
)

type opInfo struct {
	arity int
	kind  opKind
	doc   string
}

// ops lists every op the _arithmetic operator computes, with its number of inputs.
var ops = map[string]opInfo{
	"add": {2, kArith, "a + b"}, "sub": {2, kArith, "a - b"}, "mul": {2, kArith, "a * b"},
	"div":      {2, kTrueDiv, "a / b (true division; float result)"},
	"floordiv": {2, kArith, "a // b (DALI: integers round toward zero; floats divide as /)"},
	"mod":      {2, kArith, "a % b (C semantics: the sign of a, fmod for floats)"},
	"pow":      {2, kArith, "a ** b"},
	"fpow":     {2, kFloatFn, "a ** b computed in floating point"},
	"min":      {2, kArith, "the smaller of a and b"}, "max": {2, kArith, "the larger of a and b"},
	"atan2": {2, kFloatFn, "atan2(a, b)"},
	"eq":    {2, kCompare, "a == b"}, "ne": {2, kCompare, "a != b"}, "lt": {2, kCompare, "a < b"},
	"le": {2, kCompare, "a <= b"}, "gt": {2, kCompare, "a > b"}, "ge": {2, kCompare, "a >= b"},
	"bitand": {2, kBitwise, "a & b"}, "bitor": {2, kBitwise, "a | b"}, "bitxor": {2, kBitwise, "a ^ b"},
	"lshift": {2, kShift, "a << b"}, "rshift": {2, kShift, "a >> b"},
	"clamp": {3, kArith, "min(max(a, lo), hi)"},
	"neg":   {1, kSameType, "-a"}, "pos": {1, kSameType, "+a"}, "invert": {1, kSameType, "~a (logical not for BOOL)"},
	"abs":  {1, kSameType, "|a|"},
	"fabs": {1, kFloatFn, "|a| as a float"}, "floor": {1, kFloatFn, "floor"}, "ceil": {1, kFloatFn, "ceil"},
	"sqrt": {1, kFloatFn, "square root"}, "rsqrt": {1, kFloatFn, "1 / sqrt"}, "cbrt": {1, kFloatFn, "cube root"},
	"exp": {1, kFloatFn, "e ** a"}, "log": {1, kFloatFn, "natural logarithm"}, "log2": {1, kFloatFn, "log base 2"},
	"log10": {1, kFloatFn, "log base 10"},
	"sin":   {1, kFloatFn, "sine"}, "cos": {1, kFloatFn, "cosine"}, "tan": {1, kFloatFn, "tangent"},
	"asin": {1, kFloatFn, "arc sine"}, "acos": {1, kFloatFn, "arc cosine"}, "atan": {1, kFloatFn, "arc tangent"},
	"sinh": {1, kFloatFn, "hyperbolic sine"}, "cosh": {1, kFloatFn, "hyperbolic cosine"}, "tanh": {1, kFloatFn, "hyperbolic tangent"},
	"asinh": {1, kFloatFn, "inverse hyperbolic sine"}, "acosh": {1, kFloatFn, "inverse hyperbolic cosine"},
	"atanh": {1, kFloatFn, "inverse hyperbolic tangent"},
}

// ResultType returns the computation type and the output type of op on inputs of the
// given types, or an error saying why the types are not accepted.
func ResultType(op string, in []engine.DType) (compute, out engine.DType, err error) {
	info, ok := ops[op]
	if !ok {
		return 0, 0, fmt.Errorf("unknown op %q", op)
	}
	if len(in) != info.arity {
		return 0, 0, fmt.Errorf("%s takes %d inputs, got %d", op, info.arity, len(in))
	}
	for i, t := range in {
		if !t.IsFloat() && !isIntegral(t) {
			return 0, 0, fmt.Errorf("input %d has type %s, which arithmetic does not take", i, t)
		}
	}
	p := in[0]
	for _, t := range in[1:] {
		p = Promote(p, t)
	}
	allBool := true
	for _, t := range in {
		allBool = allBool && t == engine.Bool
	}
	switch info.kind {
	case kArith:
		if allBool && len(in) > 1 && op != "mul" && op != "min" && op != "max" {
			return 0, 0, boolInputsError(op, len(in))
		}
		if op == "mod" {
			for i, t := range in {
				if t == engine.Bool {
					return 0, 0, fmt.Errorf("%s does not take BOOL operands (input %d)", op, i)
				}
			}
		}
		return p, p, nil
	case kTrueDiv, kFloatFn:
		if allBool {
			return 0, 0, boolInputsError(op, len(in))
		}
		f := floatOf(p)
		return f, f, nil
	case kCompare:
		return p, engine.Bool, nil
	case kBitwise, kShift:
		for i, t := range in {
			if !isIntegral(t) {
				return 0, 0, fmt.Errorf("Inputs to bitwise operator `%s` must be of integral type. Input %d is %s (%s takes integer or BOOL inputs)", opSymbol(op), i, t, op)
			}
		}
		if info.kind == kShift && allBool {
			return 0, 0, fmt.Errorf("%s of two BOOL values is not supported", op)
		}
		return p, p, nil
	case kSameType:
		if op == "neg" && in[0] == engine.Bool {
			return 0, 0, fmt.Errorf("neg of a BOOL value is not supported")
		}
		if op == "invert" && !isIntegral(in[0]) {
			return 0, 0, fmt.Errorf("Inputs to bitwise operator `~` must be of integral type. Input 0 is %s", in[0])
		}
		return in[0], in[0], nil
	}
	return 0, 0, fmt.Errorf("unknown op %q", op)
}

// opSymbol is the Python operator of op, as DALI's messages name it (else op's name).
func opSymbol(op string) string {
	if s, ok := map[string]string{"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//",
		"mod": "%", "pow": "**", "bitand": "&", "bitor": "|", "bitxor": "^", "lshift": "<<",
		"rshift": ">>"}[op]; ok {
		return s
	}
	return op
}

// boolInputsError refuses op on BOOL inputs only, in DALI's words.
func boolInputsError(op string, n int) error {
	if n == 1 {
		return fmt.Errorf("Input to arithmetic operator `%s` cannot be a boolean. Consider using bitwise operator (or cast the input)", opSymbol(op))
	}
	return fmt.Errorf("Inputs to arithmetic operator `%s` cannot be booleans. Consider using bitwise operators (DALI allows only *, min and max between bools)", opSymbol(op))
}
