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
}

func (f *Feed) release() {
	if f == nil || !f.released.CompareAndSwap(false, true) {
		return
	}
	if f.Release != nil {
		f.Release()
	}
}

type feedQueue struct {
	node  *Node
	items []*Feed
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
			f.queues = append(f.queues, &feedQueue{node: n})
		}
	}
	return f
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

// FeedInput queues one batch for the external source node name. The batch must have
// batch_size samples of the node's declared dtype and ndim (and layout, when both are
// given). On error, f.Release has been called. Safe from any goroutine.
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
	if len(f.Samples) != p.Spec.BatchSize {
		return Errorf(StatusInvalidArgument, "feed_input: %s: got %d samples, the pipeline's batch_size is %d", where, len(f.Samples), p.Spec.BatchSize)
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
		need, err := checkSampleSize(&t, &p.limits)
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
func (f *feeds) take(stop <-chan struct{}) (fed []*Feed, end, ok bool) {
	if len(f.queues) == 0 {
		return nil, false, true
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
				}
			}
			f.mu.Unlock()
			return nil, true, true
		}
		if ready {
			fed = make([]*Feed, len(f.queues))
			for i, q := range f.queues {
				fed[i] = q.items[0]
				q.items[0] = nil
				q.items = q.items[1:]
			}
			f.mu.Unlock()
			return fed, false, true
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
			return nil, false, false
		}
	}
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

// fedSample returns sample i's data fed to the node of ws, if it is an external source.
func (b *Batch) fedSample(n *Node, i int) *FeedSample {
	if b.fed == nil {
		return nil
	}
	k, ok := b.feeds.byNode[n]
	if !ok {
		return nil
	}
	return &b.fed[k].Samples[i]
}

// FedSample is the fed sample an external source node's Setup and Run see (nil for
// other nodes).
func (ws *Workspace) FedSample() *FeedSample { return ws.fed }

func (b *Batch) releaseFeeds() {
	for i, f := range b.fed {
		f.release()
		b.fed[i] = nil
	}
	b.fed = nil
}
