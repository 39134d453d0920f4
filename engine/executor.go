package engine

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godali/godali/source"
	"golang.org/x/sys/unix"
)

// Pipeline runs a Graph: num_threads workers process samples in parallel, and up to
// prefetch_queue_depth batches are prepared ahead of the consumer.
type Pipeline struct {
	Spec  *Spec
	Graph *Graph
	// Part says which nodes the workers run per sample and which the GPU stage runs
	// per batch.
	Part *Partition

	pool   *HostPool
	gpu    *gpuStage // nil unless the graph has mixed or gpu nodes
	limits Limits
	seed   uint64
	// readers plan the samples of every batch, each its own (Graph.Readers' order);
	// primary, the epoch reader, defines the pipeline's epochs (-1: no reader).
	readers []*readerSlot
	primary int
	// nodeReader is, by node ID, the reader whose sample a node processes (the reader
	// itself, or the first found upstream); -1 for none: ws.Ref then is the epoch
	// reader's sample.
	nodeReader []int
	feeds      *feeds      // external sources' queues (feed.go)
	profile    bool        // GODALI_PROFILE: per-node times (profile.go)
	tune       *tuner      // num_threads / prefetch_queue_depth "auto" (tuning.go)
	cpus       []int       // the workers' CPUs (GODALI_AFFINITY_MASK), by worker
	scans      *imageScans // the decoders' header scans (scan.go); nil before Build

	mu       sync.Mutex // one consumer call at a time
	built    bool
	closed   bool
	workers  []*worker
	tasks    chan task
	workerWG sync.WaitGroup

	credits  chan struct{}
	inflight chan *Batch
	head     *Batch // taken from inflight by WaitReady, for the next Next
	stop     chan struct{}
	prodDone chan struct{}
	running  bool
	parts    bool // batches run part by part (sub_batch_size): runsInParts
	epoch    int64
	taken    int64 // batches of the epoch the consumer has taken with Next (checkpoints)
	atEnd    bool
	current  *Batch

	// host orders the calls of the serial host-batch nodes (python_function): one
	// batch at a time per node, in iteration order (hostturn.go).
	host *hostOrder
	// abandoned is closed when a destroy stopped waiting for a host function: the
	// batches still running give up at their next step.
	abandoned chan struct{}
	builtAt   time.Time
}

type task struct {
	b      *Batch
	i      int
	src    int // the sample whose files it reads; differs from i when a failed sample is replaced
	phase  int // Partition.Phases index
	result chan<- sampleResult
}

// readerSlot is one reader of the pipeline. A reader other than the epoch reader goes
// on across the pipeline's epochs by itself, as DALI's readers do: when its own epoch
// ends it starts its next one. epoch and taken are the consumer's position in such a
// reader's stream (its epoch, and the batches of it taken with Next); the epoch reader's
// position is the pipeline's (Pipeline.epoch, Pipeline.taken).
type readerSlot struct {
	node  *Node
	src   BatchSource
	epoch int64
	taken int64
}

// readerPos is a position in a reader's stream: batch iter of its epoch.
type readerPos struct {
	epoch, iter int64
}

// sampleResult is the outcome of a replacement sample (on_error = "skip").
type sampleResult struct {
	i   int
	err error
}

// maxQueuedTasks bounds the task queue between the producer and the workers.
const maxQueuedTasks = 1 << 16

// maxReplacements is how many good samples of the batch a failed one tries in turn
// under on_error = "skip" before the batch fails.
const maxReplacements = 3

// bigBuffer: a worker's intermediate buffers from this size on come from the host pool
// (mmap) rather than the Go heap, so that failing to get one is an error of the sample,
// not a fatal error of the Go runtime. The same bound as what a worker keeps between
// samples (TrimBytes): such buffers are unmapped after their sample.
const bigBuffer = TrimBytes

// NewPipeline parses a JSON description and builds its graph. Nothing runs yet.
func NewPipeline(desc []byte) (*Pipeline, error) {
	spec, err := ParseSpec(desc)
	if err != nil {
		return nil, err
	}
	g, err := BuildGraph(spec)
	if err != nil {
		return nil, err
	}
	part, err := PartitionGraph(g)
	if err != nil {
		return nil, err
	}
	if err := checkSubBatches(spec, part); err != nil {
		return nil, err
	}
	p := &Pipeline{Spec: spec, Graph: g, Part: part, pool: NewHostPool(), epoch: spec.FirstEpoch, primary: -1,
		host: newHostOrder(part), abandoned: make(chan struct{}), parts: runsInParts(spec, part),
		profile: profileEnabled()}
	p.feeds = newFeeds(g)
	mask, _, _ := affinityMask() // a bad mask fails Build
	tn := initialTuning(spec, ReadCPUBudget(), len(mask))
	spec.NumThreads, spec.PrefetchQueueDepth = tn.NumThreads, tn.PrefetchQueueDepth
	p.tune = newTuner(tn)
	if err := p.feeds.checkStreams(g); err != nil {
		return nil, err
	}
	if err := p.feeds.checkCheckpointed(spec.CheckpointedFeeds); err != nil {
		return nil, err
	}
	p.limits.MaxImagePixels = spec.MaxImagePixels
	p.limits.MaxFileBytes = spec.MaxFileBytes
	if spec.Seed == -1 {
		p.seed = rand.Uint64()
	} else {
		p.seed = uint64(spec.Seed)
	}
	for _, r := range g.Readers {
		bs, ok := r.Op.(BatchSource)
		if !ok {
			return nil, Errorf(StatusInternal, "reader %q does not implement BatchSource", r.Name)
		}
		p.readers = append(p.readers, &readerSlot{node: r, src: bs, epoch: spec.FirstEpoch})
	}
	if len(p.readers) > 0 {
		p.primary = 0
	}
	p.setReaderSeeds(p.seed)
	p.setReaderPolicies()
	for _, r := range p.readers {
		if lt, ok := r.src.(LimitsTaker); ok {
			lt.TakeLimits(p.limits)
		}
	}
	// Other nodes that read before a sample's Setup (a streamed input's planner).
	for _, n := range g.Nodes {
		if lt, ok := n.Op.(LimitsTaker); ok && (n.Schema == nil || !n.Schema.IsReader) {
			lt.TakeLimits(p.limits)
		}
	}
	p.nodeReader = nodeReaders(g)
	return p, nil
}

// nodeReaders maps every node (by ID) to the reader whose samples it processes: itself
// for a reader, else the reader of its first input (or argument input) that has one.
func nodeReaders(g *Graph) []int {
	idx := map[*Node]int{}
	for i, r := range g.Readers {
		idx[r] = i
	}
	out := make([]int, len(g.Nodes))
	byNode := map[*Node]int{}
	for _, n := range g.Nodes { // execution order: producers first
		r := -1
		if i, ok := idx[n]; ok {
			r = i
		} else {
			for _, d := range append(append([]*DataNode{}, n.In...), n.ArgIn...) {
				if pr, ok := byNode[d.Producer]; ok && pr >= 0 {
					r = pr
					break
				}
			}
		}
		byNode[n] = r
		out[n.ID] = r
	}
	return out
}

func (p *Pipeline) setReaderSeeds(seed uint64) {
	for _, r := range p.readers {
		if s, ok := r.src.(interface{ SetPipelineSeed(uint64) }); ok {
			s.SetPipelineSeed(seed)
		}
	}
}

// setReaderPolicies hands the epoch reader the pipeline's last_batch_policy and the
// other readers "fill" (they go on across epochs by themselves).
func (p *Pipeline) setReaderPolicies() {
	for i, r := range p.readers {
		if t, ok := r.src.(PolicyTaker); ok {
			if i == p.primary {
				t.TakeLastBatchPolicy(p.Spec.LastBatchPolicy)
			} else {
				t.TakeLastBatchPolicy("fill")
			}
		}
	}
}

// SetLastBatchPolicy changes the pipeline's last_batch_policy ("fill", "partial" or
// "drop", as the description's key) at the start of an epoch: before its first batch
// is taken. Batches prepared ahead are dropped and prepared again.
func (p *Pipeline) SetLastBatchPolicy(policy string) error {
	if policy != "fill" && policy != "partial" && policy != "drop" {
		return Errorf(StatusInvalidArgument, "last_batch_policy must be \"fill\", \"partial\" or \"drop\", got %q", policy)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if policy == p.Spec.LastBatchPolicy {
		return nil
	}
	if p.taken > 0 {
		return Errorf(StatusState, "last_batch_policy can change only at the start of an epoch: %d batches of epoch %d are taken", p.taken, p.epoch)
	}
	if p.built {
		p.stopProducer()
	}
	old := p.Spec.LastBatchPolicy
	p.Spec.LastBatchPolicy = policy
	p.setReaderPolicies()
	if p.built && p.primary >= 0 {
		if err := checkEpoch(p.readers[p.primary], p.epoch, p.Spec.BatchSize); err != nil {
			p.Spec.LastBatchPolicy = old
			p.setReaderPolicies()
			return err
		}
	}
	return nil
}

// EpochBatches is the number of batches the current epoch delivers (the epoch of the
// batch Next returns next, or of the one it returned last once the epoch is over), as
// last_batch_policy shapes it; -1 when the epoch reader cannot tell or there is none.
func (p *Pipeline) EpochBatches() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	src, ok := p.epochSource().(EpochBatcher)
	if !ok {
		return -1, nil
	}
	if err := p.epochSource().Open(); err != nil {
		return 0, err
	}
	return src.EpochBatches(p.epoch, p.Spec.BatchSize)
}

// epochSource is the epoch reader's BatchSource, nil without readers.
func (p *Pipeline) epochSource() BatchSource {
	if p.primary < 0 {
		return nil
	}
	return p.readers[p.primary].src
}

// EpochReader is the name of the reader that defines the pipeline's epochs ("" when the
// pipeline has no reader): the first reader of the description unless SetEpochReader
// chose another.
func (p *Pipeline) EpochReader() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.primary < 0 {
		return ""
	}
	return p.readers[p.primary].node.Name
}

func (p *Pipeline) readerIndex(name string) (int, error) {
	for i, r := range p.readers {
		if r.node.Name == name {
			return i, nil
		}
	}
	valid := "none"
	if len(p.readers) > 0 {
		var names []string
		for _, r := range p.readers {
			names = append(names, strconv.Quote(r.node.Name))
		}
		valid = strings.Join(names, ", ")
	}
	return -1, Errorf(StatusInvalidArgument, "no reader named %q; readers: %s", name, valid)
}

// SetEpochReader makes the reader named name define the pipeline's epochs: Next returns
// ErrEndOfEpoch after its epoch's last batch, and batches carry its epoch and iteration.
// The other readers go on across epochs by themselves. The consumer's position in every
// reader's stream is kept; batches prepared ahead are dropped and prepared again.
func (p *Pipeline) SetEpochReader(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	i, err := p.readerIndex(name)
	if err != nil {
		return err
	}
	if i == p.primary {
		return nil
	}
	if p.built {
		p.stopProducer()
	}
	old, nw := p.readers[p.primary], p.readers[i]
	old.epoch, old.taken = p.epoch, p.taken
	p.epoch, p.taken, p.atEnd = nw.epoch, nw.taken, false
	p.primary = i
	p.setReaderPolicies()
	return nil
}

// Pool returns the pipeline's host pool.
func (p *Pipeline) Pool() *HostPool { return p.pool }

// OutputNames are the pipeline outputs in order.
func (p *Pipeline) OutputNames() []string { return p.Spec.Outputs }

// Build opens the readers, maps the output buffers and starts the workers. Idempotent.
// A failed build leaves nothing running (no worker, no GPU stage, no idle buffer) and may
// be retried.
func (p *Pipeline) Build() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if p.built {
		return nil
	}
	for i, r := range p.readers {
		if err := r.src.Open(); err != nil {
			return err
		}
		epoch := r.epoch
		if i == p.primary {
			epoch = p.epoch
		}
		if err := checkEpoch(r, epoch, p.Spec.BatchSize); err != nil {
			return err
		}
	}
	cpus, maskName, err := affinityMask()
	if err != nil {
		return err
	}
	user := len(cpus)
	if p.Spec.Preallocate && p.scans == nil {
		p.startScans()
	}
	if err := p.checkMemoryPlan(); err != nil {
		p.scans.close()
		p.scans = nil // a retried Build scans again
		return err
	}
	n := p.Spec.NumThreads
	// Whatever can fail comes before the workers start, so that a failed Build leaves
	// nothing running and may be retried.
	if err := p.reserveDenseOutputs(); err != nil {
		p.pool.Trim()
		return err
	}
	if p.Part.UsesGPU() {
		// The GPU stage first: it opens the device, whose NVML affinity places the
		// workers that GODALI_AFFINITY_MASK leaves out.
		if p.gpu, err = newGPUStage(p); err != nil {
			p.gpu = nil
			p.pool.Trim()
			return err
		}
		// As many places as "auto" may grow the workers to.
		var near []int
		cpus, near = p.gpu.workerCPUs(cpus, max(n, p.tune.t.MaxThreads))
		p.noteAffinity(maskName, user, cpus, near)
	} else {
		p.noteAffinity(maskName, user, cpus, nil)
	}
	p.cpus = cpus
	// "auto" may raise the depth later (tuning.go): the channels hold its maximum.
	depthCap := max(p.Spec.PrefetchQueueDepth, p.tune.t.MaxPrefetch)
	// Room for every sample in flight, bounded: a full queue only makes the producer wait.
	p.tasks = make(chan task, min(p.Spec.BatchSize*(depthCap+1), maxQueuedTasks))
	// Build returns once every worker runs on its thread, pinned where the mask says.
	var started sync.WaitGroup
	started.Add(n)
	for i := 0; i < n; i++ {
		w := newWorker(p, i)
		p.workers = append(p.workers, w)
		cpu := -1
		if i < len(cpus) {
			cpu = cpus[i]
		}
		p.workerWG.Add(1)
		go w.loop(cpu, &started)
	}
	started.Wait()
	p.credits = make(chan struct{}, depthCap)
	for i := 0; i < p.Spec.PrefetchQueueDepth; i++ {
		p.credits <- struct{}{}
	}
	p.inflight = make(chan *Batch, depthCap)
	p.built = true
	p.builtAt = time.Now()
	return nil
}

// reserveDenseOutputs maps, at build, the host buffers of the outputs whose size is known
// (one [N, ...] buffer per batch): as many as the pipeline holds at once, the
// prefetch_queue_depth batches in flight and the consumer's current one. The steady
// state then never maps memory, however the first batches happened to overlap.
func (p *Pipeline) reserveDenseOutputs() error {
	need := map[int]int{} // bytes -> buffers; outputs of one size share the buffers' class
	for _, d := range p.Graph.Outputs {
		if !d.Meta.Static() || p.Part.OnGPU(d) {
			continue
		}
		n, ok := mulSize(p.Spec.BatchSize, d.Meta.DType.Size())
		if ok {
			n, ok = mulSize(n, d.Meta.Shape...)
		}
		if !ok || classSize(n) < 0 {
			return Errorf(StatusInvalidPipeline, "output %q: a batch of %d samples of shape %v does not fit in memory", d.Name, p.Spec.BatchSize, d.Meta.Shape)
		}
		need[classSize(n)] += p.Spec.PrefetchQueueDepth + 1
	}
	for n, count := range need {
		if err := p.pool.Reserve(n, count); err != nil {
			return err
		}
	}
	return nil
}

// affinityMask parses GODALI_AFFINITY_MASK ("3,5,6,10": worker i runs on the i-th CPU),
// or DALI's DALI_AFFINITY_MASK, same format, when godali's own is not set (DALI scripts
// pin their threads with it).
func affinityMask() ([]int, string, error) {
	name := "GODALI_AFFINITY_MASK"
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		name = "DALI_AFFINITY_MASK"
		v = strings.TrimSpace(os.Getenv(name))
	}
	if v == "" {
		return nil, "", nil
	}
	var cpus []int
	for _, f := range strings.Split(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return nil, name, Errorf(StatusInvalidArgument, "%s=%q: expected a comma-separated list of CPU numbers", name, v)
		}
		cpus = append(cpus, c)
	}
	return cpus, name, nil
}

// Run makes sure batches are being prepared. It does not block.
func (p *Pipeline) Run() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *Pipeline) startLocked() error {
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if !p.built {
		return Errorf(StatusState, "pipeline is not built: call build first")
	}
	if p.running || p.atEnd {
		return nil
	}
	p.stop = make(chan struct{})
	p.prodDone = make(chan struct{})
	p.running = true
	others := make([]readerPos, len(p.readers))
	for i, r := range p.readers {
		others[i] = readerPos{r.epoch, r.taken}
	}
	go p.produce(p.stop, p.prodDone, p.epoch, p.taken, others)
	return nil
}

// Next blocks until the next batch is complete. After the epoch's last batch it returns
// ErrEndOfEpoch until Reset. A failed sample returns its error; the pipeline goes on with
// the following batch at the next call.
func (p *Pipeline) Next() (*Batch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.startLocked(); err != nil {
		return nil, err
	}
	p.releaseCurrent()
	if p.atEnd {
		return nil, ErrEndOfEpoch
	}
	p.tune.arrive()
	b := p.head
	p.head = nil
	if b == nil {
		var err error
		if b, err = p.waitBatch(); err != nil {
			return nil, err
		}
	}
	<-b.done
	p.credits <- struct{}{}
	if p.Spec.LastBatchPolicy == "drop" && !b.endOfEpoch && b.err == nil && b.Last && b.Valid < b.Size() {
		// The epoch's partial last batch is not returned: the end of the epoch, which
		// the producer queued after it, is what this call reports.
		p.taken = b.Iteration + 1
		for i, r := range p.readers {
			if i != p.primary {
				r.epoch, r.taken = b.next[i].epoch, b.next[i].iter
			}
		}
		b.release()
		var err error
		if b, err = p.waitBatch(); err != nil {
			return nil, err
		}
		<-b.done
		p.credits <- struct{}{}
	}
	if !b.endOfEpoch {
		// Taken also when it failed: the next call goes on with the following batch.
		p.taken = b.Iteration + 1
		for i, r := range p.readers {
			if i != p.primary {
				r.epoch, r.taken = b.next[i].epoch, b.next[i].iter
			}
		}
	}
	if b.endOfEpoch {
		p.atEnd = true
		p.stopProducer()
		p.tuneEpochEnd()
		return nil, ErrEndOfEpoch
	}
	p.tuneGot()
	if b.err != nil {
		b.release()
		return nil, b.err
	}
	if p.Spec.LastBatchPolicy == "partial" && b.Last && b.Valid < b.Size() {
		b.trim(b.Valid)
	}
	p.current = b
	return b, nil
}

// WaitReady waits, at most timeout, until Next would return without blocking (its
// batch is complete, the epoch is over, or it fails), and reports whether it would. It
// takes nothing: a host that must stay responsive while a batch is late (Python
// handling Ctrl-C between calls) polls it before Next.
func (p *Pipeline) WaitReady(timeout time.Duration) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.startLocked(); err != nil {
		return true, err
	}
	if p.atEnd {
		return true, nil
	}
	p.tune.arrive()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for p.head == nil {
		var signal <-chan struct{}
		if len(p.feeds.queues) > 0 {
			var starved bool
			starved, signal = p.feeds.state()
			select {
			case p.head = <-p.inflight:
				continue
			default:
			}
			if starved {
				return true, nil // Next fails at once: nothing was fed
			}
		}
		select {
		case p.head = <-p.inflight:
		case <-signal:
		case <-timer.C:
			return false, nil
		}
	}
	select {
	case <-p.head.done:
		return true, nil
	case <-timer.C:
		return false, nil
	}
}

// Current is the batch the last Next returned, nil if none.
func (p *Pipeline) Current() *Batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

func (p *Pipeline) releaseCurrent() {
	if p.current != nil {
		p.current.release()
		p.current = nil
	}
}

// Reset starts the next epoch. Batches prepared for the current one are dropped.
func (p *Pipeline) Reset() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if !p.built {
		return Errorf(StatusState, "pipeline is not built: call build first")
	}
	if p.taken == 0 && !p.atEnd {
		// Nothing of this epoch has been taken: it is still the next one (a second reset
		// in a row, or a reset before the first batch, does not skip an epoch).
		return nil
	}
	p.stopProducer()
	p.tune.resetClock()
	p.epoch++
	p.taken = 0
	p.atEnd = false
	return nil
}

// stopProducer ends the producer and drops every batch it queued.
func (p *Pipeline) stopProducer() { p.stopProducerWithin(-1) }

// stopProducerWithin is stopProducer that stops waiting for the queued batches once a
// host function (python_function) has held them up for grace (grace < 0: it waits as
// long as they take): it returns those batches, not released, and keeps none of their
// credits. Only a destroy gives a grace.
func (p *Pipeline) stopProducerWithin(grace time.Duration) []*Batch {
	if !p.running {
		return nil
	}
	close(p.stop)
	<-p.prodDone
	var queued []*Batch
	if b := p.head; b != nil {
		p.head = nil
		queued = append(queued, b)
	}
	for {
		select {
		case b := <-p.inflight:
			queued = append(queued, b)
			continue
		default:
		}
		break
	}
	p.running = false
	start := time.Now()
	for i, b := range queued {
		if calls := p.waitDone(b, start, grace); calls != nil {
			warn(abandonMessage(calls, time.Since(start)))
			return queued[i:]
		}
		b.release()
		p.credits <- struct{}{}
	}
	return nil
}

// waitDone waits until b is done (nil), or, with grace >= 0, until a host function has
// kept it from being done for grace since start: it returns the host calls running then.
func (p *Pipeline) waitDone(b *Batch, start time.Time, grace time.Duration) []activeHostCall {
	if grace < 0 {
		<-b.done
		return nil
	}
	for {
		wait := time.Until(start.Add(grace))
		if wait < 10*time.Millisecond {
			wait = 10 * time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-b.done:
			t.Stop()
			return nil
		case <-t.C:
		}
		// Past the grace: abandon only a wait a host function causes (the workers'
		// own waits end: Close interrupted their I/O).
		if time.Since(start) >= grace {
			if calls := p.host.running(); len(calls) > 0 {
				return calls
			}
		}
	}
}

// Interrupt stops the blocking I/O of the pipeline's operators (Interrupter): a Build
// or a batch waiting on a stalled remote request returns promptly, with an error
// naming the URL. It is for shutting down (Ctrl-C, Close): the remote readers stay
// stopped. It takes no lock, so it may be called from any goroutine while another is
// blocked in Build, Run or Next, and more than once.
func (p *Pipeline) Interrupt() {
	for _, n := range p.Graph.Nodes {
		if it, ok := n.Op.(Interrupter); ok {
			it.Interrupt()
		}
	}
}

// Close stops everything. Tensors handed out stay valid until released. Remote
// requests in flight are interrupted first, so Close does not wait for them. A host
// function (python_function) that does not return within HostCallGrace is not waited
// for either: Close says so on stderr, drops the batches it holds and returns; what
// they use is freed when it returns (or at exit).
func (p *Pipeline) Close() {
	p.Interrupt()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.scans.close() // the header scan, if it still runs
	p.closed = true
	var stuck []*Batch
	if p.built {
		stuck = p.stopProducerWithin(HostCallGrace)
		p.releaseCurrent()
	}
	if len(stuck) > 0 {
		close(p.abandoned) // the stuck batches stop at their next step
		p.host.abandon()   // and those waiting for a host function's turn at once
	}
	p.feeds.close() // the feeds still queued: their callbacks run now
	rest := func() {
		var wg sync.WaitGroup // each stuck batch released as soon as it is done
		for _, b := range stuck {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-b.done
				b.release()
			}()
		}
		wg.Wait()
		if p.built {
			close(p.tasks)
			p.workerWG.Wait()
			if p.gpu != nil {
				p.gpu.close()
			}
		}
		for _, n := range p.Graph.Nodes {
			if c, ok := n.Op.(Closer); ok {
				c.Close()
			}
		}
		p.pool.Close()
		releaseMemory()
	}
	if len(stuck) > 0 {
		go rest()
		return
	}
	rest()
}

// ReaderMeta describes the reader node named name.
func (p *Pipeline) ReaderMeta(name string) (ReaderMeta, error) {
	i, err := p.readerIndex(name)
	if err != nil {
		return ReaderMeta{}, err
	}
	src := p.readers[i].src
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.built {
		if err := src.Open(); err != nil {
			return ReaderMeta{}, err
		}
	}
	return src.Meta(), nil
}

// checkEpoch asks a reader whether it can start epoch (EpochChecker).
func checkEpoch(r *readerSlot, epoch int64, batchSize int) error {
	if c, ok := r.src.(EpochChecker); ok {
		return c.CheckEpoch(epoch, batchSize)
	}
	return nil
}

// replayPlan starts epoch of a reader and plans, without reading a file, the batches of
// it already taken (a restored or restarted pipeline goes on from there).
func replayPlan(src BatchSource, epoch, batches int64, refs []SampleRef) {
	src.StartEpoch(epoch)
	plan := src.NextBatch
	if r, ok := src.(BatchReplayer); ok {
		plan = r.ReplayBatch // without reading (or fetching) the batches' data
	}
	for i := int64(0); i < batches; i++ {
		if _, _, ok := plan(refs); !ok {
			break
		}
	}
}

// planFollower plans the next batch of a reader other than the epoch reader, starting
// its next epoch when the current one is over; pos is its position, moved on.
func planFollower(r *readerSlot, pos *readerPos, refs []SampleRef) error {
	if _, _, ok := r.src.NextBatch(refs); !ok {
		pos.epoch++
		pos.iter = 0
		r.src.StartEpoch(pos.epoch)
		if _, _, ok := r.src.NextBatch(refs); !ok {
			return Errorf(StatusInternal, "%s: epoch %d has no batch", describe(r.node.Name, r.node.OpName), pos.epoch)
		}
	}
	pos.iter++
	return nil
}

// produce plans batches in order, from batch start of the epoch on, and hands their
// samples to the workers. others are the consumer's positions in the other readers'
// streams.
func (p *Pipeline) produce(stop <-chan struct{}, done chan<- struct{}, epoch, start int64, others []readerPos) {
	defer close(done)
	bs := p.Spec.BatchSize
	scratch := make([]SampleRef, bs)
	for i, r := range p.readers {
		if i == p.primary {
			replayPlan(r.src, epoch, start, scratch)
		} else {
			replayPlan(r.src, others[i].epoch, others[i].iter, scratch)
		}
	}
	source := p.epochSource()
	for iter := start; ; iter++ {
		select {
		case <-p.credits:
		case <-stop:
			return
		}
		var b *Batch
		if source != nil {
			b = p.newBatch(epoch, iter, bs)
			var ok bool
			b.Valid, b.Last, ok = source.NextBatch(b.refs)
			if !ok {
				b.endOfEpoch = true
				close(b.done)
				p.inflight <- b // has room: we hold a credit
				return
			}
		}
		// Without a reader, a stream source may decide the batch's size (n).
		fed, n, plan, end, ok, ferr := p.feeds.take(stop, bs)
		if !ok {
			p.credits <- struct{}{}
			return
		}
		// Variable batch size: the fed batches decide the iteration's size (fedSize).
		var serr error
		if !end && ferr == nil {
			if n, serr = p.fedSize(fed, n); serr != nil {
				n = bs
			}
		}
		if b == nil {
			b = p.newBatch(epoch, iter, n)
			b.Valid = n
		}
		if end {
			b.endOfEpoch = true
			close(b.done)
			p.inflight <- b
			return
		}
		b.fed, b.feeds = fed, p.feeds
		b.stream = p.feeds.streamBatch(fed, plan)
		if ferr == nil {
			ferr = serr
		}
		if ferr != nil {
			b.err = ferr
			close(b.done)
			p.inflight <- b
			continue
		}
		var err error
		for i, r := range p.readers {
			if i != p.primary && err == nil {
				err = planFollower(r, &others[i], b.rrefs[i])
			}
			b.next[i] = others[i]
		}
		if err == nil {
			err = b.allocateOutputs()
		}
		if err == nil && p.gpu != nil {
			b.gpu, err = p.gpu.newBatch(b)
		}
		if err != nil {
			b.err = err
			close(b.done)
			p.inflight <- b
			continue
		}
		n = b.Size()
		if p.parts {
			n = 0 // finish runs the batch part by part (runParts), phase 0 included
		}
		b.wg.Add(n)
		for i := 0; i < n; i++ {
			select {
			case p.tasks <- task{b: b, i: i, src: i}:
			case <-stop:
				// Let the queued samples finish, then drop the batch and give back the
				// credit it held (it never reached inflight, where stopProducer
				// returns the credits of the batches it drops).
				b.wg.Add(-(n - i))
				b.wg.Wait()
				b.release()
				p.credits <- struct{}{}
				return
			}
		}
		p.inflight <- b
		p.host.enter(b)
		go p.finish(b)
		if b.Last && source != nil {
			// The next NextBatch returns 0: the end-of-epoch marker follows in order.
			continue
		}
	}
}

// finish waits for a batch's samples, replaces failed ones under on_error=skip, runs the
// host-batch nodes and the phases after them, and marks the batch done.
func (p *Pipeline) finish(b *Batch) {
	if p.parts {
		b.err = p.runParts(b)
	} else {
		b.err = p.runPhases(b)
	}
	if b.err == nil && p.isAbandoned() {
		b.err = errAbandoned()
	}
	// The data that crossed phases has been read: the batch needs only its outputs now.
	b.releaseCross()
	p.host.leave(b)
	if p.gpu != nil && b.err == nil {
		p.gpu.submit(b) // the GPU stage closes b.done once the batch's work is queued
		return
	}
	close(b.done)
}

// runPhases runs the whole batch's phases after the first (whose samples the producer
// dispatched), each after the host-batch nodes of the one before.
func (p *Pipeline) runPhases(b *Batch) error {
	for phase := range p.Part.Phases {
		if phase > 0 {
			if p.isAbandoned() {
				return errAbandoned()
			}
			b.wg.Add(len(b.refs))
			for i := range b.refs {
				p.tasks <- task{b: b, i: i, src: i, phase: phase}
			}
		}
		b.wg.Wait()
		if err := p.phaseErrors(b, phase, 0, len(b.refs)); err != nil {
			return err
		}
		if err := p.runHostBatch(b, phase, 0, len(b.refs)); err != nil {
			return err
		}
	}
	return nil
}

// runsInParts reports whether batches run part by part (sub_batch_size, with host-batch
// nodes: without them every node runs per sample already, and nothing scales with the
// batch but its outputs). NewPipeline keeps it in p.parts.
func runsInParts(spec *Spec, part *Partition) bool {
	if spec.SubBatchSize == 0 {
		return false
	}
	for _, nodes := range part.HostBatch {
		if len(nodes) > 0 {
			return true
		}
	}
	return false
}

// runParts runs a batch in parts of sub_batch_size samples: each part goes through
// every phase and host-batch node before the next starts, and the data that crosses
// phases is released when its part ends, so that it scales with the part, not the
// batch. The outputs are the batch's, written by each part in place.
func (p *Pipeline) runParts(b *Batch) error {
	n := len(b.refs)
	for lo := 0; lo < n; lo += p.Spec.SubBatchSize {
		hi := min(n, lo+p.Spec.SubBatchSize)
		for phase := range p.Part.Phases {
			if p.isAbandoned() {
				return errAbandoned()
			}
			b.wg.Add(hi - lo)
			for i := lo; i < hi; i++ {
				p.tasks <- task{b: b, i: i, src: i, phase: phase}
			}
			b.wg.Wait()
			if err := p.phaseErrors(b, phase, lo, hi); err != nil {
				return err
			}
			if err := p.runHostBatch(b, phase, lo, hi); err != nil {
				return err
			}
		}
		b.releaseCrossPart(lo, hi)
	}
	return nil
}

// isAbandoned reports whether a destroy stopped waiting for the batches in flight.
func (p *Pipeline) isAbandoned() bool {
	select {
	case <-p.abandoned:
		return true
	default:
		return false
	}
}

func errAbandoned() error {
	return Errorf(StatusInvalidHandle, "pipeline is destroyed")
}

// phaseErrors replaces the samples of the phase that failed (on_error = "skip") or
// returns the batch's error.
func (p *Pipeline) phaseErrors(b *Batch, phase, lo, hi int) error {
	var failed []int
	for i, err := range b.errs {
		if err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if p.Spec.OnError == "skip" && len(failed) < len(b.errs) {
		err := p.replace(b, failed, phase, lo, hi)
		for _, i := range failed {
			b.errs[i] = nil // replaced; the next phase starts clean
		}
		return err
	}
	more, copies, pastEnd := b.countFailures(failed)
	err := sampleFailure(b.errs[failed[0]], more)
	if copies > 0 {
		places, where := "places", ""
		if copies == 1 {
			places = "place"
		}
		if pastEnd {
			where = ", past the end of the epoch: pad_last_batch repeats the epoch's last sample there, or the next epoch begins there"
		}
		err.Err = fmt.Errorf("%w (the same file fails at %d more %s of this batch%s)", err.Err, copies, places, where)
	}
	return err
}

// countFailures sorts the batch's failed samples (sample indices, ascending) into
// distinct ones and copies: a copy reads the same entries of every reader as a failed
// sample before it, as the padding of an epoch's last batch does (pad_last_batch), or a
// shuffled epoch that starts with the file the previous one ended with. It returns the
// distinct failed samples after the first, the copies, and whether every copy lies past
// the epoch's end (b.Valid).
func (b *Batch) countFailures(failed []int) (more, copies int, pastEnd bool) {
	pastEnd = true
	for k, i := range failed {
		copied := false
		for _, j := range failed[:k] {
			if b.sameSample(i, j) {
				copied = true
				break
			}
		}
		switch {
		case k == 0:
		case copied:
			copies++
			pastEnd = pastEnd && i >= b.Valid
		default:
			more++
		}
	}
	return more, copies, pastEnd
}

// sameSample reports whether samples i and j of the batch are copies of one sample: they
// read the same list entry of every reader, and no data fed from outside makes them
// differ. Samples without a file (fed ones) are never copies.
func (b *Batch) sameSample(i, j int) bool {
	if len(b.fed) > 0 || len(b.rrefs) == 0 {
		return false
	}
	for _, refs := range b.rrefs {
		if refs[i].Path == "" || refs[i] != refs[j] {
			return false
		}
	}
	ei, ej := b.errs[i], b.errs[j]
	var si, sj *SampleError
	if errors.As(ei, &si) != errors.As(ej, &sj) || (si != nil && (si.Node != sj.Node || si.Source != sj.Source)) {
		return false
	}
	return true
}

// replace runs each failed sample again with the file of a good sample of the batch,
// the nearest first, up to maxReplacements of them, and records the skipped files. A
// sample that none of them can stand in for fails the batch with a data error.
//
// A later phase reads the data of the phases before it, which only the samples of the
// running part [lo, hi) still hold: its replacements come from that part.
func (p *Pipeline) replace(b *Batch, failed []int, phase, lo, hi int) error {
	if phase == 0 {
		lo, hi = 0, len(b.errs)
	}
	res := make(chan sampleResult, len(failed))
	tries := make([]int, len(b.errs))
	pending := failed
	for round := 0; len(pending) > 0; round++ {
		var sent int
		var exhausted []int
		for _, i := range pending {
			j := nthGood(b.errs[lo:hi], i-lo, round)
			if j >= 0 {
				j += lo
			}
			if j < 0 || round >= maxReplacements {
				exhausted = append(exhausted, i)
				continue
			}
			tries[i]++
			b.wg.Add(1)
			p.tasks <- task{b: b, i: i, src: j, phase: phase, result: res}
			sent++
		}
		if len(exhausted) > 0 {
			// Let the replacements already queued finish before the batch is given up.
			b.wg.Wait()
			for ; sent > 0; sent-- {
				<-res
			}
			i := exhausted[0]
			return &Error{Status: StatusData, Err: fmt.Errorf("on_error=\"skip\": %w; and %d replacement samples of the batch failed as well: %v", b.errs[i], tries[i], b.lastTry[i])}
		}
		b.wg.Wait()
		pending = pending[:0:0]
		for ; sent > 0; sent-- {
			r := <-res
			if r.err != nil {
				if b.lastTry == nil {
					b.lastTry = map[int]error{}
				}
				b.lastTry[r.i] = r.err
				pending = append(pending, r.i)
			}
		}
		sort.Ints(pending) // results come in any order; errors name the first sample
	}
	b.Skipped += int64(len(failed)) // per phase, or per part (sub_batch_size)
	for _, i := range failed {
		e := b.errs[i]
		b.SkippedErrs = append(b.SkippedErrs, e)
		sk := Skip{Sample: i, File: source.Redact(b.refs[i].Path), Error: source.Redact(e.Error())}
		var se *SampleError
		if errors.As(e, &se) {
			sk.Node = se.Node
			sk.Error = source.Redact(se.Err.Error())
			sk.File = source.Redact(se.Source) // the file of the reader the failed node reads from
		}
		b.Skips = append(b.Skips, sk)
	}
	return nil
}

// sampleFailure is the batch's error for a failed sample (and more others): a data error,
// or out of memory.
func sampleFailure(err error, more int) *Error {
	st := StatusData
	if StatusOf(err) == StatusOutOfMemory {
		st = StatusOutOfMemory
	}
	if more > 0 {
		err = fmt.Errorf("%w (and %d more failed samples in this batch)", err, more)
	}
	return &Error{Status: st, Err: err}
}

// nthGood returns the n-th good sample (errs[j] == nil) of the batch by distance from i,
// -1 if there are fewer.
func nthGood(errs []error, i, n int) int {
	for d := 1; d < len(errs); d++ {
		for _, j := range [2]int{i - d, i + d} {
			if j >= 0 && j < len(errs) && errs[j] == nil {
				if n == 0 {
					return j
				}
				n--
			}
		}
	}
	return -1
}

// worker holds one thread's workspaces and buffers.
type worker struct {
	p      *Pipeline
	id     int
	ws     []*Workspace // by node ID
	bufs   [][][]byte   // by node ID, output index: grow-only intermediate buffers
	states []any
	big    [][]*Lease // by node ID, output index: intermediate buffers of bigBuffer or more
	rng    RNG
	gpu    *workerGPU  // the worker's stream for mixed nodes; nil without a GPU stage
	sg     sampleGPU   // what mixed nodes see of the GPU for the current sample
	prof   []nodeTimes // by node ID: Setup+Run times; nil unless GODALI_PROFILE (profile.go)
}

func newWorker(p *Pipeline, id int) *worker {
	w := &worker{p: p, id: id, prof: p.newNodeTimes()}
	if p.gpu != nil {
		w.gpu = p.gpu.newWorker()
		w.sg.worker = w.gpu
	}
	g := p.Graph
	w.ws = make([]*Workspace, len(g.Nodes))
	w.bufs = make([][][]byte, len(g.Nodes))
	w.big = make([][]*Lease, len(g.Nodes))
	w.states = make([]any, len(g.Nodes))
	outs := map[*DataNode]*Tensor{}
	for _, n := range g.Nodes {
		ws := &Workspace{Node: n.Name, RNG: &w.rng, Limits: &p.limits}
		for _, d := range n.Out {
			t := &Tensor{DType: d.Meta.DType, Layout: d.Meta.Layout}
			outs[d] = t
			ws.Out = append(ws.Out, t)
		}
		for _, d := range n.In {
			ws.In = append(ws.In, outs[d])
		}
		for _, d := range n.ArgIn {
			ws.ArgIn = append(ws.ArgIn, outs[d])
		}
		if s, ok := n.Op.(WorkerStateful); ok && n.Device != "gpu" {
			ws.State = s.NewWorkerState()
			w.states[n.ID] = ws.State
		}
		if n.Device == "mixed" {
			ws.gpu = &w.sg
		}
		w.ws[n.ID] = ws
		w.bufs[n.ID] = make([][]byte, len(n.Out))
		w.big[n.ID] = make([]*Lease, len(n.Out))
	}
	return w
}

func (w *worker) loop(cpu int, started *sync.WaitGroup) {
	defer w.p.workerWG.Done()
	// The goroutine keeps its thread to the end: a pinned thread then exits with it
	// instead of going back to the Go scheduler with a one-CPU affinity.
	runtime.LockOSThread()
	workerProcs.add(1)
	defer workerProcs.add(-1)
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		_ = unix.SchedSetaffinity(0, &set) // a CPU outside the process's set is ignored, as in DALI
	}
	started.Done()
	yielded := time.Now()
	for t := range w.p.tasks {
		err := w.runSample(t.b, t.i, t.src, t.phase)
		w.trim()
		yielded = yieldIfDue(yielded)
		if t.result != nil {
			t.result <- sampleResult{i: t.i, err: err}
		} else {
			t.b.errs[t.i] = err
		}
		t.b.wg.Done()
	}
	// GPU work the worker queued must be over before the states that own its buffers
	// (nvJPEG decoders, staging) go.
	w.gpu.drain()
	for _, ls := range w.big {
		for _, l := range ls {
			if l != nil {
				l.Release()
			}
		}
	}
	for _, s := range w.states {
		if c, ok := s.(Closer); ok {
			c.Close()
		}
	}
	w.gpu.close()
}

func (w *worker) runSample(b *Batch, i, src, phase int) (err error) {
	at := sampleAt{ref: &b.refs[src]}
	defer func() {
		if r := recover(); r != nil {
			err = &SampleError{Source: at.ref.Path, Node: at.node, Err: fmt.Errorf("internal error: %v", r)}
		}
	}()
	// Counted in full batches, so that a sample's random stream does not depend on the
	// sizes of the batches before it.
	pos := b.Iteration*int64(b.capacity) + int64(i)
	w.sg.batch = b.gpu
	if phase > 0 {
		w.loadCross(b, phase, src)
	}
	if w.p.tune.measuring.Load() {
		return w.timedSample(b, i, src, phase, pos, &at)
	}
	return w.runNodes(b, i, src, phase, pos, &at, nil)
}

// sampleAt is where a sample is: the node running and the sample it reads (for the
// error of a panic).
type sampleAt struct {
	node string
	ref  *SampleRef
}

// timedSample runs a sample and adds its times to the tuner's (tuning.go).
func (w *worker) timedSample(b *Batch, i, src, phase int, pos int64, at *sampleAt) error {
	var rt readerTimes
	t0, c0 := time.Now(), threadCPU()
	err := w.runNodes(b, i, src, phase, pos, at, &rt)
	w.p.tune.timeSample(int64(time.Since(t0)), threadCPU()-c0, rt.wall, rt.cpu)
	return err
}

// readerTimes sums a sample's reader nodes' wall and thread CPU times.
type readerTimes struct{ wall, cpu int64 }

// runNodes runs the nodes of a sample's phase; rt, when not nil, receives the reader
// nodes' times.
func (w *worker) runNodes(b *Batch, i, src, phase int, pos int64, at *sampleAt, rt *readerTimes) error {
	part := w.p.Part
	for _, n := range part.Phases[phase] {
		at.node = n.Name
		var rt0 time.Time
		var rc0 int64
		timed := rt != nil && n.Schema != nil && n.Schema.IsReader
		if timed {
			rt0, rc0 = time.Now(), threadCPU()
		}
		// A node of a conditional branch runs on the branch's samples only, and sees them
		// as its batch (conditional.go).
		rank, size, in := b.inBranch(n.Gate, i)
		if !in {
			continue
		}
		npos := pos
		if n.Gate != nil {
			npos = b.Iteration*int64(b.capacity) + int64(rank)
		}
		ws := w.ws[n.ID]
		ref := b.ref(w.p.nodeReader[n.ID], src)
		at.ref = ref
		ws.Ref, ws.Sample, ws.Position, ws.Epoch = ref, rank, npos, b.Epoch
		first, last := n.StreamKeys(w.p.seed)
		ws.seed, ws.nodeID, ws.BatchSize = first, last, size
		ws.fed = b.fedSample(n, src) // a replaced sample takes its stand-in's data
		ws.stream = b.streamOf(n)
		if ws.gpu != nil {
			ws.Note = b.gpu.note(n, i)
		}
		w.rng.Seed(first, uint64(b.Epoch), uint64(npos), last)
		if err := n.reseedFromState(ws, &w.rng); err != nil {
			return wrapSampleErr(ref, n, err)
		}
		var t0 time.Time
		if w.prof != nil {
			t0 = time.Now()
		}
		if n.Narrowed != nil {
			if err := n.CheckNarrowed(ws); err != nil {
				return wrapSampleErr(ref, n, err)
			}
		}
		if err := n.Op.Setup(ws); err != nil {
			return wrapSampleErr(ref, n, err)
		}
		for k, d := range n.Out {
			t := ws.Out[k]
			// The size Setup chose is checked before any memory is given to it.
			need, err := checkSampleSize(t, ws.Limits, n.OpName)
			if err != nil {
				return wrapSampleErr(ref, n, err)
			}
			slot := part.slots[n.ID][k]
			switch {
			case slot.device >= 0:
				// GPU data: device memory of the batch, written by the node's Run.
				t.Data = nil
				dev, err := b.gpu.deviceSample(slot.device, i, t, need)
				if err != nil {
					return wrapSampleErr(ref, n, err)
				}
				t.Dev = dev
			case d.Output >= 0:
				data, err := b.outs[d.Output].sampleBuffer(i, t, need)
				if err != nil {
					return wrapSampleErr(ref, n, err)
				}
				t.Data = data
				if slot.kept >= 0 {
					b.gpu.keepHost(slot.kept, i, t)
				}
			case slot.kept >= 0:
				// Host data the GPU stage reads: pinned memory kept with the batch.
				data, err := b.gpu.keptSample(slot.kept, i, t, need)
				if err != nil {
					return wrapSampleErr(ref, n, err)
				}
				t.Data = data
			case slot.cross >= 0:
				// Data a later phase or a host-batch node reads: memory of the batch.
				data, err := b.crossBuffer(slot.cross, i, t, need)
				if err != nil {
					return wrapSampleErr(ref, n, err)
				}
				t.Data = data
			case ws.fed != nil && len(ws.fed.Data) == need:
				// An external source's intermediate output: the fed memory itself,
				// referenced by the batch until it is released (no copy).
				t.Data = ws.fed.Data
			default:
				data, err := w.buffer(n.ID, k, need)
				if err != nil {
					return wrapSampleErr(ref, n, err)
				}
				t.Data = data
			}
			if slot.cross >= 0 && (d.Output >= 0 || slot.kept >= 0) {
				b.crossRef(slot.cross, i, t) // memory the batch already holds
			}
		}
		if err := n.Op.Run(ws); err != nil {
			return wrapSampleErr(ref, n, err)
		}
		if w.prof != nil {
			w.prof[n.ID].add(t0)
		}
		if timed {
			rt.wall += int64(time.Since(rt0))
			rt.cpu += threadCPU() - rc0
		}
	}
	return nil
}

// buffer returns a grow-only intermediate buffer of need bytes for output k of node id.
func (w *worker) buffer(id, k, need int) ([]byte, error) {
	if need < bigBuffer {
		buf := w.bufs[id][k]
		if cap(buf) < need {
			size := need + need/4
			if hint := int(w.p.scans.hintFor(id, k)); hint >= need && hint < bigBuffer {
				// The largest of the data set: never grown again, and no larger than it
				// (the memory plan counts it).
				size = hint
			}
			buf = make([]byte, size)
			w.bufs[id][k] = buf
		}
		return buf[:need], nil
	}
	if l := w.big[id][k]; l != nil && len(l.mem) >= need {
		return l.mem[:need], nil
	}
	l, err := w.p.pool.Get(need)
	if err != nil {
		return nil, err
	}
	if old := w.big[id][k]; old != nil {
		old.ReleaseUnmap()
	}
	w.big[id][k] = l
	w.bufs[id][k] = nil
	return l.mem[:need], nil
}

func wrapSampleErr(ref *SampleRef, n *Node, err error) error {
	var se *SampleError
	if errors.As(err, &se) {
		return err
	}
	src := ""
	if ref != nil {
		src = ref.Path
	}
	return &SampleError{Source: src, Node: n.Name, Err: err}
}
