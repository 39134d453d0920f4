package image

import (
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "pad",
		Doc: "Pads each sample at the end of the chosen axes with fill_value, as DALI does: an axis " +
			"grows to shape (never shrinks), then to a multiple of align. DALI's default of padding " +
			"to the batch's largest extent (shape -1) is not supported: give shape or align.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"},
		Args: []engine.ArgSpec{
			{Name: "axes", Type: engine.ArgIntList, Doc: "axes to pad (negative count from the end); default all"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "axes to pad, as layout letters (e.g. \"HW\"); exclusive with axes"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "minimum output extent of each padded axis, in axes order (may come per sample)"},
			{Name: "align", Type: engine.ArgIntList, Doc: "round each padded extent up to a multiple of this (one value, or one per axis)"},
			{Name: "fill_value", Type: engine.ArgFloat, Default: 0.0, Doc: "value of the padding"},
		},
	})
	engine.RegisterBackend("pad", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if !a.Given("shape") && !a.Has("align") {
			return nil, a.Errorf("shape", "give shape (or align): padding to the batch's largest extent is not supported")
		}
		for _, v := range a.Ints("align") {
			if v < 1 {
				return nil, a.Errorf("align", "must be >= 1, got %v", a.Ints("align"))
			}
		}
		return &padOp{args: a}, nil
	})
}

type padOp struct {
	args *engine.Args
	axes []int
	fill []byte // one element of fill_value in the input's type
}

func (o *padOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input must be a tensor of known rank and type, got %s %v", m.DType, m.Shape)
	}
	all := make([]int, len(m.Shape))
	for i := range all {
		all[i] = i
	}
	axes, _, err := resolveAxesOrdered(o.args, len(m.Shape), m.Layout, all)
	if err != nil {
		return nil, err
	}
	o.axes = axes
	if s := o.args.Ints("shape"); o.args.Has("shape") && len(s) != len(axes) {
		return nil, o.args.Errorf("shape", "needs one extent per padded axis (%d), got %v", len(axes), s)
	}
	if al := o.args.Ints("align"); len(al) != 0 && len(al) != 1 && len(al) != len(axes) {
		return nil, o.args.Errorf("align", "needs one value or one per padded axis (%d), got %v", len(axes), al)
	}
	o.fill = make([]byte, m.DType.Size())
	engine.WriteScalarSat(o.fill, m.DType, o.args.Float("fill_value"))
	shape := make([]int, len(m.Shape))
	for i := range shape {
		shape[i] = -1
	}
	return []engine.TensorMeta{{DType: m.DType, Layout: m.Layout, Shape: shape}}, nil
}

func (o *padOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	out := append(ws.Out[0].Shape[:0], in.Shape...)
	var buf [8]int
	want, err := o.args.IntsAt(ws, "shape", buf[:0])
	if err != nil {
		return err
	}
	if len(want) > 0 && len(want) != len(o.axes) {
		return o.args.ArgDataErrorf(ws, "shape", "needs %d extents, got %v", len(o.axes), want)
	}
	for j, d := range o.axes {
		ext := in.Shape[d]
		w := int64(-1)
		if len(want) > 0 {
			w = int64(want[j])
		}
		if w > 1<<31 {
			return o.args.ArgDataErrorf(ws, "shape", "extent %d is too large", w)
		}
		if int(w) > ext {
			ext = int(w)
		}
		if al := o.args.Ints("align"); len(al) > 0 {
			a := int(al[0])
			if len(al) > 1 {
				a = int(al[j])
			}
			ext = (ext + a - 1) / a * a
		}
		out[d] = ext
	}
	ws.Out[0].Shape = out
	if lim := ws.Limits; lim != nil && lim.MaxImagePixels > 0 && int64(numElements(out)) > 64*lim.MaxImagePixels {
		return o.args.DataErrorf(ws, "padded shape %v is too large", out)
	}
	return nil
}

func (o *padOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	sz := in.DType.Size()
	for i := 0; i+sz <= len(out.Data); i += sz {
		copy(out.Data[i:i+sz], o.fill)
	}
	n := len(in.Shape)
	if n == 0 {
		copy(out.Data, in.Data)
		return nil
	}
	if numElements(in.Shape) == 0 {
		return nil
	}
	// Copy the input row by row (rows along the last axis).
	row := in.Shape[n-1] * sz
	rows := numElements(in.Shape[:n-1])
	coord := make([]int, n) // small; no per-element work
	for r := 0; r < rows; r++ {
		// output offset of this row
		off, stride := 0, out.Shape[n-1]
		for d := n - 2; d >= 0; d-- {
			off += coord[d] * stride
			stride *= out.Shape[d]
		}
		copy(out.Data[off*sz:off*sz+row], in.Data[r*row:(r+1)*row])
		for d := n - 2; d >= 0; d-- {
			coord[d]++
			if coord[d] < in.Shape[d] {
				break
			}
			coord[d] = 0
		}
	}
	return nil
}
