package random

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "random.coin_flip",
		Doc:       "Draws 1 with the given probability, else 0, per sample (a Bernoulli trial); e.g. the mirror flag of crop_mirror_normalize.",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"value"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "probability", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "probability of 1"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "shape of the per-sample output (default: a scalar); per sample from a node of one int per dimension"},
			{Name: "dtype", Type: engine.ArgDType, Default: "INT32", Doc: "output type"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
			randomStateArg,
		},
	})
	engine.RegisterBackend("random.coin_flip", "cpu", func(a *engine.Args) (engine.Operator, error) {
		p := a.Float("probability")
		if p < 0 || p > 1 {
			return nil, a.Errorf("probability", "must be in [0, 1], got %g", p)
		}
		o := &randomOp{args: a, dtype: a.DType("dtype"), p0: p, draw: func(r *engine.RNG, p, _ float64) float64 {
			if r.Float64() < p {
				return 1
			}
			return 0
		}}
		if a.AnyPerSample("probability") {
			o.params = func(ws *engine.Workspace) (float64, float64, error) {
				p, err := a.FloatAt(ws, "probability")
				if err == nil && !(p >= 0 && p <= 1) {
					err = a.ArgDataErrorf(ws, "probability", "must be in [0, 1], got %g", p)
				}
				return p, 0, err
			}
		}
		return o, nil
	})
}
