package tensor

import "github.com/godali/godali/engine"

// subscript_dim_check is DALI's guard for x[...] subscripts that take every element
// (x[:, :] and the like): the input passes through once it is known to have at least
// num_subscripts dimensions.
func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "subscript_dim_check",
		Doc:       "Passes the input through after checking that it has at least num_subscripts dimensions (DALI's fn.subscript_dim_check, used by tensor subscripts).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "num_subscripts", Type: engine.ArgInt, Default: 0, Doc: "the number of subscripts; the input must have at least as many dimensions"},
		},
	})
	engine.RegisterBackend("subscript_dim_check", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if n := a.Int("num_subscripts"); n < 0 {
			return nil, a.Errorf("num_subscripts", "expected 0 or more, got %d", n)
		}
		return &dimCheckOp{args: a, n: a.Int("num_subscripts")}, nil
	})
}

type dimCheckOp struct {
	args *engine.Args
	n    int
}

func (o *dimCheckOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].Shape != nil && len(in[0].Shape) < o.n {
		return nil, o.args.Invalidf("too many indices (%d) for a %d-D input", o.n, len(in[0].Shape))
	}
	return []engine.TensorMeta{in[0]}, nil
}

func (o *dimCheckOp) Setup(ws *engine.Workspace) error {
	if len(ws.In[0].Shape) < o.n {
		return o.args.DataErrorf(ws, "too many indices (%d) for a %d-D sample %v", o.n, len(ws.In[0].Shape), ws.In[0].Shape)
	}
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *dimCheckOp) Run(ws *engine.Workspace) error { return copyRun(ws) }
