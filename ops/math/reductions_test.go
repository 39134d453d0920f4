package math_test

import (
	"encoding/json"
	"fmt"
	gomath "math"
	"strings"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
)

// reduceRef computes, with numpy, every reduction of TestReductionsAgainstNumpy for the
// input x = (arange(60) * 7 % 23 - 5).reshape(3, 4, 5) of each dtype: case name ->
// shape and values. Integer sum/min/max are exact; the float ones are float64.
const reduceRef = `
import json, sys, numpy as np
out = {}
for dt in sys.argv[1].split(","):
    x = ((np.arange(60) * 7 % 23) - 5).astype(dt).reshape(3, 4, 5)
    for axes in [None, (), (1,), (0, 2), (-1,)]:
        for keep in [False, True]:
            key = "%s/%s/%s" % (dt, axes, keep)
            ax = axes
            r = {"sum": np.sum(x, axis=ax, keepdims=keep), "min": np.min(x, axis=ax, keepdims=keep),
                 "max": np.max(x, axis=ax, keepdims=keep), "mean": np.mean(x, axis=ax, keepdims=keep),
                 "mean_square": np.mean(x.astype(np.float64) ** 2, axis=ax, keepdims=keep),
                 "rms": np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=ax, keepdims=keep)),
                 "std_dev": np.std(x, axis=ax, keepdims=keep, ddof=1 if axes != () else 0),
                 "variance": np.var(x, axis=ax, keepdims=keep, ddof=1 if axes != () else 0)}
            for k, v in r.items():
                v = np.asarray(v)
                out[key + "/" + k] = {"shape": list(v.shape), "data": [float(t) for t in v.reshape(-1)]}
print(json.dumps(out))
`

func TestReductionsAgainstNumpy(t *testing.T) {
	dtypes := map[string]engine.DType{"uint8": engine.UInt8, "int16": engine.Int16, "int32": engine.Int32, "float32": engine.Float32}
	var want map[string]struct {
		Shape []int64
		Data  []float64
	}
	pyref.RunJSON(t, &want, []string{"numpy"}, reduceRef, "uint8,int16,int32,float32")
	kinds := []string{"sum", "min", "max", "mean", "mean_square", "rms", "std_dev", "variance"}
	vals := make([]float64, 60)
	for dt, d := range dtypes {
		for i := range vals {
			v := float64((i*7)%23 - 5)
			if d == engine.UInt8 && v < 0 {
				v += 256 // numpy's astype wraps
			}
			vals[i] = v
		}
		for _, axes := range []string{"None", "()", "(1,)", "(0, 2)", "(-1,)"} {
			for _, keep := range []bool{false, true} {
				axArg := ""
				switch axes {
				case "()":
					axArg = `"axes": [], `
				case "(1,)":
					axArg = `"axes": [1], `
				case "(0, 2)":
					axArg = `"axes": [0, 2], `
				case "(-1,)":
					axArg = `"axes": -1, `
				}
				nodes := []string{constNode("x", d, []int{3, 4, 5}, vals),
					fmt.Sprintf(`{"op": "reductions.mean", "name": "mu", "inputs": ["x"], "outputs": ["mu"], "args": {%s"keep_dims": %v}}`, axArg, keep)}
				for _, k := range kinds {
					in, extra := `["x"]`, ""
					if k == "std_dev" || k == "variance" {
						in = `["x", "mu"]`
						if axes != "()" {
							extra = `, "ddof": 1`
						}
					}
					nodes = append(nodes, fmt.Sprintf(`{"op": "reductions.%s", "name": %q, "inputs": %s, "outputs": [%q], "args": {%s"keep_dims": %v%s}}`, k, k, in, k, axArg, keep, extra))
				}
				p, err := build(t, 2, nodes, kinds...)
				if err != nil {
					t.Fatal(err)
				}
				b, err := p.Next()
				if err != nil {
					t.Fatal(err)
				}
				for o, k := range kinds {
					key := fmt.Sprintf("%s/%s/%s/%s", dt, axes, map[bool]string{false: "False", true: "True"}[keep], k)
					w, ok := want[key]
					if !ok {
						t.Fatalf("no reference for %s", key)
					}
					got, shape, _ := sample(t, b, o, 1)
					if fmt.Sprint(shape) != fmt.Sprint(w.Shape) {
						t.Errorf("%s: shape %v, numpy %v", key, shape, w.Shape)
						continue
					}
					for j := range got {
						// FLOAT outputs: relative 1e-6 of float32 rounding; integers exact.
						if d := gomath.Abs(got[j] - w.Data[j]); d > 1e-6*gomath.Max(1, gomath.Abs(w.Data[j])) {
							t.Errorf("%s: element %d = %g, numpy %g", key, j, got[j], w.Data[j])
							break
						}
					}
				}
			}
		}
	}
}

func TestReductionTypesAndLayouts(t *testing.T) {
	x := `{"op": "constant", "name": "x", "outputs": ["x"], "args": {"idata": [100, 200, 250, 3], "shape": [2, 2], "dtype": "UINT8", "layout": "HW"}}`
	nodes := []string{x,
		`{"op": "reductions.sum", "name": "s", "inputs": ["x"], "outputs": ["s"], "args": {"axes": [0]}}`,
		`{"op": "reductions.sum", "name": "s8", "inputs": ["x"], "outputs": ["s8"], "args": {"axes": [0], "dtype": "UINT8"}}`,
		`{"op": "reductions.max", "name": "mx", "inputs": ["x"], "outputs": ["mx"], "args": {"axis_names": "W", "keep_dims": true}}`,
		`{"op": "reductions.mean", "name": "m", "inputs": ["x"], "outputs": ["m"], "args": {}}`,
	}
	p, err := build(t, 1, nodes, "s", "s8", "mx", "m")
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range []string{"UINT64 [2] W", "UINT8 [2] W", "UINT8 [2 1] HW", "FLOAT [] "} {
		d := p.Graph.Data[p.OutputNames()[k]].Meta
		if got := fmt.Sprintf("%s %v %s", d.DType, d.Shape, d.Layout); got != w {
			t.Errorf("output %d: %s, want %s", k, got, w)
		}
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range []string{"[350 203]", "[94 203]", "[200 250]", "[138.25]"} { // 350 wraps to 94 in UINT8
		v, _, _ := sample(t, b, k, 0)
		if fmt.Sprint(v) != w {
			t.Errorf("output %d: %v, want %s", k, v, w)
		}
	}
	for _, c := range []struct{ args, want string }{
		{`"axes": [2]`, "Axis index out of range"},
		{`"axes": [-3]`, "Axis index out of range"},
		{`"axis_names": "C"`, `argument "axis_names"`},
		{`"axes": [0], "axis_names": "H"`, "not both"},
	} {
		_, err := build(t, 1, []string{x, `{"op": "reductions.min", "name": "r", "inputs": ["x"], "outputs": ["r"], "args": {` + c.args + `}}`}, "r")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"r"`) {
			t.Errorf("%s: got %v, want an error naming the node and saying %q", c.args, err, c.want)
		}
	}
	_ = json.Marshal
}
