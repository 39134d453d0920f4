package engine

func init() {
	RegisterSchema(&Schema{
		Name:      "random.coin_flip",
		Doc:       "Draws 1 with the given probability, else 0, per sample (a Bernoulli trial); e.g. the mirror flag of crop_mirror_normalize.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"value"}, Random: true,
		Args: []ArgSpec{
			{Name: "probability", Type: ArgFloat, Default: 0.5, Doc: "probability of 1"},
			{Name: "shape", Type: ArgIntList, Doc: "shape of the per-sample output (default: a scalar)"},
			{Name: "dtype", Type: ArgDType, Default: "INT32", Doc: "output type"},
			{Name: "seed", Type: ArgInt, Default: -1, Doc: "accepted for DALI compatibility; streams derive from the pipeline seed"},
		},
	})
	RegisterBackend("random.coin_flip", "cpu", func(a *Args) (Operator, error) {
		p := a.Float("probability")
		if p < 0 || p > 1 {
			return nil, a.Errorf("probability", "must be in [0, 1], got %g", p)
		}
		return &randomOp{args: a, draw: func(r *RNG) float64 {
			if r.Float64() < p {
				return 1
			}
			return 0
		}}, nil
	})

	RegisterSchema(&Schema{
		Name:      "random.uniform",
		Doc:       "Draws from a uniform distribution over range [lo, hi), or uniformly from a discrete set of values, per sample.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"value"}, Random: true,
		Args: []ArgSpec{
			{Name: "range", Type: ArgFloatList, Default: []float64{-1, 1}, Doc: "[lo, hi)"},
			{Name: "values", Type: ArgFloatList, Doc: "discrete values to choose from (exclusive with range)"},
			{Name: "shape", Type: ArgIntList, Doc: "shape of the per-sample output (default: a scalar)"},
			{Name: "dtype", Type: ArgDType, Default: "FLOAT", Doc: "output type"},
			{Name: "seed", Type: ArgInt, Default: -1, Doc: "accepted for DALI compatibility; streams derive from the pipeline seed"},
		},
	})
	RegisterBackend("random.uniform", "cpu", func(a *Args) (Operator, error) {
		if a.Has("values") {
			if a.Has("range") {
				return nil, a.Errorf("values", "give range or values, not both")
			}
			vals := a.Floats("values")
			if len(vals) == 0 {
				return nil, a.Errorf("values", "must not be empty")
			}
			return &randomOp{args: a, draw: func(r *RNG) float64 { return vals[r.Intn(len(vals))] }}, nil
		}
		rg := a.Floats("range")
		if len(rg) != 2 || rg[0] > rg[1] {
			return nil, a.Errorf("range", "expected [lo, hi] with lo <= hi, got %v", rg)
		}
		return &randomOp{args: a, draw: func(r *RNG) float64 { return r.Uniform(rg[0], rg[1]) }}, nil
	})
}

// randomOp fills its output from the sample's random stream.
type randomOp struct {
	args   *Args
	draw   func(*RNG) float64
	static []int // the per-sample shape, set by Infer
}

func (o *randomOp) shape() []int {
	s := []int{}
	for _, d := range o.args.Ints("shape") {
		s = append(s, int(d))
	}
	return s
}

func (o *randomOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	for _, d := range o.shape() {
		if d < 0 {
			return nil, o.args.Errorf("shape", "dimensions must be >= 0, got %v", o.args.Ints("shape"))
		}
	}
	o.static = o.shape()
	return []TensorMeta{{DType: o.args.DType("dtype"), Shape: o.static}}, nil
}

func (o *randomOp) Setup(ws *Workspace) error {
	ws.Out[0].Shape = append(ws.Out[0].Shape[:0], o.static...)
	return nil
}

func (o *randomOp) Run(ws *Workspace) error {
	t := ws.Out[0]
	sz := t.DType.Size()
	for off := 0; off+sz <= len(t.Data); off += sz {
		writeScalar(t.Data[off:], t.DType, o.draw(ws.RNG))
	}
	return nil
}
