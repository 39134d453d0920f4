package tensor

import "github.com/godali/godali/engine"

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "expand_dims",
		Doc:       "Inserts dimensions of extent 1 at axes, which index the output and must be >= 0 (DALI's fn.expand_dims). The output keeps the input's layout, with new_axis_names for the new dimensions; without new_axis_names the output has no layout (unless no dimension is added).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "axes", Type: engine.ArgIntList, Required: true, Doc: "indices, in the output, of the new dimensions"},
			{Name: "new_axis_names", Type: engine.ArgString, Default: "", Doc: "layout names of the new dimensions, one character each"},
		},
	})
	engine.RegisterBackend("expand_dims", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if n := a.String("new_axis_names"); n != "" && len(n) != len(a.Ints("axes")) {
			return nil, a.Errorf("new_axis_names", "Specified %d new dimensions, but layout contains only %d new dimension names (%q)", len(a.Ints("axes")), len(n), n)
		}
		for _, ax := range a.Ints("axes") {
			if ax < 0 {
				return nil, a.Errorf("axes", "Axis value can't be negative, got %d", ax)
			}
		}
		return &dimsOp{args: a, kind: "expand_dims"}, nil
	})
}
