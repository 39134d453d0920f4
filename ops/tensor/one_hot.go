package tensor

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "one_hot",
		Doc: "One-hot encodes the input (DALI's fn.one_hot): a new axis of num_classes elements at " +
			"axis holds on_value at the index given by the input element (truncated to an integer) " +
			"and off_value elsewhere; an index outside [0, num_classes) gives off_value everywhere. " +
			"A sample of one element is a scalar (output [num_classes]) unless axis is given.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "num_classes", Type: engine.ArgInt, Default: 0, Doc: "the extent of the new axis"},
			{Name: "axis", Type: engine.ArgInt, Default: -1, Doc: "where the new axis goes, 0 to ndim; -1 appends it"},
			{Name: "dtype", Type: engine.ArgDType, Default: "FLOAT", Doc: "the output type"},
			{Name: "on_value", Type: engine.ArgFloat, Default: 1.0, Doc: "the value at the class index"},
			{Name: "off_value", Type: engine.ArgFloat, Default: 0.0, Doc: "the value elsewhere"},
			{Name: "axis_name", Type: engine.ArgString, Default: "", Doc: "layout name of the new axis (one character); without it the output layout is empty"},
		},
	})
	engine.RegisterBackend("one_hot", "cpu", newOneHot)
}

type oneHotOp struct {
	args     *engine.Args
	classes  int
	axis     int
	dtype    engine.DType
	on, off  [8]byte
	axisName string
}

func newOneHot(a *engine.Args) (engine.Operator, error) {
	o := &oneHotOp{args: a, classes: a.Int("num_classes"), axis: a.Int("axis"), dtype: a.DType("dtype"), axisName: a.String("axis_name")}
	if o.classes < 0 || o.classes > math.MaxInt32 {
		return nil, a.Errorf("num_classes", "must be >= 0, got %d", o.classes)
	}
	if o.axis < -1 {
		return nil, a.Errorf("axis", "must be -1 (last) or 0 to ndim, got %d", o.axis)
	}
	if len(o.axisName) > 1 || (a.Given("axis_name") && o.axisName == "") {
		return nil, a.Errorf("axis_name", "Unsupported axis_name value %q: expected one character", o.axisName)
	}
	// truncated toward zero as DALI's static_cast does (out-of-range values, undefined
	// in C++, saturate)
	on, off := a.Float("on_value"), a.Float("off_value")
	if !o.dtype.IsFloat() {
		on, off = math.Trunc(on), math.Trunc(off)
	}
	engine.WriteScalarSat(o.on[:], o.dtype, on)
	engine.WriteScalarSat(o.off[:], o.dtype, off)
	return o, nil
}

func (o *oneHotOp) where() string { return o.args.Where() }

// place returns where the new axis goes in a sample of shape in (scalar: 0), and the
// number of input dimensions it is counted against.
func (o *oneHotOp) place(in []int) (ax, nd int, err error) {
	nd = len(in)
	vol := 1
	for _, d := range in {
		vol *= d
	}
	if !o.args.GivenConstant("axis") && vol == 1 {
		return 0, 0, nil // DALI's legacy reading: a one-element sample is a scalar
	}
	ax = o.axis
	if ax == -1 {
		ax = nd
	}
	if ax > nd {
		return 0, 0, fmt.Errorf("%s: argument \"axis\": %d is out of range for a %d-D input (valid: -1 to %d)", o.where(), o.axis, nd, nd)
	}
	return ax, nd, nil
}

func (o *oneHotOp) outShape(in []int) ([]int, int, error) {
	ax, nd, err := o.place(in)
	if err != nil {
		return nil, 0, err
	}
	if nd == 0 {
		return []int{o.classes}, 0, nil
	}
	s := append(append(append(make([]int, 0, nd+1), in[:ax]...), o.classes), in[ax:]...)
	return s, ax, nil
}

func (o *oneHotOp) layout(in string, shape []int, ax int, outDims int) string {
	if o.axisName == "" {
		return ""
	}
	if outDims == 1 {
		return o.axisName
	}
	if len(in) != outDims-1 {
		return ""
	}
	return in[:ax] + o.axisName + in[ax:]
}

// checkLayout refuses axis_name for a multi-dimensional input without a layout of its
// rank: the new axis has a name but the others would not.
func (o *oneHotOp) checkLayout(in string, outDims int) error {
	if o.axisName == "" || outDims <= 1 || len(in) == outDims-1 {
		return nil
	}
	return fmt.Errorf("%s: argument \"axis_name\": Input layout mismatch: the input layout %q does not name the input's %d dimensions, so the output layout cannot name the new axis", o.where(), in, outDims-1)
}

func (o *oneHotOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if !in[0].DType.IsFloat() && !isInt(in[0].DType) && in[0].DType != engine.Bool && in[0].DType != engine.DTypeInvalid {
		return nil, o.args.Invalidf("the input must be numbers, got %s", in[0].DType)
	}
	if !in[0].Static() && !(o.args.GivenConstant("axis") && in[0].Shape != nil) {
		return []engine.TensorMeta{{DType: o.dtype}}, nil // the shape is known per sample
	}
	m, err := o.output(in[0].Shape, in[0].Layout, in[0].Static())
	if err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	return []engine.TensorMeta{m}, nil
}

// output is the output's type, shape and layout for an input of shape and layout: the
// one shape function, which Infer calls at build time (the input's rank known, with axis
// given; or its whole shape) and Setup per sample. The layout is checked against the
// rank where the whole shape is known (at build: a static input).
func (o *oneHotOp) output(shape []int, layout string, whole bool) (engine.TensorMeta, error) {
	s, ax, err := o.outShape(shape)
	if err == nil && whole {
		err = o.checkLayout(layout, len(s))
	}
	if err != nil {
		return engine.TensorMeta{}, err
	}
	return engine.TensorMeta{DType: o.dtype, Shape: s, Layout: o.layout(layout, s, ax, len(s))}, nil
}

func (o *oneHotOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	m, err := o.output(in.Shape, in.Layout, true)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	out.DType, out.Layout = m.DType, m.Layout
	out.SetShape(m.Shape...)
	return nil
}

// Run fills the output with off_value, then writes on_value at each input element's
// class: with the input as [outer, inner] split at the new axis, element (i, j) of class
// c goes to output (i, c, j).
func (o *oneHotOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	sz := o.dtype.Size()
	for off := 0; off+sz <= len(out.Data); off += sz {
		copy(out.Data[off:off+sz], o.off[:sz])
	}
	ax, nd, _ := o.place(in.Shape)
	outer, inner := 1, 1
	for k, d := range in.Shape {
		if k < ax || nd == 0 {
			outer *= d
		} else {
			inner *= d
		}
	}
	isz := in.DType.Size()
	for i := 0; i < outer; i++ {
		for j := 0; j < inner; j++ {
			v := engine.ReadScalar(in.Data[(i*inner+j)*isz:], in.DType)
			if !(v >= 0 && v < float64(o.classes)) {
				continue
			}
			c := int(v)
			off := ((i*o.classes+c)*inner + j) * sz
			copy(out.Data[off:off+sz], o.on[:sz])
		}
	}
	return nil
}
