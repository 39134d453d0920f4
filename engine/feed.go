package engine

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ExternalSource is implemented by the operators of nodes whose samples are fed from
// outside the pipeline (external_source): Pipeline.FeedInput queues whole batches for
// them, and the executor takes the next queued batch of every such node for each batch
// it plans, in order.
type ExternalSource interface {
	ExternalSource()
}

// StreamSource is implemented by external-source operators that cut each fed item into
// batches themselves (fn.experimental.inputs.video: one fed video, many batches of
// sequences). Each feed gives them one item (a batch of one sample). The producer calls
// PlanBatch, in batch order, with the item at the head of the node's queue (fresh: the
// first call for that item); it returns the batch's number of samples (1 to max, the
// pipeline's batch_size: a stream's last batch may be smaller), the plan the node's
// Setup and Run see (Workspace.Stream), and whether the item is used up, which moves
// the queue on to the next item. An error fails the batch and drops the item. The item's
// memory is held until the last batch planned from it is released.
//
// A pipeline with a stream source has no reader and no other external source: the
// stream alone decides each batch's size.
type StreamSource interface {
	ExternalSource
	PlanBatch(item []byte, fresh bool, max int) (n int, plan any, done bool, err error)
}

// StreamBatch is what a stream source's Setup and Run see (Workspace.Stream): the fed
// item the batch was planned from, and the plan.
type StreamBatch struct {
	Data []byte
	Plan any
}

// FeedSample is one fed sample: its bytes (len = product of Shape * dtype size) and shape.
type FeedSample struct {
	Data  []byte
	Shape []int
	// Layout is the feed's layout (Feed.Layout), set by FeedInput: an external source
	// declared without one gives its samples the layout they were fed with.
	Layout string
}

// Feed is one batch fed to an external source.
//
// Unless Copy is set, the pipeline reads Samples' memory in place (no copy): it must stay
// valid and unchanged until Release is called. Release, if not nil, is called exactly
// once, from any goroutine, when the pipeline is done with the memory: when the batch
// that used it is released by the consumer (or dropped by Reset, or failed), when the
// feed is refused, or when the pipeline is destroyed with it still queued. With Copy set,
// FeedInput copies the samples into pipeline memory and calls Release before it returns.
type Feed struct {
	Samples []FeedSample
	DType   DType
	Layout  string // "" when unknown; else must match the node's declared layout
	Release func()
	Copy    bool

	end      bool // end-of-epoch marker (FeedEndOfEpoch)
	released atomic.Bool
	extra    atomic.Int32 // holders besides the first (a stream's batches share its item)
}

// retain adds a holder: the memory goes when every holder has released it.
func (f *Feed) retain() { f.extra.Add(1) }

func (f *Feed) release() {
	if f == nil || f.extra.Add(-1) >= 0 || !f.released.CompareAndSwap(false, true) {
		return
	}
	if f.Release != nil {
		f.Release()
	}
}

type feedQueue struct {
	node   *Node
	items  []*Feed
	stream StreamSource // nil: one fed batch per planned batch
	begun  bool         // stream: the head item has been planned from
}

// feeds are the pipeline's queues of fed batches, one per external source node.
type feeds struct {
	mu      sync.Mutex
	queues  []*feedQueue // graph order
	byName  map[string]int
	byNode  map[*Node]int
	closed  bool
	waiting bool          // the producer waits for a feed
	wake    chan struct{} // closed when a feed arrives while the producer waits
	starved chan struct{} // closed when the producer starts waiting
}

func newFeeds(g *Graph) *feeds {
	f := &feeds{byName: map[string]int{}, byNode: map[*Node]int{}, starved: make(chan struct{})}
	for _, n := range g.Nodes {
		if _, ok := n.Op.(ExternalSource); ok {
			f.byName[n.Name] = len(f.queues)
			f.byNode[n] = len(f.queues)
			q := &feedQueue{node: n}
			q.stream, _ = n.Op.(StreamSource)
			f.queues = append(f.queues, q)
		}
	}
	return f
}

// checkStreams refuses what a stream source cannot share a pipeline with: readers and
// other external sources, whose batches have the pipeline's batch_size.
func (f *feeds) checkStreams(g *Graph) error {
	for _, q := range f.queues {
		if q.stream == nil {
			continue
		}
		where := describe(q.node.Name, q.node.OpName)
		if len(f.queues) > 1 {
			return Errorf(StatusInvalidPipeline, "%s decides each batch's size from its fed stream; it cannot share a pipeline with other external sources (%s)", where, f.names())
		}
		if len(g.Readers) > 0 {
			return Errorf(StatusInvalidPipeline, "%s decides each batch's size from its fed stream; it cannot share a pipeline with a reader (%s)", where, describe(g.Readers[0].Name, g.Readers[0].OpName))
		}
	}
	return nil
}

// checkCheckpointed refuses a checkpointed_feeds name that is not an external source.
func (f *feeds) checkCheckpointed(names []string) error {
	for _, n := range names {
		if _, ok := f.byName[n]; !ok {
			return Errorf(StatusInvalidPipeline, "pipeline: checkpointed_feeds names %q, which is not an external source of the pipeline (external sources: %s)", n, f.names())
		}
	}
	return nil
}

// unrecorded are the names of the external sources whose position no one records in
// a checkpoint (those not in checkpointed_feeds), quoted and joined; "" when none.
func (f *feeds) unrecorded(checkpointed []string) string {
	known := map[string]bool{}
	for _, n := range checkpointed {
		known[n] = true
	}
	var s []string
	for _, q := range f.queues {
		if !known[q.node.Name] {
			s = append(s, strconv.Quote(q.node.Name))
		}
	}
	return strings.Join(s, ", ")
}

func (f *feeds) names() string {
	if len(f.queues) == 0 {
		return "none"
	}
	var s []string
	for _, q := range f.queues {
		s = append(s, strconv.Quote(q.node.Name))
	}
	return strings.Join(s, ", ")
}

// ExternalSources are the names of the pipeline's external source nodes, in graph order.
func (p *Pipeline) ExternalSources() []string {
	var out []string
	for _, q := range p.feeds.queues {
		out = append(out, q.node.Name)
	}
	return out
}

// FeedInput queues one batch for the external source node name. The batch has 1 to
// batch_size (the pipeline's maximum) samples of the node's declared dtype and ndim (and
// layout, when both are given); the iteration that takes it has that many samples, and
// every external source must give that many for it (fedSize). On error, f.Release has
// been called. Safe from any goroutine.
func (p *Pipeline) FeedInput(name string, f *Feed) (err error) {
	defer func() {
		if err != nil {
			f.release()
		}
	}()
	if f == nil {
		return Errorf(StatusInvalidArgument, "feed_input %q: no data", name)
	}
	q, err := p.feeds.queue(name)
	if err != nil {
		return err
	}
	if err := p.checkFeed(q.node, f); err != nil {
		return err
	}
	if f.Copy {
		if err := p.copyFeed(f); err != nil {
			return err
		}
	}
	for i := range f.Samples {
		f.Samples[i].Layout = f.Layout
	}
	return p.feeds.push(name, f)
}

// FeedEndOfEpoch queues an end-of-epoch marker for the external source name: the batch
// planned when it is at the head of the queue is the epoch's end (Next returns
// ErrEndOfEpoch; Reset starts the next epoch with the batches fed after the marker).
func (p *Pipeline) FeedEndOfEpoch(name string) error {
	if _, err := p.feeds.queue(name); err != nil {
		return err
	}
	return p.feeds.push(name, &Feed{end: true})
}

// DropFeeds releases the batches queued for the external source name and not yet
// planned, and returns how many there were (end-of-epoch markers included).
func (p *Pipeline) DropFeeds(name string) (int, error) {
	q, err := p.feeds.queue(name)
	if err != nil {
		return 0, err
	}
	f := p.feeds
	f.mu.Lock()
	items := q.items
	q.items = nil
	q.begun = false // a stream's next item starts fresh
	f.mu.Unlock()
	for _, it := range items {
		it.release()
	}
	return len(items), nil
}

// QueuedFeeds is the number of batches (end markers included) queued for name.
func (p *Pipeline) QueuedFeeds(name string) (int, error) {
	q, err := p.feeds.queue(name)
	if err != nil {
		return 0, err
	}
	p.feeds.mu.Lock()
	defer p.feeds.mu.Unlock()
	return len(q.items), nil
}

func (f *feeds) queue(name string) (*feedQueue, error) {
	i, ok := f.byName[name]
	if !ok {
		return nil, Errorf(StatusInvalidArgument, "feed_input: no external source named %q; external sources: %s", name, f.names())
	}
	return f.queues[i], nil
}

func (p *Pipeline) checkFeed(n *Node, f *Feed) error {
	where := describe(n.Name, n.OpName)
	meta := n.Out[0].Meta
	if q := p.feeds.queues[p.feeds.byNode[n]]; q.stream != nil {
		return checkStreamFeed(where, f)
	}
	if len(f.Samples) == 0 {
		return Errorf(StatusInvalidArgument, "feed_input: %s: got an empty batch: a batch has 1 to max_batch_size (%d) samples", where, p.Spec.BatchSize)
	}
	if len(f.Samples) > p.Spec.BatchSize {
		return Errorf(StatusInvalidArgument, "feed_input: %s: got a batch of %d samples, more than the pipeline's max_batch_size (batch_size) %d", where, len(f.Samples), p.Spec.BatchSize)
	}
	if f.DType != meta.DType {
		return Errorf(StatusInvalidArgument, "feed_input: %s: got data of type %s, the node declares dtype %s", where, f.DType, meta.DType)
	}
	if f.Layout != "" && meta.Layout != "" && f.Layout != meta.Layout {
		return Errorf(StatusInvalidArgument, "feed_input: %s: got layout %q, the node declares layout %q", where, f.Layout, meta.Layout)
	}
	if f.Layout != "" && len(f.Layout) != len(meta.Shape) {
		return Errorf(StatusInvalidArgument, "feed_input: %s: layout %q has %d dimensions, the node declares ndim %d", where, f.Layout, len(f.Layout), len(meta.Shape))
	}
	for i, s := range f.Samples {
		if len(s.Shape) != len(meta.Shape) {
			return Errorf(StatusInvalidArgument, "feed_input: %s: sample %d has %d dimensions (shape %v), the node declares ndim %d", where, i, len(s.Shape), s.Shape, len(meta.Shape))
		}
		for _, d := range s.Shape {
			if d < 0 {
				return Errorf(StatusInvalidArgument, "feed_input: %s: sample %d has shape %v: a negative size", where, i, s.Shape)
			}
		}
		t := Tensor{Shape: s.Shape, DType: f.DType}
		need, err := checkSampleSize(&t, &p.limits, "")
		if err != nil {
			return Errorf(StatusInvalidArgument, "feed_input: %s: sample %d: %v", where, i, err)
		}
		if len(s.Data) != need {
			return Errorf(StatusInvalidArgument, "feed_input: %s: sample %d of shape %v and type %s needs %d bytes, got %d", where, i, s.Shape, f.DType, need, len(s.Data))
		}
		for k, d := range meta.Shape {
			if d >= 0 && s.Shape[k] != d {
				return Errorf(StatusInvalidArgument, "feed_input: %s: sample %d has shape %v, the node declares %v", where, i, s.Shape, meta.Shape)
			}
		}
	}
	return nil
}

// checkStreamFeed checks an item fed to a stream source: one 1-D uint8 sample.
func checkStreamFeed(where string, f *Feed) error {
	if len(f.Samples) != 1 {
		return Errorf(StatusInvalidArgument, "feed_input: %s: takes one item (a batch of 1 sample) per feed, got %d samples", where, len(f.Samples))
	}
	s := f.Samples[0]
	if f.DType != UInt8 || len(s.Shape) != 1 {
		return Errorf(StatusInvalidArgument, "feed_input: %s: expected encoded bytes (1-D uint8), got %s of shape %v", where, f.DType, s.Shape)
	}
	if s.Shape[0] != len(s.Data) || len(s.Data) == 0 {
		return Errorf(StatusInvalidArgument, "feed_input: %s: the item has %d bytes for shape %v (an empty item is refused)", where, len(s.Data), s.Shape)
	}
	return nil
}

// copyFeed moves the samples into one pool lease and releases the caller's memory.
func (p *Pipeline) copyFeed(f *Feed) error {
	total := 0
	for _, s := range f.Samples {
		total += len(s.Data)
	}
	l, err := p.pool.Get(max(total, 1))
	if err != nil {
		return err
	}
	dst := l.Bytes()
	samples := make([]FeedSample, len(f.Samples))
	off := 0
	for i, s := range f.Samples {
		n := copy(dst[off:off+len(s.Data)], s.Data)
		samples[i] = FeedSample{Data: dst[off : off+n : off+n], Shape: append([]int(nil), s.Shape...)}
		off += n
	}
	f.release() // the caller's memory is no longer needed
	f.Samples = samples
	f.Release = l.Release
	f.released.Store(false)
	f.Copy = false
	return nil
}

func (f *feeds) push(name string, it *Feed) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return Errorf(StatusInvalidHandle, "feed_input %q: pipeline is destroyed", name)
	}
	q := f.queues[f.byName[name]]
	q.items = append(q.items, it)
	if f.waiting {
		f.waiting = false
		close(f.wake)
		f.starved = make(chan struct{})
	}
	f.mu.Unlock()
	return nil
}

// take pops the next batch of every queue for a batch being planned, waiting until each
// queue has one (or stop). end reports an end-of-epoch marker at the head of a queue:
// the markers are popped and the other queues keep their batches. ok is false on stop.
// A stream source's queue plans the batch instead (planStream): n is its size (the
// pipeline's batch_size otherwise), plan its plan, and err its failure.
func (f *feeds) take(stop <-chan struct{}, bs int) (fed []*Feed, n int, plan any, end, ok bool, err error) {
	if len(f.queues) == 0 {
		return nil, bs, nil, false, true, nil
	}
	for {
		f.mu.Lock()
		ready := !f.closed
		for _, q := range f.queues {
			if len(q.items) == 0 {
				ready = false
			} else if q.items[0].end {
				end = true
			}
		}
		if end {
			for _, q := range f.queues {
				if len(q.items) > 0 && q.items[0].end {
					q.items[0] = nil
					q.items = q.items[1:]
					q.begun = false
				}
			}
			f.mu.Unlock()
			return nil, 0, nil, true, true, nil
		}
		if ready {
			fed = make([]*Feed, len(f.queues))
			n = bs
			for i, q := range f.queues {
				if q.stream != nil {
					fed[i], n, plan, err = q.planStream(bs)
					continue
				}
				fed[i] = q.items[0]
				q.items[0] = nil
				q.items = q.items[1:]
			}
			f.mu.Unlock()
			return fed, n, plan, false, true, err
		}
		wake := make(chan struct{})
		f.wake = wake
		f.waiting = true
		close(f.starved) // Next may now tell that nothing more comes without a feed
		f.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			f.mu.Lock()
			if f.waiting {
				f.waiting = false
				f.starved = make(chan struct{})
			}
			f.mu.Unlock()
			return nil, 0, nil, false, false, nil
		}
	}
}

// planStream plans a batch from the head item of a stream source's queue (f.mu held).
// The batch holds the item: the queue's own hold passes to the batch when the item is
// used up or fails (and is popped), else the batch adds one.
func (q *feedQueue) planStream(max int) (item *Feed, n int, plan any, err error) {
	item = q.items[0]
	n, plan, done, err := q.stream.PlanBatch(item.Samples[0].Data, !q.begun, max)
	if err == nil && (n < 1 || n > max) {
		err = Errorf(StatusInternal, "%s planned a batch of %d samples (1 to %d)", describe(q.node.Name, q.node.OpName), n, max)
	}
	if err != nil || done {
		q.items[0] = nil
		q.items = q.items[1:]
		q.begun = false
	} else {
		item.retain()
		q.begun = true
	}
	if err != nil {
		return item, 0, nil, sampleFailure(&SampleError{Node: q.node.Name, Err: err}, 0)
	}
	return item, n, plan, nil
}

// state reports whether the producer waits for a feed, and the channel closed when
// it starts to.
func (f *feeds) state() (starved bool, signal <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting, f.starved
}

// close releases every queued batch; later feeds are refused.
func (f *feeds) close() {
	f.mu.Lock()
	f.closed = true
	var items []*Feed
	for _, q := range f.queues {
		items = append(items, q.items...)
		q.items = nil
	}
	f.mu.Unlock()
	for _, it := range items {
		it.release()
	}
}

func (f *feeds) missing() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for _, q := range f.queues {
		if len(q.items) == 0 {
			s = append(s, strconv.Quote(q.node.Name))
		}
	}
	return strings.Join(s, ", ")
}

func errNotFed(f *feeds) error {
	return Errorf(StatusState, "external source %s has no data for the next batch: feed it (feed_input) before running the pipeline", f.missing())
}

// waitBatch receives the next planned batch; with external sources it fails instead of
// blocking forever when the producer waits for a feed and nothing is in flight.
func (p *Pipeline) waitBatch() (*Batch, error) {
	if len(p.feeds.queues) == 0 {
		return <-p.inflight, nil
	}
	for {
		starved, signal := p.feeds.state()
		select {
		case b := <-p.inflight:
			return b, nil
		default:
		}
		if starved {
			return nil, errNotFed(p.feeds)
		}
		select {
		case b := <-p.inflight:
			return b, nil
		case <-signal:
		}
	}
}

// fedSize is the batch size of an iteration, decided by the batches fed to its
// external sources: they must all have the same number of samples (as in DALI, where an
// iteration has one batch size), and as many as a stream source planned (streamN, the
// pipeline's batch_size without one). A pipeline with readers runs full batches only:
// its readers plan batch_size samples for every iteration.
func (p *Pipeline) fedSize(fed []*Feed, streamN int) (int, error) {
	n, first, stream := -1, -1, -1
	for k, f := range fed {
		q := p.feeds.queues[k]
		if q.stream != nil {
			stream = k
			continue
		}
		if n < 0 {
			n, first = len(f.Samples), k
		} else if len(f.Samples) != n {
			return 0, Errorf(StatusInvalidArgument, "external sources gave batches of different sizes for iteration: %q %d samples, %q %d; every external source must give the same number of samples for one iteration",
				p.feeds.queues[first].node.Name, n, q.node.Name, len(f.Samples))
		}
	}
	if n < 0 {
		return streamN, nil
	}
	if stream >= 0 && n != streamN {
		return 0, Errorf(StatusInvalidArgument, "external source %q gave a batch of %d samples, but stream source %q planned %d for this iteration; every source must give the same number of samples for one iteration",
			p.feeds.queues[first].node.Name, n, p.feeds.queues[stream].node.Name, streamN)
	}
	if n != p.Spec.BatchSize && len(p.readers) > 0 {
		return 0, Errorf(StatusInvalidArgument, "external source %q gave a batch of %d samples, but the pipeline's reader %q gives batches of batch_size %d: with a reader every external source must give full batches",
			p.feeds.queues[first].node.Name, n, p.readers[0].node.Name, p.Spec.BatchSize)
	}
	return n, nil
}

// fedSample returns sample i's data fed to the node of ws, if it is an external source
// (and not a stream source: streamOf).
func (b *Batch) fedSample(n *Node, i int) *FeedSample {
	if b.fed == nil {
		return nil
	}
	k, ok := b.feeds.byNode[n]
	if !ok || b.feeds.queues[k].stream != nil {
		return nil
	}
	return &b.fed[k].Samples[i]
}

// streamBatch is what the stream source of a batch fed fed sees (none without one).
func (f *feeds) streamBatch(fed []*Feed, plan any) StreamBatch {
	for k, q := range f.queues {
		if q.stream != nil && fed[k] != nil {
			return StreamBatch{Data: fed[k].Samples[0].Data, Plan: plan}
		}
	}
	return StreamBatch{}
}

// streamOf returns what a stream source node sees of the batch (nil for other nodes).
func (b *Batch) streamOf(n *Node) *StreamBatch {
	if b.fed == nil {
		return nil
	}
	k, ok := b.feeds.byNode[n]
	if !ok || b.feeds.queues[k].stream == nil {
		return nil
	}
	return &b.stream
}

// FedSample is the fed sample an external source node's Setup and Run see (nil for
// other nodes).
func (ws *Workspace) FedSample() *FeedSample { return ws.fed }

// Stream is the fed item and plan a stream source's Setup and Run see (nil for other
// nodes); ws.Sample is the sample's index in the planned batch.
func (ws *Workspace) Stream() *StreamBatch { return ws.stream }

func (b *Batch) releaseFeeds() {
	for i, f := range b.fed {
		f.release()
		b.fed[i] = nil
	}
	b.fed = nil
}
