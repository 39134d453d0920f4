package math_test

import (
	"encoding/json"
	"errors"
	"fmt"
	gomath "math"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	gm "github.com/godali/godali/ops/math"
)

var (
	u8, u16, u32, u64 = engine.UInt8, engine.UInt16, engine.UInt32, engine.UInt64
	i8, i16, i32, i64 = engine.Int8, engine.Int16, engine.Int32, engine.Int64
	f16, f32, f64, bl = engine.Float16, engine.Float32, engine.Float64, engine.Bool
)

// The table of DALI's "Type Promotion Rules", written out case by case.
func TestPromotionFollowsDALITable(t *testing.T) {
	cases := []struct{ a, b, want engine.DType }{
		// T, T -> T
		{u8, u8, u8}, {i32, i32, i32}, {f32, f32, f32}, {bl, bl, bl},
		// floatX, T -> floatX
		{f32, i64, f32}, {f32, u64, f32}, {f64, u8, f64}, {f32, bl, f32}, {f16, i32, f16},
		// floatX, floatY -> max
		{f32, f64, f64}, {f16, f32, f32},
		// intX, intY -> int max
		{i8, i32, i32}, {i16, i64, i64},
		// uintX, uintY -> uint max; bool is uint1
		{u8, u16, u16}, {u32, u64, u64}, {bl, u8, u8},
		// intX, uintY, X <= Y -> int 2Y
		{i8, u8, i16}, {i16, u16, i32}, {i8, u32, i64}, {i32, u32, i64}, {i64, u64, i64},
		// intX, uintY, X > Y -> intX
		{i32, u8, i32}, {i16, u8, i16}, {i64, u32, i64}, {i8, bl, i8},
	}
	for _, c := range cases {
		if got := gm.Promote(c.a, c.b); got != c.want {
			t.Errorf("%s, %s: got %s, want %s", c.a, c.b, got, c.want)
		}
		if got := gm.Promote(c.b, c.a); got != c.want {
			t.Errorf("%s, %s (commuted): got %s, want %s", c.b, c.a, got, c.want)
		}
	}
	// Per-op result types.
	rt := []struct {
		op   string
		in   []engine.DType
		want engine.DType
	}{
		{"div", []engine.DType{i32, i32}, f32}, {"div", []engine.DType{u8, f64}, f64},
		{"eq", []engine.DType{f32, i32}, bl}, {"sqrt", []engine.DType{u8}, f32}, {"sqrt", []engine.DType{f64}, f64},
		{"neg", []engine.DType{u8}, u8}, {"mul", []engine.DType{bl, bl}, bl}, {"clamp", []engine.DType{u8, i32, i32}, i32},
		{"bitand", []engine.DType{bl, bl}, bl}, {"floordiv", []engine.DType{i8, u8}, i16},
	}
	for _, c := range rt {
		_, out, err := gm.ResultType(c.op, c.in)
		if err != nil || out != c.want {
			t.Errorf("%s%v: got %s (%v), want %s", c.op, c.in, out, err, c.want)
		}
	}
	for _, bad := range []struct {
		op string
		in []engine.DType
	}{{"add", []engine.DType{bl, bl}}, {"bitand", []engine.DType{f32, i32}}, {"mod", []engine.DType{bl, i32}}, {"lshift", []engine.DType{bl, bl}}} {
		if _, _, err := gm.ResultType(bad.op, bad.in); err == nil {
			t.Errorf("%s%v: accepted", bad.op, bad.in)
		}
	}
}

// constNode is a constant node's JSON.
func constNode(name string, dtype engine.DType, shape []int, vals []float64) string {
	key := "fdata"
	var data any = vals
	if !dtype.IsFloat() {
		key = "idata"
		iv := make([]int64, len(vals))
		for i, v := range vals {
			iv[i] = int64(v)
		}
		data = iv
	}
	d, _ := json.Marshal(data)
	s, _ := json.Marshal(shape)
	return fmt.Sprintf(`{"op": "constant", "name": %q, "outputs": [%q], "args": {%q: %s, "shape": %s, "dtype": %q}}`, name, name, key, d, s, dtype)
}

func build(t *testing.T, batch int, nodes []string, outputs ...string) (*engine.Pipeline, error) {
	t.Helper()
	outs, _ := json.Marshal(outputs)
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": 1, "seed": 3, "ops": [%s], "outputs": %s}`,
		batch, strings.Join(nodes, ",\n"), outs)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, err
	}
	if err := p.Build(); err != nil {
		p.Close()
		return nil, err
	}
	t.Cleanup(p.Close)
	return p, nil
}

// sample returns output k of sample i as float64 values with its shape and type.
func sample(t *testing.T, b *engine.Batch, k, i int) ([]float64, []int64, engine.DType) {
	t.Helper()
	v, err := b.Output(k).SampleView(i)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Lease.Release()
	n := 1
	for _, d := range v.Shape {
		n *= int(d)
	}
	sz := v.DType.Size()
	raw := unsafe.Slice((*byte)(v.Ptr), n*sz)
	out := make([]float64, n)
	for j := range out {
		out[j] = engine.ReadScalar(raw[j*sz:], v.DType)
	}
	return out, v.Shape, v.DType
}

func arith(name, op string, inputs ...string) string {
	in, _ := json.Marshal(inputs)
	return fmt.Sprintf(`{"op": "_arithmetic", "name": %q, "inputs": %s, "outputs": [%q], "args": {"op": %q}}`, name, in, name, op)
}

// Each op on typed constants against a reference written with Go's own typed arithmetic.
func TestOpsMatchTypedReference(t *testing.T) {
	a8 := []float64{200, 3, 0, 255, 17}
	b8 := []float64{100, 7, 1, 2, 5}
	ai := []float64{-7, 7, -128, 127, 9}
	bi := []float64{2, -2, 3, 5, -4}
	af := []float64{1.5, -2.25, 0.1, 100, 3}
	bf := []float64{0.5, 4, -0.3, 7, 3}
	type tc struct {
		op     string
		ta, tb engine.DType
		a, b   []float64
		want   func(a, b float64) float64
		dtype  engine.DType
	}
	cases := []tc{
		{"add", u8, u8, a8, b8, func(a, b float64) float64 { return float64(uint8(a) + uint8(b)) }, u8},
		{"sub", u8, u8, a8, b8, func(a, b float64) float64 { return float64(uint8(a) - uint8(b)) }, u8},
		{"mul", i8, i8, ai, bi, func(a, b float64) float64 { return float64(int8(a) * int8(b)) }, i8},
		{"add", i8, u8, ai, b8, func(a, b float64) float64 { return float64(int16(a) + int16(b)) }, i16},
		{"sub", u8, i32, a8, bi, func(a, b float64) float64 { return float64(int32(a) - int32(b)) }, i32},
		{"div", i32, i32, ai, bi, func(a, b float64) float64 { return float64(float32(a) / float32(b)) }, f32},
		{"floordiv", i32, i32, ai, bi, func(a, b float64) float64 { return float64(int32(a) / int32(b)) }, i32},
		{"mod", i32, i32, ai, bi, func(a, b float64) float64 { return float64(int32(a) % int32(b)) }, i32},
		{"mod", f32, f32, af, bf, func(a, b float64) float64 {
			return float64(float32(gomath.Mod(float64(float32(a)), float64(float32(b)))))
		}, f32},
		{"add", f32, i32, af, ai, func(a, b float64) float64 { return float64(float32(a) + float32(b)) }, f32},
		{"mul", f32, f64, af, bf, func(a, b float64) float64 { return float64(float32(a)) * b }, f64},
		{"pow", i32, u8, bi, b8, func(a, b float64) float64 { // repeated int32 multiplication (wraps)
			r := int32(1)
			for k := 0; k < int(b); k++ {
				r *= int32(a)
			}
			return float64(r)
		}, i32},
		{"min", u8, i8, a8, ai, func(a, b float64) float64 { return gomath.Min(a, b) }, i16},
		{"max", f32, f32, af, bf, func(a, b float64) float64 { return float64(float32(gomath.Max(a, b))) }, f32},
		{"lt", u8, i8, a8, ai, func(a, b float64) float64 { return b2f(a < b) }, bl},
		{"eq", f32, i32, []float64{3, 1.5, 7}, []float64{3, 1, 7}, func(a, b float64) float64 { return b2f(a == b) }, bl},
		{"ge", i32, i32, ai, bi, func(a, b float64) float64 { return b2f(a >= b) }, bl},
		{"bitand", u8, u8, a8, b8, func(a, b float64) float64 { return float64(uint8(a) & uint8(b)) }, u8},
		{"bitxor", i32, u8, ai, b8, func(a, b float64) float64 { return float64(int32(a) ^ int32(b)) }, i32},
		{"bitor", bl, bl, []float64{0, 1, 0, 1}, []float64{0, 0, 1, 1}, func(a, b float64) float64 { return b2f(a != 0 || b != 0) }, bl},
		{"mul", bl, bl, []float64{0, 1, 0, 1}, []float64{0, 0, 1, 1}, func(a, b float64) float64 { return a * b }, bl},
		{"atan2", f32, f32, af, bf, func(a, b float64) float64 { return float64(float32(gomath.Atan2(a, b))) }, f32},
		{"lshift", i32, i32, ai, []float64{1, 2, 3, 4, 0}, func(a, b float64) float64 { return float64(int32(a) << uint(b)) }, i32},
	}
	for _, c := range cases {
		t.Run(c.op+"_"+c.ta.String()+"_"+c.tb.String(), func(t *testing.T) {
			p, err := build(t, 2, []string{constNode("a", c.ta, []int{len(c.a)}, c.a), constNode("b", c.tb, []int{len(c.b)}, c.b), arith("r", c.op, "a", "b")}, "r")
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			for s := 0; s < 2; s++ {
				got, shape, dt := sample(t, b, 0, s)
				if dt != c.dtype || len(shape) != 1 || int(shape[0]) != len(c.a) {
					t.Fatalf("type %s shape %v, want %s [%d]", dt, shape, c.dtype, len(c.a))
				}
				for i := range got {
					want := c.want(c.a[i], c.b[i])
					if got[i] != want && !(c.op == "atan2" && gomath.Abs(got[i]-want) < 1e-6) {
						t.Errorf("element %d: %s(%v, %v) = %v, want %v", i, c.op, c.a[i], c.b[i], got[i], want)
					}
				}
			}
		})
	}
}

func b2f(c bool) float64 {
	if c {
		return 1
	}
	return 0
}

// Unary functions and clamp against Go's math (float32 outputs for integer inputs).
func TestUnaryAndClamp(t *testing.T) {
	vals := []float64{0.25, 1, 2.5, 9, 0.75}
	fns := map[string]func(float64) float64{
		"sqrt": gomath.Sqrt, "exp": gomath.Exp, "log": gomath.Log, "log2": gomath.Log2, "log10": gomath.Log10,
		"sin": gomath.Sin, "cos": gomath.Cos, "tan": gomath.Tan, "atan": gomath.Atan, "tanh": gomath.Tanh,
		"floor": gomath.Floor, "ceil": gomath.Ceil, "cbrt": gomath.Cbrt, "rsqrt": func(x float64) float64 { return 1 / gomath.Sqrt(x) },
		"neg": func(x float64) float64 { return -x }, "fabs": gomath.Abs, "asin": func(x float64) float64 { return gomath.Asin(x / 10) },
	}
	nodes := []string{constNode("x", f32, []int{5}, vals), constNode("x10", f32, []int{}, []float64{10})}
	var outs []string
	for name := range fns {
		in := "x"
		if name == "asin" {
			nodes = append(nodes, arith("xs", "div", "x", "x10"))
			in = "xs"
		}
		nodes = append(nodes, arith("r_"+name, name, in))
		outs = append(outs, "r_"+name)
	}
	p, err := build(t, 1, nodes, outs...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range outs {
		f := fns[strings.TrimPrefix(o, "r_")]
		got, _, dt := sample(t, b, k, 0)
		if dt != f32 {
			t.Errorf("%s: type %s", o, dt)
		}
		for i, g := range got {
			want := float64(float32(f(vals[i])))
			if gomath.Abs(g-want) > 1e-6*gomath.Max(1, gomath.Abs(want)) {
				t.Errorf("%s(%v) = %v, want %v", o, vals[i], g, want)
			}
		}
	}
	// clamp of uint8 against int32 bounds, and sqrt of uint8 giving FLOAT.
	p, err = build(t, 1, []string{constNode("x", u8, []int{4}, []float64{0, 100, 200, 255}), constNode("lo", i32, []int{}, []float64{50}),
		constNode("hi", i32, []int{}, []float64{210}), arith("c", "clamp", "x", "lo", "hi"), arith("s", "sqrt", "x")}, "c", "s")
	if err != nil {
		t.Fatal(err)
	}
	b, err = p.Next()
	if err != nil {
		t.Fatal(err)
	}
	got, _, dt := sample(t, b, 0, 0)
	if dt != i32 || fmt.Sprint(got) != "[50 100 200 210]" {
		t.Errorf("clamp: %s %v", dt, got)
	}
	got, _, dt = sample(t, b, 1, 0)
	if dt != f32 || got[1] != 10 || gomath.Abs(got[3]-gomath.Sqrt(255)) > 1e-5 {
		t.Errorf("sqrt of uint8: %s %v", dt, got)
	}
}

// Broadcasting: a per-sample random (2, 3, 4) tensor against a (4,) constant, a (3, 1)
// constant and a per-sample scalar, each against a nested-loop reference.
func TestBroadcasting(t *testing.T) {
	p, err := build(t, 3, []string{
		`{"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"range": [-5, 5], "shape": [2, 3, 4]}}`,
		`{"op": "random.uniform", "name": "s", "outputs": ["s"], "args": {"range": [0, 1]}}`,
		constNode("v", f32, []int{4}, []float64{1, 2, 3, 4}),
		constNode("c", i32, []int{3, 1}, []float64{10, 20, 30}),
		arith("uv", "mul", "u", "v"), arith("uc", "add", "c", "u"), arith("us", "sub", "u", "s"),
	}, "u", "s", "uv", "uc", "us")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		u, _, _ := sample(t, b, 0, s)
		sc, _, _ := sample(t, b, 1, s)
		uv, shape, _ := sample(t, b, 2, s)
		uc, _, _ := sample(t, b, 3, s)
		us, _, _ := sample(t, b, 4, s)
		if fmt.Sprint(shape) != "[2 3 4]" {
			t.Fatalf("shape %v", shape)
		}
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				for k := 0; k < 4; k++ {
					x := u[i*12+j*4+k]
					n := i*12 + j*4 + k
					if want := float64(float32(x * float64(k+1))); uv[n] != want {
						t.Errorf("uv[%d,%d,%d] = %v, want %v", i, j, k, uv[n], want)
					}
					if want := float64(float32(x + float64(10*(j+1)))); uc[n] != want {
						t.Errorf("uc[%d,%d,%d] = %v, want %v", i, j, k, uc[n], want)
					}
					if want := float64(float32(x - sc[0])); us[n] != want {
						t.Errorf("us[%d,%d,%d] = %v, want %v", i, j, k, us[n], want)
					}
				}
			}
		}
	}
}

func TestErrorsNameNodeAndOp(t *testing.T) {
	_, err := build(t, 1, []string{constNode("a", f32, []int{2}, []float64{1, 2}), constNode("b", i32, []int{2}, []float64{1, 2}), arith("bad_and", "bitand", "a", "b")}, "bad_and")
	if err == nil || !strings.Contains(err.Error(), `"bad_and"`) || !strings.Contains(err.Error(), "bitand") || !strings.Contains(err.Error(), "FLOAT") {
		t.Errorf("bitand of float: %v", err)
	}
	_, err = build(t, 1, []string{constNode("a", f32, []int{2}, []float64{1, 2}), constNode("b", f32, []int{3}, []float64{1, 2, 3}), arith("shapes", "add", "a", "b")}, "shapes")
	if err == nil || !strings.Contains(err.Error(), `"shapes"`) || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("shape mismatch: %v", err)
	}
	_, err = build(t, 1, []string{constNode("a", f32, []int{2}, []float64{1, 2}), arith("x", "frobnicate", "a")}, "x")
	if err == nil || !strings.Contains(err.Error(), "unknown op") {
		t.Errorf("unknown op: %v", err)
	}
	p, err := build(t, 1, []string{constNode("a", i32, []int{2}, []float64{1, 2}), constNode("z", i32, []int{}, []float64{0}), arith("dz", "floordiv", "a", "z")}, "dz")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Next()
	var e *engine.Error
	if err == nil || !errors.As(err, &e) || e.Status != engine.StatusData || !strings.Contains(err.Error(), `"dz"`) || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("integer division by zero: %v", err)
	}
}

func TestConstant(t *testing.T) {
	p, err := build(t, 2, []string{
		`{"op": "constant", "name": "k", "outputs": ["k"], "args": {"idata": [1, 2, 3, 4, 5, 6], "shape": [2, 3], "dtype": "INT64", "layout": "HW"}}`,
		`{"op": "constant", "name": "f", "outputs": ["f"], "args": {"fdata": [0.5], "shape": [2, 2]}}`,
	}, "k", "f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 2; s++ {
		k, shape, dt := sample(t, b, 0, s)
		if dt != i64 || fmt.Sprint(shape) != "[2 3]" || fmt.Sprint(k) != "[1 2 3 4 5 6]" {
			t.Errorf("k: %s %v %v", dt, shape, k)
		}
		f, shape, dt := sample(t, b, 1, s)
		if dt != f32 || fmt.Sprint(shape) != "[2 2]" || fmt.Sprint(f) != "[0.5 0.5 0.5 0.5]" {
			t.Errorf("f: %s %v %v", dt, shape, f)
		}
	}
	_, err = build(t, 1, []string{`{"op": "constant", "name": "bad", "outputs": ["bad"], "args": {"fdata": [1, 2, 3], "shape": [2, 2]}}`}, "bad")
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "shape") {
		t.Errorf("constant with the wrong count: %v", err)
	}
}

// Samples larger than one computation chunk (chunkElems): every broadcast form (full
// size, scalar, a dimension of 1, a trailing vector) over chunk boundaries that fall in
// the middle of rows, in the float and the integer domains, against direct indexing.
func TestBroadcastingAcrossChunks(t *testing.T) {
	const H, W, C = 37, 301, 3 // 33,411 elements: three chunks, boundaries mid-row
	if H*W*C <= 2*(1<<14) {    // arith.go's chunkElems
		t.Fatal("the sample must span more than two chunks")
	}
	cv := make([]float64, W)
	for j := range cv {
		cv[j] = float64(7*j%101 - 50)
	}
	kv := make([]float64, H)
	for i := range kv {
		kv[i] = float64(1000 * (i + 1))
	}
	p, err := build(t, 2, []string{
		`{"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"range": [-5, 5], "shape": [37, 301, 3]}}`,
		`{"op": "random.uniform", "name": "s", "outputs": ["s"], "args": {"range": [0, 1]}}`,
		constNode("v", f32, []int{C}, []float64{1, 2, 3}),
		constNode("c", i32, []int{W, 1}, cv),
		constNode("k", i32, []int{H, 1, 1}, kv),
		arith("uv", "mul", "u", "v"), arith("uc", "add", "c", "u"), arith("us", "sub", "u", "s"),
		arith("kc", "add", "k", "c"),
	}, "u", "s", "uv", "uc", "us", "kc")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for smp := 0; smp < 2; smp++ {
		u, _, _ := sample(t, b, 0, smp)
		sc, _, _ := sample(t, b, 1, smp)
		uv, shape, _ := sample(t, b, 2, smp)
		uc, _, _ := sample(t, b, 3, smp)
		us, _, _ := sample(t, b, 4, smp)
		kc, kshape, kt := sample(t, b, 5, smp)
		if fmt.Sprint(shape) != "[37 301 3]" || fmt.Sprint(kshape) != "[37 301 1]" || kt != i32 {
			t.Fatalf("shapes %v %v, type %v", shape, kshape, kt)
		}
		bad := 0
		for i := 0; i < H; i++ {
			for j := 0; j < W; j++ {
				if want := kv[i] + cv[j]; kc[i*W+j] != want && bad < 5 {
					bad++
					t.Errorf("kc[%d,%d] = %v, want %v", i, j, kc[i*W+j], want)
				}
				for k := 0; k < C; k++ {
					n := (i*W+j)*C + k
					x := u[n]
					if want := float64(float32(x * float64(k+1))); uv[n] != want && bad < 5 {
						bad++
						t.Errorf("uv[%d,%d,%d] = %v, want %v", i, j, k, uv[n], want)
					}
					if want := float64(float32(x + cv[j])); uc[n] != want && bad < 5 {
						bad++
						t.Errorf("uc[%d,%d,%d] = %v, want %v", i, j, k, uc[n], want)
					}
					if want := float64(float32(x - sc[0])); us[n] != want && bad < 5 {
						bad++
						t.Errorf("us[%d,%d,%d] = %v, want %v", i, j, k, us[n], want)
					}
				}
			}
		}
	}
}
