package tensor

import (
	"math"

	"github.com/godali/godali/engine"
)

// _tensor_subscript is what Python's x[...] on a DataNode lowers to (DALI's tensor
// subscript): for each of the leading dimensions, an index (the dimension is removed) or
// a slice lo:hi:step with Python's rules (negative bounds count from the end, bounds are
// clamped, a negative step walks backwards). The first `lead` subscripts apply to the
// leading dimensions, the rest to the trailing ones (an Ellipsis between them); the
// dimensions in between are kept whole.
func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "_tensor_subscript",
		Doc: "Indexes or slices the leading dimensions of each sample with Python's rules " +
			"(the operator behind DataNode[...]).",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "kind", Type: engine.ArgIntList, Required: true, Doc: "per subscripted dimension: 0 index, 1 slice"},
			{Name: "lo", Type: engine.ArgIntList, Required: true, TensorInput: true, Doc: "the index, or the slice start (ignored where has_lo is 0); per sample from a node"},
			{Name: "hi", Type: engine.ArgIntList, Required: true, Doc: "the slice stop (ignored where has_hi is 0)"},
			{Name: "step", Type: engine.ArgIntList, Required: true, Doc: "the slice step (not 0)"},
			{Name: "has_lo", Type: engine.ArgIntList, Required: true, Doc: "1 where the slice start was given"},
			{Name: "has_hi", Type: engine.ArgIntList, Required: true, Doc: "1 where the slice stop was given"},
			{Name: "lead", Type: engine.ArgInt, Default: -1, Doc: "how many subscripts apply to the leading dimensions; the others apply to the trailing ones (x[a, ..., b]); -1: all lead"},
		},
	})
	engine.RegisterBackend("_tensor_subscript", "cpu", newSubscript)
}

type subscriptOp struct {
	args                         *engine.Args
	kind, hi, step, hasLo, hasHi []int64
	collapsed                    int
	lead                         int
	loConst                      []float64 // lo when it is not given per sample
}

// subscriptState is a worker's per-sample working state (the operator is shared by the
// workers: what Setup computes for a sample and Run reads must not live on it).
type subscriptState struct {
	lo       []float64
	stride   []int // the input step, in elements, of each output dimension
	fixed    int   // the input offset, in elements, of the output's first element
	outDims  []int
	inStride []int
	idx      []int
}

func (o *subscriptOp) NewWorkerState() any { return &subscriptState{} }

// subscriptStateOf is the worker's state (a fresh one where the caller gives none).
func subscriptStateOf(ws *engine.Workspace) *subscriptState {
	st, _ := ws.State.(*subscriptState)
	if st == nil {
		st = &subscriptState{}
		ws.State = st
	}
	return st
}

func newSubscript(a *engine.Args) (engine.Operator, error) {
	o := &subscriptOp{args: a, kind: a.Ints("kind"), hi: a.Ints("hi"), step: a.Ints("step"),
		hasLo: a.Ints("has_lo"), hasHi: a.Ints("has_hi")}
	n := len(o.kind)
	if len(o.hi) != n || len(o.step) != n || len(o.hasLo) != n || len(o.hasHi) != n {
		return nil, a.Errorf("kind", "kind, hi, step, has_lo and has_hi need one entry per subscripted dimension (%d)", n)
	}
	for _, v := range a.Ints("lo") {
		o.loConst = append(o.loConst, float64(v))
	}
	o.lead = a.Int("lead")
	if o.lead < 0 || o.lead > n {
		o.lead = n
	}
	for i, k := range o.kind {
		if k == 0 {
			o.collapsed++
		} else if o.step[i] == 0 {
			return nil, a.Errorf("step", "slice step cannot be zero (dimension %d)", i)
		}
	}
	return o, nil
}

func (o *subscriptOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := engine.TensorMeta{DType: in[0].DType}
	if in[0].Shape != nil {
		nd := len(in[0].Shape)
		if nd < len(o.kind) {
			return nil, o.args.Invalidf("%d subscripts for %d-D samples", len(o.kind), nd)
		}
		m.Shape = make([]int, nd-o.collapsed)
		for i := range m.Shape {
			m.Shape[i] = -1
		}
		m.Layout = o.layout(in[0].Layout, nd)
	}
	return []engine.TensorMeta{m}, nil
}

// sub is the subscript that applies to input dimension d of an nd-D sample, or -1.
func (o *subscriptOp) sub(d, nd int) int {
	if d < o.lead {
		return d
	}
	if j := len(o.kind) - (nd - d); j >= o.lead {
		return j
	}
	return -1
}

// layout drops the names of the indexed dimensions.
func (o *subscriptOp) layout(l string, nd int) string {
	if len(l) != nd {
		return ""
	}
	var out []byte
	for i := 0; i < nd; i++ {
		if j := o.sub(i, nd); j >= 0 && o.kind[j] == 0 {
			continue
		}
		out = append(out, l[i])
	}
	return string(out)
}

// sliceRange applies Python's slice.indices to one dimension of extent n: the first
// index and the count.
// clampStep bounds a slice step to the extent n: a longer step takes the start alone, as
// a step of n does; clamping keeps (stop - start + step - 1) and step * stride from
// overflowing (x[::2**62], issue 24).
func clampStep(step, n int64) int64 { return max(min(step, max(n, 1)), -max(n, 1)) }

func sliceRange(lo, hi, step int64, hasLo, hasHi bool, n int64) (int64, int64) {
	clamp := func(v, min, max int64) int64 {
		if v < min {
			return min
		}
		if v > max {
			return max
		}
		return v
	}
	var start, stop int64
	if step > 0 {
		start, stop = 0, n
		if hasLo {
			if lo < 0 {
				lo += n
			}
			start = clamp(lo, 0, n)
		}
		if hasHi {
			if hi < 0 {
				hi += n
			}
			stop = clamp(hi, 0, n)
		}
		if stop <= start {
			return start, 0
		}
		return start, (stop - start + step - 1) / step
	}
	start, stop = n-1, -1
	if hasLo {
		if lo < 0 {
			lo += n
		}
		start = clamp(lo, -1, n-1)
	}
	if hasHi {
		if hi < 0 {
			hi += n
		}
		stop = clamp(hi, -1, n-1)
	}
	if start <= stop {
		return start, 0
	}
	return start, (start - stop - step - 1) / -step
}

func (o *subscriptOp) Setup(ws *engine.Workspace) error {
	in, st := ws.In[0], subscriptStateOf(ws)
	nd := len(in.Shape)
	if nd < len(o.kind) {
		return o.args.DataErrorf(ws, "%d subscripts for a %d-D sample %v", len(o.kind), nd, in.Shape)
	}
	lo := o.loConst
	if o.args.AnyPerSample("lo") {
		var err error
		if lo, err = o.args.FloatsAt(ws, "lo", st.lo[:0]); err != nil {
			return err
		}
		st.lo = lo
	}
	if len(lo) != len(o.kind) {
		return o.args.DataErrorf(ws, "argument \"lo\": %d values for %d subscripts", len(lo), len(o.kind))
	}
	// Element strides of the input, innermost 1.
	if cap(st.inStride) < nd {
		st.inStride = make([]int, nd)
	}
	inStride := st.inStride[:nd]
	s := 1
	for d := nd - 1; d >= 0; d-- {
		inStride[d] = s
		s *= in.Shape[d]
	}
	st.stride, st.outDims, st.fixed = st.stride[:0], st.outDims[:0], 0
	for d := 0; d < nd; d++ {
		n := int64(in.Shape[d])
		j := o.sub(d, nd)
		if j < 0 {
			st.stride, st.outDims = append(st.stride, inStride[d]), append(st.outDims, int(n))
			continue
		}
		v := lo[j]
		if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
			return o.args.DataErrorf(ws, "subscript %d must be an integer, got %g", j, v)
		}
		if o.kind[j] == 0 {
			i := int64(v)
			if i < 0 {
				i += n
			}
			if i < 0 || i >= n {
				return o.args.DataErrorf(ws, "index %d is out of range for dimension %d of extent %d (sample shape %v)", int64(v), d, n, in.Shape)
			}
			st.fixed += int(i) * inStride[d]
			continue
		}
		step := clampStep(o.step[j], n)
		start, count := sliceRange(int64(v), o.hi[j], step, o.hasLo[j] != 0, o.hasHi[j] != 0, n)
		st.fixed += int(start) * inStride[d]
		st.stride = append(st.stride, int(step)*inStride[d])
		st.outDims = append(st.outDims, int(count))
	}
	out := ws.Out[0]
	out.DType, out.Layout = in.DType, o.layout(in.Layout, nd)
	out.SetShape(st.outDims...)
	return nil
}

func (o *subscriptOp) Run(ws *engine.Workspace) error {
	in, out, st := ws.In[0], ws.Out[0], subscriptStateOf(ws)
	sz := in.DType.Size()
	total := 1
	for _, d := range st.outDims {
		total *= d
	}
	if total == 0 {
		return nil
	}
	base := st.fixed
	if cap(st.idx) < len(st.outDims) {
		st.idx = make([]int, len(st.outDims))
	}
	idx := st.idx[:len(st.outDims)]
	for d := range idx {
		idx[d] = 0
	}
	off := base
	for k := 0; k < total; k++ {
		copy(out.Data[k*sz:(k+1)*sz], in.Data[off*sz:(off+1)*sz])
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			off += st.stride[d]
			if idx[d] < st.outDims[d] {
				break
			}
			off -= st.stride[d] * idx[d]
			idx[d] = 0
		}
	}
	return nil
}
