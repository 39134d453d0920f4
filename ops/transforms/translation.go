package transforms

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transforms.translation",
		Doc: "Produces a translation affine transform [I | offset] (float32 [ndim, ndim+1]), or applies it to " +
			"the input transform. The number of dimensions is offset's length.",
		Sequences: engine.Sequences{PerFrame: true, FramesFromArgs: true},
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"transform"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "offset", Type: engine.ArgFloatList, Required: true, TensorInput: true, Doc: "the translation, one value per dimension"},
			reverseOrderArg, seedArg,
		},
	})
	engine.RegisterBackend("transforms.translation", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return newTransformOp(a, translation{a}, "offset"), nil
	})
}

type translation struct{ args *engine.Args }

func (g translation) dims(ws *engine.Workspace, st *state) (int, error) {
	v, err := g.args.FloatsAt(ws, "offset", st.vals[0])
	if err != nil {
		return 0, err
	}
	st.vals[0] = v
	if len(v) == 0 {
		return 0, argError(g.args, ws, "offset", "must not be empty")
	}
	return len(v), nil
}

func (g translation) matrix(ws *engine.Workspace, st *state, n int, m []float64) error {
	v, err := broadcastTo(g.args, ws, "offset", st.vals[0], n)
	if err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		m[r*(n+1)+n] = v[r]
	}
	return nil
}
