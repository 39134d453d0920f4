package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "noise.shot",
		Doc: "Applies shot noise to the input, as DALI does: out = Poisson(max(0, in / factor)) * " +
			"factor for every element (factor 0 leaves the input unchanged), converted to the " +
			"input's type (integers rounded and saturated). Any shape and numeric type; factor may " +
			"come per sample.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "factor", Type: engine.ArgFloat, Default: 20.0, TensorInput: true, Doc: "value of one event (>= 0); larger gives more noise"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "as in DALI, operators given the same seed draw the same numbers (-1: a stream of their own); with the pipeline seed"},
		},
	})
	engine.RegisterBackend("noise.shot", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if f := a.Float("factor"); !(f >= 0) || math.IsInf(f, 1) {
			return nil, a.Errorf("factor", "must be finite and >= 0, got %g", f)
		}
		return &shotNoiseOp{args: a}, nil
	})
}

type shotNoiseOp struct{ args *engine.Args }

func (o *shotNoiseOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return noiseInfer(o.args, in[0])
}

func (o *shotNoiseOp) Setup(ws *engine.Workspace) error {
	noiseSetup(ws)
	return nil
}

func (o *shotNoiseOp) Run(ws *engine.Workspace) error {
	f, err := noiseFloat(o.args, ws, "factor", 0, math.MaxFloat64)
	if err != nil {
		return err
	}
	if f == 0 {
		copy(ws.Out[0].Data, ws.In[0].Data[:len(ws.Out[0].Data)])
		return nil
	}
	r := ws.RNG
	mapElems(ws.In[0], ws.Out[0], func(v float64) float64 { return poisson(r, v/f) * f })
	return nil
}
