package image

import (
	"math"

	"github.com/godali/godali/engine"
)

// Shared by noise.gaussian, noise.salt_and_pepper and noise.shot: the output has the input's
// shape, type and layout; values are drawn from the sample's stream (ws.RNG) in element
// order, so that results do not depend on num_threads.

func noiseInfer(a *engine.Args, in engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in.Shape == nil || in.DType.Size() == 0 || in.DType == engine.Bool {
		return nil, a.Invalidf("input must be a numeric tensor of known rank, got %s %v", in.DType, in.Shape)
	}
	return []engine.TensorMeta{in}, nil
}

func noiseSetup(ws *engine.Workspace) {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	ws.Out[0].Layout = ws.In[0].Layout
}

// noiseFloat reads a per-sample float argument and checks that it is finite and in [lo, hi].
func noiseFloat(a *engine.Args, ws *engine.Workspace, name string, lo, hi float64) (float64, error) {
	v, err := a.FloatAt(ws, name)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || v < lo || v > hi {
		return 0, a.ArgDataErrorf(ws, name, "expected a value in [%g, %g], got %g", lo, hi, v)
	}
	return v, nil
}

// typeRange is the lowest and highest value of an integer type (-1 and 1 for floats, DALI's
// default pepper and salt there).
func typeRange(d engine.DType) (float64, float64) {
	switch d {
	case engine.UInt8:
		return 0, math.MaxUint8
	case engine.Int8:
		return math.MinInt8, math.MaxInt8
	case engine.UInt16:
		return 0, math.MaxUint16
	case engine.Int16:
		return math.MinInt16, math.MaxInt16
	case engine.UInt32:
		return 0, math.MaxUint32
	case engine.Int32:
		return math.MinInt32, math.MaxInt32
	case engine.UInt64:
		return 0, math.MaxUint64
	case engine.Int64:
		return math.MinInt64, math.MaxInt64
	}
	return -1, 1
}

// mapElems writes f(in) to every element of out, in element order; uint8 gets a fast path.
func mapElems(in, out *engine.Tensor, f func(float64) float64) {
	n := numElements(in.Shape)
	if in.DType == engine.UInt8 {
		src, dst := in.Data[:n], out.Data[:n]
		for i, v := range src {
			r := math.Round(f(float64(v)))
			switch {
			case r >= 255:
				dst[i] = 255
			case r > 0:
				dst[i] = byte(r)
			default: // also NaN
				dst[i] = 0
			}
		}
		return
	}
	sz := in.DType.Size()
	for i := 0; i < n; i++ {
		v := engine.ReadScalar(in.Data[i*sz:], in.DType)
		engine.WriteScalarSat(out.Data[i*sz:], out.DType, f(v))
	}
}

// poisson draws from a Poisson distribution of mean lam >= 0: multiplication of uniforms
// below 10, Hörmann's transformed rejection with squeeze (PTRS, 1993) above.
func poisson(r *engine.RNG, lam float64) float64 {
	if lam <= 0 || math.IsNaN(lam) {
		return 0
	}
	if math.IsInf(lam, 1) || lam > 1e15 {
		return lam
	}
	if lam < 10 {
		limit := math.Exp(-lam)
		k, p := 0.0, r.Float64()
		for p > limit {
			k++
			p *= r.Float64()
		}
		return k
	}
	slam, loglam := math.Sqrt(lam), math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invAlpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lam + 0.43)
		if us >= 0.07 && v <= vr {
			return k
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invAlpha)-math.Log(a/(us*us)+b) <= -lam+k*loglam-lg {
			return k
		}
	}
}
