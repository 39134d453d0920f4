package random

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "random.uniform",
		Doc:       "Draws from a uniform distribution over range [lo, hi), or uniformly from a discrete set of values, per sample.",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"value"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "range", Type: engine.ArgFloatList, Default: []float64{-1, 1}, TensorInput: true, Doc: "[lo, hi); per sample from a node of 2 values"},
			{Name: "values", Type: engine.ArgFloatList, Doc: "discrete values to choose from (exclusive with range)"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "shape of the per-sample output (default: a scalar); per sample from a node of one int per dimension"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
			randomStateArg,
		},
	})
	engine.RegisterBackend("random.uniform", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.Given("values") {
			if a.Given("range") {
				return nil, a.Errorf("values", "give range or values, not both")
			}
			vals := a.Floats("values")
			if len(vals) == 0 {
				return nil, a.Errorf("values", "must not be empty")
			}
			return &randomOp{args: a, dtype: a.DType("dtype"), draw: func(r *engine.RNG, _, _ float64) float64 { return vals[r.Intn(len(vals))] }}, nil
		}
		dt := a.DType("dtype")
		o := &randomOp{args: a, dtype: dt,
			draw: func(r *engine.RNG, lo, hi float64) float64 { return uniformBelow(r.Uniform(lo, hi), lo, hi, dt) }}
		if a.AnyPerSample("range") {
			o.params = func(ws *engine.Workspace) (float64, float64, error) {
				rg, err := a.FloatsAt(ws, "range", nil)
				if err != nil {
					return 0, 0, err
				}
				if len(rg) != 2 || !(rg[0] <= rg[1]) {
					return 0, 0, a.ArgDataErrorf(ws, "range", "expected [lo, hi] with lo <= hi for each sample, got %v", rg)
				}
				return rg[0], rg[1], nil
			}
			return o, nil
		}
		rg := a.Floats("range")
		if len(rg) != 2 || rg[0] > rg[1] {
			return nil, a.Errorf("range", "expected [lo, hi] with lo <= hi, got %v", rg)
		}
		o.p0, o.p1 = rg[0], rg[1]
		return o, nil
	})
}
