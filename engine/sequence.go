package engine

import (
	"fmt"
	"strings"
	"sync"
)

// Sequences (DALI's "F" layouts: FHWC video, FCHW) go through image operators frame by
// frame, as DALI's sequence-aware operators do, without splitting the batch: a cpu node
// whose operator is marked with MarkSequenceOps and whose first input's layout starts
// with "F" runs its operator once per frame of each sample, the frame's views standing
// for the sample. Every frame of a sample sees the same random choices (the sample's
// random stream is replayed for each frame) and the same per-sample arguments, except
// arguments whose own layout starts with "F" (fn.per_frame), which give one value per
// frame. The outputs get the frame dimension in front and "F" in front of their layout.

var sequenceOps = struct {
	sync.RWMutex
	names map[string]bool
}{names: map[string]bool{}}

// MarkSequenceOps declares operators that take sequences frame by frame (their operator
// family knows which of its operators make sense per frame).
func MarkSequenceOps(names ...string) {
	sequenceOps.Lock()
	defer sequenceOps.Unlock()
	for _, n := range names {
		sequenceOps.names[n] = true
	}
}

// TakesSequences reports whether an operator was marked with MarkSequenceOps.
func TakesSequences(name string) bool {
	sequenceOps.RLock()
	defer sequenceOps.RUnlock()
	return sequenceOps.names[name]
}

// WholeSequences is implemented by operators marked with MarkSequenceOps that, with
// some arguments, take sequences whole (crop_mirror_normalize cropping along F): the
// graph then gives them the sequence instead of running them frame by frame.
type WholeSequences interface {
	WholeSequences() bool
}

func takesWholeSequences(op Operator) bool {
	w, ok := op.(WholeSequences)
	return ok && w.WholeSequences()
}

// isSequence reports whether m describes sequences: a layout starting with "F" that names
// every dimension.
func isSequence(m TensorMeta) bool {
	return len(m.Layout) >= 2 && m.Layout[0] == 'F' && len(m.Layout) == len(m.Shape)
}

// frameMeta is the meta of one frame of a sequence.
func frameMeta(m TensorMeta) TensorMeta {
	return TensorMeta{DType: m.DType, Layout: m.Layout[1:], Shape: append([]int(nil), m.Shape[1:]...)}
}

// frameOp runs a per-frame operator over sequences.
type frameOp struct {
	inner Operator
	name  string
	metas []TensorMeta // the inner operator's output metas (per frame)
}

func (o *frameOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	fin := append([]TensorMeta(nil), in...)
	fin[0] = frameMeta(in[0])
	metas, err := o.inner.Infer(fin)
	if err != nil {
		return nil, err
	}
	o.metas = metas
	out := make([]TensorMeta, len(metas))
	for k, m := range metas {
		out[k] = TensorMeta{DType: m.DType, Layout: "F" + m.Layout, Shape: append([]int{in[0].Shape[0]}, m.Shape...)}
		if m.Shape == nil {
			out[k].Shape = []int{in[0].Shape[0], -1}
		}
	}
	return out, nil
}

// frameState is a worker's frame workspace.
type frameState struct {
	inner   any
	ws      Workspace
	frame   Tensor    // the current frame of input 0
	in      []*Tensor // input 0 is &frame
	args    []*Tensor
	argView []Tensor // per-frame arguments' current element
	out     []Tensor
	outPtrs []*Tensor
	shapes  [][]int // frame 0's output shapes
	rngSeq  RNG     // the sample's random stream before the operator's Setup
	rngRun  RNG     // after it (what Run saw in Setup's wake)
}

func (o *frameOp) NewWorkerState() any {
	st := &frameState{}
	if s, ok := o.inner.(WorkerStateful); ok {
		st.inner = s.NewWorkerState()
	}
	st.out = make([]Tensor, len(o.metas))
	st.outPtrs = make([]*Tensor, len(o.metas))
	st.shapes = make([][]int, len(o.metas))
	for k, m := range o.metas {
		st.out[k] = Tensor{DType: m.DType, Layout: m.Layout}
		st.outPtrs[k] = &st.out[k]
	}
	return st
}

// Close releases the inner operator's worker state.
func (st *frameState) Close() {
	if c, ok := st.inner.(Closer); ok {
		c.Close()
	}
}

// prepare points the frame workspace at frame f of ws's sample.
func (o *frameOp) prepare(ws *Workspace, st *frameState, f int) {
	src := ws.In[0]
	fb := src.NumBytes() / max(src.Shape[0], 1)
	st.frame.DType, st.frame.Layout = src.DType, src.Layout[min(1, len(src.Layout)):]
	st.frame.Shape = append(st.frame.Shape[:0], src.Shape[1:]...)
	st.frame.Data = src.Data[f*fb : (f+1)*fb]
	if cap(st.in) < len(ws.In) {
		st.in = make([]*Tensor, len(ws.In))
	}
	st.in = st.in[:len(ws.In)]
	copy(st.in, ws.In)
	st.in[0] = &st.frame
	if cap(st.args) < len(ws.ArgIn) {
		st.args = make([]*Tensor, len(ws.ArgIn))
		st.argView = make([]Tensor, len(ws.ArgIn))
	}
	st.args = st.args[:len(ws.ArgIn)]
	for i, a := range ws.ArgIn {
		st.args[i] = a
		if a == nil || !strings.HasPrefix(a.Layout, "F") || len(a.Shape) == 0 || a.Shape[0] != src.Shape[0] {
			continue
		}
		v := &st.argView[i]
		eb := a.NumBytes() / max(a.Shape[0], 1)
		v.DType, v.Layout = a.DType, a.Layout[1:]
		v.Shape = append(v.Shape[:0], a.Shape[1:]...)
		v.Data = a.Data[f*eb : (f+1)*eb]
		st.args[i] = v
	}
	w := &st.ws
	*w = Workspace{Node: ws.Node, In: st.in, ArgIn: st.args, Out: st.outPtrs, State: st.inner, RNG: ws.RNG,
		Ref: ws.Ref, Sample: ws.Sample, Position: ws.Position, Epoch: ws.Epoch, Limits: ws.Limits, fed: ws.fed}
}

func (o *frameOp) Setup(ws *Workspace) error {
	st := ws.State.(*frameState)
	frames := ws.In[0].Shape[0]
	if frames < 1 {
		return Errorf(StatusData, "the sequence has no frames")
	}
	st.rngSeq = *ws.RNG
	o.prepare(ws, st, 0)
	if err := o.inner.Setup(&st.ws); err != nil {
		return err
	}
	st.rngRun = *ws.RNG
	for k := range ws.Out {
		t := &st.out[k]
		st.shapes[k] = append(st.shapes[k][:0], t.Shape...)
		ws.Out[k].Shape = append(append(ws.Out[k].Shape[:0], frames), t.Shape...)
	}
	return nil
}

func (o *frameOp) Run(ws *Workspace) error {
	st := ws.State.(*frameState)
	frames := ws.In[0].Shape[0]
	for f := 0; f < frames; f++ {
		o.prepare(ws, st, f)
		if f > 0 {
			*ws.RNG = st.rngSeq
			if err := o.inner.Setup(&st.ws); err != nil {
				return err
			}
			for k := range ws.Out {
				if !sameShape(st.out[k].Shape, st.shapes[k]) {
					return Errorf(StatusData, "frame %d gives output shape %v, frame 0 gave %v (the frames of a sequence must have one size)", f, st.out[k].Shape, st.shapes[k])
				}
			}
		} else {
			*ws.RNG = st.rngRun
		}
		for k := range ws.Out {
			ob := st.out[k].NumBytes()
			st.out[k].Shape = append(st.out[k].Shape[:0], st.shapes[k]...)
			st.out[k].Data = ws.Out[k].Data[f*ob : (f+1)*ob]
		}
		if err := o.inner.Run(&st.ws); err != nil {
			if frames > 1 {
				return wrapFrameErr(f, err)
			}
			return err
		}
	}
	return nil
}

func wrapFrameErr(f int, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Status: e.Status, Msg: fmt.Sprintf("frame %d: %s", f, e.Msg), Err: e.Err}
	}
	return Errorf(StatusData, "frame %d: %v", f, err)
}

// Fuse lets a fusable per-frame operator absorb a per-frame producer (crop_mirror_normalize
// taking in resize), frame by frame as for images.
func (o *frameOp) Fuse(producer Operator) (Operator, bool) {
	p, ok := producer.(*frameOp)
	if !ok {
		return nil, false
	}
	fz, ok := o.inner.(Fusable)
	if !ok {
		return nil, false
	}
	fused, ok := fz.Fuse(p.inner)
	if !ok {
		return nil, false
	}
	return &frameOp{inner: fused, name: o.name, metas: o.metas}, true
}
