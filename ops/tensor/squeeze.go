package tensor

import (
	"fmt"
	"sort"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name:      "squeeze",
		Doc:       "Removes the dimensions given by axes or axis_names (DALI's fn.squeeze): each must have extent 1, or the input must be empty (the output then keeps volume 0); anything else is an error.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "axes", Type: engine.ArgIntList, Default: []int64{}, Doc: "indices of the dimensions to remove (negative counts from the end)"},
			{Name: "axis_names", Type: engine.ArgString, Default: "", Doc: "layout names of the dimensions to remove (instead of axes)"},
		},
	})
	engine.RegisterBackend("squeeze", "cpu", func(a *engine.Args) (engine.Operator, error) {
		if a.GivenConstant("axes") && a.Given("axis_names") {
			return nil, a.Errorf("axes", "Provided both ``axes`` and ``axis_names`` arguments; give one")
		}
		return &dimsOp{args: a, kind: "squeeze"}, nil
	})
}

// dimsOp is squeeze or expand_dims.
type dimsOp struct {
	args *engine.Args
	kind string
}

func (o *dimsOp) where() string { return o.args.Where() }

// apply computes the output shape and layout for an input of shape in (-1 = unknown).
func (o *dimsOp) apply(in []int, layout string) ([]int, string, error) {
	a := o.args
	nd := len(in)
	if o.kind == "squeeze" {
		drop := map[int]bool{}
		if names := a.String("axis_names"); names != "" {
			for _, c := range []byte(names) {
				k := -1
				for i := 0; i < len(layout); i++ {
					if layout[i] == c {
						k = i
					}
				}
				if k < 0 {
					return nil, "", fmt.Errorf("%s: argument \"axis_names\": Axis '%c' is not present in the input layout %q", o.where(), c, layout)
				}
				if drop[k] {
					return nil, "", fmt.Errorf("%s: argument \"axis_names\": Specified at least twice same dimension to remove. Axis names: %q", o.where(), names)
				}
				drop[k] = true
			}
		}
		for _, ax := range a.Ints("axes") {
			k := int(ax)
			if k < 0 {
				k += nd
			}
			if k < 0 || k >= nd {
				return nil, "", fmt.Errorf("%s: argument \"axes\": %d is out of range for %d-D input %v", o.where(), ax, nd, in)
			}
			if drop[k] {
				return nil, "", fmt.Errorf("%s: argument \"axes\": Specified at least twice same dimension to remove. Axes: %v", o.where(), a.Ints("axes"))
			}
			drop[k] = true
		}
		var out []int
		var l []byte
		// A removed extent other than 1 changes the volume, unless the input is empty:
		// squeeze is a reshape (DALI checks the volumes).
		known, inVol, outVol := true, 1, 1
		for i, d := range in {
			known = known && d >= 0
			inVol *= d
			if !drop[i] {
				outVol *= d
			}
		}
		if known && inVol != outVol {
			return nil, "", fmt.Errorf("%s: Requested a shape with %d elements but the original shape has %d elements. Input %v: only dimensions of extent 1 can be removed", o.where(), outVol, inVol, in)
		}
		for i, d := range in {
			if drop[i] {
				continue
			}
			out = append(out, d)
			if len(layout) == nd {
				l = append(l, layout[i])
			}
		}
		if out == nil {
			out = []int{}
		}
		return out, string(l), nil
	}
	axes := a.Ints("axes")
	names := a.String("new_axis_names")
	n := nd + len(axes)
	ins := map[int]byte{}
	for j, ax := range axes {
		k := int(ax)
		if k < 0 {
			k += n
		}
		if k < 0 || k >= n {
			return nil, "", fmt.Errorf("%s: argument \"axes\": Data has not enough dimensions to add new axes at specified indices (axis %d; the %d-D input gives a %d-D output)", o.where(), ax, nd, n)
		}
		if _, dup := ins[k]; dup {
			return nil, "", fmt.Errorf("%s: argument \"axes\": %d is listed twice", o.where(), ax)
		}
		ins[k] = 0
		if names != "" {
			ins[k] = names[j]
		}
	}
	keys := make([]int, 0, len(ins))
	for k := range ins {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]int, 0, n)
	var l []byte
	if names != "" && len(layout) != nd {
		return nil, "", fmt.Errorf("%s: argument \"new_axis_names\": Specifying ``new_axis_names`` requires an input with a proper layout (the %d-D input has layout %q)", o.where(), nd, layout)
	}
	if len(axes) == 0 {
		return append([]int{}, in...), layout, nil
	}
	withLayout := names != ""
	src := 0
	for i := 0; i < n; i++ {
		if c, ok := ins[i]; ok {
			out = append(out, 1)
			l = append(l, c)
			continue
		}
		out = append(out, in[src])
		if withLayout {
			l = append(l, layout[src])
		}
		src++
	}
	if !withLayout {
		l = nil
	}
	return out, string(l), nil
}

func (o *dimsOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := engine.TensorMeta{DType: in[0].DType}
	if in[0].Shape == nil {
		return []engine.TensorMeta{m}, nil
	}
	s, l, err := o.apply(in[0].Shape, in[0].Layout)
	if err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	m.Shape, m.Layout = s, l
	return []engine.TensorMeta{m}, nil
}

func (o *dimsOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	s, l, err := o.apply(in.Shape, in.Layout)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	out := ws.Out[0]
	out.DType, out.Layout = in.DType, l
	out.SetShape(s...)
	return nil
}

func (o *dimsOp) Run(ws *engine.Workspace) error { return copyRun(ws) }
