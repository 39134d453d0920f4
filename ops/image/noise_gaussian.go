package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "noise.gaussian",
		Doc: "Adds gaussian noise to the input, as DALI does: out = in + N(mean, stddev), drawn " +
			"independently for every element and converted to the input's type (integers rounded " +
			"and saturated). Any shape and numeric type; mean and stddev may come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "mean", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "mean of the noise"},
			{Name: "stddev", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "standard deviation of the noise (>= 0)"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "as in DALI, operators given the same seed draw the same numbers (-1: a stream of their own); with the pipeline seed"},
		},
	})
	engine.RegisterBackend("noise.gaussian", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if sd := a.Float("stddev"); !(sd >= 0) {
			return nil, a.Errorf("stddev", "must be >= 0, got %g", sd)
		}
		return &gaussianNoiseOp{args: a}, nil
	})
}

type gaussianNoiseOp struct{ args *engine.Args }

func (o *gaussianNoiseOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return noiseInfer(o.args, in[0])
}

func (o *gaussianNoiseOp) Setup(ws *engine.Workspace) error {
	noiseSetup(ws)
	return nil
}

func (o *gaussianNoiseOp) Run(ws *engine.Workspace) error {
	mean, err := noiseFloat(o.args, ws, "mean", -math.MaxFloat64, math.MaxFloat64)
	if err != nil {
		return err
	}
	sd, err := noiseFloat(o.args, ws, "stddev", 0, math.MaxFloat64)
	if err != nil {
		return err
	}
	r := ws.RNG
	mapElems(ws.In[0], ws.Out[0], func(v float64) float64 { return v + mean + sd*r.Normal() })
	return nil
}
