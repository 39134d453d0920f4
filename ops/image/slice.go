package image

import (
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/ops/internal/window"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "slice",
		Doc: "Cuts a window out of each sample, any type and number of dimensions: the window's anchor and shape " +
			"come as inputs (relative by default, along axis_names WH: (x, y) values as random_bbox_crop gives " +
			"them) or as the start/rel_start and end/rel_end/shape/rel_shape arguments; axes not listed are " +
			"kept whole. A window leaving the input is an error, padded with fill_values, or trimmed, as " +
			"out_of_bounds_policy says.",
		MinInputs: 1, MaxInputs: 3, Outputs: []string{"output"}, HostOnly: true, Volumetric: true,
		Args: append(append([]engine.ArgSpec{}, window.SliceArgs...),
			engine.ArgSpec{Name: "dtype", Type: engine.ArgDType, Doc: "output type (default: the input's); values convert as cast does"}),
	})
	engine.RegisterBackend("slice", "cpu", func(a *engine.Args) (engine.Operator, error) {
		s, err := window.ParseSlice(a)
		if err != nil {
			return nil, err
		}
		if a.Has("dtype") && (a.DType("dtype").Size() == 0) {
			return nil, a.Errorf("dtype", "must be a numeric type")
		}
		return &sliceOp{args: a, slice: s}, nil
	})
}

type sliceOp struct {
	args  *engine.Args
	slice *window.Slice
	in    engine.DType
	out   engine.DType
	fill  []byte // fill_values in the output type
	run   func(dst, src []byte, n int)
}

type sliceState struct{ win window.SliceWindow }

func (o *sliceOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := o.slice.CheckInputs(in); err != nil {
		return nil, err
	}
	m := in[0]
	if m.DType.Size() == 0 {
		return nil, o.args.Invalidf("input 0 must be a tensor of a numeric type, got %s", m.DType)
	}
	o.in, o.out = m.DType, m.DType
	if o.args.Has("dtype") {
		o.out = o.args.DType("dtype")
	}
	o.run = convertRun(o.in, o.out)
	sz := o.out.Size()
	o.fill = make([]byte, sz*len(o.slice.Fill))
	for i, f := range o.slice.Fill {
		engine.WriteScalarSat(o.fill[i*sz:], o.out, f)
	}
	var shape []int
	if m.Shape != nil {
		shape = make([]int, len(m.Shape))
		for i := range shape {
			shape[i] = -1
		}
	}
	return []engine.TensorMeta{{DType: o.out, Layout: m.Layout, Shape: shape}}, nil
}

func (o *sliceOp) NewWorkerState() any { return &sliceState{} }

func (o *sliceOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	st := ws.State.(*sliceState)
	if err := o.slice.Window(ws, in.Shape, in.Layout, &st.win); err != nil {
		return err
	}
	if len(o.slice.Fill) > 1 && st.win.OutOfBounds {
		c := channelAxis(in.Layout, len(in.Shape))
		if c < 0 || st.win.Size[c] > len(o.slice.Fill) {
			return o.args.ArgDataErrorf(ws, "fill_values", "%d values, one per channel, but the window has %v channels (layout %q)", len(o.slice.Fill), st.win.Size, in.Layout)
		}
	}
	out := ws.Out[0]
	out.DType = o.out
	out.Layout = in.Layout
	out.SetShape(st.win.Size...)
	return nil
}

// channelAxis is the layout's C axis, else the last one.
func channelAxis(layout string, ndim int) int {
	if c := strings.IndexByte(layout, 'C'); c >= 0 && len(layout) == ndim {
		return c
	}
	return ndim - 1
}

func (o *sliceOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	st := ws.State.(*sliceState)
	return imaging.SliceND(out.Data, o.out.Size(), in.Data, o.in.Size(), in.Shape, st.win.Start, st.win.Size,
		o.fill, channelAxis(in.Layout, len(in.Shape)), o.run)
}

// convertRun copies n elements converting from one type to the other as cast does
// (saturating; floats round to nearest).
func convertRun(from, to engine.DType) func(dst, src []byte, n int) {
	if from == to {
		sz := from.Size()
		return func(dst, src []byte, n int) { copy(dst[:n*sz], src[:n*sz]) }
	}
	fs, ts := from.Size(), to.Size()
	return func(dst, src []byte, n int) {
		for k := 0; k < n; k++ {
			engine.WriteScalarSat(dst[k*ts:], to, engine.ReadScalar(src[k*fs:], from))
		}
	}
}
