package cuda

import (
	"fmt"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/godali/godali/internal/poolstats"
)

// Kind says what memory a Pool hands out.
type Kind int

// Pool kinds.
const (
	KindDevice Kind = iota // device memory (cuMemAlloc)
	KindPinned             // page-locked host memory (cuMemHostAlloc), for copies to and from the GPU
)

func (k Kind) String() string {
	if k == KindPinned {
		return "pinned"
	}
	return "device"
}

// Stats are a pool's counters (engine.PoolStats, godali_pool_stats_t).
type Stats = poolstats.Stats

// global counts every pool of the process by kind, including pools whose owner is gone
// but whose blocks are still held by consumers.
var global [2]poolstats.Counters

// GlobalStats returns the process-wide counters of one kind of pool.
func GlobalStats(k Kind) Stats { return global[k].Snapshot() }

// backing is what a Pool needs from the driver. The device and pinned backings live in
// the cuda-tagged files; tests use a fake.
type backing interface {
	kind() Kind
	// alloc obtains n bytes; host is the memory seen from the CPU (pinned pools only).
	alloc(n int) (ptr uintptr, host []byte, err error)
	free(ptr uintptr) error
	newEvent() (Event, error)
	destroyEvent(Event)
	record(e Event, s Stream) error
	// reuse orders the next owner's use of a block after the work recorded in e: a device
	// pool makes stream s wait (no host synchronisation); a pinned pool waits on the host,
	// because the CPU writes the memory next.
	reuse(e Event, s Stream) error
	hostSync(e Event) error
	// drained is called once, when the pool is closed and its last block is back: the
	// device backing then drops its hold on the device's context.
	drained()
}

// largerFactor bounds how much bigger than the request a free block may be when no block
// of the request's own size class is free. Preallocated blocks, sized for the hinted
// largest image, then serve the smaller images too, instead of new allocations.
const largerFactor = 4

// Pool hands out device or pinned blocks grouped in size classes (8 per power of two)
// and reuses them: after warm-up (or Reserve) the steady state makes no cuMemAlloc,
// cuMemFree, cuMemHostAlloc or cuMemFreeHost calls, which Stats proves. Blocks are
// reference counted and may be released from any thread. The pool outlives its owner:
// Close frees idle blocks and blocks returned later are freed on return.
type Pool struct {
	b       backing
	mu      sync.Mutex
	free    map[int][]*Block // by class size
	classes []int            // sorted keys of free
	lost    []*Block         // blocks whose last use could not be fenced; freed by Close after a sync
	closed  bool
	c       poolstats.Counters
	drain   sync.Once
}

func newPool(b backing) *Pool { return &Pool{b: b, free: map[int][]*Block{}} }

// Kind says what memory the pool hands out.
func (p *Pool) Kind() Kind { return p.b.kind() }

// Block is memory handed out by a Pool. The batch that fills it holds one reference and
// every exported tensor another; the last Release returns it to the pool.
type Block struct {
	pool  *Pool
	ptr   uintptr
	host  []byte // pinned blocks: the whole block as seen from the CPU
	class int
	size  int
	refs  atomic.Int32

	fence    sync.Mutex // guards ev, evStream and pending
	ev       Event      // created on the first ReleaseAfter
	evStream Stream     // the stream ev was last recorded on
	pending  bool       // ev marks work that may still use the block
}

// Ptr is the address of the block: a CUdeviceptr for device pools, a host address (also
// valid on the device, as pinned memory is mapped) for pinned pools.
func (b *Block) Ptr() uintptr { return b.ptr }

// Size is the number of bytes requested.
func (b *Block) Size() int { return b.size }

// Cap is the size of the block's class: bytes usable without a new block.
func (b *Block) Cap() int { return b.class }

// Bytes is a pinned block's memory, len = Size; nil for device blocks.
func (b *Block) Bytes() []byte {
	if b.host == nil {
		return nil
	}
	return b.host[:b.size]
}

// HostPtr is a pinned block's address as an unsafe.Pointer, nil for device blocks.
func (b *Block) HostPtr() unsafe.Pointer {
	if b.host == nil {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b.host))
}

// Pool is the pool the block belongs to.
func (b *Block) Pool() *Pool { return b.pool }

// Retain adds a reference.
func (b *Block) Retain() { b.refs.Add(1) }

// Release drops a reference: the caller has no work in flight that uses the block (or
// has waited for it). The last reference returns the block to its pool.
func (b *Block) Release() {
	n := b.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("godali: CUDA pool block released twice")
	}
	b.pool.put(b)
}

// ReleaseAfter drops a reference whose last use is work queued on stream s (a kernel
// reading the block, a copy out of it): an event recorded on s now makes the block's
// next owner wait for that work, so no host synchronisation is needed here. Safe from any
// thread, with s any stream of the block's device (a consumer's stream included).
func (b *Block) ReleaseAfter(s Stream) error {
	err := b.recordUse(s)
	if err != nil {
		// Without a fence the block cannot be handed out again safely: keep it aside
		// until Close synchronises.
		b.fence.Lock()
		b.pending = false
		b.fence.Unlock()
		p := b.pool
		if b.refs.Add(-1) == 0 {
			p.count(poolstats.Returns, 1)
			p.count(poolstats.Outstanding, -1)
			p.count(poolstats.InUseBytes, -int64(b.class))
			p.mu.Lock()
			closed := p.closed
			if !closed {
				p.lost = append(p.lost, b)
			}
			p.mu.Unlock()
			if closed {
				p.release(b)
				p.checkDrained()
			}
		}
		return fmt.Errorf("%s pool: fencing a block's last use: %w", p.Kind(), err)
	}
	b.Release()
	return nil
}

func (b *Block) recordUse(s Stream) error {
	b.fence.Lock()
	defer b.fence.Unlock()
	be := b.pool.b
	if b.ev == 0 {
		ev, err := be.newEvent()
		if err != nil {
			return err
		}
		b.ev = ev
	} else if b.pending && b.evStream != s {
		// Two holders fenced on different streams: one event cannot express both, so
		// wait for the first on the host (rare: a tensor exported to two streams). On
		// the same stream the new record comes later in stream order and covers both
		// (the samples of a batch exported one by one share a block).
		if err := be.hostSync(b.ev); err != nil {
			return err
		}
	}
	if err := be.record(b.ev, s); err != nil {
		return err
	}
	b.evStream, b.pending = s, true
	return nil
}

// ClassSize rounds n up to one of 8 sizes per power of two, at least 4 KiB: the size of
// the block that serves a request of n bytes.
func ClassSize(n int) int {
	const minClass = 4096
	if n <= minClass {
		return minClass
	}
	shift := bits.Len(uint(n-1)) - 4 // 8 steps between 2^(k-1) and 2^k
	if shift < 12 {
		shift = 12
	}
	step := 1 << shift
	return (n + step - 1) / step * step
}

// Get returns a block of at least n bytes with one reference, for work on stream s: if
// the block's previous owner released it with ReleaseAfter, s waits for that work
// (device pools) or Get waits on the host (pinned pools). Contents are unspecified.
func (p *Pool) Get(n int, s Stream) (*Block, error) {
	if n < 0 {
		return nil, fmt.Errorf("%s pool: negative size %d", p.Kind(), n)
	}
	cs := ClassSize(n)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("%s pool: closed", p.Kind())
	}
	b := p.takeLocked(cs)
	p.mu.Unlock()
	if b == nil {
		var err error
		if b, err = p.allocate(cs); err != nil {
			return nil, err
		}
	} else if err := p.fenceReuse(b, s); err != nil {
		p.putFree(b)
		return nil, err
	}
	b.size = n
	b.refs.Store(1)
	p.count(poolstats.Acquires, 1)
	p.count(poolstats.Outstanding, 1)
	p.count(poolstats.InUseBytes, int64(b.class))
	return b, nil
}

func (p *Pool) fenceReuse(b *Block, s Stream) error {
	b.fence.Lock()
	defer b.fence.Unlock()
	if !b.pending {
		return nil
	}
	if err := p.b.reuse(b.ev, s); err != nil {
		return fmt.Errorf("%s pool: waiting for a block's previous use: %w", p.Kind(), err)
	}
	b.pending = false
	return nil
}

// takeLocked pops a free block of class cs, or of the smallest larger class within
// largerFactor.
func (p *Pool) takeLocked(cs int) *Block {
	i := sort.SearchInts(p.classes, cs)
	for ; i < len(p.classes) && p.classes[i] <= cs*largerFactor; i++ {
		c := p.classes[i]
		if list := p.free[c]; len(list) > 0 {
			b := list[len(list)-1]
			list[len(list)-1] = nil
			p.free[c] = list[:len(list)-1]
			return b
		}
	}
	return nil
}

func (p *Pool) allocate(cs int) (*Block, error) {
	ptr, host, err := p.b.alloc(cs)
	if err != nil {
		return nil, fmt.Errorf("%s pool: allocating %d bytes: %w", p.Kind(), cs, err)
	}
	p.count(poolstats.Allocations, 1)
	p.count(poolstats.ReservedBytes, int64(cs))
	return &Block{pool: p, ptr: ptr, host: host, class: cs}, nil
}

// Reserve makes sure count blocks of at least n bytes are free (preallocation from the
// decoders' width/height hints and the prefetch depth), so that the first batches do not
// allocate either.
func (p *Pool) Reserve(n, count int) error {
	if n <= 0 || count <= 0 {
		return nil
	}
	cs := ClassSize(n)
	p.mu.Lock()
	have := len(p.free[cs])
	p.mu.Unlock()
	for i := have; i < count; i++ {
		b, err := p.allocate(cs)
		if err != nil {
			return err
		}
		p.putFree(b)
	}
	return nil
}

func (p *Pool) put(b *Block) {
	p.count(poolstats.Returns, 1)
	p.count(poolstats.Outstanding, -1)
	p.count(poolstats.InUseBytes, -int64(b.class))
	p.putFree(b)
}

func (p *Pool) putFree(b *Block) {
	p.mu.Lock()
	if !p.closed {
		list, ok := p.free[b.class]
		if !ok {
			i := sort.SearchInts(p.classes, b.class)
			p.classes = append(p.classes, 0)
			copy(p.classes[i+1:], p.classes[i:])
			p.classes[i] = b.class
		}
		p.free[b.class] = append(list, b)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.release(b)
	p.checkDrained()
}

// checkDrained tells the backing when a closed pool has nothing outstanding any more.
func (p *Pool) checkDrained() {
	if p.c.Load(poolstats.Outstanding) == 0 {
		p.drain.Do(p.b.drained)
	}
}

// release gives a block back to the driver once its last use is over.
func (p *Pool) release(b *Block) {
	b.fence.Lock()
	if b.pending {
		_ = p.b.hostSync(b.ev)
		b.pending = false
	}
	if b.ev != 0 {
		p.b.destroyEvent(b.ev)
		b.ev = 0
	}
	b.fence.Unlock()
	// A failed free cannot be retried usefully; the memory goes with the context at the
	// latest, so the block counts as released either way.
	_ = p.b.free(b.ptr)
	b.ptr, b.host = 0, nil
	p.count(poolstats.Releases, 1)
	p.count(poolstats.ReservedBytes, -int64(b.class))
}

// Close gives idle blocks back to the driver; outstanding ones follow on return. A
// device pool keeps its device's context alive until then, so that tensors exported
// from a destroyed pipeline stay valid.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	free, lost := p.free, p.lost
	p.free, p.classes, p.lost = map[int][]*Block{}, nil, nil
	p.mu.Unlock()
	for _, list := range free {
		for _, b := range list {
			p.release(b)
		}
	}
	for _, b := range lost {
		p.release(b)
	}
	p.checkDrained()
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats { return p.c.Snapshot() }

// Exported adjusts the count of DLPack tensors alive (the C layer calls it).
func (p *Pool) Exported(d int64) { p.count(poolstats.Exported, d) }

func (p *Pool) count(f poolstats.Field, d int64) {
	p.c.Add(f, d)
	global[p.b.kind()].Add(f, d)
}
