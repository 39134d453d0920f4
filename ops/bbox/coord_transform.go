package bbox

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "coord_transform",
		Doc: "Applies an affine transform to points: each row x of the input [..., in_dim] (the last dimension holds " +
			"the coordinates) becomes M x + T, a row of the output [..., out_dim]. M is a scalar (uniform scale; out_dim = in_dim) or out_dim * in_dim values, " +
			"row-major; T a scalar (every output coordinate) or out_dim values; MT, exclusive with M and T, is " +
			"[M | T] (out_dim * (in_dim + 1) values, e.g. from transforms.*) or a scalar. Integer outputs are " +
			"rounded and saturated.",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"points"}, HostOnly: true,
		InputDoc: "points, one per row",
		Args: []engine.ArgSpec{
			{Name: "M", Type: engine.ArgFloatList, TensorInput: true, Doc: "the linear part: a scalar or out_dim * in_dim values (default: identity)"},
			{Name: "T", Type: engine.ArgFloatList, TensorInput: true, Doc: "the translation: a scalar or out_dim values (default: 0)"},
			{Name: "MT", Type: engine.ArgFloatList, TensorInput: true, Doc: "the whole transform [M | T], out_dim * (in_dim + 1) values or a scalar; exclusive with M and T"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "output type (integers round to nearest and saturate)"},
		},
	})
	engine.RegisterBackend("coord_transform", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.Given("MT") && (a.Given("M") || a.Given("T")) {
			return nil, a.Errorf("MT", "cannot be combined with M or T")
		}
		dt := a.DType("dtype")
		if dt.Size() == 0 || dt == engine.Bool || dt == engine.Float16 {
			return nil, a.Errorf("dtype", "expected a numeric type (not %s)", dt)
		}
		return &coordTransformOp{args: a, dtype: dt}, nil
	})
}

type coordTransformOp struct {
	args  *engine.Args
	dtype engine.DType
}

type coordState struct {
	m, t   []float64
	outDim int
}

func (o *coordTransformOp) NewWorkerState() any { return &coordState{} }

func (o *coordTransformOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if len(m.Shape) < 1 || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input 0 must be numeric points [..., in_dim], got %s %v", m.DType, m.Shape)
	}
	last := len(m.Shape) - 1
	out := -1
	if m.Shape[last] >= 0 && !o.args.AnyPerSample("M", "T", "MT") {
		var st coordState
		if err := o.params(nil, &st, m.Shape[last]); err != nil {
			return nil, err
		}
		out = st.outDim
	}
	shape := append(append([]int{}, m.Shape[:last]...), out)
	return []engine.TensorMeta{{DType: o.dtype, Layout: m.Layout, Shape: shape}}, nil
}

// params reads M and T (or MT) for a sample with inDim columns into st, as an
// outDim x inDim matrix and outDim offsets.
func (o *coordTransformOp) params(ws *engine.Workspace, st *coordState, inDim int) error {
	a := o.args
	var err error
	if a.Given("MT") {
		if st.m, err = a.FloatsAt(ws, "MT", st.m); err != nil {
			return err
		}
		v := st.m
		switch {
		case len(v) == 1:
			st.outDim = inDim
			st.t = append(st.t[:0], make([]float64, inDim)...)
			st.m = diag(st.m, v[0], inDim)
		case len(v) > 0 && len(v)%(inDim+1) == 0:
			st.outDim = len(v) / (inDim + 1)
			st.t = st.t[:0]
			// Split [M | T] row by row, in place.
			k := 0
			for r := 0; r < st.outDim; r++ {
				st.t = append(st.t, v[r*(inDim+1)+inDim])
				for c := 0; c < inDim; c++ {
					v[k] = v[r*(inDim+1)+c]
					k++
				}
			}
			st.m = v[:k]
		default:
			return argError(a, ws, "MT", "expected a scalar or out_dim * %d values for %d-D points, got %d", inDim+1, inDim, len(v))
		}
		return nil
	}
	if st.t, err = a.FloatsAt(ws, "T", st.t); err != nil {
		return err
	}
	if st.m, err = a.FloatsAt(ws, "M", st.m); err != nil {
		return err
	}
	st.outDim = inDim
	switch {
	case len(st.m) == 0 || len(st.m) == 1:
		s := 1.0
		if len(st.m) == 1 {
			s = st.m[0]
		}
		st.m = diag(st.m, s, inDim)
	case inDim > 0 && len(st.m)%inDim == 0:
		st.outDim = len(st.m) / inDim
	default:
		return argError(a, ws, "M", "expected a scalar or out_dim * %d values for %d-D points, got %d", inDim, inDim, len(st.m))
	}
	switch len(st.t) {
	case st.outDim:
	case 0, 1:
		v := 0.0
		if len(st.t) == 1 {
			v = st.t[0]
		}
		st.t = st.t[:0]
		for i := 0; i < st.outDim; i++ {
			st.t = append(st.t, v)
		}
	default:
		return argError(a, ws, "T", "expected a scalar or %d values (one per output dimension), got %d", st.outDim, len(st.t))
	}
	return nil
}

// diag writes s times the n x n identity into buf.
func diag(buf []float64, s float64, n int) []float64 {
	buf = buf[:0]
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			v := 0.0
			if r == c {
				v = s
			}
			buf = append(buf, v)
		}
	}
	return buf
}

// argError is a constant argument's error, or this sample's when it comes per sample.
func argError(a *engine.Args, ws *engine.Workspace, name, format string, args ...any) error {
	if ws != nil && a.AnyPerSample(name) {
		return a.ArgDataErrorf(ws, name, format, args...)
	}
	return a.Errorf(name, format, args...)
}

func (o *coordTransformOp) Setup(ws *engine.Workspace) error {
	t := ws.In[0]
	if len(t.Shape) < 1 {
		return o.args.DataErrorf(ws, "expected points [..., in_dim], got a scalar")
	}
	last := len(t.Shape) - 1
	st := ws.State.(*coordState)
	if err := o.params(ws, st, t.Shape[last]); err != nil {
		return err
	}
	ws.Out[0].SetShape(t.Shape...)
	ws.Out[0].Shape[last] = st.outDim
	return nil
}

func (o *coordTransformOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*coordState)
	in, out := ws.In[0], ws.Out[0]
	inDim, outDim := in.Shape[len(in.Shape)-1], st.outDim
	n := 1
	for _, d := range in.Shape[:len(in.Shape)-1] {
		n *= d
	}
	isz, osz := in.DType.Size(), o.dtype.Size()
	for i := 0; i < n; i++ {
		row := in.Data[i*inDim*isz:]
		for r := 0; r < outDim; r++ {
			s := st.t[r]
			for c := 0; c < inDim; c++ {
				s += st.m[r*inDim+c] * engine.ReadScalar(row[c*isz:], in.DType)
			}
			engine.WriteScalarSat(out.Data[(i*outDim+r)*osz:], o.dtype, s)
		}
	}
	return nil
}
