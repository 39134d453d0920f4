package bbox_test

// Pipelines of the detection operators on constant inputs, against references computed
// here from the definitions.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	_ "github.com/godali/godali/ops/all"
)

func node(op, name string, inputs []string, args string) string {
	in, _ := json.Marshal(inputs)
	return fmt.Sprintf(`{"op": %q, "name": %q, "inputs": %s, "outputs": [%q], "args": {%s}}`, op, name, in, name, args)
}

func nodeOuts(op, name string, inputs, outputs []string, args string) string {
	in, _ := json.Marshal(inputs)
	out, _ := json.Marshal(outputs)
	return fmt.Sprintf(`{"op": %q, "name": %q, "inputs": %s, "outputs": %s, "args": {%s}}`, op, name, in, out, args)
}

func floats(name string, shape []int, v []float64, dtype string) string {
	d, _ := json.Marshal(v)
	s, _ := json.Marshal(shape)
	return fmt.Sprintf(`{"op": "constant", "name": %q, "outputs": [%q], "args": {"fdata": %s, "shape": %s, "dtype": %q}}`, name, name, d, s, dtype)
}

type sample struct {
	vals  []float64
	shape []int64
}

func run(t *testing.T, nodes []string, outputs ...string) ([]sample, error) {
	t.Helper()
	outs, _ := json.Marshal(outputs)
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "prefetch_queue_depth": 1, "seed": 3, "ops": [%s], "outputs": %s}`,
		strings.Join(nodes, ",\n"), outs)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		return nil, err
	}
	b, err := p.Next()
	if err != nil {
		return nil, err
	}
	var res []sample
	for k := range outputs {
		v, err := b.Output(k).SampleView(0)
		if err != nil {
			return nil, err
		}
		n := 1
		for _, d := range v.Shape {
			n *= int(d)
		}
		raw := unsafe.Slice((*byte)(v.Ptr), n*v.DType.Size())
		vals := make([]float64, n)
		for j := range vals {
			vals[j] = engine.ReadScalar(raw[j*v.DType.Size():], v.DType)
		}
		res = append(res, sample{vals, append([]int64(nil), v.Shape...)})
		v.Lease.Release()
	}
	return res, nil
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func TestCoordTransformAndFlip(t *testing.T) {
	pts := []float64{1, 2, -3, 0.5, 4, 10}
	out, err := run(t, []string{
		floats("p", []int{3, 2}, pts, "FLOAT"),
		node("coord_transform", "mt", []string{"p"}, `"M": [0, 1, 2, 0, 1, 1], "T": [5]`),
		node("coord_transform", "u8", []string{"p"}, `"MT": [100, 0, 0.4, 0, 100, -60], "dtype": "UINT8"`),
		node("coord_flip", "f", []string{"p"}, `"layout": "xy", "flip_y": 1, "center_x": 2`),
	}, "mt", "u8", "f")
	if err != nil {
		t.Fatal(err)
	}
	var want, want8, wantF []float64
	for i := 0; i < 3; i++ {
		x, y := pts[2*i], pts[2*i+1]
		want = append(want, y+5, 2*x+5, x+y+5)
		// round half away from zero, saturate to [0, 255]
		for _, v := range []float64{100*x + 0.4, 100*y - 60} {
			want8 = append(want8, math.Min(255, math.Max(0, math.Round(v))))
		}
		wantF = append(wantF, 4-x, 1-y)
	}
	near(t, "coord_transform M, T", out[0].vals, want, 1e-5)
	if fmt.Sprint(out[0].shape) != "[3 3]" {
		t.Errorf("coord_transform shape %v", out[0].shape)
	}
	near(t, "coord_transform uint8", out[1].vals, want8, 0)
	near(t, "coord_flip", out[2].vals, wantF, 1e-6)
}

func TestBBoxPasteAndBoxEncoder(t *testing.T) {
	boxes := []float64{0.1, 0.1, 0.3, 0.3, 0.6, 0.6, 0.9, 0.8}
	anchors := []float64{0, 0, 0.5, 0.5, 0.5, 0.5, 1, 1, 0.1, 0.1, 0.3, 0.3, 0, 0.5, 0.5, 1}
	out, err := run(t, []string{
		floats("b", []int{2, 4}, boxes, "FLOAT"),
		floats("l", []int{2}, []float64{7, 9}, "INT32"),
		node("bbox_paste", "bp", []string{"b"}, `"ratio": 2, "paste_x": 1, "paste_y": 0, "ltrb": true`),
		nodeOuts("box_encoder", "e", []string{"b", "l"}, []string{"eb", "el"}, `"anchors": `+fmt.Sprint(jsonList(anchors))+`, "criteria": 0.2`),
	}, "bp", "eb", "el")
	if err != nil {
		t.Fatal(err)
	}
	var wantP []float64
	for i, v := range boxes {
		s := 0.0
		if i%2 == 0 {
			s = 0.5 // paste_x * (1 - 1/ratio)
		}
		wantP = append(wantP, v/2+s)
	}
	near(t, "bbox_paste", out[0].vals, wantP, 1e-6)
	// Anchor 2 equals box 0 (IoU 1); anchor 1 overlaps box 1 by 0.3*0.2 / (0.25 + 0.06 - 0.06) = 0.24 > 0.2;
	// anchors 0 and 3 overlap box 0 by 0.04/0.25 = 0.16 and not at all: unmatched, output themselves.
	want := append(append(append(append([]float64{}, anchors[0:4]...), boxes[4:8]...), boxes[0:4]...), anchors[12:16]...)
	near(t, "box_encoder boxes", out[1].vals, want, 1e-6)
	near(t, "box_encoder labels", out[2].vals, []float64{0, 9, 7, 0}, 0)
}

func jsonList(v []float64) string { b, _ := json.Marshal(v); return string(b) }

func TestSelectMasks(t *testing.T) {
	out, err := run(t, []string{
		floats("ids", []int{2}, []float64{2, 0}, "INT32"),
		floats("poly", []int{3, 3}, []float64{0, 0, 2, 1, 2, 3, 2, 3, 6}, "INT32"),
		floats("vert", []int{6, 1}, []float64{10, 11, 12, 13, 14, 15}, "FLOAT"),
		nodeOuts("segmentation.select_masks", "s", []string{"ids", "poly", "vert"}, []string{"op", "ov"}, `"reindex_masks": true`),
	}, "op", "ov")
	if err != nil {
		t.Fatal(err)
	}
	near(t, "polygons", out[0].vals, []float64{0, 0, 3, 1, 3, 5}, 0)
	near(t, "vertices", out[1].vals, []float64{13, 14, 15, 10, 11}, 0)
	_, err = run(t, []string{
		floats("ids", []int{1}, []float64{4}, "INT32"),
		floats("poly", []int{1, 3}, []float64{0, 0, 2}, "INT32"),
		floats("vert", []int{2, 2}, []float64{1, 2, 3, 4}, "FLOAT"),
		nodeOuts("segmentation.select_masks", "s", []string{"ids", "poly", "vert"}, []string{"op", "ov"}, ``),
	}, "op", "ov")
	if err == nil || !strings.Contains(err.Error(), "mask_id 4 is not present") {
		t.Errorf("unknown mask id: %v", err)
	}
}

func TestDetectionArgumentErrors(t *testing.T) {
	for _, c := range []struct{ node, want string }{
		{node("coord_transform", "x", []string{"p"}, `"M": [1, 2, 3]`), `"M"`},
		{node("coord_transform", "x", []string{"p"}, `"MT": [1], "T": [1]`), `"MT"`},
		{node("coord_flip", "x", []string{"p"}, `"layout": "xq"`), `"layout"`},
		{node("bbox_paste", "x", []string{"p"}, `"ratio": 0.5`), `"ratio"`},
	} {
		_, err := run(t, []string{floats("p", []int{2, 4}, make([]float64, 8), "FLOAT"), c.node}, "x")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.node, err, c.want)
		}
	}
}
