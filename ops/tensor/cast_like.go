package tensor

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "cast_like",
		Doc: "Converts the first input to the type of the second (DALI's fn.cast_like), saturating " +
			"as cast does; the shape and layout are the first input's.",
		MinInputs: 2, MaxInputs: 2, Outputs: []string{"output"}, HostOnly: true,
	})
	engine.RegisterBackend("cast_like", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &castLikeOp{castOp{args: a}}, nil
	})
}

// castLikeOp is cast with the target type taken from the second input's.
type castLikeOp struct{ castOp }

func (o *castLikeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	o.dtype = in[1].DType
	return o.castOp.Infer(in[:1])
}

func (o *castLikeOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	out.DType, out.Layout = ws.In[1].DType, in.Layout
	out.SetShape(in.Shape...)
	return nil
}
