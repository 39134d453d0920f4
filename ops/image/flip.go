package image

import (
	"fmt"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "flip",
		Doc: "Flips samples of any type along the W (horizontal), H (vertical) and D (depthwise) axes of their " +
			"layout (HWC, CHW, DHWC, CDHW, FHWC, FCHW, FDHWC, FCDHW, ...; no layout: HWC). Samples with no " +
			"elements pass through.",
		Sequences: engine.PerFrame, Volumetric: true,
		Backends:  map[string]engine.BackendFacts{"gpu": gpuHWCu8},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"},
		Args: []engine.ArgSpec{
			{Name: "horizontal", Type: engine.ArgInt, Default: 1, TensorInput: true, Doc: "flip horizontally when nonzero"},
			{Name: "vertical", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip vertically when nonzero"},
			{Name: "depthwise", Type: engine.ArgInt, Default: 0, TensorInput: true, Doc: "flip along D (volumes) when nonzero"},
		},
	})
	engine.RegisterBackend("flip", "cpu", func(a *engine.Args) (engine.Operator, error) { return &flipOp{args: a}, nil })
}

type flipOp struct{ args *engine.Args }

type flipState struct{ flip []bool }

func (o *flipOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.IsDynamic() {
		return []engine.TensorMeta{m}, nil // a python_function's output: checked per sample
	}
	if m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of a numeric type, got %s", m.DType)
	}
	if m.Layout != "" {
		if _, err := flipAxes(m.Layout, len(m.Layout)); err != nil {
			return nil, o.args.Invalidf("%v", err)
		}
	}
	return []engine.TensorMeta{m}, nil
}

// flipAxes finds the W, H and D axes of a layout ("" stands for HWC); -1 for an absent
// one.
func flipAxes(layout string, ndim int) ([3]int, error) {
	if layout == "" {
		if ndim != 3 {
			return [3]int{}, fmt.Errorf("a %d-d input without a layout: give its layout (e.g. CHW, DHWC)", ndim)
		}
		layout = "HWC"
	}
	ax := [3]int{strings.IndexByte(layout, 'W'), strings.IndexByte(layout, 'H'), strings.IndexByte(layout, 'D')}
	if ax[0] < 0 && ax[1] < 0 && ax[2] < 0 {
		return ax, fmt.Errorf("layout %q has none of the W, H, D axes flip works on", layout)
	}
	return ax, nil
}

func (o *flipOp) NewWorkerState() any { return &flipState{} }

// TakesDynamicInputs: flip reads its input's type, shape and layout per sample, so it
// may follow a python_function (whose output type is known only when it runs).
func (o *flipOp) TakesDynamicInputs() bool { return true }

func (o *flipOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	ws.Out[0].DType = in.DType // a python_function's output: known per sample (Run checks the layout)
	ws.Out[0].SetShape(in.Shape...)
	ws.Out[0].Layout = in.Layout
	return nil
}

// flags are the sample's horizontal and vertical flips.
func (o *flipOp) flags(ws *engine.Workspace) (h, v bool, err error) {
	if h, err = o.args.BoolAt(ws, "horizontal"); err != nil {
		return
	}
	v, err = o.args.BoolAt(ws, "vertical")
	return
}

func (o *flipOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	fh, fv, err := o.flags(ws)
	if err != nil {
		return err
	}
	fd, err := o.args.BoolAt(ws, "depthwise")
	if err != nil {
		return err
	}
	ax, err := flipAxes(in.Layout, len(in.Shape))
	if err != nil {
		return o.args.DataErrorf(ws, "%v", err)
	}
	if numElements(in.Shape) == 0 {
		return nil
	}
	if in.DType == engine.UInt8 && len(in.Shape) == 3 && ax[0] == 1 && ax[1] == 0 {
		return imaging.Flip(ws.Out[0].Data, in.Data, in.Shape[1], in.Shape[0], in.Shape[2], fh, fv)
	}
	st := ws.State.(*flipState)
	st.flip = st.flip[:0]
	for range in.Shape {
		st.flip = append(st.flip, false)
	}
	for k, on := range [3]bool{fh, fv, fd} {
		if on && ax[k] >= 0 {
			st.flip[ax[k]] = true
		}
	}
	return imaging.FlipND(ws.Out[0].Data, in.Data, in.Shape, in.DType.Size(), st.flip)
}
