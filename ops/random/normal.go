package random

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random.normal",
		Doc: "Draws from a normal distribution with mean and stddev, per sample (e.g. per-sample " +
			"augmentation parameters). Integer dtypes round to nearest and clamp, as in DALI.",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"value"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "mean", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "mean of the distribution"},
			{Name: "stddev", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "standard deviation of the distribution (>= 0)"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "shape of the per-sample output (default: a scalar); per sample from a node of one int per dimension"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
			randomStateArg,
		},
	})
	engine.RegisterBackend("random.normal", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if sd := a.Float("stddev"); sd < 0 || math.IsNaN(sd) {
			return nil, a.Errorf("stddev", "must be >= 0, got %g", sd)
		}
		o := &randomOp{args: a, dtype: a.DType("dtype"), p0: a.Float("mean"), p1: a.Float("stddev"), saturate: true,
			draw: func(r *engine.RNG, mean, sd float64) float64 { return mean + sd*r.Normal() }}
		if a.AnyPerSample("mean", "stddev") {
			o.params = func(ws *engine.Workspace) (float64, float64, error) {
				mean, err := a.FloatAt(ws, "mean")
				if err != nil {
					return 0, 0, err
				}
				sd, err := a.FloatAt(ws, "stddev")
				if err != nil {
					return 0, 0, err
				}
				if sd < 0 || math.IsNaN(sd) {
					return 0, 0, a.ArgDataErrorf(ws, "stddev", "must be >= 0, got %g", sd)
				}
				return mean, sd, nil
			}
		}
		return o, nil
	})
}
