package cuda

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// fakeBacking records what a pool asks of the driver. Events are numbered; an event is
// "done" only when the test says so, which makes the ordering rules observable.
type fakeBacking struct {
	mu       sync.Mutex
	k        Kind
	next     uintptr
	live     map[uintptr]int // ptr -> size
	events   int
	recorded map[Event]Stream
	waits    []string // "stream<-event" for device reuse, "sync:event" for host waits
	failRec  bool
	drains   int
}

func newFake(k Kind) *fakeBacking {
	return &fakeBacking{k: k, next: 1 << 20, live: map[uintptr]int{}, recorded: map[Event]Stream{}}
}

func (f *fakeBacking) kind() Kind { return f.k }
func (f *fakeBacking) alloc(n int) (uintptr, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.next
	f.next += uintptr(n)
	f.live[p] = n
	var host []byte
	if f.k == KindPinned {
		host = make([]byte, n)
	}
	return p, host, nil
}
func (f *fakeBacking) free(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.live[p]; !ok {
		return fmt.Errorf("free of unknown pointer %#x", p)
	}
	delete(f.live, p)
	return nil
}
func (f *fakeBacking) newEvent() (Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events++
	return Event(f.events), nil
}
func (f *fakeBacking) destroyEvent(Event) {}
func (f *fakeBacking) record(e Event, s Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRec {
		return errors.New("record failed")
	}
	f.recorded[e] = s
	return nil
}
func (f *fakeBacking) reuse(e Event, s Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.k == KindPinned {
		f.waits = append(f.waits, fmt.Sprintf("sync:%d", e))
	} else {
		f.waits = append(f.waits, fmt.Sprintf("%d<-%d", s, e))
	}
	return nil
}
func (f *fakeBacking) drained() { f.drains++ }
func (f *fakeBacking) hostSync(e Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, fmt.Sprintf("sync:%d", e))
	return nil
}

func TestClassSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {8192, 8192}, {8193, 12288},
		{224 * 224 * 3, 163840}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17}, {1 << 30, 1 << 30}, {1<<30 + 1, 1<<30 + 1<<27},
	} {
		if got := ClassSize(c.n); got != c.want {
			t.Errorf("ClassSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	// Classes are whole pages, at most one step in eight (12.5%) above the request.
	for n := 4097; n < 1<<26; n = n*9/8 + 7 {
		c := ClassSize(n)
		if c < n || c%4096 != 0 || (c > n+4095 && float64(c) > float64(n)*1.125) {
			t.Fatalf("ClassSize(%d) = %d: not the next page or 1/8 step", n, c)
		}
	}
}

func TestPoolSteadyStateDoesNotAllocate(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	sizes := []int{150528, 602112, 4096, 150000, 602112}
	for round := 0; round < 20; round++ {
		var held []*Block
		for _, n := range sizes {
			b, err := p.Get(n, 7)
			if err != nil {
				t.Fatal(err)
			}
			if b.Size() != n || b.Cap() < n {
				t.Fatalf("block size %d cap %d for a request of %d", b.Size(), b.Cap(), n)
			}
			held = append(held, b)
		}
		for _, b := range held {
			b.Release()
		}
		if round == 0 {
			continue
		}
		if s := p.Stats(); s.Allocations != int64(len(sizes)) {
			t.Fatalf("round %d: %d allocations, want %d (warm-up only)", round, s.Allocations, len(sizes))
		}
	}
	s := p.Stats()
	want := Stats{Allocations: 5, Acquires: 100, Returns: 100, ReservedBytes: s.ReservedBytes}
	if s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	p.Close()
	if s := p.Stats(); s.Releases != 5 || s.ReservedBytes != 0 || len(f.live) != 0 {
		t.Fatalf("after Close: %+v, %d live allocations", s, len(f.live))
	}
}

func TestPoolReserveServesSmallerImages(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	r := DecodeReservation(640, 480, 3, 4, 2) // 12 blocks of 921600 bytes
	if r.Count != 12 || r.Bytes != 921600 {
		t.Fatalf("reservation %+v", r)
	}
	if err := r.Apply(p); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(p); err != nil { // idempotent
		t.Fatal(err)
	}
	if s := p.Stats(); s.Allocations != 12 || s.Outstanding != 0 {
		t.Fatalf("after Reserve: %+v", s)
	}
	// Images smaller than the hint (down to a quarter of it) use the reserved blocks.
	var held []*Block
	for i := 0; i < 12; i++ {
		b, err := p.Get(921600/(1+i%4), 0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	if s := p.Stats(); s.Allocations != 12 {
		t.Fatalf("reserved blocks not reused: %d allocations", s.Allocations)
	}
	// A tiny request does not take a hint-sized block.
	b, err := p.Get(100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Cap() != 4096 {
		t.Fatalf("tiny request got a %d-byte block", b.Cap())
	}
	b.Release()
	for _, b := range held {
		b.Release()
	}
	p.Close()
}

func TestPoolStreamOrderedReuse(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	b, _ := p.Get(1000, 5)
	ptr := b.Ptr()
	if err := b.ReleaseAfter(9); err != nil { // e.g. the consumer's stream
		t.Fatal(err)
	}
	if f.recorded[b.ev] != 9 {
		t.Fatalf("event not recorded on the consumer's stream: %v", f.recorded)
	}
	b2, _ := p.Get(1000, 5)
	if b2.Ptr() != ptr {
		t.Fatal("block not reused")
	}
	if len(f.waits) != 1 || f.waits[0] != fmt.Sprintf("5<-%d", b2.ev) {
		t.Fatalf("new owner's stream did not wait for the last use: %v", f.waits)
	}
	b2.Release()
	b3, _ := p.Get(1000, 5)
	if len(f.waits) != 1 {
		t.Fatalf("waited again after a plain Release: %v", f.waits)
	}
	b3.Release()
	p.Close()
}

func TestPinnedReuseWaitsOnHost(t *testing.T) {
	f := newFake(KindPinned)
	p := newPool(f)
	b, _ := p.Get(5000, 3)
	if len(b.Bytes()) != 5000 || b.HostPtr() == nil {
		t.Fatal("pinned block without host view")
	}
	_ = b.ReleaseAfter(3) // an H2D copy out of it was queued on stream 3
	b, _ = p.Get(5000, 4)
	if len(f.waits) != 1 || f.waits[0] != fmt.Sprintf("sync:%d", b.ev) {
		t.Fatalf("pinned reuse must wait on the host: %v", f.waits)
	}
	b.Release()
	p.Close()
}

func TestPoolDoubleFenceWaitsForFirst(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	b, _ := p.Get(1000, 1)
	b.Retain() // exported twice
	_ = b.ReleaseAfter(10)
	_ = b.ReleaseAfter(11)
	if len(f.waits) != 1 || f.waits[0] != fmt.Sprintf("sync:%d", b.ev) || f.recorded[b.ev] != 11 {
		t.Fatalf("waits %v recorded %v", f.waits, f.recorded)
	}
	p.Close()
}

// TestPoolSameStreamFencesDoNotWait: holders released after work on one stream (per-sample
// tensors of one block, freed by the same consumer) need no host wait between them.
func TestPoolSameStreamFencesDoNotWait(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	b, _ := p.Get(1000, 1)
	b.Retain()
	b.Retain()
	for i := 0; i < 3; i++ {
		if err := b.ReleaseAfter(10); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.waits) != 0 || f.recorded[b.ev] != 10 {
		t.Fatalf("waits %v recorded %v", f.waits, f.recorded)
	}
	if b2, _ := p.Get(1000, 12); b2 != b || len(f.waits) != 1 || f.waits[0] != fmt.Sprintf("12<-%d", b.ev) {
		t.Fatalf("reuse: waits %v", f.waits)
	}
	p.Close()
}

func TestPoolFailedFenceQuarantines(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	b, _ := p.Get(1000, 1)
	ptr := b.Ptr()
	f.failRec = true
	if err := b.ReleaseAfter(2); err == nil {
		t.Fatal("ReleaseAfter did not report the failed record")
	}
	f.failRec = false
	b2, _ := p.Get(1000, 1)
	if b2.Ptr() == ptr {
		t.Fatal("an unfenced block was handed out again")
	}
	b2.Release()
	if s := p.Stats(); s.Outstanding != 0 || s.Returns != 2 {
		t.Fatalf("stats %+v", s)
	}
	p.Close()
	if len(f.live) != 0 {
		t.Fatalf("%d allocations leaked after Close", len(f.live))
	}
}

func TestPoolReturnAfterCloseFrees(t *testing.T) {
	f := newFake(KindDevice)
	p := newPool(f)
	b, _ := p.Get(1000, 0)
	idle, _ := p.Get(1000, 0)
	idle.Release()
	p.Close()
	if len(f.live) != 1 {
		t.Fatalf("Close kept %d allocations, want the outstanding one", len(f.live))
	}
	if _, err := p.Get(10, 0); err == nil {
		t.Fatal("Get on a closed pool succeeded")
	}
	if f.drains != 0 {
		t.Fatal("drained while a block is still outstanding")
	}
	b.Release()
	if len(f.live) != 0 || p.Stats().ReservedBytes != 0 {
		t.Fatal("block returned after Close was not freed")
	}
	if f.drains != 1 {
		t.Fatalf("drained called %d times, want once", f.drains)
	}
	p.Close()
	if f.drains != 1 {
		t.Fatal("a second Close drained again")
	}
}

func TestPoolGlobalCountersAndConcurrency(t *testing.T) {
	before := GlobalStats(KindPinned)
	p := newPool(newFake(KindPinned))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				b, err := p.Get(1000*(1+i%5), 0)
				if err != nil {
					t.Error(err)
					return
				}
				b.Retain()
				b.Release()
				b.Release()
			}
		}()
	}
	wg.Wait()
	s := p.Stats()
	if s.Acquires != 1600 || s.Returns != 1600 || s.Outstanding != 0 || s.InUseBytes != 0 {
		t.Fatalf("stats %+v", s)
	}
	after := GlobalStats(KindPinned)
	if after.Acquires-before.Acquires != 1600 || after.Allocations-before.Allocations != s.Allocations {
		t.Fatalf("global counters moved by %+v, pool says %+v", after, s)
	}
	p.Exported(2)
	if GlobalStats(KindPinned).Exported-before.Exported != 2 {
		t.Fatal("Exported not mirrored globally")
	}
	p.Exported(-2)
	p.Close()
}

func TestReservations(t *testing.T) {
	if r := DecodeReservation(0, 480, 3, 256, 2); r != (Reservation{}) {
		t.Errorf("zero hint reserved %+v", r)
	}
	if r := DecodeReservation(5980, 6430, 3, 256, 2); r.Bytes != 5980*6430*3 || r.Count != 768 {
		t.Errorf("DALI's RN50 hints: %+v", r)
	}
	if r := BatchReservation(3*224*224*4, 256, 2); r.Bytes != 3*224*224*4*256 || r.Count != 3 {
		t.Errorf("batch reservation %+v", r)
	}
}
