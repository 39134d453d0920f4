package transforms

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.scale",
		Doc: "Produces a scale affine transform (float32 [ndim, ndim+1]): diag(scale) about center, or applies " +
			"it to the input transform. The number of dimensions comes from scale or center, else ndim, else the input.",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "scale", Type: engine.ArgFloatList, Required: true, TensorInput: true, Doc: "the scale factor, one value per dimension (one value: every dimension)"},
			centerArg,
			{Name: "ndim", Type: engine.ArgInt, Doc: "number of dimensions, when scale and center do not tell it and there is no input"},
			reverseOrderArg, seedArg,
		},
	})
	engine.RegisterBackend("transforms.scale", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.Given("ndim") && a.Int("ndim") < 1 {
			return nil, a.Errorf("ndim", "must be >= 1, got %d", a.Int("ndim"))
		}
		return newTransformOp(a, scale{a}, "scale", "center"), nil
	})
}

type scale struct{ args *engine.Args }

func (g scale) dims(ws *engine.Workspace, st *state) (int, error) {
	a := g.args
	n, err := listDims(a, ws, "scale", &st.vals[0])
	if err != nil {
		return 0, err
	}
	if len(st.vals[0]) == 0 {
		return 0, argError(a, ws, "scale", "must not be empty")
	}
	c, err := listDims(a, ws, "center", &st.vals[1])
	if err != nil {
		return 0, err
	}
	if n, err = agree(a, ws, n, "scale", c, "center"); err != nil {
		return 0, err
	}
	if a.Given("ndim") {
		return agree(a, ws, n, "scale", a.Int("ndim"), "ndim")
	}
	return n, nil
}

func (g scale) matrix(ws *engine.Workspace, st *state, n int, m []float64) error {
	v, err := broadcastTo(g.args, ws, "scale", st.vals[0], n)
	if err != nil {
		return err
	}
	for d := 0; d < n; d++ {
		m[d*(n+2)] = v[d]
	}
	return centerOf(g.args, ws, st, 1, m, n)
}
