package tensor

import (
	"fmt"

	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "transpose",
		Doc: "Permutes the dimensions of each sample (DALI's fn.transpose): output dimension i is " +
			"input dimension perm[i]. The layout is permuted the same way when transpose_layout is " +
			"true, kept empty otherwise, or set to output_layout.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "perm", Type: engine.ArgIntList, Required: true, Doc: "the permutation of the input's dimensions, 0 to ndim-1 each once"},
			{Name: "transpose_layout", Type: engine.ArgBool, Default: true, Doc: "permute the layout as the dimensions"},
			{Name: "output_layout", Type: engine.ArgString, Default: "", Doc: "the output layout (overrides transpose_layout)"},
		},
	})
	engine.RegisterBackend("transpose", "cpu", newTranspose)
}

type transposeOp struct {
	args *engine.Args
	perm []int
}

func newTranspose(a *engine.Args) (engine.Operator, error) {
	p := a.Ints("perm")
	seen := make([]bool, len(p))
	perm := make([]int, len(p))
	for i, v := range p {
		if v < 0 || int(v) >= len(p) || seen[v] {
			return nil, a.Errorf("perm", "%v is not a permutation of 0..%d", p, len(p)-1)
		}
		seen[v] = true
		perm[i] = int(v)
	}
	if l := a.String("output_layout"); l != "" && len(l) != len(p) {
		return nil, a.Errorf("output_layout", "%q has %d names, perm has %d dimensions", l, len(l), len(p))
	}
	return &transposeOp{args: a, perm: perm}, nil
}

func (o *transposeOp) where() string { return o.args.Where() }

func (o *transposeOp) layout(in string) string {
	if l := o.args.String("output_layout"); l != "" {
		return l
	}
	if !o.args.Bool("transpose_layout") || len(in) != len(o.perm) {
		return ""
	}
	b := make([]byte, len(o.perm))
	for i, p := range o.perm {
		b[i] = in[p]
	}
	return string(b)
}

func (o *transposeOp) check(ndim int) error {
	if ndim != len(o.perm) {
		return fmt.Errorf("%s: argument \"perm\": %v has %d entries, the input has %d dimensions", o.where(), o.args.Ints("perm"), len(o.perm), ndim)
	}
	return nil
}

func (o *transposeOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := engine.TensorMeta{DType: in[0].DType}
	if in[0].Shape == nil {
		m.Layout = o.args.String("output_layout")
		return []engine.TensorMeta{m}, nil
	}
	if err := o.check(len(in[0].Shape)); err != nil {
		return nil, engine.Errorf(engine.StatusInvalidPipeline, "%v", err)
	}
	m.Shape = make([]int, len(o.perm))
	for i, p := range o.perm {
		m.Shape[i] = in[0].Shape[p]
	}
	m.Layout = o.layout(in[0].Layout)
	return []engine.TensorMeta{m}, nil
}

func (o *transposeOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	if err := o.check(len(in.Shape)); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	out.DType, out.Layout = in.DType, o.layout(in.Layout)
	out.Shape = out.Shape[:0]
	for _, p := range o.perm {
		out.Shape = append(out.Shape, in.Shape[p])
	}
	return nil
}

type transposeState struct{ idx, stride, inStride []int }

func (o *transposeOp) NewWorkerState() any { return &transposeState{} }

// Run walks the output in row-major order with an odometer over its dimensions, keeping
// the matching input offset: output dimension i steps the input by the stride of input
// dimension perm[i]. The innermost run is copied element by element.
func (o *transposeOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	nd := len(in.Shape)
	sz := in.DType.Size()
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	if n == 0 {
		return nil
	}
	if nd == 0 {
		copy(out.Data, in.Data[:sz])
		return nil
	}
	st := ws.State.(*transposeState)
	if cap(st.idx) < nd {
		st.idx, st.stride, st.inStride = make([]int, nd), make([]int, nd), make([]int, nd)
	}
	idx, stride, inStride := st.idx[:nd], st.stride[:nd], st.inStride[:nd]
	s := sz
	for k := nd - 1; k >= 0; k-- {
		inStride[k] = s
		s *= in.Shape[k]
	}
	for i, p := range o.perm {
		stride[i] = inStride[p]
		idx[i] = 0
	}
	inner := out.Shape[nd-1]
	is := stride[nd-1]
	src, dst := 0, 0
	for done := 0; done < n; done += inner {
		for k := 0; k < inner; k++ {
			copy(out.Data[dst:dst+sz], in.Data[src+k*is:src+k*is+sz])
			dst += sz
		}
		for d := nd - 2; d >= 0; d-- {
			idx[d]++
			src += stride[d]
			if idx[d] < out.Shape[d] {
				break
			}
			src -= idx[d] * stride[d]
			idx[d] = 0
		}
	}
	return nil
}
