package random

import (
	"math"

	"github.com/godali/godali/engine"
)

// choiceSampleOp is random.choice when its set or its probabilities vary per sample: a
// given as an input (DALI: a DataNode of a 1D set per sample, or of a scalar n for
// [0, n)), or p given per sample. Drawn elements are copied from the set, so the output
// has the set's type (DALI's), unless dtype says otherwise.
type choiceSampleOp struct {
	args    *engine.Args
	set     []float64 // the constant set, nil when a is input 0
	dtype   engine.DType
	typed   bool // dtype given
	static  []int
	dynamic bool
}

type choiceSampleState struct {
	vals, p, cdf []float64
	dims         []float64
}

func newChoiceSample(a *engine.Args, set []float64) *choiceSampleOp {
	o := &choiceSampleOp{args: a, set: set, dtype: engine.Int32}
	if a.Has("dtype") {
		o.dtype, o.typed = a.DType("dtype"), true
	}
	return o
}

func (o *choiceSampleOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if o.set == nil && len(in) == 0 {
		return nil, o.args.Errorf("a", "missing: the values to choose from (a constant, or a DataNode as input 0)")
	}
	if o.set != nil && len(in) > 0 {
		return nil, o.args.Errorf("a", "give a as a constant or as an input, not both")
	}
	if len(in) > 0 {
		if s := in[0].Shape; s != nil && len(s) > 1 {
			return nil, o.args.Invalidf("input a must be a 1D set or a scalar per sample, got %d dimensions", len(s))
		}
		if !o.typed {
			o.dtype = in[0].DType // DALI: the output has a's type
		}
	} else if !o.typed {
		o.dtype = engine.Float32
		whole := true
		for _, v := range o.set {
			whole = whole && v == math.Trunc(v) && math.Abs(v) <= 1<<31
		}
		if whole {
			o.dtype = engine.Int32
		}
	}
	if _, perSample := o.args.IsPerSample("shape"); perSample {
		o.dynamic = true
		return []engine.TensorMeta{{DType: o.dtype}}, nil
	}
	o.static = []int{}
	for _, d := range o.args.Ints("shape") {
		if d < 0 {
			return nil, o.args.Errorf("shape", "dimensions must be >= 0, got %v", o.args.Ints("shape"))
		}
		o.static = append(o.static, int(d))
	}
	return []engine.TensorMeta{{DType: o.dtype, Shape: o.static}}, nil
}

func (o *choiceSampleOp) NewWorkerState() any { return &choiceSampleState{} }

// state is the worker's scratch (a fresh one where the caller gives none).
func (o *choiceSampleOp) state(ws *engine.Workspace) *choiceSampleState {
	if st, ok := ws.State.(*choiceSampleState); ok {
		return st
	}
	return &choiceSampleState{}
}

func (o *choiceSampleOp) Setup(ws *engine.Workspace) error {
	if !o.dynamic {
		ws.Out[0].Shape = append(ws.Out[0].Shape[:0], o.static...)
		return nil
	}
	st := o.state(ws)
	dims, err := o.args.FloatsAt(ws, "shape", st.dims[:0])
	if err != nil {
		return err
	}
	st.dims = dims
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

// values is the sample's set.
func (o *choiceSampleOp) values(ws *engine.Workspace, st *choiceSampleState) ([]float64, error) {
	if o.set != nil {
		return o.set, nil
	}
	in := ws.In[0]
	cnt := 1
	for _, d := range in.Shape {
		cnt *= d
	}
	vals := st.vals[:0]
	if len(in.Shape) == 0 {
		// A scalar n: the set [0, n).
		n := engine.ReadScalar(in.Data, in.DType)
		if n != math.Trunc(n) || n < 1 || n > 1<<24 {
			return nil, o.args.DataErrorf(ws, "a scalar a is the number of choices n (a whole number >= 1), got %g", n)
		}
		for i := 0; i < int(n); i++ {
			vals = append(vals, float64(i))
		}
	} else {
		sz := in.DType.Size()
		for k := 0; k < cnt; k++ {
			vals = append(vals, engine.ReadScalar(in.Data[k*sz:], in.DType))
		}
	}
	if len(vals) == 0 {
		return nil, o.args.DataErrorf(ws, "the set a is empty")
	}
	st.vals = vals
	return vals, nil
}

func (o *choiceSampleOp) Run(ws *engine.Workspace) error {
	st := o.state(ws)
	vals, err := o.values(ws, st)
	if err != nil {
		return err
	}
	var cdf []float64
	sum := 0.0
	if o.args.Given("p") {
		p, err := o.args.FloatsAt(ws, "p", st.p[:0])
		if err != nil {
			return err
		}
		st.p = p
		if len(p) != len(vals) {
			return o.args.ArgDataErrorf(ws, "p", "needs one probability per element of a (%d), got %d", len(vals), len(p))
		}
		cdf = st.cdf[:0]
		for i, q := range p {
			if q < 0 || math.IsNaN(q) {
				return o.args.ArgDataErrorf(ws, "p", "probabilities must be >= 0, got %g at %d", q, i)
			}
			sum += q
			cdf = append(cdf, sum)
		}
		st.cdf = cdf
		if math.Abs(sum-1) > 1e-6 {
			return o.args.ArgDataErrorf(ws, "p", "probabilities must sum to 1, got %g", sum)
		}
	}
	t := ws.Out[0]
	sz := t.DType.Size()
	for off := 0; off+sz <= len(t.Data); off += sz {
		var i int
		if cdf == nil {
			i = ws.RNG.Intn(len(vals))
		} else {
			u := ws.RNG.Float64() * sum
			// the first element whose cdf exceeds u, never one of probability 0
			for i = 0; i < len(cdf)-1 && (cdf[i] <= u || st.p[i] == 0); i++ {
			}
		}
		engine.WriteScalar(t.Data[off:], t.DType, vals[i])
	}
	return nil
}
