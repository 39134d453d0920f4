package engine

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godali/godali/internal/float16"
	"github.com/godali/godali/internal/poolstats"
)

// PoolStats are a pool's counters (godali_pool_stats_t).
type PoolStats = poolstats.Stats

// globalHost counts every host pool of the process, including pools of destroyed
// pipelines whose buffers are still held by consumers.
var globalHost poolstats.Counters

// GlobalHostStats returns the process-wide host pool counters.
func GlobalHostStats() PoolStats { return globalHost.Snapshot() }

// HostPool hands out page-aligned host buffers that live outside the Go heap (mmap), so
// C consumers may keep them. Buffers are grouped in size classes (8 per power of two) and
// reused; steady state makes no system calls. The pool outlives its pipeline: Close
// frees idle buffers and leases returned afterwards are unmapped on return.
type HostPool struct {
	mu     sync.Mutex
	free   map[int][]*Lease // by class size
	closed bool
	c      poolstats.Counters
}

// NewHostPool returns an empty pool.
func NewHostPool() *HostPool { return &HostPool{free: map[int][]*Lease{}} }

// Lease is a buffer handed out by a pool. It is reference counted: the batch holds one
// reference, every exported tensor another; the last Release returns it.
type Lease struct {
	pool *HostPool
	mem  []byte // the whole mapping
	size int    // bytes requested
	refs atomic.Int32
	// unmap says the last Release unmaps the buffer rather than keeping it for reuse.
	unmap bool
}

// Bytes is the leased memory, len = requested size.
func (l *Lease) Bytes() []byte { return l.mem[:l.size] }

// Ptr is the address of the buffer.
func (l *Lease) Ptr() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(l.mem)) }

// Retain adds a reference.
func (l *Lease) Retain() { l.refs.Add(1) }

// Release drops a reference; the last one returns the buffer to its pool. Safe from any
// goroutine or thread.
func (l *Lease) Release() {
	n := l.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("godali: lease released twice")
	}
	l.pool.put(l)
}

// ReleaseUnmap is Release for a one-off buffer (a worker's intermediate grown for one
// large image): the last reference unmaps it instead of keeping it in the pool, where a
// buffer of each size class met would otherwise stay mapped for the pipeline's life.
func (l *Lease) ReleaseUnmap() {
	l.unmap = true
	l.Release()
}

// classSize rounds n up to one of 8 sizes per power of two, at least one page; -1 when
// the rounded size does not fit an int.
func classSize(n int) int {
	const page = 4096
	if n <= page {
		return page
	}
	if n > math.MaxInt/2 {
		return -1
	}
	shift := bits.Len(uint(n-1)) - 4 // 8 steps between 2^(k-1) and 2^k
	if shift < 12 {
		shift = 12
	}
	step := 1 << shift
	return (n + step - 1) / step * step
}

// Get returns a lease of n bytes with one reference. Contents are unspecified.
func (p *HostPool) Get(n int) (*Lease, error) {
	cs := classSize(n)
	if n < 0 || cs < 0 {
		return nil, errOutOfMemory("host pool", n, syscall.ENOMEM)
	}
	p.mu.Lock()
	var l *Lease
	if list := p.free[cs]; len(list) > 0 {
		l = list[len(list)-1]
		list[len(list)-1] = nil
		p.free[cs] = list[:len(list)-1]
	}
	p.mu.Unlock()
	if l == nil {
		var err error
		if l, err = p.mapLease(cs); err != nil {
			return nil, err
		}
	}
	l.size = n
	l.unmap = false
	l.refs.Store(1)
	p.count(poolstats.Acquires, 1)
	p.count(poolstats.Outstanding, 1)
	p.count(poolstats.InUseBytes, int64(len(l.mem)))
	return l, nil
}

// Reserve makes sure at least count buffers of n bytes' class are free, mapping the
// missing ones now rather than when the first batches need them.
func (p *HostPool) Reserve(n, count int) error {
	cs := classSize(n)
	if n < 0 || cs < 0 {
		return errOutOfMemory("host pool", n, syscall.ENOMEM)
	}
	p.mu.Lock()
	have := len(p.free[cs])
	p.mu.Unlock()
	for i := have; i < count; i++ {
		l, err := p.mapLease(cs)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.free[cs] = append(p.free[cs], l)
		p.mu.Unlock()
	}
	return nil
}

// mapLease maps a new buffer of class size cs.
func (p *HostPool) mapLease(cs int) (*Lease, error) {
	mem, err := syscall.Mmap(-1, 0, cs, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, errOutOfMemory("host pool", cs, err)
	}
	p.count(poolstats.Allocations, 1)
	p.count(poolstats.ReservedBytes, int64(cs))
	return &Lease{pool: p, mem: mem}, nil
}

// count adds d to one counter of the pool and the same counter of the process.
func (p *HostPool) count(f poolstats.Field, d int64) {
	p.c.Add(f, d)
	globalHost.Add(f, d)
}

func (p *HostPool) put(l *Lease) {
	cs := len(l.mem)
	p.count(poolstats.Returns, 1)
	p.count(poolstats.Outstanding, -1)
	p.count(poolstats.InUseBytes, -int64(cs))
	p.mu.Lock()
	if !p.closed && !l.unmap {
		p.free[cs] = append(p.free[cs], l)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.unmap(l)
}

func (p *HostPool) unmap(l *Lease) {
	cs := len(l.mem)
	_ = syscall.Munmap(l.mem)
	l.mem = nil
	p.count(poolstats.Releases, 1)
	p.count(poolstats.ReservedBytes, -int64(cs))
}

// Trim gives idle buffers back to the system; the pool stays usable.
func (p *HostPool) Trim() {
	p.mu.Lock()
	free := p.free
	p.free = map[int][]*Lease{}
	p.mu.Unlock()
	for _, list := range free {
		for _, l := range list {
			p.unmap(l)
		}
	}
}

// Close gives idle buffers back to the system; outstanding ones follow on return.
func (p *HostPool) Close() {
	p.mu.Lock()
	p.closed = true // from now on returned leases are unmapped, not kept
	p.mu.Unlock()
	p.Trim()
}

// Stats returns the pool's counters.
func (p *HostPool) Stats() PoolStats { return p.c.Snapshot() }

// Exported adjusts the count of DLPack tensors alive (the C layer calls it).
func (p *HostPool) Exported(d int64) { p.count(poolstats.Exported, d) }

func readScalar(b []byte, d DType) float64 {
	switch d {
	case UInt8, Bool:
		return float64(b[0])
	case Int8:
		return float64(int8(b[0]))
	case UInt16:
		return float64(binary.LittleEndian.Uint16(b))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case UInt32:
		return float64(binary.LittleEndian.Uint32(b))
	case UInt64:
		return float64(binary.LittleEndian.Uint64(b))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case Float16:
		return float64(float16.ToFloat32(binary.LittleEndian.Uint16(b)))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

func writeScalar(b []byte, d DType, v float64) {
	switch d {
	case UInt8, Bool:
		b[0] = byte(v)
	case Int8:
		b[0] = byte(int8(v))
	case UInt16:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case Int16:
		binary.LittleEndian.PutUint16(b, uint16(int16(v)))
	case UInt32:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case UInt64:
		binary.LittleEndian.PutUint64(b, uint64(v))
	case Int32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case Int64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case Float16:
		binary.LittleEndian.PutUint16(b, float16.FromFloat32(float32(v)))
	case Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}
}

// writeScalarSat writes v as DALI's ConvertSat does: integer types round to nearest
// (halves away from zero) and clamp to their range; NaN becomes 0.
func writeScalarSat(b []byte, d DType, v float64) {
	var lo, hi float64
	switch d {
	case UInt8:
		lo, hi = 0, math.MaxUint8
	case Bool:
		lo, hi = 0, 1
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case UInt16:
		lo, hi = 0, math.MaxUint16
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case UInt32:
		lo, hi = 0, math.MaxUint32
	case UInt64:
		lo, hi = 0, math.Nextafter(1<<64, 0)
	case Int64:
		// float64 cannot hold MaxInt64; the largest float64 below 2^63 is.
		lo, hi = math.MinInt64, math.Nextafter(1<<63, 0)
	default:
		writeScalar(b, d, v)
		return
	}
	if math.IsNaN(v) {
		v = 0
	}
	writeScalar(b, d, math.Min(math.Max(math.Round(v), lo), hi))
}

// Pool is the pool the lease belongs to.
func (l *Lease) Pool() *HostPool { return l.pool }
