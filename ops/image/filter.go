package image

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	// DALI 2.4 names the operator filter; experimental.filter is its former, deprecated name.
	registerFilter("filter")
	engine.RegisterVariant("experimental.filter", "filter", "DALI's former name of filter. ")
}

func registerFilter(name string) {
	engine.RegisterSchema(&engine.Schema{
		Name: name,
		Doc: "Correlates each sample with its filter (DALI's fn." + name + "; a correlation: the filter is " +
			"not flipped): out[p] = sum_t filter[t] * in[p + t - anchor] over the spatial axes, each channel apart. " +
			"Input 1 is the filter, FLOAT, one extent per spatial axis (a batch: one filter per sample; with an F " +
			"input, an F-first filter of one 2-D filter per frame); input 2, optional, a scalar per sample, is " +
			"fill_value. The spatial axes are the layout's except leading F and/or C and a trailing C (every axis " +
			"without a layout): 2 or 3 of them (HW, HWC, CHW, FHWC, DHWC, ...). Inputs UINT8, INT8, UINT16, INT16, " +
			"UINT32, INT32, FLOAT16 or FLOAT; computed in floating point; the output is the input's type (rounded " +
			"to nearest even, saturated) or dtype=FLOAT.",
		MinInputs: 2, MaxInputs: 3, Outputs: []string{"output"}, HostOnly: true, Volumetric: true,
		InputDtypes: []engine.DType{engine.UInt8, engine.Int8, engine.UInt16, engine.Int16, engine.UInt32, engine.Int32, engine.Float16, engine.Float32},
		Args: []engine.ArgSpec{
			{Name: "anchor", Type: engine.ArgIntList, Default: []int64{-1}, TensorInput: true,
				Doc: "where the filter sits over each output position, per filter axis in [0, extent); -1: extent/2 (centred for odd sizes); one value or one per axis; ignored in \"valid\" mode"},
			{Name: "border", Type: engine.ArgString, Default: "reflect_101",
				Doc: "how positions outside the sample read: reflect_101 (dcb|abcd), reflect_1001 (cba|abcd), wrap, clamp, constant (fill_value); DALI's short names 101 and 1001 too"},
			{Name: "mode", Type: engine.ArgString, Default: "same",
				Doc: "\"same\": the output has the input's shape; \"valid\": only positions where the filter lies inside the input (each spatial extent shrinks by filter extent - 1)"},
			{Name: "fill_value", Type: engine.ArgFloat, Default: 0.0, TensorInput: true,
				Doc: "the value outside the sample with border=\"constant\" (also the optional input 2)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: the input's (default) or FLOAT"},
		},
	})
	engine.RegisterBackend(name, "cpu", newFilter)
}

var filterBorders = map[string]imaging.Border{
	"reflect_101": imaging.BorderReflect101, "reflect_1001": imaging.BorderReflect1001,
	"101": imaging.BorderReflect101, "1001": imaging.BorderReflect1001, // DALI's short names
	"wrap": imaging.BorderWrap, "clamp": imaging.BorderClamp, "constant": imaging.BorderConstant,
}

type filterOp struct {
	args   *engine.Args
	out    engine.DType // 0: the input's
	border imaging.Border
	valid  bool
}

func newFilter(a *engine.Args) (engine.Operator, error) {
	o := &filterOp{args: a}
	b, ok := filterBorders[a.String("border")]
	if !ok {
		return nil, a.Errorf("border", "unknown border %q: expected reflect_101, reflect_1001, wrap, clamp or constant", a.String("border"))
	}
	o.border = b
	switch a.String("mode") {
	case "same":
	case "valid":
		o.valid = true
	default:
		return nil, a.Errorf("mode", "unknown mode %q: expected \"same\" or \"valid\"", a.String("mode"))
	}
	if a.Given("dtype") {
		o.out = a.DType("dtype")
	}
	return o, nil
}

func (o *filterOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	a := o.args
	m := in[0]
	if m.Shape == nil {
		return nil, a.Invalidf("input 0 must have a known number of dimensions, got %s %v", m.DType, m.Shape)
	}
	axes, msg := spatialAxes(m.Layout, len(m.Shape))
	if msg != "" {
		return nil, a.Invalidf("input %s %v: %s", m.Layout, m.Shape, msg)
	}
	if len(axes) < 2 {
		return nil, a.Invalidf("input %s %v has %d spatial axis; the filter needs 2 or 3 (give the layout, e.g. HW or HWC)", m.Layout, m.Shape, len(axes))
	}
	if f := in[1]; f.DType != engine.Float32 {
		return nil, a.Invalidf("input 1 (the filter) must be FLOAT, got %s", f.DType)
	} else if f.Shape != nil && len(f.Shape) != len(axes) && !(len(f.Shape) == len(axes)+1 && m.Layout != "" && m.Layout[0] == 'F') {
		return nil, a.Invalidf("input 1 (the filter) must have %d dimensions, one per spatial axis of the %s input (or a leading F for a sequence), got %v", len(axes), m.Layout, f.Shape)
	}
	if len(in) > 2 && in[2].DType.Size() == 0 {
		return nil, a.Invalidf("input 2 (fill_value) must be a number, got %s", in[2].DType)
	}
	out := m
	if o.out != 0 {
		if o.out != m.DType && o.out != engine.Float32 {
			return nil, a.Errorf("dtype", "Output data type must be same as input, FLOAT or skipped (input %s, got %s)", m.DType, o.out)
		}
		out.DType = o.out
	}
	if o.valid {
		out.Shape = append([]int(nil), m.Shape...)
		for _, d := range axes {
			out.Shape[d] = -1
		}
	}
	return []engine.TensorMeta{out}, nil
}

type filterState struct {
	corr           imaging.Correlation
	anchor, fshape []int
	win, src, dst  []float64
	outSp          []int
}

func (o *filterOp) NewWorkerState() any { return &filterState{} }

// filterAt is this sample's filter for sequence frame f (the whole filter unless it is
// per frame) and its shape.
func (o *filterOp) filterAt(ws *engine.Workspace, k, frames, f int, st *filterState) ([]int, error) {
	fl := ws.In[1]
	sh := fl.Shape
	off := 0
	if len(sh) == k+1 {
		if sh[0] != frames {
			return nil, o.args.DataErrorf(ws, "the per-frame filter has %d frames, the sample %d", sh[0], frames)
		}
		sh = sh[1:]
		off = f
	} else if len(sh) != k {
		return nil, o.args.DataErrorf(ws, "the filter %v must have %d dimensions, one per spatial axis", fl.Shape, k)
	}
	n := 1
	for _, e := range sh {
		n *= e
	}
	if n == 0 {
		return nil, o.args.DataErrorf(ws, "Filter of volume zero is not supported, got a filter of shape %v", fl.Shape)
	}
	st.win = growF64(st.win, n)
	raw := fl.Data[off*n*4:]
	for i := range st.win {
		st.win[i] = float64(math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24))
	}
	return sh, nil
}

// anchorFor resolves the anchor argument against the filter's shape.
func (o *filterOp) anchorFor(ws *engine.Workspace, fshape []int, st *filterState) ([]int, error) {
	a := o.args
	v, err := a.IntsAt(ws, "anchor", st.anchor)
	if err != nil {
		return nil, err
	}
	if len(v) == 1 {
		for len(v) < len(fshape) {
			v = append(v, v[0])
		}
	}
	st.anchor = v
	if len(v) != len(fshape) {
		return nil, a.ArgDataErrorf(ws, "anchor", "expected 1 or %d values (one per filter axis), got %v", len(fshape), v)
	}
	for d, x := range v {
		if x < -1 || x >= fshape[d] {
			return nil, a.ArgDataErrorf(ws, "anchor", "Anchor must lie within the filter. Got anchor %v with a filter of shape %v", v, fshape)
		}
		if x == -1 {
			v[d] = fshape[d] / 2
		}
	}
	return v, nil
}

func (o *filterOp) fill(ws *engine.Workspace) (float64, error) {
	if len(ws.In) > 2 {
		f := ws.In[2]
		n := 1
		for _, d := range f.Shape {
			n *= d
		}
		if n != 1 {
			return 0, o.args.DataErrorf(ws, "input 2 (fill_value) must be one scalar per sample, got shape %v", f.Shape)
		}
		return engine.ReadScalar(f.Data, f.DType), nil
	}
	return o.args.FloatAt(ws, "fill_value")
}

// layoutSplit gives the planes filtered apart (leading F/C), the spatial axes and the
// channels (trailing C) of a sample.
func layoutSplit(layout string, shape []int) (outer int, axes []int, inner int, msg string) {
	axes, msg = spatialAxes(layout, len(shape))
	if msg != "" {
		return 0, nil, 0, msg
	}
	outer, inner = 1, 1
	for _, d := range shape[:axes[0]] {
		outer *= d
	}
	for _, d := range shape[axes[len(axes)-1]+1:] {
		inner *= d
	}
	return outer, axes, inner, ""
}

func (o *filterOp) Setup(ws *engine.Workspace) error {
	a := o.args
	in, out := ws.In[0], ws.Out[0]
	out.Layout = in.Layout
	out.SetShape(in.Shape...)
	if !o.valid {
		return nil
	}
	_, axes, _, msg := layoutSplit(in.Layout, in.Shape)
	if msg != "" {
		return a.DataErrorf(ws, "input %s %v: %s", in.Layout, in.Shape, msg)
	}
	fs := ws.In[1].Shape
	if len(fs) == len(axes)+1 {
		fs = fs[1:]
	}
	if len(fs) != len(axes) {
		return a.DataErrorf(ws, "the filter %v must have %d dimensions, one per spatial axis", ws.In[1].Shape, len(axes))
	}
	for i, d := range axes {
		if fs[i] < 1 {
			return a.DataErrorf(ws, "Filter of volume zero is not supported, got a filter of shape %v", ws.In[1].Shape)
		}
		out.Shape[d] = in.Shape[d] - fs[i] + 1
		if out.Shape[d] < 0 {
			return a.DataErrorf(ws, "the filter %v is bigger than the sample %v; not allowed with mode=\"valid\"", ws.In[1].Shape, in.Shape)
		}
	}
	return nil
}

func (o *filterOp) Run(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*filterState)
	in, out := ws.In[0], ws.Out[0]
	outer, axes, inner, msg := layoutSplit(in.Layout, in.Shape)
	if msg != "" {
		return a.DataErrorf(ws, "input %s %v: %s", in.Layout, in.Shape, msg)
	}
	k := len(axes)
	frames, perFrame := 1, len(ws.In[1].Shape) == k+1
	if perFrame {
		if in.Layout == "" || in.Layout[0] != 'F' {
			return a.DataErrorf(ws, "a filter of %d dimensions (per frame) needs an F-first input, got %q", k+1, in.Layout)
		}
		frames = in.Shape[0]
	}
	fill, err := o.fill(ws)
	if err != nil {
		return err
	}
	c := &st.corr
	c.Shape = append(c.Shape[:0], in.Shape[axes[0]:axes[0]+k]...)
	c.Inner, c.Border, c.Fill, c.Valid = inner, o.border, fill, o.valid
	nIn, nOut := len(in.Data)/max(in.DType.Size(), 1), len(out.Data)/max(out.DType.Size(), 1)
	if outer == 0 || nOut == 0 {
		return nil
	}
	planeIn, planeOut := nIn/outer, nOut/outer
	st.src, st.dst = growF64(st.src, planeIn), growF64(st.dst, planeOut)
	isz, osz := in.DType.Size(), out.DType.Size()
	lastF := -1
	for p := 0; p < outer; p++ {
		f := 0
		if perFrame {
			f = p * frames / outer // the frame of plane p (F is the outermost axis)
		}
		if f != lastF {
			fs, err := o.filterAt(ws, k, frames, f, st)
			if err != nil {
				return err
			}
			st.fshape = append(st.fshape[:0], fs...)
			if c.Anchor, err = o.anchorFor(ws, st.fshape, st); err != nil {
				return err
			}
			c.Win, c.FShape = st.win, st.fshape
			lastF = f
		}
		for i := range st.src {
			st.src[i] = engine.ReadScalar(in.Data[(p*planeIn+i)*isz:], in.DType)
		}
		if err := c.Run(st.dst, st.src); err != nil {
			return a.DataErrorf(ws, "%v", err)
		}
		dst := out.Data[p*planeOut*osz:]
		if out.DType.IsFloat() {
			for i, v := range st.dst {
				engine.WriteScalar(dst[i*osz:], out.DType, v)
			}
		} else {
			for i, v := range st.dst {
				engine.WriteScalarSat(dst[i*osz:], out.DType, math.RoundToEven(v))
			}
		}
	}
	return nil
}
