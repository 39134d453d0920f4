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
			{Name: "perm", Type: engine.ArgIntList, Doc: "the permutation of the input's dimensions, 0 to ndim-1 each once; default the dimensions reversed (as DALI)"},
			{Name: "transpose_layout", Type: engine.ArgBool, Default: true, Doc: "permute the layout as the dimensions"},
			{Name: "output_layout", Type: engine.ArgString, Default: "", Doc: "the output layout (overrides transpose_layout)"},
		},
	})
	engine.RegisterBackend("transpose", "cpu", newTranspose)
}

type transposeOp struct {
	args  *engine.Args
	given bool
	perm  []int
}

// maxReversedDims bounds the ranks whose default (reversed) permutation is precomputed.
const maxReversedDims = 16

func newTranspose(a *engine.Args) (engine.Operator, error) {
	if !a.Given("perm") {
		return &transposeOp{args: a}, nil
	}
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
	return &transposeOp{args: a, given: true, perm: perm}, nil
}

// permFor is the permutation for an input of ndim dimensions: perm, or the dimensions
// reversed when perm is not given.
func (o *transposeOp) permFor(ndim int) []int {
	if o.given {
		return o.perm
	}
	return reversedPerms[min(ndim, maxReversedDims)]
}

var reversedPerms = func() (r [maxReversedDims + 1][]int) {
	for n := range r {
		r[n] = make([]int, n)
		for i := range r[n] {
			r[n][i] = n - 1 - i
		}
	}
	return r
}()

func (o *transposeOp) where() string { return o.args.Where() }

func (o *transposeOp) layout(in string, perm []int) string {
	if l := o.args.String("output_layout"); l != "" {
		return l
	}
	if !o.args.Bool("transpose_layout") || len(in) != len(perm) {
		return ""
	}
	b := make([]byte, len(perm))
	for i, p := range perm {
		b[i] = in[p]
	}
	return string(b)
}

func (o *transposeOp) check(ndim int) error {
	if ndim > maxReversedDims && !o.given {
		return fmt.Errorf("%s: the input has %d dimensions; give perm for more than %d", o.where(), ndim, maxReversedDims)
	}
	if l := o.args.String("output_layout"); l != "" && len(l) != ndim {
		return fmt.Errorf("%s: argument \"output_layout\": %q has %d names, the input has %d dimensions", o.where(), l, len(l), ndim)
	}
	if o.given && ndim != len(o.perm) {
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
	perm := o.permFor(len(in[0].Shape))
	m.Shape = make([]int, len(perm))
	for i, p := range perm {
		m.Shape[i] = in[0].Shape[p]
	}
	m.Layout = o.layout(in[0].Layout, perm)
	return []engine.TensorMeta{m}, nil
}

func (o *transposeOp) Setup(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	if err := o.check(len(in.Shape)); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	perm := o.permFor(len(in.Shape))
	out.DType, out.Layout = in.DType, o.layout(in.Layout, perm)
	out.Shape = out.Shape[:0]
	for _, p := range perm {
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
	for i, p := range o.permFor(nd) {
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
