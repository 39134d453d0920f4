package engine

import (
	"sync"
	"unsafe"
)

// Batch is one completed batch: its outputs live in pool leases until the consumer drops
// the batch (the next Next) and every tensor exported from it.
type Batch struct {
	Epoch       int64
	Iteration   int64
	Valid       int   // leading samples that belong to the epoch
	Last        bool  // the epoch's last batch
	Skipped     int64 // failed samples replaced (on_error = "skip")
	SkippedErrs []error
	Skips       []Skip // the replaced samples' files, in sample order

	pool       *HostPool
	trimmed    int           // > 0: the samples shown (last_batch_policy "partial")
	capacity   int           // the pipeline's batch_size: the most samples a batch may have
	refs       []SampleRef   // the epoch reader's samples (rrefs[primary]); len is the batch's size
	rrefs      [][]SampleRef // by reader: its samples of the batch
	next       []readerPos   // by reader: its position after this batch (other readers than the epoch reader)
	outs       []*OutputBatch
	errs       []error
	wg         sync.WaitGroup
	done       chan struct{}
	err        error
	endOfEpoch bool
	lastTry    map[int]error // a failed sample's last replacement's error (on_error = "skip")
	gpu        *gpuBatch     // the batch's GPU memory and fences; nil without a GPU stage
	fed        []*Feed       // the batches fed to the external sources (feed.go)
	stream     StreamBatch   // a stream source's item and plan (feed.go)
	feeds      *feeds
	cross      []crossValue // data crossing phases (Partition.Cross; hostbatch.go)
	branches   []branchRun  // by gate: the samples of each conditional branch (conditional.go)
	// The batch's place in the order of the serial host-batch nodes' calls (hostturn.go):
	// ordered once the producer gave it seq; turnsTaken counts the turns it ended.
	seq        int64
	ordered    bool
	turnsTaken int
}

// Skip describes a sample replaced under on_error = "skip".
type Skip struct {
	Sample int    `json:"sample"` // index in the batch
	File   string `json:"file"`   // the file that failed ("" when the sample has none)
	Node   string `json:"node"`   // the node that failed
	Error  string `json:"error"`
}

// OutputBatch is one pipeline output of a batch.
type OutputBatch struct {
	Name  string
	Meta  TensorMeta
	Dense bool // every sample has the build-time shape: one lease for the batch
	// OnGPU: the output is GPU data (from a mixed or gpu node), in device memory on
	// DeviceID; the views then carry a DeviceRef instead of a host lease.
	OnGPU    bool
	DeviceID int
	dev      deviceOutput // where the GPU stage put it

	pool        *HostPool
	whole       *Lease // Dense: [N, ...]
	sampleBytes int
	samples     []*Lease // ragged: one lease per sample
	shapes      [][]int
	gatherMu    sync.Mutex
	gathered    *Lease
	// A host-batch node's output has its type and rank fixed by its first sample.
	typeMu sync.Mutex
	typed  bool
	ndim   int
	// runLayout is sample 0's layout as its operator set it at run time, for outputs
	// whose build-time layout is unknown (an external source fed with a layout).
	runLayout string
}

// Layout is the output's layout: the build-time one, else the one its samples got when
// they ran.
func (o *OutputBatch) Layout() string {
	if o.Meta.Layout != "" {
		return o.Meta.Layout
	}
	return o.runLayout
}

// newBatch makes a batch of n samples: the pipeline's batch_size, or fewer when the
// external sources (or a stream source) give fewer for the iteration (variable batch
// size). Its capacity stays batch_size (allocateOutputs, random streams).
func (p *Pipeline) newBatch(epoch, iter int64, n int) *Batch {
	b := &Batch{Epoch: epoch, Iteration: iter, pool: p.pool, capacity: p.Spec.BatchSize, errs: make([]error, n), done: make(chan struct{})}
	b.rrefs = make([][]SampleRef, len(p.readers))
	b.next = make([]readerPos, len(p.readers))
	for r := range b.rrefs {
		b.rrefs[r] = make([]SampleRef, n)
	}
	if p.primary >= 0 {
		b.refs = b.rrefs[p.primary]
	} else {
		b.refs = make([]SampleRef, n)
	}
	for _, d := range p.Graph.Outputs {
		o := &OutputBatch{Name: d.Name, Meta: d.Meta, Dense: d.Meta.Static(), pool: p.pool,
			shapes: make([][]int, n), OnGPU: p.Part.OnGPU(d)}
		if o.OnGPU {
			o.DeviceID = *p.Spec.DeviceID
		}
		if !o.Dense && !o.OnGPU {
			o.samples = make([]*Lease, n)
		}
		b.outs = append(b.outs, o)
	}
	b.initCross(n, len(p.Part.Cross))
	b.initBranches(len(p.Graph.Gates), n)
	return b
}

// allocateOutputs leases the dense outputs' [N, ...] buffers. They are leased for the
// pipeline's batch_size whatever the batch's size, so that a smaller batch reuses the
// buffers reserved at build (no mapping when the batch size changes).
func (b *Batch) allocateOutputs() error {
	for _, o := range b.outs {
		if !o.Dense || o.OnGPU {
			continue
		}
		var ok bool
		o.sampleBytes, ok = checkedBytes(o.Meta.DType, o.Meta.Shape)
		n, ok2 := mulSize(o.sampleBytes, b.capacity)
		if !ok || !ok2 {
			return Errorf(StatusInvalidPipeline, "output %q: a batch of %d samples of shape %v does not fit in memory", o.Name, b.capacity, o.Meta.Shape)
		}
		l, err := b.pool.Get(n)
		if err != nil {
			return err
		}
		o.whole = l
	}
	return nil
}

// sampleBuffer returns the memory sample i of this output is written to.
func (o *OutputBatch) sampleBuffer(i int, t *Tensor, need int) ([]byte, error) {
	if o.Meta.DType == DTypeInvalid || o.typed {
		// An output typed at run time (an operator taking a python_function's output):
		// its first sample fixes the batch's type, as for host-batch outputs.
		if err := o.setSampleType(i, t.DType, len(t.Shape)); err != nil {
			return nil, err
		}
	}
	o.shapes[i] = append(o.shapes[i][:0], t.Shape...)
	if i == 0 && len(t.Layout) == len(t.Shape) {
		o.runLayout = t.Layout
	}
	if o.Dense {
		if need != o.sampleBytes {
			return nil, Errorf(StatusInternal, "output %q: sample shape %v differs from the build-time shape %v", o.Name, t.Shape, o.Meta.Shape)
		}
		return o.whole.Bytes()[i*need : (i+1)*need], nil
	}
	if old := o.samples[i]; old != nil { // a replaced sample
		old.Release()
		o.samples[i] = nil
	}
	l, err := o.pool.Get(need)
	if err != nil {
		return nil, err
	}
	o.samples[i] = l
	return l.Bytes(), nil
}

func (b *Batch) release() {
	b.releaseFeeds()
	b.releaseCross()
	if b.gpu != nil {
		b.gpu.release()
		b.gpu = nil
	}
	for _, o := range b.outs {
		if o.whole != nil {
			o.whole.Release()
			o.whole = nil
		}
		for i, l := range o.samples {
			if l != nil {
				l.Release()
				o.samples[i] = nil
			}
		}
		if o.gathered != nil {
			o.gathered.Release()
			o.gathered = nil
		}
	}
}

// Size is the number of samples: the pipeline's batch_size, or fewer in an iteration
// whose external sources were fed a smaller batch.
func (b *Batch) Size() int { return len(b.refs) }

// Output returns output k.
func (b *Batch) Output(k int) *OutputBatch { return b.outs[k] }

// NumOutputs is the number of pipeline outputs.
func (b *Batch) NumOutputs() int { return len(b.outs) }

// Sources are the files of the batch's samples (of the epoch reader).
func (b *Batch) Sources() []SampleRef { return b.refs }

// ReaderSources are the files of the batch's samples that reader r (Graph.Readers'
// order) planned.
func (b *Batch) ReaderSources(r int) []SampleRef { return b.rrefs[r] }

// ref is sample i's reference of reader r; the epoch reader's for r < 0.
func (b *Batch) ref(r, i int) *SampleRef {
	if r < 0 {
		return &b.refs[i]
	}
	return &b.rrefs[r][i]
}

// View is exported memory: the caller owns one reference of Lease (host memory) or Dev
// (GPU memory) and must Release it.
type View struct {
	Ptr   unsafe.Pointer // host memory
	Shape []int64
	DType DType
	Lease *Lease
	// GPU memory: DevPtr on device DeviceID, held by Dev, which also orders the
	// consumer's stream after the work that wrote it.
	DevPtr   uintptr
	DeviceID int
	Dev      *DeviceRef
}

// Uniform reports whether every sample has the same shape.
func (o *OutputBatch) Uniform() bool {
	if o.Dense {
		return true
	}
	for _, s := range o.shapes[1:] {
		if !sameShape(s, o.shapes[0]) {
			return false
		}
	}
	return true
}

// SampleShape is the shape of sample i.
func (o *OutputBatch) SampleShape(i int) []int { return o.shapes[i] }

// NumSamples is the batch size (the valid samples of a trimmed last batch).
func (o *OutputBatch) NumSamples() int { return len(o.shapes) }

// trim exposes only the first n samples of the batch (last_batch_policy "partial"): the
// outputs report n samples; the memory of the others is kept until the batch is released.
func (b *Batch) trim(n int) {
	if n <= 0 || n >= len(b.refs) {
		return
	}
	for _, o := range b.outs {
		if n < len(o.shapes) {
			o.shapes = o.shapes[:n]
		}
	}
	b.trimmed = n
}

// Exposed is the number of samples the batch shows (Size, or fewer after trim).
func (b *Batch) Exposed() int {
	if b.trimmed > 0 {
		return b.trimmed
	}
	return len(b.refs)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// DenseView exports the whole output as [N, ...]: without a copy when dense, gathered
// into one lease (once per batch) when ragged samples share a shape.
func (o *OutputBatch) DenseView() (View, error) {
	if o.OnGPU {
		return o.deviceDenseView()
	}
	n := len(o.shapes)
	shape := make([]int64, 0, 1+len(o.shapes[0]))
	shape = append(shape, int64(n))
	for _, d := range o.shapes[0] {
		shape = append(shape, int64(d))
	}
	if o.Dense {
		o.whole.Retain()
		return View{Ptr: o.whole.Ptr(), Shape: shape, DType: o.Meta.DType, Lease: o.whole}, nil
	}
	if !o.Uniform() {
		return View{}, Errorf(StatusState, "output %q is ragged (sample 0 has shape %v); ask for it per sample", o.Name, o.shapes[0])
	}
	o.gatherMu.Lock()
	defer o.gatherMu.Unlock()
	if o.gathered == nil {
		per := o.samples[0].size
		l, err := o.pool.Get(per * n)
		if err != nil {
			return View{}, err
		}
		dst := l.Bytes()
		for i, s := range o.samples[:n] {
			copy(dst[i*per:(i+1)*per], s.Bytes())
		}
		o.gathered = l
	}
	o.gathered.Retain()
	return View{Ptr: o.gathered.Ptr(), Shape: shape, DType: o.Meta.DType, Lease: o.gathered}, nil
}

// SampleView exports sample i without a copy.
func (o *OutputBatch) SampleView(i int) (View, error) {
	if i < 0 || i >= len(o.shapes) {
		return View{}, Errorf(StatusInvalidArgument, "sample index %d out of range [0, %d)", i, len(o.shapes))
	}
	if o.OnGPU {
		return o.deviceSampleView(i)
	}
	shape := make([]int64, len(o.shapes[i]))
	for k, d := range o.shapes[i] {
		shape[k] = int64(d)
	}
	if o.Dense {
		o.whole.Retain()
		return View{Ptr: unsafe.Add(o.whole.Ptr(), i*o.sampleBytes), Shape: shape, DType: o.Meta.DType, Lease: o.whole}, nil
	}
	l := o.samples[i]
	l.Retain()
	return View{Ptr: l.Ptr(), Shape: shape, DType: o.Meta.DType, Lease: l}, nil
}

// Err is the batch's error (used by tests).
func (b *Batch) Err() error { return b.err }
