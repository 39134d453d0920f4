package tensor

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "copy",
		Doc:       "Copies the input: same data, shape, type and layout (DALI's fn.copy).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
	})
	engine.RegisterBackend("copy", "cpu", func(a *engine.Args) (engine.Operator, error) { return copyOp{}, nil })
}

type copyOp struct{}

func (copyOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape != nil {
		m.Shape = append([]int{}, m.Shape...)
	}
	return []engine.TensorMeta{m}, nil
}

func (copyOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	out.DType, out.Layout = in.DType, in.Layout
	out.SetShape(in.Shape...)
	return nil
}

func (copyOp) Run(ws *engine.Workspace) error { return copyRun(ws) }
