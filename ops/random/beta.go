package random

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "random.beta",
		Doc: "Draws from a beta distribution Beta(alpha, beta) on [0, 1], per sample (DALI's " +
			"fn.random.beta), as X / (X + Y) with X ~ Gamma(alpha), Y ~ Gamma(beta).",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"value"}, Random: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "alpha", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "the first shape parameter (> 0)"},
			{Name: "beta", Type: engine.ArgFloat, Default: 1.0, TensorInput: true, Doc: "the second shape parameter (> 0)"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "shape of the per-sample output (default: a scalar); per sample from a node of one int per dimension"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type: FLOAT or FLOAT64"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("random.beta", "cpu", newBeta)
}

func newBeta(a *engine.Args) (engine.Operator, error) {
	d := a.DType("dtype")
	if d != engine.Float32 && d != engine.Float64 {
		return nil, a.Errorf("dtype", "Data type %s is not supported: must be FLOAT or FLOAT64", strings.ToLower(d.String()))
	}
	for _, name := range []string{"alpha", "beta"} {
		if a.AnyPerSample(name) {
			continue
		}
		if v := a.Float(name); !(v > 0) || v > math.MaxFloat32 {
			return nil, a.Errorf(name, "The `%s` must be a positive float32, got %g", name, v)
		}
	}
	o := &randomOp{args: a, dtype: d, p0: a.Float("alpha"), p1: a.Float("beta"), draw: drawBeta}
	if a.AnyPerSample("alpha", "beta") {
		o.params = func(ws *engine.Workspace) (float64, float64, error) {
			var p [2]float64
			for i, name := range []string{"alpha", "beta"} {
				v, err := a.FloatAt(ws, name)
				if err != nil {
					return 0, 0, err
				}
				if !(v > 0) || v > math.MaxFloat32 {
					return 0, 0, a.ArgDataErrorf(ws, name, "The `%s` must be a positive float32, got %g", name, v)
				}
				p[i] = v
			}
			return p[0], p[1], nil
		}
	}
	return o, nil
}

// drawBeta is X / (X + Y) computed from log X and log Y, so that shapes far below 1
// (whose gamma draws underflow float64) still give the right split between 0 and 1.
func drawBeta(r *engine.RNG, alpha, beta float64) float64 {
	lx := logGamma(r, alpha)
	ly := logGamma(r, beta)
	return 1 / (1 + math.Exp(ly-lx))
}

// logGamma draws log G with G ~ Gamma(k, 1): Marsaglia and Tsang's method for k >= 1;
// for k < 1, G = Gamma(k+1) * U^(1/k), whose log is log Gamma(k+1) + log(U) / k.
func logGamma(r *engine.RNG, k float64) float64 {
	if k < 1 {
		u := 1 - r.Float64() // (0, 1]
		return logGamma(r, k+1) + math.Log(u)/k
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.Normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return math.Log(d) + math.Log(v)
		}
	}
}
