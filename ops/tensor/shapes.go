package tensor

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "shapes",
		Doc:       "Outputs the shape of each input sample as a 1D tensor (DALI's fn.shapes).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"shape"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Default: "INT64", Doc: "output type"},
		},
	})
	engine.RegisterBackend("shapes", "cpu", func(a *engine.Args) (engine.Operator, error) {
		d := a.DType("dtype")
		if d == engine.Bool {
			return nil, a.Errorf("dtype", "must be a numeric type, got BOOL")
		}
		return &shapesOp{dtype: d}, nil
	})
}

type shapesOp struct{ dtype engine.DType }

func (o *shapesOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	var shape []int
	if in[0].Shape != nil {
		shape = []int{len(in[0].Shape)}
	}
	return []engine.TensorMeta{{DType: o.dtype, Shape: shape}}, nil
}

func (o *shapesOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].DType = o.dtype
	ws.Out[0].SetShape(len(ws.In[0].Shape))
	return nil
}

func (o *shapesOp) Run(ws *engine.Workspace) error {
	sz := o.dtype.Size()
	for i, d := range ws.In[0].Shape {
		engine.WriteScalar(ws.Out[0].Data[i*sz:], o.dtype, float64(d))
	}
	return nil
}
