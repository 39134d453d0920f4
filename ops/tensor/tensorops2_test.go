package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// sampleF is sample as float64 values, with the dtype and layout.
func sampleF(t *testing.T, b *engine.Batch, k, i int) ([]float64, []int64, engine.DType) {
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
	out := make([]float64, n)
	if n > 0 {
		raw := unsafe.Slice((*byte)(v.Ptr), n*sz)
		for j := range out {
			out[j] = engine.ReadScalar(raw[j*sz:], v.DType)
		}
	}
	return out, append([]int64{}, v.Shape...), v.DType
}

// numpyRef is the script computing, with numpy, what each node of
// TestTensorOpsAgainstNumpy must give for the input a = arange(24).reshape(2, 3, 4).
const numpyRef = `
import json, numpy as np
a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
def oh(x, n, axis):
    e = (np.arange(n) == x[..., None]).astype(np.float32) * 3 - 1  # on 2, off -1
    return np.moveaxis(e, -1, axis)
lut = np.full(24, 0.5, dtype=np.float32); lut[[1, 5, 7]] = [10, 50, 70]
out = {
  "tr": a.transpose(2, 0, 1),
  "oh": oh(a % 5, 5, 1),
  "lt": lut[a],
  "ri": a.view(np.uint8),
  "ee": a[1],
  "fu": np.broadcast_to(np.array([1.5, -2], dtype=np.float32), (3, 2)),
}
out = {k: {"shape": list(v.shape), "data": v.reshape(-1).astype(float).tolist()} for k, v in out.items()}
print(json.dumps(out))
`

func TestTensorOpsAgainstNumpy(t *testing.T) {
	testref.Long(t, "numpy over many cases")
	var want map[string]struct {
		Shape []int64
		Data  []float64
	}
	pyref.RunJSON(t, &want, []string{"numpy"}, numpyRef)
	nodes := []string{
		constNode("a", []int{2, 3, 4}, iota3(0)),
		`{"op": "constant", "name": "fv", "outputs": ["fv"], "args": {"fdata": [1.5, -2], "shape": [2]}}`,
		node("transpose", "tr", []string{"a"}, `"perm": [2, 0, 1]`),
		`{"op": "_arithmetic", "name": "m5", "inputs": ["a", "five"], "outputs": ["m5"], "args": {"op": "mod"}}`,
		constNode("five", []int{}, []int64{5}),
		node("one_hot", "oh", []string{"m5"}, `"num_classes": 5, "axis": 1, "on_value": 2, "off_value": -1`),
		node("lookup_table", "lt", []string{"a"}, `"keys": [1, 5, 7, 5], "values": [10, 99, 70, 50], "default_value": 0.5`),
		node("reinterpret", "ri", []string{"a"}, `"dtype": "UINT8"`),
		node("reshape", "seq", []string{"a"}, `"layout": "FHW", "shape": [2, 3, 4]`),
		`{"op": "element_extract", "name": "ee", "inputs": ["seq"], "outputs": ["ee", "ee0"], "args": {"element_map": [1, 0]}}`,
		node("full", "fu", []string{"fv"}, `"shape": [3, 2]`),
	}
	names := []string{"tr", "oh", "lt", "ri", "ee", "fu"}
	p, err := build(t, nodes, names...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for k, name := range names {
		got, shape, _ := sampleF(t, b, k, 1)
		w := want[name]
		if fmt.Sprint(shape) != fmt.Sprint(w.Shape) {
			t.Errorf("%s: shape %v, numpy %v", name, shape, w.Shape)
			continue
		}
		for j := range got {
			if got[j] != w.Data[j] { // exact: every value here is representable
				t.Errorf("%s: element %d = %g, numpy %g", name, j, got[j], w.Data[j])
				break
			}
		}
	}
}

// TestTensorOpsLayoutsAndTypes checks the build-time metadata each operator declares.
func TestTensorOpsLayoutsAndTypes(t *testing.T) {
	nodes := []string{
		`{"op": "constant", "name": "a", "outputs": ["a"], "args": {"idata": [1, 2, 3, 4, 5, 6], "shape": [1, 2, 3], "dtype": "INT16", "layout": "FHW"}}`,
		node("transpose", "tr", []string{"a"}, `"perm": [2, 0, 1]`),
		node("transpose", "tr2", []string{"a"}, `"perm": [2, 0, 1], "transpose_layout": false`),
		node("transpose", "tr3", []string{"a"}, `"perm": [2, 0, 1], "output_layout": "XYZ"`),
		node("one_hot", "oh", []string{"a"}, `"num_classes": 4, "axis": 3, "axis_name": "K", "dtype": "UINT8"`),
		node("reinterpret", "ri", []string{"a"}, `"dtype": "INT8", "shape": [12]`),
		`{"op": "element_extract", "name": "ee", "inputs": ["a"], "outputs": ["ee"], "args": {"element_map": [0]}}`,
		node("zeros_like", "zl", []string{"a"}, ``),
		node("ones", "on", []string{}, `"shape": [2], "dtype": "FLOAT64", "layout": "X"`),
		node("cast_like", "cl", []string{"a", "on"}, ``),
		node("copy", "cp", []string{"a"}, ``),
	}
	p, err := build(t, nodes, "tr", "tr2", "tr3", "oh", "ri", "ee", "zl", "on", "cl", "cp")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"INT16 [3 1 2] WFH", "INT16 [3 1 2] ", "INT16 [3 1 2] XYZ", "UINT8 [1 2 3 4] FHWK",
		"INT8 [12] ", "INT16 [2 3] HW", "INT16 [1 2 3] FHW", "FLOAT64 [2] X", "FLOAT64 [1 2 3] FHW", "INT16 [1 2 3] FHW",
	}
	for k, w := range want {
		d := p.Graph.Data[p.OutputNames()[k]].Meta
		if got := fmt.Sprintf("%s %v %s", d.DType, d.Shape, d.Layout); got != w {
			t.Errorf("output %d: %s, want %s", k, got, w)
		}
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := sampleF(t, b, 4, 0); v[0] != 1 || v[1] != 0 || v[2] != 2 { // little-endian int16 bytes
		t.Errorf("reinterpret INT16 -> INT8: %v", v[:4])
	}
	if v, _, _ := sampleF(t, b, 3, 0); fmt.Sprint(v[:8]) != "[0 1 0 0 0 0 1 0]" {
		t.Errorf("one_hot of 1, 2: %v", v[:8])
	}
}

func TestTensorOpsEdgeCases(t *testing.T) {
	nodes := []string{
		`{"op": "constant", "name": "e", "outputs": ["e"], "args": {"idata": [0], "shape": [0, 3], "dtype": "INT32"}}`,
		node("transpose", "tr", []string{"e"}, `"perm": [1, 0]`),
		node("one_hot", "oh", []string{"e"}, `"num_classes": 3`),
		node("lookup_table", "lt", []string{"e"}, `"keys": [0], "values": [1]`),
		node("zeros", "z", []string{}, `"shape": []`),
		node("full_like", "fl", []string{"e", "e"}, ``),
	}
	p, err := build(t, nodes, "tr", "oh", "lt", "z", "fl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range []string{"[3 0]", "[0 3 3]", "[0 3]", "[]", "[0 3]"} {
		v, shape, _ := sampleF(t, b, k, 0)
		if fmt.Sprint(shape) != w || (w == "[]" && (len(v) != 1 || v[0] != 0)) {
			t.Errorf("output %d: shape %v values %v, want shape %s", k, shape, v, w)
		}
	}
}

func TestTensorOpsErrors(t *testing.T) {
	a := constNode("a", []int{2, 3, 4}, iota3(0))
	f := `{"op": "constant", "name": "f", "outputs": ["f"], "args": {"fdata": [1.5], "shape": [1]}}`
	for _, c := range []struct{ node, want string }{
		{node("transpose", "r", []string{"a"}, `"perm": [0, 0, 1]`), `argument "perm"`},
		{node("transpose", "r", []string{"a"}, `"perm": [1, 0]`), `argument "perm"`},
		{node("one_hot", "r", []string{"a"}, `"num_classes": 3, "axis": 7`), `argument "axis"`},
		{node("lookup_table", "r", []string{"f"}, `"keys": [1], "values": [2]`), "must be integers"},
		{node("lookup_table", "r", []string{"a"}, `"keys": [1, 2], "values": [2]`), `argument "values"`},
		{node("lookup_table", "r", []string{"a"}, `"keys": [70000], "values": [2]`), `argument "keys"`},
		{node("reinterpret", "r", []string{"f"}, `"dtype": "INT64"`), `argument "dtype"`},
		{node("element_extract", "r", []string{"a"}, `"element_map": [5]`), `argument "element_map"`},
		{node("full", "r", []string{"a"}, `"shape": [4, 2]`), "broadcast"},
		{node("get_property", "r", []string{"a"}, `"key": "color"`), `argument "key"`},
		{node("zeros", "r", []string{}, `"shape": [2], "layout": "AB"`), `argument "layout"`},
	} {
		_, err := build(t, []string{a, f, c.node}, "r")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"r"`) {
			t.Errorf("%s: got %v, want an error naming the node and saying %q", c.node, err, c.want)
		}
	}
}

func TestGetPropertyLayout(t *testing.T) {
	nodes := []string{
		`{"op": "constant", "name": "a", "outputs": ["a"], "args": {"idata": [1], "shape": [1, 1, 1], "layout": "HWC"}}`,
		node("get_property", "gp", []string{"a"}, `"key": "layout"`),
		node("get_property", "si", []string{"a"}, `"key": "source_info"`),
	}
	p, err := build(t, nodes, "gp", "si")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	v, _, d := sampleF(t, b, 0, 0)
	s := ""
	for _, c := range v {
		s += string(rune(c))
	}
	if s != "HWC" || d != engine.UInt8 {
		t.Errorf("layout property %q of %s, want \"HWC\" UINT8", s, d)
	}
	if v, _, _ := sampleF(t, b, 1, 0); len(v) != 0 {
		t.Errorf("source_info of a constant: %v, want empty", v)
	}
	_ = math.Inf
}
