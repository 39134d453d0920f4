package tensor

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "cat",
		Doc: "Concatenates the inputs along an existing axis (DALI's fn.cat): every input sample " +
			"must have the same number of dimensions, the same type and the same extents except " +
			"along axis. The layout is kept (inputs with layouts must agree).",
		MinInputs: 1, MaxInputs: maxJoinInputs, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "axis", Type: engine.ArgInt, Default: 0, Doc: "the axis to join along, in [-ndim, ndim-1]"},
			{Name: "axis_name", Type: engine.ArgString, Default: "", Doc: "the axis to join along, by layout name (instead of axis)"},
		},
	})
	engine.RegisterBackend("cat", "cpu", func(a *engine.Args) (engine.Operator, error) { return newJoin(a, false) })
}
