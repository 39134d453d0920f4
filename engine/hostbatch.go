package engine

import (
	"fmt"
	"strings"
)

// HostBatchOperator is implemented by cpu operators that see a whole batch at once
// (python_function and its DLPack and torch flavours): their output shapes and types are
// known only once they ran over the batch. The executor splits the per-sample work at
// such a node into phases: the workers run every sample up to the node's inputs, then the
// batch's own goroutine calls RunHostBatch once, then the workers run the nodes that
// depend on its outputs. Data that crosses a phase boundary lives in the batch's pool
// leases (Partition.Cross), so the worker buffers stay per-sample scratch.
//
// Setup and Run of such an operator are never called. Its Infer may leave DType
// DTypeInvalid and Shape nil: the type and the number of dimensions are decided when it
// runs (DynamicMeta).
type HostBatchOperator interface {
	Operator
	RunHostBatch(hw *HostBatchWorkspace) error
}

// DynamicMeta is the build-time description of an output whose type and dimensions are
// known only at run time (a HostBatchOperator's).
func DynamicMeta(layout string) TensorMeta { return TensorMeta{Layout: layout} }

// IsDynamic reports whether the element type is known only at run time.
func (m TensorMeta) IsDynamic() bool { return m.DType == DTypeInvalid }

// HostBatchWorkspace is what RunHostBatch sees of a batch: every sample of every input,
// host memory valid during the call.
type HostBatchWorkspace struct {
	Node      string
	Size      int         // samples in the batch
	In        [][]*Tensor // [input][sample]
	ArgIn     [][]*Tensor // [argument input][sample], in the node's arg_inputs order
	Epoch     int64
	Iteration int64
	// Pipeline runs the call: a host function must not call into it (the C library
	// refuses such calls, capi/hostfunc.go).
	Pipeline *Pipeline

	b          *Batch
	n          *Node
	part       *Partition
	lim        *Limits
	nodeReader int // the reader whose samples the node processes (-1: the epoch reader)
	// idx maps the call's samples to the batch's: a node of a conditional branch sees
	// the branch's samples only (conditional.go).
	idx []int
}

// samples is the batch index of each of the call's samples.
func (hw *HostBatchWorkspace) samples() []int { return hw.idx }

// full is the batch index of the call's sample i (i itself when out of range, for errors).
func (hw *HostBatchWorkspace) full(i int) int {
	if i >= 0 && i < len(hw.idx) {
		return hw.idx[i]
	}
	return i
}

// Sample is sample i seen as a per-sample Workspace (its inputs and per-sample
// arguments, its file for errors), so that Args' per-sample getters (IntAt, FloatsAt,
// DataErrorf, ...) work from RunHostBatch. The view is for reading; it has no outputs.
func (hw *HostBatchWorkspace) Sample(i int, ws *Workspace) *Workspace {
	if ws == nil {
		ws = &Workspace{}
	}
	ws.Node, ws.Sample, ws.Epoch, ws.Limits = hw.Node, i, hw.Epoch, hw.lim
	ws.In, ws.ArgIn = ws.In[:0], ws.ArgIn[:0]
	for _, in := range hw.In {
		ws.In = append(ws.In, in[i])
	}
	for _, in := range hw.ArgIn {
		ws.ArgIn = append(ws.ArgIn, in[i])
	}
	ws.Ref = nil
	if f := hw.full(i); f < len(hw.b.refs) {
		ws.Ref = &hw.b.refs[f]
	}
	return ws
}

// Output gives sample i of output k its type and shape and returns the memory to fill.
// Every sample of one output must have the same type and number of dimensions.
func (hw *HostBatchWorkspace) Output(k, i int, dt DType, shape []int) ([]byte, error) {
	if k < 0 || k >= len(hw.n.Out) {
		return nil, Errorf(StatusInternal, "output %d out of range (%d outputs)", k, len(hw.n.Out))
	}
	return hw.OutputLayout(k, i, dt, shape, hw.n.Out[k].Meta.Layout)
}

// OutputLayout is Output for a sample whose layout is known only at run time (e.g. its
// input's, fed with a layout).
func (hw *HostBatchWorkspace) OutputLayout(k, i int, dt DType, shape []int, layout string) ([]byte, error) {
	if k < 0 || k >= len(hw.n.Out) || i < 0 || i >= hw.Size {
		return nil, Errorf(StatusInternal, "output %d sample %d out of range (%d outputs, %d samples)", k, i, len(hw.n.Out), hw.Size)
	}
	if dt.Size() == 0 {
		return nil, Errorf(StatusInvalidArgument, "output %d: unsupported element type %v", k, dt)
	}
	d := hw.n.Out[k]
	v := hw.part.cross[d]
	i = hw.full(i)
	t := &hw.b.cross[v].t[i]
	t.DType = dt
	t.Layout = layout
	t.SetShape(shape...)
	need, err := checkSampleSize(t, hw.lim, hw.n.OpName)
	if err != nil {
		return nil, err
	}
	if d.Output >= 0 {
		o := hw.b.outs[d.Output]
		if err := o.setSampleType(i, dt, len(shape)); err != nil {
			return nil, err
		}
		data, err := o.sampleBuffer(i, t, need)
		if err != nil {
			return nil, err
		}
		t.Data = data
		return data, nil
	}
	return hw.b.crossBuffer(v, i, t, need)
}

// SampleWorkspace is what a per-sample operator would see of sample i (its inputs,
// argument inputs and file), so that RunHostBatch reads per-sample arguments with the
// Args getters (a.IntsAt(hw.SampleWorkspace(i), name, buf)) and names the sample's file
// in errors (a.DataErrorf).
func (hw *HostBatchWorkspace) SampleWorkspace(i int) *Workspace {
	ws := &Workspace{Node: hw.Node, Sample: i, Epoch: hw.Epoch, Limits: hw.lim}
	for _, in := range hw.In {
		ws.In = append(ws.In, in[i])
	}
	for _, in := range hw.ArgIn {
		ws.ArgIn = append(ws.ArgIn, in[i])
	}
	if f := hw.full(i); hw.b != nil && i >= 0 && f < len(hw.b.refs) {
		ws.Ref = hw.b.ref(hw.nodeReader, f)
	}
	return ws
}

// setSampleType fixes a run-time typed output's type and rank from its first sample;
// the other samples must agree (a TensorList has one type).
func (o *OutputBatch) setSampleType(i int, dt DType, ndim int) error {
	o.typeMu.Lock()
	defer o.typeMu.Unlock()
	if !o.typed {
		o.Meta.DType, o.typed, o.ndim = dt, true, ndim
		return nil
	}
	if o.Meta.DType != dt || o.ndim != ndim {
		return Errorf(StatusData, "output %q: sample %d is %s with %d dimensions, but an earlier sample of the batch is %s with %d; every sample of an output must have one type and rank",
			o.Name, i, dt, ndim, o.Meta.DType, o.ndim)
	}
	return nil
}

// crossValue is one value that crosses a phase boundary, for every sample of a batch.
type crossValue struct {
	t      []Tensor
	leases []*Lease
}

func (b *Batch) initCross(n, values int) {
	if values == 0 {
		return
	}
	b.cross = make([]crossValue, values)
	for v := range b.cross {
		b.cross[v] = crossValue{t: make([]Tensor, n), leases: make([]*Lease, n)}
	}
}

// crossBuffer returns memory of the batch for sample i of crossing value v, of shape
// t.Shape.
func (b *Batch) crossBuffer(v, i int, t *Tensor, need int) ([]byte, error) {
	cv := &b.cross[v]
	if old := cv.leases[i]; old != nil { // a replaced sample
		old.Release()
		cv.leases[i] = nil
	}
	dst := &cv.t[i]
	dst.DType, dst.Layout = t.DType, t.Layout
	dst.SetShape(t.Shape...)
	if need == 0 {
		dst.Data = []byte{}
		return dst.Data, nil
	}
	l, err := b.pool.Get(need)
	if err != nil {
		return nil, err
	}
	cv.leases[i] = l
	dst.Data = l.Bytes()[:need]
	return dst.Data, nil
}

// crossRef records sample i of crossing value v as memory the batch already holds (a
// pipeline output, or host data kept for the GPU stage).
func (b *Batch) crossRef(v, i int, t *Tensor) {
	dst := &b.cross[v].t[i]
	dst.DType, dst.Layout, dst.Data = t.DType, t.Layout, t.Data
	dst.SetShape(t.Shape...)
}

func (b *Batch) releaseCross() {
	for v := range b.cross {
		for i, l := range b.cross[v].leases {
			if l != nil {
				l.Release()
				b.cross[v].leases[i] = nil
			}
		}
	}
	b.cross = nil
}

// releaseCrossPart gives back the crossing data of samples [lo, hi), whose part has
// run every phase (runParts): nothing reads it any more.
func (b *Batch) releaseCrossPart(lo, hi int) {
	for v := range b.cross {
		for i := lo; i < hi; i++ {
			if l := b.cross[v].leases[i]; l != nil {
				l.Release()
				b.cross[v].leases[i] = nil
			}
			b.cross[v].t[i].Data = nil
		}
	}
}

// SubBatchOperator is a HostBatchOperator that may run on parts of a batch
// (sub_batch_size): its RunHostBatch then sees the samples of one part at a time.
// Operators whose result depends on the whole batch (padding to the batch's largest
// sample, permuting the batch, batch statistics) do not implement it.
type SubBatchOperator interface {
	HostBatchOperator
	RunsOnParts()
}

// checkSubBatches refuses sub_batch_size for a graph with a host-batch node that needs
// the whole batch.
func checkSubBatches(spec *Spec, part *Partition) error {
	if spec.SubBatchSize == 0 {
		return nil
	}
	for _, nodes := range part.HostBatch {
		for _, n := range nodes {
			if _, ok := n.Op.(SubBatchOperator); !ok {
				return Errorf(StatusInvalidPipeline, "sub_batch_size %d: %s needs the whole batch (its result depends on every sample of it); remove sub_batch_size, or set it to the batch_size %d",
					spec.SubBatchSize, describe(n.Name, n.OpName), spec.BatchSize)
			}
		}
	}
	return nil
}

// loadCross points the worker's tensors of the values phase reads from earlier phases at
// sample src's data in the batch.
func (w *worker) loadCross(b *Batch, phase, src int) {
	for _, d := range w.p.Part.crossIn[phase] {
		c := &b.cross[w.p.Part.cross[d]].t[src]
		if c.DType == DTypeInvalid {
			// No value for this sample: it is not in the conditional branch that made
			// d, and no node of this phase reads d for it. The producer's tensor keeps
			// its type: overwriting it with none would leave the producer, the next
			// time this worker runs it on a sample of its branch, an output of no type
			// (and no memory).
			continue
		}
		t := w.ws[d.Producer.ID].Out[d.Index]
		t.Data, t.DType, t.Layout = c.Data, c.DType, c.Layout
		t.SetShape(c.Shape...)
	}
}

// runHostBatch runs the host-batch nodes that follow phase on the samples [lo, hi) of
// the batch (all of them, or a part: sub_batch_size). A serial node keeps its turn from
// the batch's first part to its last.
func (p *Pipeline) runHostBatch(b *Batch, phase, lo, hi int) error {
	last := hi >= len(b.refs)
	for _, n := range p.Part.HostBatch[phase] {
		var idx []int
		for i := lo; i < hi; i++ {
			if _, _, ok := b.inBranch(n.Gate, i); ok {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 && n.Gate != nil && n.OpName != splitOp {
			continue // an empty branch: the node has no sample to run on
		}
		hw := &HostBatchWorkspace{Node: n.Name, Size: len(idx), Epoch: b.Epoch, Iteration: b.Iteration,
			Pipeline: p, b: b, n: n, part: p.Part, lim: &p.limits, nodeReader: p.nodeReader[n.ID], idx: idx}
		values := func(d *DataNode) []*Tensor {
			ts := make([]*Tensor, len(idx))
			cv := b.cross[p.Part.cross[d]].t
			for k, i := range idx {
				ts[k] = &cv[i]
			}
			return ts
		}
		for _, d := range n.In {
			hw.In = append(hw.In, values(d))
		}
		for _, d := range n.ArgIn {
			hw.ArgIn = append(hw.ArgIn, values(d))
		}
		k, serial := p.host.index[n]
		if serial {
			// One call of the node at a time, in iteration order.
			if !p.host.turns[k].wait(b.seq) {
				return errAbandoned()
			}
			p.host.started(b, n)
		}
		err := n.Op.(HostBatchOperator).RunHostBatch(hw)
		if serial {
			p.host.ended(b)
			if last || err != nil {
				p.host.turns[k].pass(b.seq)
				b.turnsTaken = k + 1
			}
			if p.isAbandoned() {
				return errAbandoned()
			}
		}
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("node %q", n.Name)) {
				err = fmt.Errorf("%s: %w", describe(n.Name, n.OpName), err)
			}
			return sampleFailure(err, 0)
		}
	}
	return nil
}
