package random

import (
	"math"
	"slices"

	"github.com/godali/godali/engine"
)

// randomOp fills its output from the sample's random stream: draw(rng, p0, p1) per
// element, with the generator's two parameters constant (p0, p1) or read per sample.
// The per-sample shape is the shape argument (a constant or one int per dimension per
// sample), or, as in DALI, the shape of the optional input (shape_like).
type randomOp struct {
	args     *engine.Args
	dtype    engine.DType
	p0, p1   float64
	params   func(ws *engine.Workspace) (float64, float64, error) // nil: p0, p1
	draw     func(r *engine.RNG, p0, p1 float64) float64
	saturate bool  // integer outputs round and clamp (DALI's ConvertSat) instead of truncating
	static   []int // the per-sample shape, set by Infer (constant shape argument)
	dynamic  bool  // the shape comes from the input or a per-sample shape argument
}

// uniformBelow keeps a draw from [lo, hi) below hi once stored in dt: lo + (hi-lo)*u is
// rounded, in float64 and again when narrowed to float32/float16, and may land on hi
// when the range is a few ulps wide (DALI's range=[a, nextafter(a)] gives a only).
func uniformBelow(v, lo, hi float64, dt engine.DType) float64 {
	if !(lo < hi) {
		return v
	}
	switch dt {
	case engine.Float32:
		if float64(float32(v)) >= hi {
			below := float64(math.Nextafter32(float32(hi), float32(math.Inf(-1))))
			return math.Max(below, lo)
		}
	case engine.Float16:
		return v // float16 narrowing is coarser than any range a test could give; left as is
	default:
		if v >= hi {
			return math.Max(math.Nextafter(hi, math.Inf(-1)), lo)
		}
	}
	return v
}

// maxRandomElements bounds one sample of a random generator (the shape is data when it
// comes per sample, and must not make the pipeline ask for absurd memory).
const maxRandomElements = 1 << 31

func (o *randomOp) shape() []int {
	s := []int{}
	for _, d := range o.args.Ints("shape") {
		s = append(s, int(d))
	}
	return s
}

func (o *randomOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	perSample := o.args.AnyPerSample("shape")
	if len(in) > 0 {
		if o.args.Given("shape") {
			return nil, o.args.Errorf("shape", "give shape or an input (shape_like), not both")
		}
		o.dynamic = true
		var s []int
		if in[0].Shape != nil {
			s = append([]int{}, in[0].Shape...)
		}
		return []engine.TensorMeta{{DType: o.dtype, Shape: s}}, nil
	}
	if perSample {
		o.dynamic = true
		// The rank is the length of the shape input when the graph knows it (a stack of
		// scalars, a constant), else known only at run time.
		if m, ok := o.args.ArgInputMeta("shape"); ok && len(m.Shape) == 1 && m.Shape[0] >= 0 {
			return []engine.TensorMeta{{DType: o.dtype, Shape: slices.Repeat([]int{-1}, m.Shape[0])}}, nil
		}
		return []engine.TensorMeta{{DType: o.dtype}}, nil
	}
	for _, d := range o.shape() {
		if d < 0 {
			return nil, o.args.Errorf("shape", "dimensions must be >= 0, got %v", o.args.Ints("shape"))
		}
	}
	o.static = o.shape()
	return []engine.TensorMeta{{DType: o.dtype, Shape: o.static}}, nil
}

func (o *randomOp) Setup(ws *engine.Workspace) error {
	if !o.dynamic {
		ws.Out[0].Shape = append(ws.Out[0].Shape[:0], o.static...)
		return nil
	}
	if len(ws.In) > 0 {
		ws.Out[0].Shape = append(ws.Out[0].Shape[:0], ws.In[0].Shape...)
		return nil
	}
	var buf [8]float64
	dims, err := o.args.FloatsAt(ws, "shape", buf[:0])
	if err != nil {
		return err
	}
	out := ws.Out[0].Shape[:0]
	n := 1
	for _, d := range dims {
		if d != math.Trunc(d) || d < 0 || d > maxRandomElements {
			return o.args.ArgDataErrorf(ws, "shape", "dimensions must be whole numbers >= 0, got %v", dims)
		}
		n *= int(d)
		if n > maxRandomElements {
			return o.args.ArgDataErrorf(ws, "shape", "%v is more than %d elements per sample", dims, maxRandomElements)
		}
		out = append(out, int(d))
	}
	ws.Out[0].Shape = out
	return nil
}

func (o *randomOp) Run(ws *engine.Workspace) error {
	p0, p1 := o.p0, o.p1
	if o.params != nil {
		var err error
		if p0, p1, err = o.params(ws); err != nil {
			return err
		}
	}
	t := ws.Out[0]
	sz := t.DType.Size()
	for off := 0; off+sz <= len(t.Data); off += sz {
		v := o.draw(ws.RNG, p0, p1)
		if o.saturate {
			engine.WriteScalarSat(t.Data[off:], t.DType, v)
		} else {
			engine.WriteScalar(t.Data[off:], t.DType, v)
		}
	}
	return nil
}

// randomStateArg is DALI's `_random_state` (engine.RandomStateArg): a per-sample list of
// integers that replaces the sample's random stream (the same state, the same values).
var randomStateArg = engine.ArgSpec{Name: engine.RandomStateArg, Type: engine.ArgIntList, TensorInput: true,
	Doc: "per-sample random state (a list of integers, e.g. 7 uint32 words): samples with the same state draw the same values, in any node or pipeline"}
