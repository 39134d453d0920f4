package tensor

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "reinterpret",
		Doc: "Treats each sample's bytes as another type, shape and/or layout (DALI's " +
			"fn.reinterpret). The output's size in bytes must be the input's: without shape or " +
			"rel_shape, the innermost extent is rescaled to the new type's size (its byte size " +
			"must divide); shape, rel_shape, src_dims and layout work as in reshape.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dtype", Type: engine.ArgDType, Doc: "the output type (default: the input's)"},
			{Name: "shape", Type: engine.ArgIntList, TensorInput: true, Doc: "the output shape; one extent may be negative (inferred)"},
			{Name: "rel_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "the output shape relative to the input's (exclusive with shape)"},
			{Name: "src_dims", Type: engine.ArgIntList, Doc: "the input dimension each output dimension takes its extent from (-1: a new unit dimension)"},
			{Name: "layout", Type: engine.ArgString, Default: "", Doc: "the output layout (its length must be the output's number of dimensions)"},
		},
	})
	engine.RegisterBackend("reinterpret", "cpu", newReinterpret)
}

type reinterpretOp struct {
	reshapeOp
	dtype engine.DType // DTypeInvalid: the input's
}

func newReinterpret(a *engine.Args) (engine.Operator, error) {
	if a.Given("shape") && a.Given("rel_shape") {
		return nil, a.Errorf("shape", "give shape or rel_shape, not both")
	}
	if a.Given("src_dims") && a.GivenConstant("shape") {
		return nil, a.Errorf("src_dims", "goes with rel_shape (or alone), not with shape")
	}
	o := &reinterpretOp{reshapeOp: reshapeOp{args: a}}
	if a.Given("dtype") {
		o.dtype = a.DType("dtype")
	}
	return o, nil
}

// byteShape is the input shape seen in elements of the output type: the innermost extent
// rescaled, or, when the shape argument is given, one flat dimension.
func (o *reinterpretOp) byteShape(in []int, from, to engine.DType, flat bool) ([]int, error) {
	if from == to || to == engine.DTypeInvalid || from.Size() == 0 {
		return in, nil
	}
	if len(in) == 0 {
		flat = true
	}
	if flat {
		n := from.Size()
		for _, d := range in {
			n *= d
		}
		if n%to.Size() != 0 {
			return nil, fmt.Errorf("%s: argument \"dtype\": the sample's %d bytes (%v of %s) are not a whole number of %s", o.where(), n, in, from, to)
		}
		return []int{n / to.Size()}, nil
	}
	out := append([]int{}, in...)
	last := out[len(out)-1] * from.Size()
	if last%to.Size() != 0 {
		return nil, fmt.Errorf("%s: argument \"dtype\": the innermost extent of %v of %s is %d bytes, not a whole number of %s; give shape", o.where(), in, from, last, to)
	}
	out[len(out)-1] = last / to.Size()
	return out, nil
}

func (o *reinterpretOp) outType(in engine.DType) engine.DType {
	if o.dtype == engine.DTypeInvalid {
		return in
	}
	return o.dtype
}

func (o *reinterpretOp) hasShapeArgs() bool {
	a := o.args
	return a.Given("shape") || a.Given("rel_shape") || a.Given("src_dims")
}

func (o *reinterpretOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	to := o.outType(in[0].DType)
	if !o.hasShapeArgs() {
		m := engine.TensorMeta{DType: to, Layout: in[0].Layout}
		if o.args.Given("layout") {
			m.Layout = o.args.String("layout")
		}
		if in[0].Shape != nil {
			m.Shape = append([]int{}, in[0].Shape...)
			if to != in[0].DType && len(m.Shape) > 0 {
				m.Shape[len(m.Shape)-1] = -1
				if in[0].Static() && in[0].DType.Size() > 0 {
					s, err := o.byteShape(in[0].Shape, in[0].DType, to, false)
					if err != nil {
						return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
					}
					m.Shape = s
				}
			}
			if m.Layout != "" && len(m.Layout) != len(m.Shape) {
				if o.args.Given("layout") {
					return nil, o.args.Errorf("layout", "%q has %d names, the output has %d dimensions", m.Layout, len(m.Layout), len(m.Shape))
				}
				m.Layout = ""
			}
		}
		return []engine.TensorMeta{m}, nil
	}
	im := in[0]
	if im.Static() && im.DType.Size() > 0 {
		s, err := o.byteShape(im.Shape, im.DType, to, o.args.Given("shape"))
		if err != nil {
			return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
		}
		im.Shape = s
	} else if to != im.DType {
		im.Shape = nil
	}
	out, err := o.reshapeOp.Infer([]engine.TensorMeta{im})
	if err != nil {
		return nil, err
	}
	out[0].DType = to
	if in[0].Shape != nil && out[0].Shape != nil {
		l, err := o.layout(in[0].Layout, len(in[0].Shape), len(out[0].Shape))
		if err != nil {
			return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
		}
		out[0].Layout = l
	}
	return out, nil
}

func (o *reinterpretOp) Setup(ws *engine.Workspace) error {
	a := o.args
	in, out := ws.In[0], ws.Out[0]
	to := o.outType(in.DType)
	var shape []int64
	var rel []float64
	if a.Given("shape") {
		v, err := a.IntsAt(ws, "shape", nil)
		if err != nil {
			return err
		}
		for _, x := range v {
			if x > math.MaxInt32 || x < math.MinInt32 {
				return a.ArgDataErrorf(ws, "shape", "extent %d is out of range", x)
			}
			shape = append(shape, int64(x))
		}
	}
	if a.Given("rel_shape") {
		v, err := a.FloatsAt(ws, "rel_shape", nil)
		if err != nil {
			return err
		}
		rel = v
	}
	src, err := o.byteShape(in.Shape, in.DType, to, a.Given("shape"))
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	s := src
	if o.hasShapeArgs() {
		if s, err = o.outShape(src, shape, rel); err != nil {
			return engine.Errorf(engine.StatusData, "%v", err)
		}
	}
	l, err := o.layout(in.Layout, len(in.Shape), len(s))
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	out.DType, out.Layout = to, l
	out.SetShape(s...)
	return nil
}

func (o *reinterpretOp) Run(ws *engine.Workspace) error {
	copy(ws.Out[0].Data, ws.In[0].Data[:ws.In[0].NumBytes()])
	return nil
}
