package tensor

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
)

// The constant-value family of DALI (fn.zeros, fn.ones, fn.full and their _like forms):
// one operator type, told apart by kind.
func init() {
	shape := engine.ArgSpec{Name: "shape", Type: engine.ArgIntList, Default: []int64{}, TensorInput: true, Doc: "the shape of each output sample ([] or absent: a scalar)"}
	layout := engine.ArgSpec{Name: "layout", Type: engine.ArgString, Default: "", Doc: "the output layout (one name per output dimension)"}
	for _, k := range []struct {
		name, doc string
		like      bool
		fill      float64
	}{
		{"zeros", "Returns samples of the given shape and dtype filled with 0 (DALI's fn.zeros).", false, 0},
		{"ones", "Returns samples of the given shape and dtype filled with 1 (DALI's fn.ones).", false, 1},
		{"zeros_like", "Returns samples of the input's shape and layout filled with 0 (DALI's fn.zeros_like), of dtype (default: the input's type).", true, 0},
		{"ones_like", "Returns samples of the input's shape and layout filled with 1 (DALI's fn.ones_like), of dtype (default: the input's type).", true, 1},
	} {
		s := &engine.Schema{Name: k.name, Doc: k.doc, Outputs: []string{"output"}, HostOnly: true}
		if k.like {
			s.MinInputs, s.MaxInputs = 1, 1
			s.Args = []engine.ArgSpec{{Name: "dtype", Type: engine.ArgDType, Doc: "the output type (default: the input's)"}}
		} else {
			s.Args = []engine.ArgSpec{shape, {Name: "dtype", Type: engine.ArgDType, Default: "INT32", Doc: "the output type"}, layout}
		}
		engine.RegisterSchema(s)
		kind, fill := k.name, k.fill
		engine.RegisterBackend(k.name, "cpu", func(a *engine.Args) (engine.Operator, error) {
			return &fullOp{args: a, kind: kind, fill: fill}, nil
		})
	}
	engine.RegisterSchema(&engine.Schema{
		Name: "full",
		Doc: "Returns samples of the given shape filled with fill_value, an input broadcast " +
			"NumPy-style to shape (DALI's fn.full); the type is fill_value's, and without shape " +
			"the output is fill_value's shape.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{shape, layout},
	})
	engine.RegisterBackend("full", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &fullOp{args: a, kind: "full"}, nil
	})
	engine.RegisterSchema(&engine.Schema{
		Name: "full_like",
		Doc: "Returns samples of the first input's shape, type and layout filled with fill_value " +
			"(the second input), broadcast NumPy-style (DALI's fn.full_like).",
		MinInputs: 2, MaxInputs: 2, Outputs: []string{"output"}, HostOnly: true,
	})
	engine.RegisterBackend("full_like", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &fullOp{args: a, kind: "full_like"}, nil
	})
}

type fullOp struct {
	args *engine.Args
	kind string
	fill float64 // zeros, ones
}

func (o *fullOp) where() string { return o.args.Where() }

// fillInput is the index of the fill_value input, -1 for zeros and ones.
func (o *fullOp) fillInput() int {
	switch o.kind {
	case "full":
		return 0
	case "full_like":
		return 1
	}
	return -1
}

func (o *fullOp) outType(in []engine.DType) engine.DType {
	switch o.kind {
	case "full":
		return in[0]
	case "full_like":
		return in[0]
	case "zeros_like", "ones_like":
		if o.args.Given("dtype") {
			return o.args.DType("dtype")
		}
		return in[0]
	}
	return o.args.DType("dtype")
}

// broadcastable reports whether fill (NumPy-style, aligned at the innermost dimension)
// broadcasts to out.
func broadcastable(fill, out []int) bool {
	if len(fill) > len(out) {
		return false
	}
	for k := 1; k <= len(fill); k++ {
		f, d := fill[len(fill)-k], out[len(out)-k]
		if f != 1 && f != d && f >= 0 && d >= 0 {
			return false
		}
	}
	return true
}

func (o *fullOp) checkLayout(l string, nd int) error {
	if l != "" && len(l) != nd {
		return fmt.Errorf("%s: argument \"layout\": %q has %d names, the output has %d dimensions", o.where(), l, len(l), nd)
	}
	return nil
}

func (o *fullOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	types := make([]engine.DType, len(in))
	for i, m := range in {
		types[i] = m.DType
	}
	m := engine.TensorMeta{DType: o.outType(types)}
	switch o.kind {
	case "zeros_like", "ones_like", "full_like":
		m.Layout = in[0].Layout
		if in[0].Shape != nil {
			m.Shape = append([]int{}, in[0].Shape...)
		}
		if o.kind == "full_like" && in[0].Shape != nil && in[1].Shape != nil && !broadcastable(in[1].Shape, in[0].Shape) {
			return nil, o.args.Invalidf("fill_value of shape %v does not broadcast to %v", in[1].Shape, in[0].Shape)
		}
		return []engine.TensorMeta{m}, nil
	}
	m.Layout = o.args.String("layout")
	if _, per := o.args.IsPerSample("shape"); per {
		return []engine.TensorMeta{m}, nil
	}
	if o.kind == "full" && !o.args.GivenConstant("shape") {
		if in[0].Shape != nil {
			m.Shape = append([]int{}, in[0].Shape...)
		}
	} else {
		for _, d := range o.args.Ints("shape") {
			if d < 0 || d > math.MaxInt32 {
				return nil, o.args.Errorf("shape", "extents must be in [0, 2^31), got %v", o.args.Ints("shape"))
			}
			m.Shape = append(m.Shape, int(d))
		}
		if m.Shape == nil {
			m.Shape = []int{}
		}
		if o.kind == "full" && in[0].Shape != nil && !broadcastable(in[0].Shape, m.Shape) {
			return nil, o.args.Invalidf("fill_value of shape %v does not broadcast to shape %v", in[0].Shape, m.Shape)
		}
	}
	if m.Shape != nil {
		if err := o.checkLayout(m.Layout, len(m.Shape)); err != nil {
			return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
		}
	}
	return []engine.TensorMeta{m}, nil
}

func (o *fullOp) Setup(ws *engine.Workspace) error {
	out := ws.Out[0]
	types := make([]engine.DType, 0, 2)
	for _, t := range ws.In {
		types = append(types, t.DType)
	}
	out.DType = o.outType(types)
	switch o.kind {
	case "zeros_like", "ones_like", "full_like":
		out.Layout = ws.In[0].Layout
		out.SetShape(ws.In[0].Shape...)
	default:
		out.Layout = o.args.String("layout")
		if o.kind == "full" && !o.args.Given("shape") {
			out.SetShape(ws.In[0].Shape...)
			break
		}
		dims, err := o.args.IntsAt(ws, "shape", nil)
		if err != nil {
			return err
		}
		out.Shape = out.Shape[:0]
		for _, d := range dims {
			if d < 0 || d > math.MaxInt32 {
				return o.args.ArgDataErrorf(ws, "shape", "extents must be in [0, 2^31), got %v", dims)
			}
			out.Shape = append(out.Shape, d)
		}
		if err := o.checkLayout(out.Layout, len(out.Shape)); err != nil {
			return engine.Errorf(engine.StatusData, "%v", err)
		}
	}
	if k := o.fillInput(); k >= 0 && !broadcastable(ws.In[k].Shape, out.Shape) {
		return o.args.DataErrorf(ws, "fill_value of shape %v does not broadcast to %v", ws.In[k].Shape, out.Shape)
	}
	return nil
}

// Run writes every output element; with a fill_value input, element i of the output
// takes the fill element whose index is i's, modulo the fill's extents (the NumPy
// broadcast of an innermost-aligned shape with unit extents).
func (o *fullOp) Run(ws *engine.Workspace) error {
	out := ws.Out[0]
	sz := out.DType.Size()
	n := len(out.Data) / max(sz, 1)
	k := o.fillInput()
	if k < 0 {
		var v [8]byte
		engine.WriteScalarSat(v[:], out.DType, o.fill)
		for i := 0; i < n; i++ {
			copy(out.Data[i*sz:(i+1)*sz], v[:sz])
		}
		return nil
	}
	f := ws.In[k]
	fs := f.DType.Size()
	nd, fd := len(out.Shape), len(f.Shape)
	for i := 0; i < n; i++ {
		// index of element i in the fill tensor
		rem, fi, fstride := i, 0, 1
		for d := 1; d <= nd; d++ {
			ext := out.Shape[nd-d]
			c := rem % ext
			rem /= ext
			if d <= fd {
				fe := f.Shape[fd-d]
				if fe != 1 {
					fi += c * fstride
				}
				fstride *= fe
			}
		}
		v := f.Data[fi*fs:]
		if f.DType == out.DType {
			copy(out.Data[i*sz:(i+1)*sz], v[:sz])
		} else {
			engine.WriteScalarSat(out.Data[i*sz:], out.DType, engine.ReadScalar(v, f.DType))
		}
	}
	return nil
}
