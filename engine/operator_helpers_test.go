package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

var helperSchema = &Schema{Name: "helper_test_op", Args: []ArgSpec{
	{Name: "f", Type: ArgFloat, Default: 2.5, TensorInput: true},
	{Name: "i", Type: ArgInt, Default: 7, TensorInput: true},
	{Name: "b", Type: ArgBool, Default: true, TensorInput: true},
	{Name: "fl", Type: ArgFloatList, Default: []float64{1, 2}, TensorInput: true},
	{Name: "il", Type: ArgIntList, Default: []int64{3}, TensorInput: true},
}}

func helperArgs(t *testing.T, raw string, argInputs ...string) *Args {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	a, err := newArgs("n", helperSchema, m, argInputs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func f32Tensor(shape []int, v ...float32) *Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &Tensor{Data: b, Shape: shape, DType: Float32}
}

func TestTypedGettersConstant(t *testing.T) {
	a := helperArgs(t, `{"i": 4}`)
	ws := &Workspace{}
	if v, err := a.FloatAt(ws, "f"); err != nil || v != 2.5 {
		t.Errorf("FloatAt = %v, %v; want 2.5", v, err)
	}
	if v, err := a.IntAt(ws, "i"); err != nil || v != 4 {
		t.Errorf("IntAt = %v, %v; want 4", v, err)
	}
	if v, err := a.FloatAt(ws, "i"); err != nil || v != 4 {
		t.Errorf("FloatAt of an int = %v, %v; want 4", v, err)
	}
	if v, err := a.BoolAt(ws, "b"); err != nil || !v {
		t.Errorf("BoolAt = %v, %v; want true", v, err)
	}
	buf := make([]float64, 0, 4)
	v, err := a.FloatsAt(ws, "fl", buf)
	if err != nil || len(v) != 2 || v[0] != 1 || v[1] != 2 {
		t.Errorf("FloatsAt = %v, %v", v, err)
	}
	v[0] = 99 // the result is the caller's: the constant must not change
	if a.Floats("fl")[0] != 1 {
		t.Errorf("FloatsAt handed out the constant itself")
	}
	if v, err := a.IntsAt(ws, "il", nil); err != nil || len(v) != 1 || v[0] != 3 {
		t.Errorf("IntsAt = %v, %v", v, err)
	}
	if p, err := a.IntPair("il"); err != nil || p != [2]int{3, 3} {
		t.Errorf("IntPair = %v, %v; want [3 3]", p, err)
	}
	if p, err := a.FloatPair("fl"); err != nil || p != [2]float64{1, 2} {
		t.Errorf("FloatPair = %v, %v; want [1 2]", p, err)
	}
	if a.AnyPerSample("f", "fl") {
		t.Errorf("AnyPerSample true without arg inputs")
	}
}

func TestTypedGettersPerSample(t *testing.T) {
	a := helperArgs(t, `{}`, "f", "i", "b", "fl")
	ws := &Workspace{Ref: &SampleRef{Path: "dir/x.jpg"}, ArgIn: []*Tensor{
		f32Tensor(nil, 0.25), f32Tensor([]int{1}, 3), {Data: []byte{0}, DType: Bool}, f32Tensor([]int{3}, 5, 6, 7),
	}}
	if v, err := a.FloatAt(ws, "f"); err != nil || v != 0.25 {
		t.Errorf("FloatAt = %v, %v", v, err)
	}
	if v, err := a.IntAt(ws, "i"); err != nil || v != 3 {
		t.Errorf("IntAt = %v, %v", v, err)
	}
	if v, err := a.BoolAt(ws, "b"); err != nil || v {
		t.Errorf("BoolAt = %v, %v; want false", v, err)
	}
	if v, err := a.FloatsAt(ws, "fl", nil); err != nil || len(v) != 3 || v[2] != 7 {
		t.Errorf("FloatsAt = %v, %v", v, err)
	}
	if v, err := a.FloatsNAt(ws, "fl", 3, nil); err != nil || len(v) != 3 {
		t.Errorf("FloatsNAt(3) = %v, %v", v, err)
	}
	if !a.AnyPerSample("x", "fl") {
		t.Errorf("AnyPerSample false for a per-sample argument")
	}
	// Errors name the argument, the node, the operator and the sample's file.
	ws.ArgIn[1] = f32Tensor(nil, 2.5)
	_, err := a.IntAt(ws, "i")
	checkSampleErr(t, err, `argument "i"`, "whole number")
	ws.ArgIn[0] = f32Tensor([]int{2}, 1, 2)
	_, err = a.FloatAt(ws, "f")
	checkSampleErr(t, err, `argument "f"`, "one number per sample")
	_, err = a.FloatPairAt(ws, "fl")
	checkSampleErr(t, err, `argument "fl"`, "(height, width)")
	_, err = a.FloatsNAt(ws, "fl", 2, nil)
	checkSampleErr(t, err, `argument "fl"`, "one value or 2")
	checkSampleErr(t, a.DataErrorf(ws, "bad %d", 5), "bad 5")
}

func checkSampleErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	var se *SampleError
	if !errors.As(err, &se) || se.Source != "dir/x.jpg" {
		t.Errorf("%v: not a SampleError naming dir/x.jpg", err)
	}
	if StatusOf(err) != StatusData {
		t.Errorf("%v: status %d, want StatusData", err, StatusOf(err))
	}
	for _, w := range append(want, `"n"`, "helper_test_op", "dir/x.jpg") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestPairAndBroadcast(t *testing.T) {
	if p, ok := Pair([]int{4}); !ok || p != [2]int{4, 4} {
		t.Errorf("Pair([4]) = %v, %v", p, ok)
	}
	if p, ok := Pair([]float64{1, 2}); !ok || p != [2]float64{1, 2} {
		t.Errorf("Pair([1 2]) = %v, %v", p, ok)
	}
	if _, ok := Pair([]int{1, 2, 3}); ok {
		t.Errorf("Pair of 3 values accepted")
	}
	if _, ok := Pair([]int{}); ok {
		t.Errorf("Pair of no value accepted")
	}
	if v, ok := Broadcast(nil, []int{2}, 3); !ok || len(v) != 3 || v[0] != 2 || v[2] != 2 {
		t.Errorf("Broadcast([2], 3) = %v, %v", v, ok)
	}
	if _, ok := Broadcast(nil, []int{1, 2}, 3); ok {
		t.Errorf("Broadcast of 2 values to 3 accepted")
	}
	a := helperArgs(t, `{"fl": [1, 2, 3]}`)
	if _, err := a.FloatPair("fl"); err == nil || !strings.Contains(err.Error(), `"fl"`) || StatusOf(err) != StatusInvalidPipeline {
		t.Errorf("FloatPair of 3 values: %v", err)
	}
}

func TestCheckInput(t *testing.T) {
	a := helperArgs(t, `{}`)
	hwc, u8 := []string{"HWC", "FHWC"}, []DType{UInt8, Float32}
	for _, m := range []TensorMeta{
		{DType: UInt8, Layout: "HWC", Shape: []int{-1, -1, 3}},
		{DType: Float32, Layout: "FHWC", Shape: []int{2, 4, 4, 3}},
		{DType: UInt8, Layout: "", Shape: []int{4, 4, 1}}, // no layout: the rank decides
	} {
		if err := CheckInput(a, 0, m, hwc, u8); err != nil {
			t.Errorf("%+v refused: %v", m, err)
		}
	}
	for _, m := range []TensorMeta{
		{DType: Int32, Layout: "HWC", Shape: []int{4, 4, 3}},
		{DType: UInt8, Layout: "CHW", Shape: []int{3, 4, 4}},
		{DType: UInt8, Layout: "", Shape: []int{4, 4}},
		{DType: UInt8, Layout: "HWC", Shape: nil},
	} {
		err := CheckInput(a, 0, m, hwc, u8)
		if err == nil {
			t.Errorf("%+v accepted", m)
			continue
		}
		for _, w := range []string{`"n"`, "helper_test_op", "input 0", "HWC or FHWC uint8 or float"} {
			if !strings.Contains(err.Error(), w) || StatusOf(err) != StatusInvalidPipeline {
				t.Errorf("error %q (status %d) does not mention %q", err, StatusOf(err), w)
			}
		}
	}
	if err := CheckInput(a, 0, TensorMeta{DType: Bool}, nil, nil); err != nil {
		t.Errorf("no constraints refused: %v", err)
	}
	// DALI's wording, which its tests match: a rank no layout has, the one type requested
	rank := CheckInput(a, 1, TensorMeta{DType: UInt8, Shape: []int{5, 6, 7, 8, 9}}, hwc, u8)
	if want := "The number of dimensions 5 does not match any of the allowed layouts for input 1"; rank == nil || !strings.Contains(rank.Error(), want) {
		t.Errorf("rank 5: %v, want %q", rank, want)
	}
	typ := CheckInput(a, 0, TensorMeta{DType: Int32, Layout: "HWC", Shape: []int{2, 2, 3}}, hwc, []DType{UInt8})
	if want := "requested type: uint8 current buffer type: int32"; typ == nil || !strings.Contains(typ.Error(), want) || strings.Contains(typ.Error(), "number of dimensions") {
		t.Errorf("int32 for uint8: %v, want %q only", typ, want)
	}
}

// A schema's declared input is checked by the graph before the operator's Infer.
func TestSchemaInputChecked(t *testing.T) {
	_, err := NewPipeline([]byte(`{"batch_size": 2, "ops": [
		{"op": "random.uniform", "name": "u", "outputs": ["x"], "args": {"shape": [4, 4, 3]}},
		{"op": "resize", "name": "rs", "inputs": ["x"], "outputs": ["y"], "args": {"resize_x": 2, "resize_y": 2}}], "outputs": ["y"]}`))
	if err == nil {
		t.Fatal("resize accepted float input")
	}
	for _, w := range []string{`"rs"`, "(resize)", "input 0 must be HWC uint8", "from a decoder", "float"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// The C ABI reports layouts in a char[GODALI_MAX_LAYOUT]: the graph refuses longer ones
// rather than have them cut.
func TestLayoutLongerThanTheABIRefused(t *testing.T) {
	spec := func(layout string) string {
		return `{"batch_size": 1, "ops": [{"op": "external_source", "name": "src", "outputs": ["x"],
			"args": {"dtype": "UINT8", "ndim": ` + strconv.Itoa(len(layout)) + `, "layout": "` + layout + `"}}], "outputs": ["x"]}`
	}
	long := "ABCDEFGHIJKLMNOP"[:MaxLayout]
	_, err := NewPipeline([]byte(spec(long)))
	if err == nil || !strings.Contains(err.Error(), "at most 15 letters") || !strings.Contains(err.Error(), `"src"`) {
		t.Errorf("layout of %d letters: %v", len(long), err)
	}
}

func TestFloatsBroadcastAt(t *testing.T) {
	// Constants: one value fills the shape; a list of as many values as elements is kept.
	a := helperArgs(t, `{"f": 1.5, "fl": [1, 2, 3]}`)
	buf := make([]float64, 0, 8)
	v, err := a.FloatsBroadcastAt(&Workspace{}, "f", []int{2, 1, 2}, buf)
	if err != nil || len(v) != 4 || v[0] != 1.5 || v[3] != 1.5 || &v[:1][0] != &buf[:1][0] {
		t.Errorf("constant scalar: %v, %v (want 4 x 1.5 in buf)", v, err)
	}
	if v, err := a.FloatsBroadcastAt(&Workspace{}, "fl", []int{1, 3}, nil); err != nil || len(v) != 3 || v[2] != 3 {
		t.Errorf("constant list of 3 to [1 3]: %v, %v", v, err)
	}
	if _, err := a.FloatsBroadcastAt(&Workspace{}, "fl", []int{2}, nil); err == nil || StatusOf(err) != StatusInvalidPipeline || !strings.Contains(err.Error(), `"fl"`) {
		t.Errorf("constant list of 3 to [2]: %v", err)
	}
	if _, ok := a.ArgShapeAt(&Workspace{}, "f"); ok {
		t.Errorf("ArgShapeAt of a constant: ok")
	}

	// Per sample: one element fills; exactly the shape gives its elements in C order.
	a = helperArgs(t, `{}`, "f", "fl")
	ws := &Workspace{Ref: &SampleRef{Path: "dir/x.jpg"}, ArgIn: []*Tensor{
		f32Tensor([]int{1, 1}, 0.5), f32Tensor([]int{2, 1, 3}, 1, 2, 3, 4, 5, 6),
	}}
	if v, err := a.FloatsBroadcastAt(ws, "f", []int{3}, nil); err != nil || len(v) != 3 || v[1] != 0.5 {
		t.Errorf("per-sample one value: %v, %v", v, err)
	}
	v, err = a.FloatsBroadcastAt(ws, "fl", []int{2, 1, 3}, nil)
	if err != nil || len(v) != 6 || v[0] != 1 || v[4] != 5 {
		t.Errorf("per-sample of the shape: %v, %v", v, err)
	}
	if s, ok := a.ArgShapeAt(ws, "fl"); !ok || len(s) != 3 || s[2] != 3 {
		t.Errorf("ArgShapeAt = %v, %v", s, ok)
	}
	// Same element count, other shape: refused (no silent reshaping).
	_, err = a.FloatsBroadcastAt(ws, "fl", []int{3, 2}, nil)
	checkSampleErr(t, err, `argument "fl"`, "[2 1 3] does not broadcast to [3 2]")
	// A value whose data is shorter than its shape says: an error, not a read past it.
	ws.ArgIn[1] = &Tensor{Data: make([]byte, 8), Shape: []int{2, 1, 3}, DType: Float32}
	_, err = a.FloatsBroadcastAt(ws, "fl", []int{2, 1, 3}, nil)
	checkSampleErr(t, err, `argument "fl"`)
}
