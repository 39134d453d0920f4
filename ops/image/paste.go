package image

import (
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "paste",
		Doc: "Pastes each HWC uint8 image onto a larger canvas filled with fill_value: the canvas is " +
			"int(ratio * side) on each side (at least min_canvas_size), and the image's top-left corner sits at " +
			"int(paste_x * (canvas width - width)), int(paste_y * (canvas height - height)).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, HostOnly: true,
		InputLayouts: []string{"HWC"}, InputDtypes: []engine.DType{engine.UInt8}, InputDoc: "e.g. from a decoder",
		Args: []engine.ArgSpec{
			{Name: "ratio", Type: engine.ArgFloat, Required: true, TensorInput: true, Doc: "canvas side / image side, >= 1"},
			{Name: "paste_x", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "horizontal position of the image in the canvas, 0 (left) to 1 (right)"},
			{Name: "paste_y", Type: engine.ArgFloat, Default: 0.5, TensorInput: true, Doc: "vertical position of the image in the canvas, 0 (top) to 1 (bottom)"},
			{Name: "fill_value", Type: engine.ArgIntList, Required: true, Doc: "the canvas color: one value or one per channel"},
			{Name: "min_canvas_size", Type: engine.ArgFloat, Default: 0.0, TensorInput: true, Doc: "minimum canvas side, in pixels"},
		},
	})
	engine.RegisterBackend("paste", "cpu", func(a *engine.Args) (engine.Operator, error) {
		fill := a.Ints("fill_value")
		if len(fill) == 0 {
			return nil, a.Errorf("fill_value", "must not be empty")
		}
		for _, v := range fill {
			if v < 0 || v > 255 {
				return nil, a.Errorf("fill_value", "values must be in [0, 255] for uint8 images, got %v", fill)
			}
		}
		if !a.AnyPerSample("ratio") && a.Float("ratio") < 1 {
			return nil, a.Errorf("ratio", "ratio of less than 1 is not supported, got %g", a.Float("ratio"))
		}
		if err := a.CheckExtentArgs("ratio", "min_canvas_size"); err != nil {
			return nil, err
		}
		if !a.AnyPerSample("min_canvas_size") && a.Float("min_canvas_size") < 0 {
			return nil, a.Errorf("min_canvas_size", "min_canvas_size_ of less than 0 is not supported, got %g", a.Float("min_canvas_size"))
		}
		for _, n := range []string{"paste_x", "paste_y"} {
			if v := a.Float(n); !a.AnyPerSample(n) && !(v >= 0 && v <= 1) {
				return nil, a.Errorf(n, "must be in range [0, 1], got %g", v)
			}
		}
		return &pasteOp{args: a, fill: fill}, nil
	})
}

type pasteOp struct {
	args *engine.Args
	fill []int64
}

type pasteState struct{ x, y int }

func (o *pasteOp) NewWorkerState() any { return &pasteState{} }

func (o *pasteOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if c := in[0].Shape[2]; c >= 0 && len(o.fill) != 1 && len(o.fill) != c {
		return nil, o.args.Errorf("fill_value", "needs one value or one per channel (%d), got %v", c, o.fill)
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "HWC", Shape: []int{-1, -1, in[0].Shape[2]}}}, nil
}

// arg reads a per-sample float argument and checks it against [lo, hi].
func (o *pasteOp) arg(ws *engine.Workspace, name string, lo, hi float64, msg string) (float64, error) {
	v, err := o.args.FloatAt(ws, name)
	if err != nil {
		return 0, err
	}
	if !(v >= lo && v <= hi) {
		return 0, o.args.ArgDataErrorf(ws, name, msg+", got %g", v)
	}
	return v, nil
}

func (o *pasteOp) Setup(ws *engine.Workspace) error {
	st := ws.State.(*pasteState)
	h, w, c := ws.In[0].Shape[0], ws.In[0].Shape[1], ws.In[0].Shape[2]
	if len(o.fill) != 1 && len(o.fill) != c {
		return o.args.DataErrorf(ws, "fill_value has %d values for an image of %d channels", len(o.fill), c)
	}
	ratio, err := o.arg(ws, "ratio", 1, math.Inf(1), "ratio of less than 1 is not supported")
	if err != nil {
		return err
	}
	px, err := o.arg(ws, "paste_x", 0, 1, "must be in range [0, 1]")
	if err != nil {
		return err
	}
	py, err := o.arg(ws, "paste_y", 0, 1, "must be in range [0, 1]")
	if err != nil {
		return err
	}
	minSide, err := o.arg(ws, "min_canvas_size", 0, math.Inf(1), "min_canvas_size_ of less than 0 is not supported")
	if err != nil {
		return err
	}
	a := o.args
	ch, err := a.Extent(ws, "ratio", float64(h)*ratio, nil)
	if err != nil {
		return err
	}
	cw, err := a.Extent(ws, "ratio", float64(w)*ratio, nil)
	if err != nil {
		return err
	}
	side, err := a.Extent(ws, "min_canvas_size", minSide, nil)
	if err != nil {
		return err
	}
	ch, cw = max(ch, side, h), max(cw, side, w)
	if n, ok := engine.SampleBytes(engine.UInt8, []int{ch, cw, c}); !ok || n > 1<<34 {
		return a.DataErrorf(ws, "the canvas %dx%d is too large", cw, ch)
	}
	st.y, st.x = int(py*float64(ch-h)), int(px*float64(cw-w))
	ws.Out[0].SetShape(ch, cw, c)
	return nil
}

func (o *pasteOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*pasteState)
	in, out := ws.In[0], ws.Out[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	cw := out.Shape[1]
	for i := 0; i < len(out.Data); i++ {
		out.Data[i] = byte(o.fill[(i%c)%len(o.fill)])
	}
	for y := 0; y < h; y++ {
		dst := ((st.y+y)*cw + st.x) * c
		copy(out.Data[dst:dst+w*c], in.Data[y*w*c:(y+1)*w*c])
	}
	return nil
}
