package image

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "tensor_resize",
		Doc: "Resizes tensors of any rank and numeric type along axes, as DALI's tensor_resize " +
			"(ONNX Resize's conventions): sizes gives the output extents, or scales the factors " +
			"(extent round(in * scale), the sampled region out / scale placed by alignment: 0 start, " +
			"0.5 centre, 1 end); output position d shows input point (d + 0.5) / scale - 0.5. " +
			"INTERP_NN, INTERP_LINEAR or INTERP_CUBIC (Keys, a = -0.5), edges repeated, filters " +
			"widened when shrinking with antialias. The output is the input's type (rounded, " +
			"saturated) or dtype=FLOAT.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "sizes", Type: engine.ArgFloatList, TensorInput: true, Doc: "output extents, one per resized axis"},
			{Name: "scales", Type: engine.ArgFloatList, TensorInput: true, Doc: "scale factors, one per resized axis (or one for all)"},
			{Name: "axes", Type: engine.ArgIntList, Doc: "the resized axes (negative from the end); default all"},
			{Name: "axis_names", Type: engine.ArgString, Doc: "the resized axes by layout letters (instead of axes)"},
			{Name: "alignment", Type: engine.ArgFloatList, Default: []float64{0.5}, TensorInput: true, Doc: "with scales: where the sampled region lies in the input, 0 (start) to 1 (end); one value or one per axis"},
			{Name: "interp_type", Type: engine.ArgInterpType, Default: "LINEAR", Doc: "INTERP_NN, INTERP_LINEAR or INTERP_CUBIC"},
			{Name: "antialias", Type: engine.ArgBool, Default: true, Doc: "widen the filter when shrinking (not INTERP_NN)"},
			{Name: "dtype", Type: engine.ArgDType, Doc: "output type: the input's (default) or FLOAT"},
		},
	})
	engine.RegisterBackend("tensor_resize", "cpu", func(a *engine.Args) (engine.Operator, error) { return newTensorResize(a) })
	engine.RegisterVariant("experimental.tensor_resize", "tensor_resize", "DALI's experimental name of tensor_resize. ")
}

type tensorResizeOp struct {
	args   *engine.Args
	interp imaging.Interp
	out    engine.DType
}

type tensorResizeState struct {
	sizes, align []float64
	axes         []int
	outShape     []int
	scale, off   []float64
	a, b         []float64
	shape        []int
}

func newTensorResize(a *engine.Args) (*tensorResizeOp, error) {
	if a.Given("sizes") == a.Given("scales") {
		return nil, a.Errorf("sizes", "give either sizes or scales")
	}
	if a.GivenConstant("axes") && a.Given("axis_names") {
		return nil, a.Errorf("axes", "give axes or axis_names, not both")
	}
	interp, err := imaging.ParseInterp(a.String("interp_type"))
	if err != nil || (interp != imaging.InterpNN && interp != imaging.InterpLinear && interp != imaging.InterpCubic && interp != imaging.InterpTriangular) {
		return nil, a.Errorf("interp_type", "expected INTERP_NN, INTERP_LINEAR or INTERP_CUBIC, got INTERP_%s", a.String("interp_type"))
	}
	o := &tensorResizeOp{args: a, interp: interp}
	if a.Given("dtype") {
		o.out = a.DType("dtype")
	}
	return o, nil
}

// resizedAxes are the axes the arguments select for an input of the layout and rank.
func (o *tensorResizeOp) resizedAxes(layout string, ndim int, buf []int) ([]int, error) {
	a := o.args
	axes := buf[:0]
	switch {
	case a.Given("axis_names"):
		for _, r := range a.String("axis_names") {
			i := strings.IndexRune(layout, r)
			if i < 0 {
				return nil, a.Errorf("axis_names", "axis %q is not in the input's layout %q", r, layout)
			}
			axes = append(axes, i)
		}
	case a.GivenConstant("axes"):
		for _, v64 := range a.Ints("axes") {
			v := int(v64)
			if v < 0 {
				v += ndim
			}
			if v < 0 || v >= ndim {
				return nil, a.Errorf("axes", "axis %d is out of range for %d dimensions", v, ndim)
			}
			axes = append(axes, v)
		}
	default:
		for i := 0; i < ndim; i++ {
			axes = append(axes, i)
		}
	}
	return axes, nil
}

func (o *tensorResizeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if m.Shape == nil || m.DType.Size() == 0 || m.DType == engine.Bool {
		return nil, o.args.Invalidf("input must be a numeric tensor of known rank, got %s %v", m.DType, m.Shape)
	}
	axes, err := o.resizedAxes(m.Layout, len(m.Shape), nil)
	if err != nil {
		return nil, err
	}
	out := m
	out.Shape = append([]int(nil), m.Shape...)
	for _, ax := range axes {
		out.Shape[ax] = -1
	}
	if o.out != 0 {
		if o.out != m.DType && o.out != engine.Float32 {
			return nil, o.args.Errorf("dtype", "expected the input's type (%s) or FLOAT, got %s", m.DType, o.out)
		}
		out.DType = o.out
	}
	return []engine.TensorMeta{out}, nil
}

func (o *tensorResizeOp) NewWorkerState() any { return &tensorResizeState{} }

// perAxis broadcasts one value to n, or checks that there are n.
func (o *tensorResizeOp) perAxis(ws *engine.Workspace, name string, v []float64, n int) ([]float64, error) {
	if len(v) == 1 {
		for len(v) < n {
			v = append(v, v[0])
		}
	}
	if len(v) != n {
		return nil, o.args.ArgDataErrorf(ws, name, "expected one value or %d (one per resized axis), got %d", n, len(v))
	}
	return v, nil
}

func (o *tensorResizeOp) Setup(ws *engine.Workspace) error {
	a := o.args
	st := ws.State.(*tensorResizeState)
	in := ws.In[0]
	var err error
	if st.axes, err = o.resizedAxes(in.Layout, len(in.Shape), st.axes); err != nil {
		return err
	}
	n := len(st.axes)
	byScale := a.Given("scales")
	name := "sizes"
	if byScale {
		name = "scales"
	}
	if st.sizes, err = a.FloatsAt(ws, name, st.sizes); err != nil {
		return err
	}
	vals, err := o.perAxis(ws, name, st.sizes, n)
	if err != nil {
		return err
	}
	st.sizes = vals
	if st.align, err = a.FloatsAt(ws, "alignment", st.align); err != nil {
		return err
	}
	if st.align, err = o.perAxis(ws, "alignment", st.align, n); err != nil {
		return err
	}
	st.outShape = append(st.outShape[:0], in.Shape...)
	st.scale, st.off = st.scale[:0], st.off[:0]
	for i, ax := range st.axes {
		ext := float64(in.Shape[ax])
		v := vals[i]
		var out int
		var scale, off float64
		if byScale {
			if !(v > 0) || math.IsInf(v, 0) || ext*v > 1<<30 {
				return a.ArgDataErrorf(ws, "scales", "expected positive finite factors, got %v", vals)
			}
			out = int(math.Round(ext * v))
			scale = v
			off = st.align[i] * (ext - float64(out)/scale)
		} else {
			if !(v >= 0) || v > 1<<30 {
				return a.ArgDataErrorf(ws, "sizes", "expected extents >= 0, got %v", vals)
			}
			out = int(math.Round(v))
			if out == 0 {
				out = in.Shape[ax] // 0 keeps the extent
			}
			scale = float64(out) / ext
		}
		if out > 0 && in.Shape[ax] == 0 {
			return a.DataErrorf(ws, "cannot resize an empty axis %d (shape %v) to %d", ax, in.Shape, out)
		}
		st.outShape[ax] = out
		st.scale = append(st.scale, scale)
		st.off = append(st.off, off)
	}
	ws.Out[0].SetShape(st.outShape...)
	ws.Out[0].Layout = in.Layout
	return nil
}

func (o *tensorResizeOp) Run(ws *engine.Workspace) error {
	st := ws.State.(*tensorResizeState)
	in, out := ws.In[0], ws.Out[0]
	total := 1
	for _, d := range out.Shape {
		total *= d
	}
	if total == 0 {
		return nil
	}
	nIn := 1
	for _, d := range in.Shape {
		nIn *= d
	}
	st.a = growF64(st.a, nIn)
	sz := in.DType.Size()
	for i := range st.a {
		st.a[i] = engine.ReadScalar(in.Data[i*sz:], in.DType)
	}
	st.shape = append(st.shape[:0], in.Shape...)
	cur := st.a
	for i, ax := range st.axes {
		if st.shape[ax] == st.outShape[ax] && st.scale[i] == 1 && st.off[i] == 0 {
			continue
		}
		m := 1
		for k, d := range st.shape {
			if k == ax {
				d = st.outShape[ax]
			}
			m *= d
		}
		var dst []float64
		if &cur[0] == &st.a[0] {
			st.b = growF64(st.b, m)
			dst = st.b
		} else {
			st.a = growF64(st.a, m)
			dst = st.a
		}
		if err := imaging.ResampleAxisF64(dst, cur, st.shape, ax, st.outShape[ax], st.scale[i], st.off[i], o.interp, o.args.Bool("antialias")); err != nil {
			return o.args.DataErrorf(ws, "%v", err)
		}
		st.shape[ax] = st.outShape[ax]
		cur = dst
	}
	osz := out.DType.Size()
	for k := 0; k < total; k++ {
		engine.WriteScalarSat(out.Data[k*osz:], out.DType, cur[k])
	}
	return nil
}
