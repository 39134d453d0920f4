package engine

import (
	"fmt"
	"strings"
)

// Sequences (DALI's "F" layouts: FHWC video, FCHW) go through image operators frame by
// frame, as DALI's sequence-aware operators do, without splitting the batch: a cpu node
// whose schema declares Sequences.PerFrame and whose first input's layout starts
// with "F" runs its operator once per frame of each sample, the frame's views standing
// for the sample. Every frame of a sample sees the same random choices (the sample's
// random stream is replayed for each frame) and the same per-sample arguments, except
// arguments whose own layout starts with "F" (fn.per_frame), which give one value per
// frame. The outputs get the frame dimension in front and "F" in front of their layout.

// sequencesOf returns the sequence support an operator's schema declares.
func sequencesOf(name string) Sequences {
	if s, ok := LookupSchema(name); ok {
		return s.Sequences
	}
	return Sequences{}
}

// TakesSequences reports whether an operator's schema lets it take sequences frame by
// frame (Schema.Sequences.PerFrame).
func TakesSequences(name string) bool { return sequencesOf(name).PerFrame }

// FrameSizer is implemented by per-frame operators whose frames could differ in output
// size (rotate by per-frame angles): before a sequence's frames are set up, the engine
// gives it each frame's workspace in turn (f = 0..n-1) so that it can choose one size for
// all of them, kept in its worker state.
type FrameSizer interface {
	SizeFrame(ws *Workspace, f, n int) error
}

// WholeSequences is implemented by sequence operators (Sequences.PerFrame) that, with
// some arguments, take sequences whole (crop_mirror_normalize cropping along F): the
// graph then gives them the sequence instead of running them frame by frame.
type WholeSequences interface {
	WholeSequences() bool
}

func takesWholeSequences(op Operator) bool {
	w, ok := op.(WholeSequences)
	return ok && w.WholeSequences()
}

// isChannelSequence reports whether m describes channel-first sequences ("CF" and at
// least one more dimension).
func isChannelSequence(m TensorMeta) bool {
	return len(m.Layout) >= 3 && strings.HasPrefix(m.Layout, "CF") && (len(m.Layout) == len(m.Shape) || m.Shape == nil)
}

// argFramed: the operator's frames may come from any sequence input or from per-frame
// arguments (Sequences.FramesFromArgs).
func argFramed(name string) bool { return sequencesOf(name).FramesFromArgs }

// channelFramed: the operator takes "CF..." inputs plane by plane (Sequences.ChannelFrames).
func channelFramed(name string) bool { return sequencesOf(name).ChannelFrames }

// isSequence reports whether m describes sequences: a layout starting with "F" that names
// every dimension.
func isSequence(m TensorMeta) bool {
	return len(m.Layout) >= 2 && m.Layout[0] == 'F' && (len(m.Layout) == len(m.Shape) || m.Shape == nil)
}

// isPerFrame reports whether an argument input's metadata marks it per frame.
func isPerFrame(m TensorMeta) bool { return strings.HasPrefix(m.Layout, "F") }

// framedInputs tells which inputs a node's operator gets frame by frame, or nil when the
// node does not run frame by frame. An error is DALI's refusal of per-frame arguments for
// an input without frames.
func framedInputs(n *Node, in []TensorMeta, args []TensorMeta) ([]bool, error) {
	if n.Device != "cpu" || !TakesSequences(n.OpName) {
		return nil, nil
	}
	framed := make([]bool, len(in))
	anyIn := false
	if len(in) > 0 && channelFramed(n.OpName) && isChannelSequence(in[0]) {
		framed[0] = true
		return framed, nil
	}
	for i, m := range in {
		// Input 0 makes the sequence; further sequence inputs (warp_affine's per-frame
		// matrices) go frame by frame with it. The arg-framed operators need no input 0.
		if (i == 0 || argFramed(n.OpName) || framed[0]) && isSequence(m) {
			framed[i], anyIn = true, true
		}
	}
	perFrameArg := ""
	for i, m := range args {
		if isPerFrame(m) && perFrameArg == "" {
			perFrameArg = n.Args.ArgInputName(i)
		}
	}
	switch {
	case anyIn:
		return framed, nil
	case perFrameArg != "" && argFramed(n.OpName):
		return framed, nil
	case perFrameArg != "" && len(in) > 0:
		return nil, Errorf(StatusInvalidPipeline, "%s: Tensor input for argument %s is specified per frame (got F layout). "+
			"In that case, samples in the input 0 must contain frames too. Got layout `%s` that does not contain frames.",
			describe(n.Name, n.OpName), perFrameArg, in[0].Layout)
	}
	return nil, nil
}

// frameMeta is the meta of one frame of a sequence.
func frameMeta(m TensorMeta) TensorMeta {
	fm := TensorMeta{DType: m.DType, Layout: m.Layout[min(1, len(m.Layout)):]}
	if len(m.Shape) > 0 {
		fm.Shape = append([]int(nil), m.Shape[1:]...)
	}
	return fm
}

// frameOp runs a per-frame operator over sequences.
type frameOp struct {
	inner  Operator
	name   string
	args   *Args        // the node's arguments (names of per-frame argument inputs in messages)
	framed []bool       // the inputs taken frame by frame (the others: whole, for every frame)
	planes bool         // input 0 is "CF...": run per (channel, frame) plane
	metas  []TensorMeta // the inner operator's output metas (per frame)
}

func (o *frameOp) frameInputs(in []TensorMeta) []TensorMeta {
	fin := append([]TensorMeta(nil), in...)
	for i := range fin {
		if o.framed[i] {
			fin[i] = frameMeta(in[i])
		}
	}
	if len(fin) > 0 && o.planes {
		fin[0] = frameMeta(fin[0])
	}
	return fin
}

func (o *frameOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	metas, err := o.inner.Infer(o.frameInputs(in))
	if err != nil {
		return nil, err
	}
	o.metas = metas
	if o.planes {
		return o.planeMetas(in[0], metas), nil
	}
	frames, allFramed := -1, true
	for i := range in {
		allFramed = allFramed && o.framed[i]
	}
	for i, m := range in {
		if o.framed[i] && len(m.Shape) > 0 {
			frames = m.Shape[0]
			break
		}
	}
	out := make([]TensorMeta, len(metas))
	for k, m := range metas {
		lay := "F" + m.Layout
		switch {
		case m.Layout != "":
		case allFramed && len(m.Shape) > 0:
			lay += strings.Repeat("*", len(m.Shape)) // DALI: "F**" for a sequence of matrices
		default:
			lay = "" // frames from arguments over an input without layout (coord_transform): none
		}
		out[k] = TensorMeta{DType: m.DType, Layout: lay, Shape: append([]int{frames}, m.Shape...)}
		if m.Shape == nil {
			out[k].Shape = []int{frames, -1}
			out[k].Layout = "F"
		}
	}
	return out, nil
}

// planeMetas gives the outputs of a plane by plane operator: [C, F, ...] with "CF" in
// front of the plane's layout.
func (o *frameOp) planeMetas(in TensorMeta, metas []TensorMeta) []TensorMeta {
	c, f := -1, -1
	if len(in.Shape) >= 2 {
		c, f = in.Shape[0], in.Shape[1]
	}
	out := make([]TensorMeta, len(metas))
	for k, m := range metas {
		out[k] = TensorMeta{DType: m.DType, Layout: "CF" + m.Layout, Shape: append([]int{c, f}, m.Shape...)}
		if m.Shape == nil {
			out[k] = TensorMeta{DType: m.DType, Layout: "CF", Shape: []int{c, f, -1}}
		}
	}
	return out
}

// frameState is a worker's frame workspace.
type frameState struct {
	inner   any
	ws      Workspace
	frames  int      // the sample's number of frames
	steps   int      // the inner operator's runs: frames, or channels * frames for planes
	inView  []Tensor // framed inputs' current frame
	in      []*Tensor
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

// argName names argument input i in messages.
func (o *frameOp) argName(i int) string {
	if o.args != nil {
		if n := o.args.ArgInputName(i); n != "" {
			return n
		}
	}
	return fmt.Sprintf("#%d", i)
}

// countFrames finds the sample's number of frames: the first framed input's, else the
// first per-frame argument's with more than one entry (one entry is given to every frame),
// and checks the other framed inputs and per-frame arguments against it (DALI's messages).
func (o *frameOp) countFrames(ws *Workspace) (int, error) {
	frames, lead := -1, ""
	if o.planes {
		frames, lead = ws.In[0].Shape[1], "input 0"
	}
	for i, t := range ws.In {
		if !o.framed[i] || (i == 0 && o.planes) {
			continue
		}
		if len(t.Shape) == 0 {
			return 0, Errorf(StatusData, "input %d: expected a sequence (frames first), got a scalar", i)
		}
		if frames < 0 {
			frames, lead = t.Shape[0], fmt.Sprintf("input %d", i)
			continue
		}
		if t.Shape[0] != frames {
			return 0, Errorf(StatusData, "The %s and the input %d have different number of frames for sample %d (%d and %d)",
				lead, i, ws.Sample, frames, t.Shape[0])
		}
	}
	for i, a := range ws.ArgIn {
		if a == nil || !isPerFrame(TensorMeta{Layout: a.Layout}) || len(a.Shape) == 0 {
			continue
		}
		c := a.Shape[0]
		switch {
		case frames < 0 && c != 1:
			frames, lead = c, fmt.Sprintf("argument `%s`", o.argName(i))
		case frames >= 0 && c != frames && c != 1:
			return 0, Errorf(StatusData, "The sample %d of tensor argument `%s` contains %d per-frame parameters, "+
				"but there are %d frames in the corresponding sample of %s.", ws.Sample, o.argName(i), c, frames, lead)
		}
	}
	if frames < 0 {
		frames = 1 // only single-entry per-frame arguments
	}
	return frames, nil
}

// prepare points the frame workspace at step p of ws's sample: frame p, or for planes
// the plane p of the [C, F] planes (frame p % F).
func (o *frameOp) prepare(ws *Workspace, st *frameState, p int) {
	f := p
	if o.planes {
		f = p % st.frames
	}
	if cap(st.in) < len(ws.In) {
		st.in = make([]*Tensor, len(ws.In))
		st.inView = make([]Tensor, len(ws.In))
	}
	st.in = st.in[:len(ws.In)]
	copy(st.in, ws.In)
	for i, src := range ws.In {
		switch {
		case i == 0 && o.planes:
			st.in[i] = planeView(&st.inView[i], src, p)
		case o.framed[i]:
			st.in[i] = elementView(&st.inView[i], src, f)
		}
	}
	if cap(st.args) < len(ws.ArgIn) {
		st.args = make([]*Tensor, len(ws.ArgIn))
		st.argView = make([]Tensor, len(ws.ArgIn))
	}
	st.args = st.args[:len(ws.ArgIn)]
	for i, a := range ws.ArgIn {
		st.args[i] = a
		if a == nil || !strings.HasPrefix(a.Layout, "F") || len(a.Shape) == 0 {
			continue
		}
		e := f
		if a.Shape[0] == 1 {
			e = 0 // one entry for every frame
		}
		st.args[i] = elementView(&st.argView[i], a, e)
	}
	w := &st.ws
	*w = Workspace{Node: ws.Node, In: st.in, ArgIn: st.args, Out: st.outPtrs, State: st.inner, RNG: ws.RNG,
		Ref: ws.Ref, Sample: ws.Sample, Position: ws.Position, Epoch: ws.Epoch, Limits: ws.Limits, fed: ws.fed,
		BatchSize: ws.BatchSize}
}

// elementView points v at element e of t's outermost dimension (the layout loses its
// leading letter) and returns v.
func elementView(v *Tensor, t *Tensor, e int) *Tensor {
	eb := t.NumBytes() / max(t.Shape[0], 1)
	v.DType, v.Layout = t.DType, t.Layout[min(1, len(t.Layout)):]
	v.Shape = append(v.Shape[:0], t.Shape[1:]...)
	v.Data = t.Data[e*eb : (e+1)*eb]
	return v
}

// planeView points v at plane p of t's two outermost dimensions and returns v.
func planeView(v *Tensor, t *Tensor, p int) *Tensor {
	n := max(t.Shape[0]*t.Shape[1], 1)
	pb := t.NumBytes() / n
	v.DType, v.Layout = t.DType, t.Layout[min(2, len(t.Layout)):]
	v.Shape = append(v.Shape[:0], t.Shape[2:]...)
	v.Data = t.Data[p*pb : (p+1)*pb]
	return v
}

func (o *frameOp) Setup(ws *Workspace) error {
	st := ws.State.(*frameState)
	frames, err := o.countFrames(ws)
	if err != nil {
		return err
	}
	if frames < 1 {
		return Errorf(StatusData, "the sequence has no frames")
	}
	st.frames, st.steps = frames, frames
	lead := []int{frames}
	if o.planes {
		st.steps = ws.In[0].Shape[0] * frames
		lead = []int{ws.In[0].Shape[0], frames}
	}
	if st.steps < 1 {
		return Errorf(StatusData, "the sequence has no channels")
	}
	if sz, ok := o.inner.(FrameSizer); ok && !o.planes {
		for f := 0; f < frames; f++ {
			o.prepare(ws, st, f)
			if err := sz.SizeFrame(&st.ws, f, frames); err != nil {
				return err
			}
		}
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
		ws.Out[k].Shape = append(append(ws.Out[k].Shape[:0], lead...), t.Shape...)
	}
	return nil
}

func (o *frameOp) Run(ws *Workspace) error {
	st := ws.State.(*frameState)
	frames := st.steps
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
	return &frameOp{inner: fused, name: o.name, args: o.args, framed: p.framed, planes: p.planes, metas: o.metas}, true
}
