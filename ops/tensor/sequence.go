package tensor

import (
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "sequence_rearrange",
		Doc: "Reorders, repeats or drops the frames of sequences (DALI's fn.sequence_rearrange): " +
			"output frame i is input frame new_order[i]. The input's outermost dimension is the frames.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "new_order", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "input frame of each output frame (0-based); may repeat or omit frames"},
		},
	})
	engine.RegisterBackend("sequence_rearrange", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.AnyPerSample("new_order") && len(a.Ints("new_order")) == 0 {
			return nil, a.Errorf("new_order", "Empty result sequences are not allowed")
		}
		return &rearrangeOp{args: a}, nil
	})
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

type rearrangeOp struct {
	args *engine.Args
}

// rearrangeState is a worker's order for its current sample, from Setup to Run.
type rearrangeState struct {
	order []int
	buf   []float64
}

func (o *rearrangeOp) NewWorkerState() any { return &rearrangeState{} }

func (o *rearrangeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].Shape != nil && len(in[0].Shape) < 1 {
		return nil, o.args.Errorf("input", "expected sequences (at least one dimension), got a scalar")
	}
	if l := in[0].Layout; l != "" && l[0] != 'F' {
		return nil, o.args.Errorf("input", "Expected sequence as the input, where outermost dimension "+
			"represents frames dimension `F`, got data with layout = %q", l)
	}
	if m, ok := o.args.ArgInputMeta("new_order"); ok && m.Shape != nil && len(m.Shape) != 1 {
		return nil, o.args.Errorf("new_order", "Input with dimension %d cannot be converted to dimension 1", len(m.Shape))
	}
	m := engine.TensorMeta{DType: in[0].DType, Layout: in[0].Layout, Shape: append([]int(nil), in[0].Shape...)}
	if len(m.Shape) > 0 {
		m.Shape[0] = -1
		if !o.args.AnyPerSample("new_order") {
			m.Shape[0] = len(o.args.Ints("new_order"))
		}
	}
	return []engine.TensorMeta{m}, nil
}

func (o *rearrangeOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if len(in.Shape) < 1 {
		return o.args.DataErrorf(ws, "expected a sequence, got a scalar")
	}
	st := ws.State.(*rearrangeState)
	var err error
	if st.buf, err = o.args.FloatsAt(ws, "new_order", st.buf); err != nil { // the constant, or this sample's
		return err
	}
	if sh, ok := o.args.ArgShapeAt(ws, "new_order"); ok && len(sh) != 1 {
		return o.args.ArgDataErrorf(ws, "new_order", "Input with dimension %d cannot be converted to dimension 1", len(sh))
	}
	if len(st.buf) == 0 {
		return o.args.ArgDataErrorf(ws, "new_order", "Empty `new_order` for sample %d is not allowed", ws.Sample)
	}
	st.order = st.order[:0]
	for k, v := range st.buf {
		f := int(v)
		if f < 0 || f >= in.Shape[0] || float64(f) != v {
			return o.args.ArgDataErrorf(ws, "new_order", "new_order[%d] must be between 0 and input_sequence_length = %d "+
				"for sample %d, but it is: %v", k, in.Shape[0], ws.Sample, v)
		}
		st.order = append(st.order, f)
	}
	ws.Out[0].SetShape(in.Shape...)
	ws.Out[0].Shape[0] = len(st.order)
	return nil
}

func (o *rearrangeOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	fb := in.NumBytes() / max(in.Shape[0], 1)
	for i, f := range ws.State.(*rearrangeState).order {
		copy(ws.Out[0].Data[i*fb:(i+1)*fb], in.Data[f*fb:(f+1)*fb])
	}
	return nil
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
