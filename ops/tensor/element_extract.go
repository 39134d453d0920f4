package tensor

import (
	"fmt"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "element_extract",
		Doc: "Extracts frames of sequences (DALI's fn.element_extract): for each index of " +
			"element_map, one output holding that element of the outermost dimension of the " +
			"input, whose layout must start with F. The outputs' layout drops the F.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, VariableOutputs: true, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "element_map", Type: engine.ArgIntList, Required: true, Doc: "the indices of the elements (frames) to extract, one output each"},
		},
	})
	engine.RegisterBackend("element_extract", "cpu", func(a *engine.Args) (engine.Operator, error) {
		m := a.Ints("element_map")
		if len(m) == 0 {
			return nil, a.Errorf("element_map", "must not be empty")
		}
		for _, i := range m {
			if i < 0 {
				return nil, a.Errorf("element_map", "Negative indices in `element_map` are not allowed, found: %d", i)
			}
		}
		return &elementExtractOp{args: a, idx: m}, nil
	})
}

type elementExtractOp struct {
	args *engine.Args
	idx  []int64
}

func (o *elementExtractOp) where() string { return o.args.Where() }

func (o *elementExtractOp) check(shape []int, layout string) error {
	if layout != "" && layout[0] != 'F' {
		return fmt.Errorf("%s: Input layout must describe a sequence - it must start with 'F', got '%s' instead.", o.where(), layout)
	}
	if shape == nil {
		return nil
	}
	if len(shape) < 2 {
		return fmt.Errorf("%s: Input must have at least two dimensions - outermost for sequence and at least one "+
			"for data elements.", o.where())
	}
	if shape[0] < 0 {
		return nil
	}
	for _, i := range o.idx {
		if int(i) >= shape[0] {
			return fmt.Errorf("%s: argument \"element_map\": Index `%d` from `element_map` is out of bounds for sample "+
				"with sequence length equal `%d`", o.where(), i, shape[0])
		}
	}
	return nil
}

func frameLayout(l string) string {
	if l == "" {
		return ""
	}
	return l[1:]
}

func (o *elementExtractOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := o.check(in[0].Shape, in[0].Layout); err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	m := engine.TensorMeta{DType: in[0].DType, Layout: frameLayout(in[0].Layout)}
	if in[0].Shape != nil {
		m.Shape = append([]int{}, in[0].Shape[1:]...)
	}
	out := make([]engine.TensorMeta, len(o.idx))
	for i := range out {
		out[i] = m
	}
	return out, nil
}

func (o *elementExtractOp) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	if err := o.check(in.Shape, in.Layout); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	for _, out := range ws.Out {
		out.DType, out.Layout = in.DType, frameLayout(in.Layout)
		out.SetShape(in.Shape[1:]...)
	}
	return nil
}

func (o *elementExtractOp) Run(ws *engine.Workspace) error {
	in := ws.In[0]
	frame := in.DType.Size()
	for _, d := range in.Shape[1:] {
		frame *= d
	}
	for k, out := range ws.Out {
		i := int(o.idx[k])
		copy(out.Data, in.Data[i*frame:(i+1)*frame])
	}
	return nil
}
