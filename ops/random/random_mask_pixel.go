package random

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "segmentation.random_mask_pixel",
		Doc: "Draws the coordinates (int64, one per dimension of the mask) of a random element of a mask: with " +
			"foreground, uniformly among the elements equal to value (when given) or greater than threshold, " +
			"else (or when there is none) uniformly over the whole mask.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"anchor"}, HostOnly: true,
		InputDoc: "a mask of any dimensionality",
		Args: []engine.ArgSpec{
			{Name: "value", Type: engine.ArgInt, TensorInput: true, Doc: "foreground is the elements equal to this (exclusive with threshold)"},
			{Name: "threshold", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "foreground is the elements greater than this"},
			{Name: "foreground", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "draw from the foreground when nonzero, else from the whole mask"},
			{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "the node's own random streams: the same seed draws the same values in any pipeline (-1: derived from the pipeline seed and the node)"},
		},
	})
	engine.RegisterBackend("segmentation.random_mask_pixel", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.Given("value") && a.GivenConstant("threshold") {
			return nil, a.Errorf("value", "give value or threshold, not both")
		}
		return &maskPixelOp{args: a}, nil
	})
}

type maskPixelOp struct{ args *engine.Args }

func (o *maskPixelOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input 0 must be a numeric mask of known dimensionality, got %s %v", m.DType, m.Shape)
	}
	return []engine.TensorMeta{{DType: engine.Int64, Shape: []int{len(m.Shape)}}}, nil
}

func (o *maskPixelOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(len(ws.In[0].Shape))
	return nil
}

// matches reports whether mask element v is foreground.
type matcher func(v float64) bool

func (o *maskPixelOp) matcher(ws *engine.Workspace) (matcher, error) {
	if o.args.Given("value") {
		v, err := o.args.IntAt(ws, "value")
		if err != nil {
			return nil, err
		}
		want := float64(v)
		return func(x float64) bool { return x == want }, nil
	}
	t, err := o.args.FloatAt(ws, "threshold")
	if err != nil {
		return nil, err
	}
	return func(x float64) bool { return x > t }, nil
}

func (o *maskPixelOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	if n == 0 {
		return o.args.DataErrorf(ws, "the mask is empty (shape %v): no element to draw", in.Shape)
	}
	fg, err := o.args.BoolAt(ws, "foreground")
	if err != nil {
		return err
	}
	idx := -1
	if fg {
		match, err := o.matcher(ws)
		if err != nil {
			return err
		}
		sz := in.DType.Size()
		count := 0
		for i := 0; i < n; i++ {
			if match(engine.ReadScalar(in.Data[i*sz:], in.DType)) {
				count++
			}
		}
		if count > 0 {
			k := ws.RNG.Intn(count)
			for i := 0; i < n; i++ {
				if match(engine.ReadScalar(in.Data[i*sz:], in.DType)) {
					if k == 0 {
						idx = i
						break
					}
					k--
				}
			}
		}
	}
	if idx < 0 {
		idx = ws.RNG.Intn(n)
	}
	// Unravel the flat index, last dimension fastest.
	for d := len(in.Shape) - 1; d >= 0; d-- {
		engine.WriteScalar(ws.Out[0].Data[8*d:], engine.Int64, float64(idx%in.Shape[d]))
		idx /= in.Shape[d]
	}
	return nil
}
