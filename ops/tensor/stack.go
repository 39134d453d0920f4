package tensor

import (
	"fmt"

	"github.com/godali/godali/engine"
)

// maxJoinInputs bounds the inputs of stack and cat (the schema needs a maximum).
const maxJoinInputs = 1024

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "stack",
		Doc: "Joins the inputs along a new axis inserted at axis (DALI's fn.stack): every input " +
			"sample must have the same shape and type. The output layout inserts axis_name into " +
			"the inputs' layout; without axis_name it is empty.",
		MinInputs: 1, MaxInputs: maxJoinInputs, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "axis", Type: engine.ArgInt, Default: 0, Doc: "where the new axis goes, in [-ndim-1, ndim]"},
			{Name: "axis_name", Type: engine.ArgString, Default: "", Doc: "layout name of the new axis (one character)"},
		},
	})
	engine.RegisterBackend("stack", "cpu", func(a *engine.Args) (engine.Operator, error) { return newJoin(a, true) })

}

type joinOp struct {
	args  *engine.Args
	stack bool
	axis  int
	name  string
}

func newJoin(a *engine.Args, stack bool) (*joinOp, error) {
	o := &joinOp{args: a, stack: stack, axis: a.Int("axis"), name: a.String("axis_name")}
	if len(o.name) > 1 {
		return nil, a.Errorf("axis_name", "expected one character, got %q", o.name)
	}
	if !stack && o.name != "" && a.GivenConstant("axis") {
		return nil, a.Errorf("axis_name", "give axis or axis_name, not both")
	}
	return o, nil
}

func (o *joinOp) where() string { return o.args.Where() }

// resolveAxis turns the axis argument into an index for inputs of ndim dimensions with
// the given layout.
func (o *joinOp) resolveAxis(ndim int, layout string) (int, error) {
	if !o.stack && o.name != "" {
		for i := 0; i < len(layout); i++ {
			if layout[i] == o.name[0] {
				return i, nil
			}
		}
		return 0, fmt.Errorf("%s: argument \"axis_name\": %q is not in the inputs' layout %q", o.where(), o.name, layout)
	}
	n := ndim
	if o.stack {
		n = ndim + 1
	}
	ax := o.axis
	if ax < -n || ax >= n {
		return 0, fmt.Errorf("%s: argument \"axis\": %d is out of range for %d-D inputs (valid: %d to %d)", o.where(), o.axis, ndim, -n, n-1)
	}
	if ax < 0 {
		ax += n
	}
	return ax, nil
}

func (o *joinOp) outLayout(layout string, ndim, ax int) string {
	if !o.stack {
		return layout
	}
	if o.name == "" || len(layout) != ndim {
		return ""
	}
	return layout[:ax] + o.name + layout[ax:]
}

func (o *joinOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m0 := in[0]
	for i, m := range in[1:] {
		if m.DType != m0.DType {
			return nil, o.args.Invalidf("input %d is %s, input 0 is %s; all inputs must have the same type", i+1, m.DType, m0.DType)
		}
		if m.Shape != nil && m0.Shape != nil && len(m.Shape) != len(m0.Shape) {
			return nil, o.args.Invalidf("input %d has %d dimensions, input 0 has %d", i+1, len(m.Shape), len(m0.Shape))
		}
	}
	out := engine.TensorMeta{DType: m0.DType}
	if m0.Shape == nil {
		return []engine.TensorMeta{out}, nil
	}
	nd := len(m0.Shape)
	ax, err := o.resolveAxis(nd, m0.Layout)
	if err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	out.Layout = o.outLayout(m0.Layout, nd, ax)
	if o.stack {
		out.Shape = append(append(append([]int{}, m0.Shape[:ax]...), len(in)), m0.Shape[ax:]...)
		return []engine.TensorMeta{out}, nil
	}
	out.Shape = append([]int{}, m0.Shape...) // other extents are checked per sample
	sum := 0
	for _, m := range in {
		if m.Shape == nil || m.Shape[ax] < 0 {
			sum = -1
			break
		}
		sum += m.Shape[ax]
	}
	out.Shape[ax] = sum
	return []engine.TensorMeta{out}, nil
}

func (o *joinOp) Setup(ws *engine.Workspace) error {
	t0 := ws.In[0]
	nd := len(t0.Shape)
	ax, err := o.resolveAxis(nd, t0.Layout)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	sum := 0
	for i, t := range ws.In {
		if t.DType != t0.DType || len(t.Shape) != nd {
			return o.args.DataErrorf(ws, "input %d is %s %v, input 0 is %s %v", i, t.DType, t.Shape, t0.DType, t0.Shape)
		}
		for d := range t.Shape {
			if t.Shape[d] != t0.Shape[d] && (o.stack || d != ax) {
				what := "the same shape"
				if !o.stack {
					what = fmt.Sprintf("the same extents except along axis %d", ax)
				}
				return o.args.DataErrorf(ws, "input %d has shape %v, input 0 has %v; the inputs need %s", i, t.Shape, t0.Shape, what)
			}
		}
		if !o.stack {
			sum += t.Shape[ax]
		}
	}
	out := ws.Out[0]
	out.DType = t0.DType
	out.Layout = o.outLayout(t0.Layout, nd, ax)
	if o.stack {
		out.SetShape(append(append(append([]int{}, t0.Shape[:ax]...), len(ws.In)), t0.Shape[ax:]...)...)
	} else {
		out.SetShape(t0.Shape...)
		out.Shape[ax] = sum
	}
	return nil
}

type joinState struct{ blocks []int }

func (o *joinOp) NewWorkerState() any { return &joinState{} }

// Run copies, for each index of the dimensions before the axis, every input's block of
// the remaining dimensions in turn.
func (o *joinOp) Run(ws *engine.Workspace) error {
	t0 := ws.In[0]
	ax, _ := o.resolveAxis(len(t0.Shape), t0.Layout)
	outer := 1
	for _, d := range t0.Shape[:ax] {
		outer *= d
	}
	st := ws.State.(*joinState)
	if cap(st.blocks) < len(ws.In) {
		st.blocks = make([]int, len(ws.In))
	}
	blocks := st.blocks[:len(ws.In)] // bytes of one block of each input
	for i, t := range ws.In {
		b := t.DType.Size()
		for _, d := range t.Shape[ax:] {
			b *= d
		}
		blocks[i] = b
	}
	dst := ws.Out[0].Data
	off := 0
	for k := 0; k < outer; k++ {
		for i, t := range ws.In {
			b := blocks[i]
			copy(dst[off:off+b], t.Data[k*b:(k+1)*b])
			off += b
		}
	}
	return nil
}
