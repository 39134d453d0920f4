package tensor

import (
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "_select",
		Doc: "Per sample, outputs input 1 where the predicate (input 0, one number per sample) is " +
			"nonzero, else input 2; both inputs are computed for every sample. " +
			"enable_conditionals splits the batch instead (_conditional.split and " +
			"_conditional.merge, engine/conditional.go).",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"output"}, HostOnly: true,
	})
	engine.RegisterBackend("_select", "cpu", func(a *engine.Args) (engine.Operator, error) { return &selectOp{args: a}, nil })
}

type selectOp struct{ args *engine.Args }

func (o *selectOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m, err := engine.MergeBranchMeta(in[1], in[2])
	if err != nil {
		return nil, o.args.Invalidf("%v", err)
	}
	return []engine.TensorMeta{m}, nil
}

func (o *selectOp) pick(ws *engine.Workspace) (*engine.Tensor, error) {
	p := ws.In[0]
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	if n != 1 || p.DType.Size() == 0 || len(p.Data) < p.DType.Size() {
		return nil, o.args.DataErrorf(ws, "the condition must be one value per sample, got shape %v of %s", p.Shape, p.DType)
	}
	if engine.ReadScalar(p.Data, p.DType) != 0 {
		return ws.In[1], nil
	}
	return ws.In[2], nil
}

func (o *selectOp) Setup(ws *engine.Workspace) error {
	src, err := o.pick(ws)
	if err != nil {
		return err
	}
	out := ws.Out[0]
	out.DType = src.DType
	out.Layout = src.Layout
	out.SetShape(src.Shape...)
	return nil
}

func (o *selectOp) Run(ws *engine.Workspace) error {
	src, err := o.pick(ws)
	if err != nil {
		return err
	}
	copy(ws.Out[0].Data, src.Data[:src.NumBytes()])
	return nil
}
