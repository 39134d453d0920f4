//go:build cuda

package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/godali/godali/internal/cuda"
)

// GPUContext is what the operators of mixed and gpu nodes get from the pipeline's GPU
// stage (docs/cuda.md): the device, the stage's stream and the pools. What operators
// share on top of it (the loaded kernel module and its launcher, which the engine does
// not know) they keep with Shared.
type GPUContext struct {
	Device  *cuda.Device
	Stream  cuda.Stream // the stage's non-blocking stream: RunBatch queues its work here
	DevPool *cuda.Pool  // device memory: outputs, scratch
	Pinned  *cuda.Pool  // pinned host memory: staging for copies to the device
	// BatchSize, NumThreads and Depth are the pipeline's batch_size, num_threads and
	// prefetch_queue_depth.
	BatchSize, NumThreads, Depth int

	shared    map[any]any
	sharedSeq []any // creation order; closed in reverse
}

// Shared returns the stage's value for key, made by create when the first operator asks
// for it (from BindGPU, on the stage's goroutine). A value with a Close method is closed
// when the stage is torn down, after every operator's UnbindGPU, in the reverse order of
// creation. A failed create is not remembered: the next call tries again.
func (c *GPUContext) Shared(key any, create func() (any, error)) (any, error) {
	if v, ok := c.shared[key]; ok {
		return v, nil
	}
	v, err := create()
	if err != nil {
		return nil, err
	}
	if c.shared == nil {
		c.shared = map[any]any{}
	}
	c.shared[key] = v
	c.sharedSeq = append(c.sharedSeq, v)
	return v, nil
}

// closeShared closes the shared values, newest first.
func (c *GPUContext) closeShared() {
	for i := len(c.sharedSeq) - 1; i >= 0; i-- {
		switch v := c.sharedSeq[i].(type) {
		case interface{ Close() error }:
			_ = v.Close()
		case interface{ Close() }:
			v.Close()
		}
	}
	c.shared, c.sharedSeq = nil, nil
}

// gpuBinder is implemented by batch operators that need the GPU before the first batch
// (nvJPEG handles, plans sized by the batch). UnbindGPU runs after the last batch.
type gpuBinder interface {
	BindGPU(ctx *GPUContext) error
	UnbindGPU()
}

// deviceHinter is implemented by operators whose output size per sample is known ahead
// (the decoders' preallocate_width_hint x preallocate_height_hint).
type deviceHinter interface{ PreallocBytes() int }

// deviceAlign aligns each sample's device memory: nvJPEG and the kernels read whole
// 128-byte lines.
const deviceAlign = 256

// reserveShare bounds what a pipeline preallocates from hints: at most this fraction of
// the device's memory, whatever the hints say (a hint sized for the largest image times
// batch and depth easily exceeds the whole GPU).
const reserveShare = 8

type valueKind uint8

const (
	keptValue   valueKind = iota // host data the stage reads, written by workers into pinned arenas
	mixedValue                   // GPU data written per sample by mixed nodes on the workers' streams
	deviceValue                  // GPU data written by gpu nodes on the stage's stream
)

// valueInfo is the build-time description of one value the stage tracks.
type valueInfo struct {
	d      *DataNode
	kind   valueKind
	dense  int  // bytes per sample of a value kept as one [N, ...] block (static shape), else 0
	output bool // a pipeline output: held until the batch is released
	hint   int  // bytes of an arena's first chunk before any batch has been seen
	hwm    atomic.Int64
}

// estimate is the size of the first arena chunk of the next batch: a quarter more than
// the most a batch has needed, so that batches rarely outgrow it.
func (vi *valueInfo) estimate() int {
	h := int(vi.hwm.Load())
	return max(vi.hint, h+h/4)
}

func (vi *valueInfo) used(n int) {
	for {
		h := vi.hwm.Load()
		if int64(n) <= h || vi.hwm.CompareAndSwap(h, int64(n)) {
			return
		}
	}
}

// stageNode is a mixed or gpu node as the stage runs it.
type stageNode struct {
	n        *Node
	op       BatchOperator
	mixed    bool
	note     int // index into gpuBatch.notes (mixed nodes)
	in, args []int
	out      []int
	ws       Workspace // gpu nodes: the per-sample workspace, re-pointed per sample
	bw       BatchWorkspace
}

// gpuStage runs the per-batch half of a pipeline on one goroutine and one non-blocking
// stream: batches arrive when their CPU phase is over, their GPU work is queued, an event
// is recorded, and the batch is marked done without the host waiting for the GPU.
type gpuStage struct {
	p      *Pipeline
	ctx    GPUContext
	alloc  cuda.Stream // orders reused arena chunks after their previous use (gpuBatch.ready)
	export cuda.Stream // gathers ragged outputs into one tensor for export
	values []*valueInfo
	nodes  []*stageNode
	noteOf []int // by node ID: index into gpuBatch.notes, -1 for non-mixed nodes
	nnotes int
	bound  []gpuBinder
	queue  chan *Batch
	done   chan struct{}
	rng    RNG

	workers []*workerGPU

	mu   sync.Mutex // guards free and all
	free []*gpuBatch
	all  []*gpuBatch

	life   sync.RWMutex // guards closed against DeviceRef fences
	closed bool

	prof []nodeTimes // by node ID: host time of runSamples+RunBatch; nil unless GODALI_PROFILE
}

func newGPUStage(p *Pipeline) (st *gpuStage, err error) {
	id := *p.Spec.DeviceID
	dev, err := cuda.Open(id)
	if err != nil {
		return nil, cudaError(fmt.Sprintf("pipeline device_id %d", id), err)
	}
	st = &gpuStage{p: p, queue: make(chan *Batch, p.Spec.PrefetchQueueDepth+1), done: make(chan struct{}),
		prof: p.newNodeTimes()}
	st.ctx = GPUContext{Device: dev, BatchSize: p.Spec.BatchSize, NumThreads: p.Spec.NumThreads, Depth: p.Spec.PrefetchQueueDepth}
	defer func() {
		if err != nil {
			st.teardown()
			st = nil
		}
	}()
	for _, s := range []*cuda.Stream{&st.ctx.Stream, &st.alloc, &st.export} {
		if *s, err = dev.NewStream(); err != nil {
			return st, cudaError("GPU stage: creating a stream", err)
		}
	}
	if st.ctx.DevPool, err = dev.NewDevicePool(); err != nil {
		return st, cudaError("GPU stage: device pool", err)
	}
	if st.ctx.Pinned, err = dev.NewPinnedPool(); err != nil {
		return st, cudaError("GPU stage: pinned pool", err)
	}
	for i := 0; i < p.Spec.NumThreads; i++ {
		w := &workerGPU{st: st}
		st.workers = append(st.workers, w)
		if w.stream, err = dev.NewStream(); err != nil {
			return st, cudaError("GPU stage: worker stream", err)
		}
		if w.tail, err = dev.NewEvent(); err != nil {
			return st, cudaError("GPU stage: worker event", err)
		}
	}
	if err := st.layout(); err != nil {
		return st, err
	}
	if err := st.reserve(); err != nil {
		return st, err
	}
	go st.loop()
	return st, nil
}

// layout numbers the values and the nodes of the GPU phase and binds the operators.
func (st *gpuStage) layout() error {
	p, part := st.p, st.p.Part
	bs := p.Spec.BatchSize
	for _, d := range part.Kept {
		st.values = append(st.values, &valueInfo{d: d, kind: keptValue, output: d.Output >= 0})
	}
	for _, d := range part.Device {
		vi := &valueInfo{d: d, kind: mixedValue, output: d.Output >= 0}
		if d.Producer.Device == "gpu" {
			vi.kind = deviceValue
		}
		if d.Meta.Static() {
			vi.dense = d.Meta.DType.Size()
			for _, x := range d.Meta.Shape {
				vi.dense *= x
			}
		}
		if h, ok := d.Producer.Op.(deviceHinter); ok && vi.kind == mixedValue && vi.dense == 0 {
			vi.hint = h.PreallocBytes() * bs
		}
		st.values = append(st.values, vi)
	}
	st.noteOf = make([]int, len(p.Graph.Nodes))
	for i := range st.noteOf {
		st.noteOf[i] = -1
	}
	for _, n := range part.Batch {
		op, ok := n.Op.(BatchOperator)
		if !ok {
			return Errorf(StatusInternal, "%s on device %q does not implement BatchOperator", describe(n.Name, n.OpName), n.Device)
		}
		sn := &stageNode{n: n, op: op, mixed: n.Device == "mixed", note: -1}
		if sn.mixed {
			sn.note = st.nnotes
			st.noteOf[n.ID] = st.nnotes
			st.nnotes++
		}
		for _, d := range n.In {
			sn.in = append(sn.in, part.valueIndex(d))
		}
		for _, d := range n.ArgIn {
			sn.args = append(sn.args, part.valueIndex(d))
		}
		for _, d := range n.Out {
			sn.out = append(sn.out, part.valueIndex(d))
		}
		sn.ws = Workspace{Node: n.Name, RNG: &st.rng, Limits: &p.limits,
			In: make([]*Tensor, len(n.In)), ArgIn: make([]*Tensor, len(n.ArgIn)), Out: make([]*Tensor, len(n.Out))}
		if s, ok := n.Op.(WorkerStateful); ok && !sn.mixed {
			sn.ws.State = s.NewWorkerState()
		}
		sn.bw = BatchWorkspace{Node: n.Name, In: make([][]Tensor, len(n.In)), Out: make([][]Tensor, len(n.Out)), GPU: &st.ctx}
		if b, ok := n.Op.(gpuBinder); ok {
			if err := b.BindGPU(&st.ctx); err != nil {
				return cudaError(describe(n.Name, n.OpName)+" on device \""+n.Device+"\"", err)
			}
			st.bound = append(st.bound, b)
		}
		st.nodes = append(st.nodes, sn)
	}
	return nil
}

// reserve preallocates what the batches in flight will need: dense GPU values and the
// hinted decoder arenas, for every batch that can be in flight (prefetch depth plus the
// one being filled), so that not even the first batches call cuMemAlloc.
func (st *gpuStage) reserve() error {
	spec := st.p.Spec
	count := spec.PrefetchQueueDepth + 1
	budget := int(st.ctx.Device.TotalMemory() / reserveShare)
	for _, vi := range st.values {
		n := 0
		switch {
		case vi.kind == keptValue:
		case vi.dense > 0:
			n = vi.dense * spec.BatchSize
		case vi.hint > 0:
			vi.hint = min(vi.hint, budget/count)
			n = vi.hint
		}
		if n == 0 {
			continue
		}
		if n*count > budget {
			continue // too large to reserve: the pool grows during warm-up instead
		}
		budget -= n * count
		r := cuda.Reservation{Bytes: n, Count: count}
		if err := r.Apply(st.ctx.DevPool); err != nil {
			return cudaError(fmt.Sprintf("preallocating %d x %d bytes for %q", count, n, vi.d.Name), err)
		}
	}
	return nil
}

// workerCPUs places the workers: those GODALI_AFFINITY_MASK covers keep its CPUs, the
// others go to the CPUs NVML reports near the GPU (none when NVML is unavailable), which
// it returns too.
func (st *gpuStage) workerCPUs(user []int, n int) (cpus, near []int) {
	if info, err := st.ctx.Device.Info(); err == nil {
		near = info.CPUAffinity
	}
	return cuda.WorkerCPUs(n, user, near), near
}

func (st *gpuStage) newWorker() *workerGPU {
	for _, w := range st.workers {
		if !w.taken {
			w.taken = true
			return w
		}
	}
	return nil
}

func (st *gpuStage) submit(b *Batch) { st.queue <- b }

func (st *gpuStage) loop() {
	defer close(st.done)
	for b := range st.queue {
		st.run(b)
		close(b.done)
	}
}

// run queues a batch's GPU work and records its event. The host never waits here.
func (st *gpuStage) run(b *Batch) {
	gb := b.gpu
	s := st.ctx.Stream
	err := st.runNodes(b, gb)
	// Recorded also after a failure: the batch's memory is released after this event.
	if rerr := st.ctx.Device.Record(gb.done, s); rerr == nil {
		gb.staged = true
	} else if err == nil {
		err = cudaError("GPU stage: recording the batch's event", rerr)
	}
	if err != nil {
		b.err = err
		return
	}
	// Values nobody outside the batch sees go back to the pools now, in stream order, so
	// that the next batch reuses them on this stream without waiting.
	for v, vi := range st.values {
		if !vi.output {
			gb.vals[v].releaseAll(func(blk *cuda.Block) { _ = blk.ReleaseAfter(s) }, vi)
		}
	}
	for k, d := range st.p.Graph.Outputs {
		o := b.outs[k]
		if !o.OnGPU {
			continue
		}
		val := &gb.vals[st.p.Part.valueIndex(d)]
		o.dev = deviceOutput{st: st, gb: gb, val: val}
		for i := range val.t {
			o.shapes[i] = append(o.shapes[i][:0], val.t[i].Shape...)
		}
	}
}

func (st *gpuStage) runNodes(b *Batch, gb *gpuBatch) error {
	dev, s := st.ctx.Device, st.ctx.Stream
	if gb.readyRecorded {
		if err := dev.Wait(s, gb.ready); err != nil {
			return cudaError("GPU stage: waiting for the batch's buffers", err)
		}
	}
	for _, w := range st.workers {
		if err := w.joinInto(s); err != nil {
			return cudaError("GPU stage: waiting for the workers' GPU work", err)
		}
	}
	n := len(b.refs)
	for _, sn := range st.nodes {
		bw := &sn.bw
		bw.Size, bw.Refs = n, b.refs
		for k, v := range sn.in {
			bw.In[k] = gb.vals[v].t[:n] // a smaller batch (variable batch size) uses the first n
		}
		for k, v := range sn.out {
			bw.Out[k] = gb.vals[v].t[:n]
		}
		bw.Notes = nil
		bw.HostWaitOutputs = gb.hostWaitReady
		var t0 time.Time
		if st.prof != nil {
			t0 = time.Now()
		}
		if sn.mixed {
			bw.Notes = gb.notes[sn.note][:n]
		} else if err := st.runSamples(b, gb, sn); err != nil {
			return err
		}
		if err := sn.op.RunBatch(bw); err != nil {
			return wrapStageErr(sn.n, err)
		}
		if st.prof != nil {
			// A mixed node's samples are counted by the workers that run its host part.
			pt := &st.prof[sn.n.ID]
			pt.ns.Add(int64(time.Since(t0)))
			if !sn.mixed {
				pt.calls.Add(int64(n))
			}
		}
	}
	return nil
}

// gpuNodeTimes: the GPU stage's per-node times (nil without a stage or profiling).
func (p *Pipeline) gpuNodeTimes() []nodeTimes {
	if p.gpu == nil {
		return nil
	}
	return p.gpu.prof
}

func wrapStageErr(n *Node, err error) error {
	if _, ok := err.(*Error); ok {
		return err
	}
	if se, ok := err.(*SampleError); ok {
		return &Error{Status: StatusData, Err: se}
	}
	return cudaError(describe(n.Name, n.OpName)+" on device \""+n.Device+"\"", err)
}

// runSamples runs a gpu node's Setup for every sample, allocates the batch's outputs,
// then runs Run for every sample, so that RunBatch finds the whole batch planned.
func (st *gpuStage) runSamples(b *Batch, gb *gpuBatch, sn *stageNode) error {
	ws := &sn.ws
	point := func(i int) {
		for k, v := range sn.in {
			ws.In[k] = &gb.vals[v].t[i]
		}
		for k, v := range sn.args {
			ws.ArgIn[k] = &gb.vals[v].t[i]
		}
		for k, v := range sn.out {
			ws.Out[k] = &gb.vals[v].t[i]
		}
		ws.Ref, ws.Sample, ws.Epoch = b.ref(st.p.nodeReader[sn.n.ID], i), i, b.Epoch
		ws.Position = b.Iteration*int64(b.capacity) + int64(i)
	}
	for i := range b.refs {
		point(i)
		first, last := sn.n.StreamKeys(st.p.seed)
		st.rng.Seed(first, uint64(b.Epoch), uint64(ws.Position), last)
		if err := sn.n.reseedFromState(ws, &st.rng); err != nil {
			return &Error{Status: StatusData, Err: wrapSampleErr(ws.Ref, sn.n, err)}
		}
		if err := sn.op.Setup(ws); err != nil {
			return &Error{Status: StatusData, Err: wrapSampleErr(ws.Ref, sn.n, err)}
		}
		for _, t := range ws.Out { // sizes checked before memory is given to them
			if _, err := checkSampleSize(t, ws.Limits, sn.n.OpName); err != nil {
				return &Error{Status: StatusData, Err: wrapSampleErr(ws.Ref, sn.n, err)}
			}
		}
	}
	for _, v := range sn.out {
		if err := st.allocDevice(gb, v); err != nil {
			return err
		}
	}
	for i := range b.refs {
		point(i)
		if err := sn.op.Run(ws); err != nil {
			return &Error{Status: StatusData, Err: wrapSampleErr(ws.Ref, sn.n, err)}
		}
	}
	return nil
}

// allocDevice gives a gpu node's output its memory for the batch: one block, samples
// back to back ([N, ...] when the shape is static), from the pool in stream order.
func (st *gpuStage) allocDevice(gb *gpuBatch, v int) error {
	vi, val := st.values[v], &gb.vals[v]
	total := 0
	for i := range val.t {
		need := val.t[i].NumBytes()
		if vi.dense > 0 {
			if need != vi.dense {
				return Errorf(StatusInternal, "output %q: sample shape %v differs from the build-time shape %v", vi.d.Name, val.t[i].Shape, vi.d.Meta.Shape)
			}
			total += need
		} else {
			total += alignUp(need, deviceAlign)
		}
	}
	blk, err := st.ctx.DevPool.Get(max(total, 1), st.ctx.Stream)
	if err != nil {
		return cudaError(fmt.Sprintf("output %q: %d bytes", vi.d.Name, total), err)
	}
	val.whole = blk
	off := 0
	for i := range val.t {
		val.t[i].Dev = blk.Ptr() + uintptr(off)
		val.owner[i] = blk
		if vi.dense > 0 {
			off += vi.dense
		} else {
			off += alignUp(val.t[i].NumBytes(), deviceAlign)
		}
	}
	return nil
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// syncWorkers waits on the host for every worker's queued GPU work: for batches that
// never reached the stage (a failed sample, a stopped epoch), whose memory the workers
// may still be writing.
func (st *gpuStage) syncWorkers() {
	for _, w := range st.workers {
		w.drain()
	}
}

func (st *gpuStage) close() {
	close(st.queue)
	<-st.done
	st.teardown()
}

// teardown releases everything the stage holds; it also undoes a half-built stage.
// Tensors still held by consumers keep their blocks, and the pools keep the device
// context, until their deleters run.
func (st *gpuStage) teardown() {
	dev := st.ctx.Device
	for _, s := range []cuda.Stream{st.ctx.Stream, st.alloc, st.export} {
		if s != 0 {
			_ = dev.Synchronize(s)
		}
	}
	st.syncWorkers()
	st.life.Lock()
	st.closed = true
	st.life.Unlock()
	for _, b := range st.bound {
		b.UnbindGPU()
	}
	st.ctx.closeShared()
	st.mu.Lock()
	for _, gb := range st.all {
		gb.destroyEvents()
	}
	st.all, st.free = nil, nil
	st.mu.Unlock()
	for _, w := range st.workers {
		w.close()
	}
	for _, s := range []cuda.Stream{st.ctx.Stream, st.alloc, st.export} {
		if s != 0 {
			_ = dev.DestroyStream(s)
		}
	}
	if st.ctx.DevPool != nil {
		st.ctx.DevPool.Close()
	}
	if st.ctx.Pinned != nil {
		st.ctx.Pinned.Close()
	}
	_ = dev.Close()
}

// workerGPU is a worker thread's stream: mixed nodes queue their per-sample GPU work on
// it (nvJPEG's device phase, uploads), and the stage makes its own stream wait for it
// before running the batch.
type workerGPU struct {
	st     *gpuStage
	stream cuda.Stream
	tail   cuda.Event // recorded after each submission
	taken  bool

	mu     sync.Mutex // guards the tail's record and wait, dirty, closed
	dirty  bool       // work was queued since the stage last waited
	closed bool
}

// submitted marks the end of work the worker queued for a sample.
func (w *workerGPU) submitted() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.st.ctx.Device.Record(w.tail, w.stream); err != nil {
		return cudaError("worker stream: recording an event", err)
	}
	w.dirty = true
	return nil
}

// joinInto makes s wait for everything the worker has queued so far. A worker already
// busy with the next batch makes s wait a little longer, never too little.
func (w *workerGPU) joinInto(s cuda.Stream) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty || w.closed {
		return nil
	}
	w.dirty = false
	return w.st.ctx.Device.Wait(s, w.tail)
}

func (w *workerGPU) drain() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && w.stream != 0 {
		_ = w.st.ctx.Device.Synchronize(w.stream)
	}
}

func (w *workerGPU) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	dev := w.st.ctx.Device
	if w.stream != 0 {
		_ = dev.Synchronize(w.stream)
		_ = dev.DestroyStream(w.stream)
	}
	if w.tail != 0 {
		_ = dev.DestroyEvent(w.tail)
	}
}

// sampleGPU is what the per-sample half of a mixed node sees of the GPU.
type sampleGPU struct {
	worker *workerGPU
	batch  *gpuBatch
}

// begin returns the worker's stream, made to wait until the batch's device memory may be
// written (its blocks' previous users are done).
func (sg *sampleGPU) begin() (cuda.Stream, error) {
	w := sg.worker
	if w == nil || w.stream == 0 {
		return 0, Errorf(StatusInternal, "no worker stream")
	}
	if sg.batch.readyRecorded {
		if err := w.st.ctx.Device.Wait(w.stream, sg.batch.ready); err != nil {
			return 0, cudaError("worker stream: waiting for the batch's buffers", err)
		}
	}
	return w.stream, nil
}

// end marks the sample's GPU work as queued; the stage waits for it before the batch.
func (sg *sampleGPU) end() error { return sg.worker.submitted() }

// gpuBatch is a batch's GPU side: the memory of its values and its events. Batches are
// recycled, so that steady state allocates no Go memory for them either.
type gpuBatch struct {
	st            *gpuStage
	ready         cuda.Event // recorded on the alloc stream after the first chunks were fenced
	readyRecorded bool
	done          cuda.Event // recorded on the stage's stream after the batch's work
	gathered      cuda.Event // recorded on the export stream after gathers
	staged        bool
	vals          []gpuVal
	notes         [][]SampleNote

	extraMu sync.Mutex
	extra   []*cuda.Block // gathered outputs, written on the export stream

	hostWaitReady func() error // waitReady as a value made once (BatchWorkspace.HostWaitOutputs)
}

// waitReady waits on the host until the batch's first chunks are free of their previous
// users (ready; chunks added later were synchronised when they were taken).
func (gb *gpuBatch) waitReady() error {
	if !gb.readyRecorded {
		return nil
	}
	return cudaError("GPU stage: waiting for the batch's buffers", gb.st.ctx.Device.EventSync(gb.ready))
}

// gpuVal is one value of one batch.
type gpuVal struct {
	t     []Tensor
	owner []*cuda.Block // the block holding each sample (exports retain it)
	arena arena         // samples written by workers
	whole *cuda.Block   // one block for the batch (dense values, gpu node outputs)
}

// releaseAll gives the value's blocks back with rel and notes how much it used.
func (v *gpuVal) releaseAll(rel func(*cuda.Block), vi *valueInfo) {
	if v.whole != nil {
		rel(v.whole)
		v.whole = nil
	}
	if len(v.arena.chunks) > 0 {
		vi.used(v.arena.used)
		for i, c := range v.arena.chunks {
			rel(c)
			v.arena.chunks[i] = nil
		}
		v.arena.chunks = v.arena.chunks[:0]
	}
	v.arena.off, v.arena.used = 0, 0
	for i := range v.owner {
		v.owner[i] = nil
	}
}

func (gb *gpuBatch) destroyEvents() {
	dev := gb.st.ctx.Device
	for _, e := range []cuda.Event{gb.ready, gb.done, gb.gathered} {
		if e != 0 {
			_ = dev.DestroyEvent(e)
		}
	}
	gb.ready, gb.done, gb.gathered = 0, 0, 0
}

// take returns a recycled batch, or a new one.
func (st *gpuStage) take() (*gpuBatch, error) {
	st.mu.Lock()
	if n := len(st.free); n > 0 {
		gb := st.free[n-1]
		st.free = st.free[:n-1]
		st.mu.Unlock()
		return gb, nil
	}
	st.mu.Unlock()
	dev := st.ctx.Device
	gb := &gpuBatch{st: st, vals: make([]gpuVal, len(st.values)), notes: make([][]SampleNote, st.nnotes)}
	gb.hostWaitReady = gb.waitReady
	var err error
	for _, e := range []*cuda.Event{&gb.ready, &gb.done, &gb.gathered} {
		if *e, err = dev.NewEvent(); err != nil {
			gb.destroyEvents()
			return nil, cudaError("GPU stage: creating an event", err)
		}
	}
	n := st.p.Spec.BatchSize
	for v, vi := range st.values {
		gb.vals[v].t = make([]Tensor, n)
		gb.vals[v].owner = make([]*cuda.Block, n)
		for i := range gb.vals[v].t {
			gb.vals[v].t[i] = Tensor{DType: vi.d.Meta.DType, Layout: vi.d.Meta.Layout}
		}
		gb.vals[v].arena.st, gb.vals[v].arena.pinned = st, vi.kind == keptValue
	}
	for k := range gb.notes {
		gb.notes[k] = make([]SampleNote, n)
	}
	st.mu.Lock()
	st.all = append(st.all, gb)
	st.mu.Unlock()
	return gb, nil
}

// newBatch prepares a batch's GPU side on the producer goroutine: the first chunk of each
// arena and the dense blocks of mixed outputs, fenced on the alloc stream.
func (st *gpuStage) newBatch(b *Batch) (*gpuBatch, error) {
	gb, err := st.take()
	if err != nil {
		return nil, err
	}
	gb.staged, gb.readyRecorded = false, false
	// The batch's samples: batch_size, or fewer in an iteration fed a smaller batch
	// (variable batch size). The per-sample slices keep batch_size's capacity.
	n := len(b.refs)
	for v := range gb.vals {
		gb.vals[v].t = gb.vals[v].t[:n]
		gb.vals[v].owner = gb.vals[v].owner[:n]
	}
	for k := range gb.notes {
		gb.notes[k] = gb.notes[k][:n]
	}
	fail := func(err error) (*gpuBatch, error) {
		// After the alloc stream: it may still be waiting for the blocks' previous users.
		rel := func(blk *cuda.Block) { _ = blk.ReleaseAfter(st.alloc) }
		for v, vi := range st.values {
			gb.vals[v].releaseAll(rel, vi)
		}
		st.recycle(gb)
		return nil, err
	}
	device := false
	for v, vi := range st.values {
		val := &gb.vals[v]
		switch {
		case vi.kind == mixedValue && vi.dense > 0:
			// For batch_size samples whatever the batch's size: the reserved blocks
			// serve smaller batches too.
			blk, err := st.ctx.DevPool.Get(vi.dense*b.capacity, st.alloc)
			if err != nil {
				return fail(cudaError(fmt.Sprintf("output %q: %d bytes", vi.d.Name, vi.dense*b.capacity), err))
			}
			val.whole, device = blk, true
			for i := range val.t {
				val.t[i].Dev = blk.Ptr() + uintptr(i*vi.dense)
				val.owner[i] = blk
			}
		case vi.kind == mixedValue || vi.kind == keptValue:
			est := vi.estimate()
			if est == 0 {
				continue
			}
			if vi.kind == keptValue {
				blk, err := st.ctx.Pinned.Get(est, st.alloc) // waits on the host for its previous use
				if err != nil {
					return fail(cudaError(fmt.Sprintf("pinned memory for %q: %d bytes", vi.d.Name, est), err))
				}
				val.arena.chunks = append(val.arena.chunks, blk)
				continue
			}
			blk, err := st.ctx.DevPool.Get(est, st.alloc)
			if err != nil {
				return fail(cudaError(fmt.Sprintf("output %q: %d bytes", vi.d.Name, est), err))
			}
			val.arena.chunks, device = append(val.arena.chunks, blk), true
		}
	}
	if device {
		if err := st.ctx.Device.Record(gb.ready, st.alloc); err != nil {
			return fail(cudaError("GPU stage: recording an event", err))
		}
		gb.readyRecorded = true
	}
	return gb, nil
}

func (st *gpuStage) recycle(gb *gpuBatch) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.free = append(st.free, gb)
}

// note is sample i's record for mixed node n.
func (gb *gpuBatch) note(n *Node, i int) *SampleNote {
	return &gb.notes[gb.st.noteOf[n.ID]][i]
}

// deviceSample gives sample i of mixed value v its device memory.
func (gb *gpuBatch) deviceSample(v, i int, t *Tensor, need int) (uintptr, error) {
	vi, val := gb.st.values[v], &gb.vals[v]
	dst := &val.t[i]
	dst.Shape = append(dst.Shape[:0], t.Shape...)
	dst.DType, dst.Layout = t.DType, t.Layout
	if val.whole != nil {
		if need != vi.dense {
			return 0, Errorf(StatusInternal, "output %q: sample shape %v differs from the build-time shape %v", vi.d.Name, t.Shape, vi.d.Meta.Shape)
		}
		return dst.Dev, nil
	}
	blk, off, err := val.arena.alloc(need, deviceAlign)
	if err != nil {
		return 0, cudaError(fmt.Sprintf("output %q: %d bytes", vi.d.Name, need), err)
	}
	dst.Dev = blk.Ptr() + uintptr(off)
	val.owner[i] = blk
	return dst.Dev, nil
}

// keptSample gives sample i of kept host value v pinned memory of the batch.
func (gb *gpuBatch) keptSample(v, i int, t *Tensor, need int) ([]byte, error) {
	vi, val := gb.st.values[v], &gb.vals[v]
	blk, off, err := val.arena.alloc(need, 64)
	if err != nil {
		return nil, cudaError(fmt.Sprintf("pinned memory for %q: %d bytes", vi.d.Name, need), err)
	}
	dst := &val.t[i]
	dst.Shape = append(dst.Shape[:0], t.Shape...)
	dst.DType, dst.Layout = t.DType, t.Layout
	dst.Data = blk.Bytes()[off : off+need : off+need]
	dst.Dev = blk.Ptr() + uintptr(off) // pinned memory is mapped: the device may read it there
	val.owner[i] = blk
	return dst.Data, nil
}

// keepHost records sample i of kept value v, which lives in a pipeline output's lease.
func (gb *gpuBatch) keepHost(v, i int, t *Tensor) {
	dst := &gb.vals[v].t[i]
	dst.Shape = append(dst.Shape[:0], t.Shape...)
	dst.DType, dst.Layout, dst.Data, dst.Dev = t.DType, t.Layout, t.Data, 0
}

// release gives the batch's memory back once the consumer is done with the batch. The
// blocks of exported tensors stay with their DeviceRefs.
func (gb *gpuBatch) release() {
	st := gb.st
	finished := true
	if gb.staged {
		finished, _ = st.ctx.Device.EventDone(gb.done)
	} else {
		// The batch never reached the stage: wait for what the workers queued and for
		// the fences of its blocks' previous users.
		st.syncWorkers()
		_ = st.ctx.Device.Synchronize(st.alloc)
	}
	// Outputs gathered for export are read by copies on the export stream, which waited
	// for the batch's work first: their fence covers both.
	gb.extraMu.Lock()
	gathered := len(gb.extra) > 0
	gb.extraMu.Unlock()
	rel := func(blk *cuda.Block) {
		switch {
		case gathered:
			_ = blk.ReleaseAfter(st.export)
		case finished:
			blk.Release()
		default:
			_ = blk.ReleaseAfter(st.ctx.Stream)
		}
	}
	for v, vi := range st.values {
		gb.vals[v].releaseAll(rel, vi)
	}
	gb.extraMu.Lock()
	for i, blk := range gb.extra {
		_ = blk.ReleaseAfter(st.export)
		gb.extra[i] = nil
	}
	gb.extra = gb.extra[:0]
	gb.extraMu.Unlock()
	gb.staged, gb.readyRecorded = false, false
	st.recycle(gb)
}

// arena hands out pieces of a few large blocks to the samples of one batch, so that
// samples of varying size make one pool request per batch, not one each: the pool then
// serves steady state without new allocations.
type arena struct {
	st     *gpuStage
	pinned bool
	mu     sync.Mutex
	chunks []*cuda.Block
	off    int // in the last chunk
	used   int // bytes handed out, padding included
}

func (a *arena) alloc(n, align int) (*cuda.Block, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k := len(a.chunks); k > 0 {
		c := a.chunks[k-1]
		off := alignUp(a.off, align)
		if off+n <= c.Size() {
			a.used += off + n - a.off
			a.off = off + n
			return c, off, nil
		}
	}
	// The batch outgrew its estimate (or is among the first): add a chunk at least twice
	// the last. Rare after warm-up, so its fence may wait on the host.
	size := max(n, 1<<20)
	if k := len(a.chunks); k > 0 {
		size = max(size, 2*a.chunks[k-1].Size())
	}
	st := a.st
	var blk *cuda.Block
	var err error
	if a.pinned {
		blk, err = st.ctx.Pinned.Get(size, st.alloc)
	} else if blk, err = st.ctx.DevPool.Get(size, st.alloc); err == nil {
		if err = st.ctx.Device.Synchronize(st.alloc); err != nil {
			blk.Release()
		}
	}
	if err != nil {
		return nil, 0, err
	}
	a.chunks = append(a.chunks, blk)
	a.off = n
	a.used += n
	return blk, 0, nil
}

// deviceOutput is where the GPU stage put a pipeline output of a batch.
type deviceOutput struct {
	st       *gpuStage
	gb       *gpuBatch
	val      *gpuVal
	gathered *cuda.Block
}

// contiguous reports whether the samples lie back to back in one block: then the output
// exports as one [N, ...] tensor without a copy.
func (d *deviceOutput) contiguous(per, n int) bool {
	t := d.val.t[:n] // the batch's samples (fewer than batch_size in a smaller batch)
	for i := range t {
		if d.val.owner[i] != d.val.owner[0] || t[i].Dev != t[0].Dev+uintptr(i*per) {
			return false
		}
	}
	return d.val.owner[0] != nil
}

func (o *OutputBatch) deviceDenseView() (View, error) {
	d := &o.dev
	if d.val == nil {
		return View{}, Errorf(StatusInternal, "output %q has no GPU data", o.Name)
	}
	n := len(o.shapes)
	shape := make([]int64, 0, 1+len(o.shapes[0]))
	shape = append(shape, int64(n))
	for _, x := range o.shapes[0] {
		shape = append(shape, int64(x))
	}
	v := View{Shape: shape, DType: o.Meta.DType, DeviceID: o.DeviceID}
	if !o.Uniform() {
		return View{}, Errorf(StatusState, "output %q is ragged (sample 0 has shape %v); ask for it per sample", o.Name, o.shapes[0])
	}
	per := d.val.t[0].NumBytes()
	if d.contiguous(per, n) {
		v.DevPtr = d.val.t[0].Dev
		v.Dev = newDeviceRef(d.st, d.val.owner[0], d.gb.done)
		return v, nil
	}
	o.gatherMu.Lock()
	defer o.gatherMu.Unlock()
	if d.gathered == nil {
		blk, err := d.gather(per, n)
		if err != nil {
			return View{}, err
		}
		d.gathered = blk
	}
	v.DevPtr = d.gathered.Ptr()
	v.Dev = newDeviceRef(d.st, d.gathered, d.gb.gathered)
	return v, nil
}

// gather copies the samples into one block on the export stream, after the batch's work.
func (d *deviceOutput) gather(per, n int) (*cuda.Block, error) {
	st, dev := d.st, d.st.ctx.Device
	t := d.val.t[:n]
	blk, err := st.ctx.DevPool.Get(max(per*len(t), 1), st.export)
	if err != nil {
		return nil, cudaError("gathering an output", err)
	}
	fail := func(err error) (*cuda.Block, error) {
		_ = blk.ReleaseAfter(st.export)
		return nil, cudaError("gathering an output", err)
	}
	if err := dev.Wait(st.export, d.gb.done); err != nil {
		return fail(err)
	}
	// Runs of samples adjacent in memory go in one copy.
	for i := 0; i < len(t); {
		j := i + 1
		for j < len(t) && t[j].Dev == t[j-1].Dev+uintptr(per) {
			j++
		}
		if err := dev.CopyDtoDAsync(blk.Ptr()+uintptr(i*per), t[i].Dev, (j-i)*per, st.export); err != nil {
			return fail(err)
		}
		i = j
	}
	if err := dev.Record(d.gb.gathered, st.export); err != nil {
		return fail(err)
	}
	d.gb.extraMu.Lock()
	d.gb.extra = append(d.gb.extra, blk)
	d.gb.extraMu.Unlock()
	return blk, nil
}

func (o *OutputBatch) deviceSampleView(i int) (View, error) {
	d := &o.dev
	if d.val == nil || d.val.owner[i] == nil {
		return View{}, Errorf(StatusInternal, "output %q has no GPU data", o.Name)
	}
	shape := make([]int64, len(o.shapes[i]))
	for k, x := range o.shapes[i] {
		shape[k] = int64(x)
	}
	return View{Shape: shape, DType: o.Meta.DType, DeviceID: o.DeviceID, DevPtr: d.val.t[i].Dev,
		Dev: newDeviceRef(d.st, d.val.owner[i], d.gb.done)}, nil
}

// DeviceRef is one reference on exported GPU memory, with the event after which the
// memory holds the batch's data. Its consumer's stream waits on that event (Wait), and
// Release returns the memory only after the work the consumer queued on that stream.
type DeviceRef struct {
	st    *gpuStage
	block *cuda.Block
	ev    cuda.Event

	mu       sync.Mutex
	consumer cuda.Stream
}

func newDeviceRef(st *gpuStage, blk *cuda.Block, ev cuda.Event) *DeviceRef {
	blk.Retain()
	return &DeviceRef{st: st, block: blk, ev: ev, consumer: cuda.LegacyStream}
}

// Wait makes the consumer's stream (DLPack's stream argument: 1 legacy default, 2
// per-thread default, a CUstream handle above 2, -1 no synchronisation) wait for the
// work that wrote the memory, without blocking the host, and remembers the stream for
// Release. The event may since mark a later batch of the same pipeline: waiting for it
// is waiting a little longer, never too little. After the pipeline is destroyed its work
// is over and nothing needs waiting for.
func (r *DeviceRef) Wait(dlpackStream int64) error {
	s, wait, err := cuda.ConsumerStream(dlpackStream)
	if err != nil {
		return &Error{Status: StatusInvalidArgument, Err: err}
	}
	if !wait {
		return nil
	}
	r.st.life.RLock()
	if !r.st.closed {
		err = r.st.ctx.Device.Wait(s, r.ev)
	}
	r.st.life.RUnlock()
	if err != nil {
		return cudaError(fmt.Sprintf("making DLPack stream %d wait", dlpackStream), err)
	}
	// The per-thread default stream of the consumer's thread cannot be named from the
	// thread that runs the deleter; the legacy stream synchronises with it.
	if s == cuda.PerThreadStream {
		s = cuda.LegacyStream
	}
	r.mu.Lock()
	r.consumer = s
	r.mu.Unlock()
	return nil
}

// Sync waits on the host until the memory holds the batch's data.
func (r *DeviceRef) Sync() error {
	r.st.life.RLock()
	defer r.st.life.RUnlock()
	if r.st.closed {
		return nil
	}
	return cudaError("waiting for a batch", r.st.ctx.Device.EventSync(r.ev))
}

// Release drops the reference after the work queued so far on the consumer's stream
// (the legacy default stream when the consumer named none). Safe from any thread.
func (r *DeviceRef) Release() {
	r.mu.Lock()
	s := r.consumer
	r.mu.Unlock()
	_ = r.block.ReleaseAfter(s) // on failure the pool keeps the block aside until it closes
}

// Exported adjusts the device pool's count of DLPack tensors alive.
func (r *DeviceRef) Exported(d int64) { r.block.Pool().Exported(d) }

// pinnedPtr is the address of host memory the driver reads asynchronously: pinned pool
// blocks or the host pool's mappings, never Go memory.
func pinnedPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
