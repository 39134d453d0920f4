package transforms_test

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

func run(t *testing.T, nodes []string, outputs ...string) ([][]float64, error) {
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
	var res [][]float64
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
		v.Lease.Release()
		res = append(res, vals)
	}
	return res, nil
}

// apply maps point p by a [n, n+1] row-major matrix.
func apply(m []float64, p []float64) []float64 {
	n := len(p)
	out := make([]float64, n)
	for r := 0; r < n; r++ {
		s := m[r*(n+1)+n]
		for c := 0; c < n; c++ {
			s += m[r*(n+1)+c] * p[c]
		}
		out[r] = s
	}
	return out
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Fatalf("%s: got %v, want %v (tolerance %g)", what, got, want, tol)
		}
	}
}

// TestTransformsMapPointsAsDefined checks each generator by where it sends points, from
// the definitions: a rotation by 90 degrees about (1, 1) sends (2, 1) to (1, 2); a 3-D
// rotation about z acts as the 2-D one on (x, y) and keeps z; shear (sxy, syx) sends
// (x, y) to (x + sxy y, syx x + y); crop sends from_start/from_end to to_start/to_end;
// combine(a, b) is b after a, and a generator given an input applies itself after it.
func TestTransformsMapPointsAsDefined(t *testing.T) {
	out, err := run(t, []string{
		node("transforms.rotation", "r2", nil, `"angle": 90, "center": [1, 1]`),
		node("transforms.rotation", "r3", nil, `"angle": 90, "axis": [0, 0, 5]`),
		node("transforms.shear", "sh", nil, `"shear": [0.5, 2]`),
		node("transforms.crop", "cr", nil, `"from_start": [1, 2], "from_end": [3, 6], "to_start": [0], "to_end": [1]`),
		node("transforms.translation", "tr", nil, `"offset": [10, 20]`),
		node("transforms.scale", "sc", nil, `"scale": [2, 3]`),
		node("transforms.combine", "cb", []string{"tr", "sc"}, ``),
		node("transforms.scale", "sc_after_tr", []string{"tr"}, `"scale": [2, 3]`),
		node("transforms.scale", "sc_before_tr", []string{"tr"}, `"scale": [2, 3], "reverse_order": true`),
	}, "r2", "r3", "sh", "cr", "cb", "sc_after_tr", "sc_before_tr")
	if err != nil {
		t.Fatal(err)
	}
	near(t, "rotation 90 about (1, 1)", apply(out[0], []float64{2, 1}), []float64{1, 2}, 1e-6)
	near(t, "rotation 90 about z", apply(out[1], []float64{1, 0, 7}), []float64{0, 1, 7}, 1e-6)
	near(t, "shear", apply(out[2], []float64{2, 3}), []float64{2 + 0.5*3, 2*2 + 3}, 1e-6)
	near(t, "crop start", apply(out[3], []float64{1, 2}), []float64{0, 0}, 1e-6)
	near(t, "crop end", apply(out[3], []float64{3, 6}), []float64{1, 1}, 1e-6)
	// translate then scale: (1, 1) -> (11, 21) -> (22, 63)
	near(t, "combine", apply(out[4], []float64{1, 1}), []float64{22, 63}, 1e-5)
	near(t, "scale after input", apply(out[5], []float64{1, 1}), []float64{22, 63}, 1e-5)
	// reverse_order: scale then translate: (1, 1) -> (2, 3) -> (12, 23)
	near(t, "scale before input", apply(out[6], []float64{1, 1}), []float64{12, 23}, 1e-5)
}

func TestTransformErrorsNameArguments(t *testing.T) {
	for _, c := range []struct{ op, args, want string }{
		{"transforms.shear", `"shear": [1, 2, 3]`, `"shear"`},
		{"transforms.shear", `"shear": [1, 2], "angles": [1, 2]`, `"angles"`},
		{"transforms.rotation", `"angle": 5, "axis": [1, 0]`, `"axis"`},
		{"transforms.scale", `"scale": [1, 2], "center": [1, 2, 3]`, `"center"`},
		{"transforms.crop", `"from_start": [0.5, 1], "from_end": [0.5, 2, 3]`, `"from_end"`},
		{"transforms.scale", `"scale": [2]`, `ndim`},
		{"transforms.translation", ``, `"offset"`},
	} {
		_, err := run(t, []string{node(c.op, "x", nil, c.args)}, "x")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s(%s): error %v, want one naming %s", c.op, c.args, err, c.want)
		}
	}
}
