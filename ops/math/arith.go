package math

import (
	"fmt"
	gomath "math"
	"sort"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/float16"
)

func opNames() string {
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "_arithmetic",
		Doc: "Element-wise arithmetic on one to three inputs (Python's operators on DataNodes and " +
			"godali.math create it): the result type follows DALI's type promotions, '/' gives a float, " +
			"'//' and '%' follow C (toward zero), comparisons give BOOL. Shapes broadcast as in numpy " +
			"(a scalar, or a (3,) vector against HWC images). ops: " + opNames() + ".",
		MinInputs: 1, MaxInputs: 3, Outputs: []string{"result"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "op", Type: engine.ArgString, Required: true, Doc: "the operation: " + opNames()},
		},
	})
	engine.RegisterBackend("_arithmetic", "cpu", func(a *engine.Args) (engine.Operator, error) {
		op := a.String("op")
		info, ok := ops[op]
		if !ok {
			return nil, a.Errorf("op", "unknown op %q; valid: %s", op, opNames())
		}
		return &arithOp{args: a, op: op, info: info}, nil
	})
}

type arithOp struct {
	args    *engine.Args
	op      string
	info    opInfo
	compute engine.DType
	out     engine.DType
	layout  string
}

func (o *arithOp) where() string { return o.args.Where() }

func (o *arithOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	types := make([]engine.DType, len(in))
	for i, m := range in {
		types[i] = m.DType
	}
	c, out, err := ResultType(o.op, types)
	if err != nil {
		return nil, o.args.Invalidf("op %q: %v", o.op, err)
	}
	o.compute, o.out = c, out
	// Shapes: broadcast what is known; a dimension known on neither side stays -1.
	var shape []int
	known := true
	for _, m := range in {
		if m.Shape == nil {
			known = false
		}
	}
	if known {
		shape = []int{}
		for i, m := range in {
			s, err := broadcastMeta(shape, m.Shape)
			if err != nil {
				return nil, o.args.Invalidf("op %q: input %d: %v", o.op, i, err)
			}
			shape = s
		}
	}
	// As in DALI, the layouts of broadcast operands agree on their common trailing axes
	// (ABCD with BCD or D, not with ABC).
	for i, a := range in {
		for j := i + 1; j < len(in); j++ {
			b := in[j]
			if a.Layout == "" || b.Layout == "" {
				continue
			}
			k := min(len(a.Layout), len(b.Layout))
			if sa, sb := a.Layout[len(a.Layout)-k:], b.Layout[len(b.Layout)-k:]; sa != sb {
				return nil, o.args.Invalidf("op %q: the layouts %q (input %d) and %q (input %d) do not match on their common trailing axes (%q vs %q)", o.op, a.Layout, i, b.Layout, j, sa, sb)
			}
		}
	}
	nd := -1
	for _, m := range in {
		if len(m.Shape) > nd && m.Layout != "" {
			nd, o.layout = len(m.Shape), m.Layout
		}
	}
	if shape != nil && len(o.layout) != len(shape) {
		o.layout = ""
	}
	return []engine.TensorMeta{{DType: out, Layout: o.layout, Shape: shape}}, nil
}

// broadcastMeta broadcasts two build-time shapes (numpy rules, -1 = unknown).
func broadcastMeta(a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		x, y := 1, 1
		if k := i - (n - len(a)); k >= 0 {
			x = a[k]
		}
		if k := i - (n - len(b)); k >= 0 {
			y = b[k]
		}
		switch {
		case x == y:
			out[i] = x
		case x == 1:
			out[i] = y
		case y == 1:
			out[i] = x
		case x < 0 || y < 0:
			out[i] = -1
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}

// broadcast is broadcastMeta for run-time shapes.
func broadcast(shapes [][]int) ([]int, error) {
	out := []int{}
	for _, s := range shapes {
		n := max(len(out), len(s))
		next := make([]int, n)
		for i := 0; i < n; i++ {
			x, y := 1, 1
			if k := i - (n - len(out)); k >= 0 {
				x = out[k]
			}
			if k := i - (n - len(s)); k >= 0 {
				y = s[k]
			}
			switch {
			case x == y, y == 1:
				next[i] = x
			case x == 1:
				next[i] = y
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast (dimension %d: %d vs %d)", shapes, i, x, y)
			}
		}
		out = next
	}
	return out, nil
}

func (o *arithOp) Setup(ws *engine.Workspace) error {
	shapes := make([][]int, len(ws.In))
	for i, t := range ws.In {
		shapes[i] = t.Shape
	}
	s, err := broadcast(shapes)
	if err != nil {
		return o.args.DataErrorf(ws, "op %q: %v", o.op, err)
	}
	ws.Out[0].DType = o.out
	ws.Out[0].Layout = o.layout
	ws.Out[0].SetShape(s...)
	return nil
}

// scratch is a worker's buffers, one chunk of the output long: each input widened to the
// computation domain and broadcast over the chunk, and the result. tmp* hold an input
// that is broadcast along some dimensions (neither full-size nor a scalar), widened whole.
type scratch struct {
	f   [3][]float64
	i   [3][]int64
	u   [3][]uint64
	tmp [3][]float64
	ti  [3][]int64
	tu  [3][]uint64
	rf  []float64
	ri  []int64
	ru  []uint64
}

// chunkElems is how many output elements one pass computes: the worker's scratch is a
// few chunks of float64/int64, whatever the sample's size (a whole 27-megapixel image
// widened to float64 per input took gigabytes per worker and node).
const chunkElems = 1 << 14

func (o *arithOp) NewWorkerState() any { return &scratch{} }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// elems is elements [s, s+n) of t, as a tensor of n elements (the loaders and stores
// read and write from a tensor's first element).
func elems(t *engine.Tensor, s, n int) *engine.Tensor {
	sz := t.DType.Size()
	return &engine.Tensor{Data: t.Data[s*sz : (s+n)*sz], Shape: []int{n}, DType: t.DType, Layout: t.Layout}
}

// chunkInput fills dst (len n) with input t's values at output elements [s, s+n): a
// full-size input is read in place, a scalar repeated, any other broadcast expanded from
// its whole widened copy in *whole (loaded once per sample, at s == 0).
func chunkInput[T any](dst []T, whole *[]T, t *engine.Tensor, to []int, s int, load func([]T, *engine.Tensor)) {
	m := numel(t.Shape)
	switch {
	case m == numel(to):
		load(dst, elems(t, s, len(dst)))
	case m == 1:
		if s == 0 {
			*whole = grow(*whole, 1)
			load(*whole, t)
		}
		v := (*whole)[0]
		for i := range dst {
			dst[i] = v
		}
	default:
		if s == 0 {
			*whole = grow(*whole, m)
			load(*whole, t)
		}
		expandRange(dst, *whole, t.Shape, to, s)
	}
}

func (o *arithOp) Run(ws *engine.Workspace) error {
	sc, _ := ws.State.(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	out := ws.Out[0]
	n := numel(out.Shape)
	for i, t := range ws.In {
		if len(t.Data) < t.NumBytes() {
			return engine.Errorf(engine.StatusInternal, "%s: input %d holds %d bytes, its shape %v needs %d", o.where(), i, len(t.Data), t.Shape, t.NumBytes())
		}
	}
	loadF := func(d []float64, t *engine.Tensor) { loadFloat(d, t, o.compute) }
	for s := 0; s < n; s += chunkElems {
		c := min(chunkElems, n-s)
		switch {
		case o.compute.IsFloat():
			in := sc.f[:len(ws.In)]
			for k, t := range ws.In {
				sc.f[k] = grow(sc.f[k], c)
				chunkInput(sc.f[k], &sc.tmp[k], t, out.Shape, s, loadF)
			}
			sc.rf = grow(sc.rf, c)
			if err := o.runFloat(sc.rf, in); err != nil {
				return err
			}
			storeFloat(elems(out, s, c), sc.rf)
		case o.compute.IsSigned():
			in := sc.i[:len(ws.In)]
			for k, t := range ws.In {
				sc.i[k] = grow(sc.i[k], c)
				chunkInput(sc.i[k], &sc.ti[k], t, out.Shape, s, loadInt)
			}
			sc.ri = grow(sc.ri, c)
			if err := o.runInt(sc.ri, in, o.compute); err != nil {
				return err
			}
			storeInts(elems(out, s, c), sc.ri)
		default:
			in := sc.u[:len(ws.In)]
			for k, t := range ws.In {
				sc.u[k] = grow(sc.u[k], c)
				chunkInput(sc.u[k], &sc.tu[k], t, out.Shape, s, loadUint)
			}
			sc.ru = grow(sc.ru, c)
			if err := o.runUint(sc.ru, in, o.compute); err != nil {
				return err
			}
			storeInts(elems(out, s, c), sc.ru)
		}
	}
	return nil
}

// expandRange writes into dst the elements [s, s+len(dst)) of src (of shape from)
// broadcast to shape to.
func expandRange[T any](dst, src []T, from, to []int, s int) {
	if len(dst) == 0 {
		return
	}
	// Strides of src over to's dimensions; 0 along broadcast ones.
	nd := len(to)
	strides := make([]int, nd)
	st := 1
	for i := nd - 1; i >= 0; i-- {
		k := i - (nd - len(from))
		if k >= 0 && from[k] != 1 {
			strides[i] = st
		}
		if k >= 0 {
			st *= from[k]
		}
	}
	// The multi-index of output element s, and its offset in src.
	idx := make([]int, nd)
	off, rem := 0, s
	for d := nd - 1; d >= 0; d-- {
		if to[d] > 0 {
			idx[d] = rem % to[d]
			rem /= to[d]
		}
		off += idx[d] * strides[d]
	}
	for i := range dst {
		dst[i] = src[off]
		for d := nd - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < to[d] {
				break
			}
			off -= strides[d] * idx[d]
			idx[d] = 0
		}
	}
}

// roundTo rounds v to the precision of float type t (so that float32 arithmetic is
// emulated exactly: an int converted to FLOAT is rounded before the operation, as in DALI).
func roundTo(v float64, t engine.DType) float64 {
	switch t {
	case engine.Float32:
		return float64(float32(v))
	case engine.Float16:
		return float64(float16.ToFloat32(float16.FromFloat32(float32(v))))
	}
	return v
}

func (o *arithOp) runFloat(r []float64, in [][]float64) error {
	t := o.compute
	f1 := func(f func(float64) float64) {
		for i, x := range in[0] {
			r[i] = f(x)
		}
	}
	f2 := func(f func(a, b float64) float64) {
		a, b := in[0], in[1]
		for i := range r {
			r[i] = f(a[i], b[i])
		}
	}
	cmp := func(f func(a, b float64) bool) {
		a, b := in[0], in[1]
		for i := range r {
			if f(a[i], b[i]) {
				r[i] = 1
			} else {
				r[i] = 0
			}
		}
	}
	switch o.op {
	case "add":
		f2(func(a, b float64) float64 { return a + b })
	case "sub":
		f2(func(a, b float64) float64 { return a - b })
	case "mul":
		f2(func(a, b float64) float64 { return a * b })
	case "div":
		f2(func(a, b float64) float64 { return a / b })
	case "floordiv": // DALI's // divides floats as / does (DALI's test_arithmetic_ops)
		f2(func(a, b float64) float64 { return a / b })
	case "mod":
		f2(gomath.Mod)
	case "pow", "fpow":
		f2(gomath.Pow)
	case "min":
		f2(func(a, b float64) float64 {
			if b < a {
				return b
			}
			return a
		})
	case "max":
		f2(func(a, b float64) float64 {
			if b > a {
				return b
			}
			return a
		})
	case "clamp":
		x, lo, hi := in[0], in[1], in[2]
		for i := range r {
			v := x[i]
			if v < lo[i] {
				v = lo[i]
			}
			if v > hi[i] {
				v = hi[i]
			}
			r[i] = v
		}
	case "atan2":
		f2(gomath.Atan2)
	case "eq":
		cmp(func(a, b float64) bool { return a == b })
	case "ne":
		cmp(func(a, b float64) bool { return a != b })
	case "lt":
		cmp(func(a, b float64) bool { return a < b })
	case "le":
		cmp(func(a, b float64) bool { return a <= b })
	case "gt":
		cmp(func(a, b float64) bool { return a > b })
	case "ge":
		cmp(func(a, b float64) bool { return a >= b })
	case "neg":
		f1(func(x float64) float64 { return -x })
	case "pos":
		f1(func(x float64) float64 { return x })
	case "abs", "fabs":
		f1(gomath.Abs)
	case "floor":
		f1(gomath.Floor)
	case "ceil":
		f1(gomath.Ceil)
	case "sqrt":
		f1(gomath.Sqrt)
	case "rsqrt":
		f1(func(x float64) float64 { return 1 / gomath.Sqrt(x) })
	case "cbrt":
		f1(gomath.Cbrt)
	case "exp":
		f1(gomath.Exp)
	case "log":
		f1(gomath.Log)
	case "log2":
		f1(gomath.Log2)
	case "log10":
		f1(gomath.Log10)
	case "sin":
		f1(gomath.Sin)
	case "cos":
		f1(gomath.Cos)
	case "tan":
		f1(gomath.Tan)
	case "asin":
		f1(gomath.Asin)
	case "acos":
		f1(gomath.Acos)
	case "atan":
		f1(gomath.Atan)
	case "sinh":
		f1(gomath.Sinh)
	case "cosh":
		f1(gomath.Cosh)
	case "tanh":
		f1(gomath.Tanh)
	case "asinh":
		f1(gomath.Asinh)
	case "acosh":
		f1(gomath.Acosh)
	case "atanh":
		f1(gomath.Atanh)
	default:
		return o.args.Invalidf("op %q does not take %s operands", o.op, t)
	}
	return nil
}

func (o *arithOp) divZero() error {
	return engine.Errorf(engine.StatusData, "%s: op %q: integer division by zero", o.where(), o.op)
}

// wrapInt wraps v to the width of signed type t (C's conversion of the wider result).
func wrapInt(v int64, t engine.DType) int64 {
	switch t {
	case engine.Int8:
		return int64(int8(v))
	case engine.Int16:
		return int64(int16(v))
	case engine.Int32:
		return int64(int32(v))
	}
	return v
}

func wrapUint(v uint64, t engine.DType) uint64 {
	switch t {
	case engine.UInt8:
		return uint64(uint8(v))
	case engine.UInt16:
		return uint64(uint16(v))
	case engine.UInt32:
		return uint64(uint32(v))
	case engine.Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// ipow is DALI's integer power: a negative exponent gives 0 (whatever the base, as
// DALI's arithmetic tests check), otherwise repeated multiplication that wraps.
func ipow(a, b int64) int64 {
	if b < 0 {
		return 0
	}
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

func upow(a, b uint64) uint64 {
	r := uint64(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

func b2i[T int64 | uint64](c bool) T {
	if c {
		return 1
	}
	return 0
}

func (o *arithOp) runInt(r []int64, in [][]int64, t engine.DType) error {
	w := func(f func(a, b int64) int64) {
		a, b := in[0], in[1]
		for i := range r {
			r[i] = wrapInt(f(a[i], b[i]), t)
		}
	}
	switch o.op {
	case "add":
		w(func(a, b int64) int64 { return a + b })
	case "sub":
		w(func(a, b int64) int64 { return a - b })
	case "mul":
		w(func(a, b int64) int64 { return a * b })
	case "floordiv", "mod":
		a, b := in[0], in[1]
		for i := range r {
			if b[i] == 0 {
				return o.divZero()
			}
			if b[i] == -1 { // MinInt / -1 overflows: wrap as two's complement does
				if o.op == "mod" {
					r[i] = 0
				} else {
					r[i] = wrapInt(-a[i], t)
				}
				continue
			}
			if o.op == "mod" {
				r[i] = a[i] % b[i]
			} else {
				r[i] = a[i] / b[i]
			}
		}
	case "pow":
		w(ipow)
	case "min":
		w(func(a, b int64) int64 { return min(a, b) })
	case "max":
		w(func(a, b int64) int64 { return max(a, b) })
	case "clamp":
		x, lo, hi := in[0], in[1], in[2]
		for i := range r {
			r[i] = min(max(x[i], lo[i]), hi[i])
		}
	case "eq":
		w(func(a, b int64) int64 { return b2i[int64](a == b) })
	case "ne":
		w(func(a, b int64) int64 { return b2i[int64](a != b) })
	case "lt":
		w(func(a, b int64) int64 { return b2i[int64](a < b) })
	case "le":
		w(func(a, b int64) int64 { return b2i[int64](a <= b) })
	case "gt":
		w(func(a, b int64) int64 { return b2i[int64](a > b) })
	case "ge":
		w(func(a, b int64) int64 { return b2i[int64](a >= b) })
	case "bitand":
		w(func(a, b int64) int64 { return a & b })
	case "bitor":
		w(func(a, b int64) int64 { return a | b })
	case "bitxor":
		w(func(a, b int64) int64 { return a ^ b })
	case "lshift", "rshift":
		a, b := in[0], in[1]
		for i := range r {
			s := b[i]
			if s < 0 || s >= int64(8*t.Size()) {
				return engine.Errorf(engine.StatusData, "%s: op %q: shift by %d is outside [0, %d)", o.where(), o.op, s, 8*t.Size())
			}
			if o.op == "lshift" {
				r[i] = wrapInt(a[i]<<uint(s), t)
			} else {
				r[i] = a[i] >> uint(s)
			}
		}
	case "neg":
		for i, x := range in[0] {
			r[i] = wrapInt(-x, t)
		}
	case "pos":
		copy(r, in[0])
	case "invert":
		for i, x := range in[0] {
			r[i] = ^x
		}
	case "abs":
		for i, x := range in[0] {
			if x < 0 {
				x = -x
			}
			r[i] = wrapInt(x, t)
		}
	default:
		return o.args.Invalidf("op %q does not take %s operands", o.op, t)
	}
	return nil
}

func (o *arithOp) runUint(r []uint64, in [][]uint64, t engine.DType) error {
	w := func(f func(a, b uint64) uint64) {
		a, b := in[0], in[1]
		for i := range r {
			r[i] = wrapUint(f(a[i], b[i]), t)
		}
	}
	switch o.op {
	case "add":
		w(func(a, b uint64) uint64 { return a + b })
	case "sub":
		w(func(a, b uint64) uint64 { return a - b })
	case "mul":
		w(func(a, b uint64) uint64 { return a * b })
	case "floordiv", "mod":
		a, b := in[0], in[1]
		for i := range r {
			if b[i] == 0 {
				return o.divZero()
			}
			if o.op == "mod" {
				r[i] = a[i] % b[i]
			} else {
				r[i] = a[i] / b[i]
			}
		}
	case "pow":
		w(upow)
	case "min":
		w(func(a, b uint64) uint64 { return min(a, b) })
	case "max":
		w(func(a, b uint64) uint64 { return max(a, b) })
	case "clamp":
		x, lo, hi := in[0], in[1], in[2]
		for i := range r {
			r[i] = min(max(x[i], lo[i]), hi[i])
		}
	case "eq":
		w(func(a, b uint64) uint64 { return b2i[uint64](a == b) })
	case "ne":
		w(func(a, b uint64) uint64 { return b2i[uint64](a != b) })
	case "lt":
		w(func(a, b uint64) uint64 { return b2i[uint64](a < b) })
	case "le":
		w(func(a, b uint64) uint64 { return b2i[uint64](a <= b) })
	case "gt":
		w(func(a, b uint64) uint64 { return b2i[uint64](a > b) })
	case "ge":
		w(func(a, b uint64) uint64 { return b2i[uint64](a >= b) })
	case "bitand":
		w(func(a, b uint64) uint64 { return a & b })
	case "bitor":
		w(func(a, b uint64) uint64 { return a | b })
	case "bitxor":
		w(func(a, b uint64) uint64 { return a ^ b })
	case "lshift", "rshift":
		a, b := in[0], in[1]
		for i := range r {
			s := b[i]
			if s >= uint64(8*t.Size()) {
				return engine.Errorf(engine.StatusData, "%s: op %q: shift by %d is outside [0, %d)", o.where(), o.op, s, 8*t.Size())
			}
			if o.op == "lshift" {
				r[i] = wrapUint(a[i]<<s, t)
			} else {
				r[i] = a[i] >> s
			}
		}
	case "neg":
		for i, x := range in[0] {
			r[i] = wrapUint(-x, t)
		}
	case "pos", "abs":
		copy(r, in[0])
	case "invert":
		for i, x := range in[0] {
			if t == engine.Bool {
				r[i] = 1 - x
			} else {
				r[i] = wrapUint(^x, t)
			}
		}
	default:
		return o.args.Invalidf("op %q does not take %s operands", o.op, t)
	}
	return nil
}
