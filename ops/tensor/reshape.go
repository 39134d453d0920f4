package tensor

import (
	"fmt"
	"math"
	"strings"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "reshape",
		Doc: "Gives each sample another shape with the same elements in the same order (DALI's " +
			"fn.reshape): shape, or rel_shape (out[i] = in[src_dims[i] or i] * rel_shape[i]), or " +
			"src_dims alone (a permutation-free selection; -1 inserts a unit dimension). One " +
			"negative extent receives what the volume needs. The layout is kept when the number " +
			"of dimensions is, else reset, unless layout is given; layout alone keeps the shape " +
			"and relabels the dimensions (DALI's reshape(layout=...)). The shape may also come as a second " +
			"input (integers, one per output dimension, per sample).",
		MinInputs: 1, MaxInputs: 2, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "the output shape; one extent may be negative (inferred)"},
			{Name: "rel_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "the output shape relative to the input's (exclusive with shape)"},
			{Name: "src_dims", Type: engine.ArgIntList, Doc: "the input dimension each output dimension takes its extent from (-1: a new unit dimension)"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "the output layout (its length must be the output's number of dimensions)"},
		},
	})
	engine.RegisterBackend("reshape", "cpu", newReshape)

}

// copyRun is the shared Run of the operators that keep the bytes and change the shape.
func copyRun(ws *engine.Workspace) error {
	copy(ws.Out[0].Data, ws.In[0].Data[:ws.In[0].NumBytes()])
	return nil
}

type reshapeOp struct {
	args       *engine.Args
	shapeInput bool // the shape comes as input 1
}

func newReshape(a *engine.Args) (engine.Operator, error) {
	if a.Given("shape") && a.Given("rel_shape") {
		return nil, a.Errorf("shape", "give shape or rel_shape, not both")
	}
	neg := 0
	for _, d := range a.Ints("shape") {
		if d < 0 {
			neg++
		}
	}
	for _, d := range a.Floats("rel_shape") {
		if d < 0 {
			neg++
		}
	}
	if neg > 1 {
		return nil, a.Errorf("shape", "at most one extent may be negative (inferred)")
	}
	if sd := a.Ints("src_dims"); sd != nil && a.GivenConstant("shape") {
		return nil, a.Errorf("src_dims", "goes with rel_shape (or alone), not with shape")
	} else if rs := a.Floats("rel_shape"); sd != nil && rs != nil && len(rs) != len(sd) {
		return nil, a.Errorf("src_dims", "``src_dims`` and ``rel_shape`` have different lengths: %d vs %d (one input dimension per rel_shape extent)", len(sd), len(rs))
	}
	return &reshapeOp{args: a}, nil
}

func (o *reshapeOp) where() string { return o.args.Where() }

// outShape computes the sample's output shape from the input shape and the sample's
// arguments (rel and shape are the arguments' values, nil when absent).
func (o *reshapeOp) outShape(in []int, shape []int64, rel []float64) ([]int, error) {
	a := o.args
	src := a.Ints("src_dims")
	vol := 1
	for _, d := range in {
		vol *= d
	}
	var out []int
	infer := -1
	srcDim := func(i int) (int, error) {
		k := i
		if src != nil {
			k = int(src[i])
		}
		if k == -1 && src != nil {
			return 1, nil
		}
		if k < 0 || k >= len(in) {
			if src == nil {
				return 0, fmt.Errorf("%s: ``rel_shape`` has more elements (%d) than there are dimensions in the input (%d) %v; use ``src_dims`` to say which input dimension each extent scales", o.where(), len(rel), len(in), in)
			}
			return 0, fmt.Errorf("%s: src_dims[%d] = %d is out of bounds for the %d-D input %v", o.where(), i, k, len(in), in)
		}
		return in[k], nil
	}
	switch {
	case shape != nil:
		for i, d := range shape {
			if d < 0 {
				if infer >= 0 {
					return nil, fmt.Errorf("%s: argument \"shape\": at most one extent may be negative, got %v", o.where(), shape)
				}
				infer = i
			}
			if d > math.MaxInt32 {
				return nil, fmt.Errorf("%s: argument \"shape\": extent %d is too large", o.where(), d)
			}
			out = append(out, int(d))
		}
	case rel != nil:
		for i, r := range rel {
			if r < 0 {
				if infer >= 0 {
					return nil, fmt.Errorf("%s: argument \"rel_shape\": at most one extent may be negative, got %v", o.where(), rel)
				}
				infer = i
				out = append(out, -1)
				continue
			}
			e, err := srcDim(i)
			if err != nil {
				return nil, err
			}
			x := math.Round(float64(e) * r)
			if !(x >= 0 && x <= math.MaxInt32) {
				return nil, fmt.Errorf("%s: argument \"rel_shape\": extent %g x %d is out of range", o.where(), r, e)
			}
			out = append(out, int(x))
		}
	case src == nil: // layout alone: the shape is kept
		out = append(out, in...)
	default:
		for i := range src {
			e, err := srcDim(i)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	if infer >= 0 {
		rest := 1
		for i, d := range out {
			if i != infer {
				rest *= d
			}
		}
		if vol == 0 && rest == 0 {
			return nil, fmt.Errorf("%s: Cannot infer the size of dimension %d when the volume of the input is 0. Input shape: %s", o.where(), infer, shapeString(in))
		}
		if rest == 0 || vol%rest != 0 {
			return nil, fmt.Errorf("%s: cannot infer extent %d of %v for an input of shape %v (%d elements)", o.where(), infer, out, in, vol)
		}
		out[infer] = vol / rest
	}
	n := 1
	for _, d := range out {
		n *= d
	}
	if n != vol {
		return nil, fmt.Errorf("%s: The volume of the new shape should match the one of the original shape. Requested a shape with %d elements but the original shape has %d elements. (shape %v, input %v)", o.where(), n, vol, out, in)
	}
	return out, nil
}

// shapeString writes a shape as DALI does in messages: "320 x 0".
func shapeString(s []int) string {
	var b strings.Builder
	for i, d := range s {
		if i > 0 {
			b.WriteString(" x ")
		}
		fmt.Fprint(&b, d)
	}
	return b.String()
}

func (o *reshapeOp) layout(inLayout string, inDims, outDims int) (string, error) {
	if o.args.Given("layout") {
		l := o.args.String("layout")
		if l != "" && outDims >= 0 && len(l) != outDims { // unknown rank (-1): checked per sample
			return "", fmt.Errorf("%s: argument \"layout\": %q has %d names, the output has %d dimensions", o.where(), l, len(l), outDims)
		}
		return l, nil
	}
	if inDims == outDims {
		return inLayout, nil
	}
	return "", nil
}

// TakesDynamicInputs: reshape reads its input's type and shape per sample, so it may
// follow a python_function (the data or the shape input, or a per-sample shape).
func (o *reshapeOp) TakesDynamicInputs() bool { return true }

func (o *reshapeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	a := o.args
	m := engine.TensorMeta{DType: in[0].DType}
	nd := -1
	if len(in) == 2 {
		o.shapeInput = true
		if a.Given("shape") || a.Given("rel_shape") || a.Given("src_dims") {
			return nil, a.Invalidf("the shape is given twice: by input 1 and by shape/rel_shape/src_dims; use one")
		}
		if s := in[1].Shape; len(s) == 1 && s[0] >= 0 {
			nd = s[0]
		}
		if nd >= 0 {
			m.Shape = make([]int, nd)
			for i := range m.Shape {
				m.Shape[i] = -1
			}
		}
		return o.withLayout(m, in[0], nd)
	}
	if !a.Given("shape") && !a.Given("rel_shape") && !a.Given("src_dims") && !a.Given("layout") {
		return nil, a.Errorf("shape", "give shape, rel_shape, src_dims or layout (or the shape as input 1)")
	}
	switch {
	case a.GivenConstant("shape"):
		nd = len(a.Ints("shape"))
	case a.GivenConstant("rel_shape"):
		nd = len(a.Floats("rel_shape"))
	case a.Given("src_dims") && !a.Given("shape") && !a.Given("rel_shape"):
		nd = len(a.Ints("src_dims"))
	case in[0].Shape != nil: // layout alone
		nd = len(in[0].Shape)
	}
	if nd < 0 {
		return []engine.TensorMeta{m}, nil // per-sample shapes: rank known at run time
	}
	if in[0].Static() {
		s, err := o.outShape(in[0].Shape, a.Ints("shape"), a.Floats("rel_shape"))
		if err != nil {
			return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
		}
		m.Shape = s
	} else {
		m.Shape = make([]int, nd)
		for i := range m.Shape {
			m.Shape[i] = -1
		}
		if a.GivenConstant("shape") && !in[0].IsDynamic() { // a dynamic input's element size is unknown: no dense output
			for i, d := range a.Ints("shape") {
				if d >= 0 {
					m.Shape[i] = int(d)
				}
			}
		}
	}
	return o.withLayout(m, in[0], nd)
}

// withLayout gives m, the output of nd dimensions for input in, its layout.
func (o *reshapeOp) withLayout(m, in engine.TensorMeta, nd int) ([]engine.TensorMeta, error) {
	inDims := -1
	if in.Shape != nil {
		inDims = len(in.Shape)
	}
	l, err := o.layout(in.Layout, inDims, nd)
	if err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	m.Layout = l
	return []engine.TensorMeta{m}, nil
}

func (o *reshapeOp) Setup(ws *engine.Workspace) error {
	a := o.args
	shape := a.Ints("shape")
	rel := a.Floats("rel_shape")
	if o.shapeInput {
		t := ws.In[1]
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		sz := t.DType.Size()
		if sz == 0 || t.DType.IsFloat() || len(t.Shape) > 1 || len(t.Data) < n*sz {
			return a.DataErrorf(ws, "the shape input must hold integers, one per output dimension; got %s %v", t.DType, t.Shape)
		}
		shape = make([]int64, n)
		for i := range shape {
			shape[i] = int64(engine.ReadScalar(t.Data[i*sz:], t.DType))
		}
	}
	if a.AnyPerSample("shape") {
		v, err := a.FloatsAt(ws, "shape", nil)
		if err != nil {
			return err
		}
		shape = make([]int64, len(v))
		for i, x := range v {
			if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
				return o.args.DataErrorf(ws, "argument \"shape\": expected integers, got %v for this sample", v)
			}
			shape[i] = int64(x)
		}
	}
	if a.AnyPerSample("rel_shape") {
		v, err := a.FloatsAt(ws, "rel_shape", nil)
		if err != nil {
			return err
		}
		rel = v
		if src := a.Ints("src_dims"); src != nil && len(src) != len(rel) {
			return o.args.DataErrorf(ws, "argument \"rel_shape\": %d values for this sample, src_dims has %d", len(rel), len(src))
		}
	}
	in := ws.In[0]
	s, err := o.outShape(in.Shape, shape, rel)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	l, err := o.layout(in.Layout, len(in.Shape), len(s))
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	out := ws.Out[0]
	out.DType, out.Layout = in.DType, l
	out.SetShape(s...)
	return nil
}

func (o *reshapeOp) Run(ws *engine.Workspace) error { return copyRun(ws) }
