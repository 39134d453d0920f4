package tensor

import (
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "per_frame",
		Doc: "Marks a value as one entry per frame (DALI's fn.per_frame): its layout gets a leading " +
			"\"F\", so that an operator applied to sequences takes entry f of it for frame f (e.g. " +
			"fn.rotate(video, angle=fn.per_frame(angles))). The data is unchanged.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "replace", Type: engine.ArgBool, Default: false, Doc: "replace an existing leading layout letter with F instead of adding one"},
		},
	})
	engine.RegisterBackend("per_frame", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &perFrameOp{args: a}, nil
	})
}

type perFrameOp struct{ args *engine.Args }

func (o *perFrameOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	lay := in[0].Layout
	if len(in[0].Shape) == 0 {
		return nil, o.args.Invalidf("Cannot mark zero-dimensional input as a sequence")
	}
	if o.args.Bool("replace") && lay != "" {
		lay = lay[1:]
	} else if lay != "" && !strings.HasPrefix(lay, "F") {
		// DALI's rule: without replace=True a layout must already start with F.
		return nil, o.args.Invalidf("Per-frame argument input must be a sequence. The input layout should start with 'F', got %q (replace=True replaces its first letter)", lay)
	}
	if strings.HasPrefix(lay, "F") {
		return []engine.TensorMeta{in[0]}, nil
	}
	if lay == "" && len(in[0].Shape) > 1 {
		lay = strings.Repeat("*", len(in[0].Shape)-1)
	}
	return []engine.TensorMeta{{DType: in[0].DType, Layout: "F" + lay, Shape: in[0].Shape}}, nil
}

func (o *perFrameOp) Setup(ws *engine.Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}

func (o *perFrameOp) Run(ws *engine.Workspace) error { return copyRun(ws) }
