package engine

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// _test.host_serial and _test.host_batch are host-batch nodes that call a hook of the
// test (by "key") with the batch's tag (sample 0's first int32) and copy their input
// to their output. _test.host_serial is a SerialHostBatch (as python_function is).
func init() {
	for _, name := range []string{"_test.host_serial", "_test.host_batch"} {
		RegisterSchema(&Schema{Name: name, Doc: "test only: calls a hook per batch", MinInputs: 1, MaxInputs: 1,
			Outputs: []string{"out"}, HostOnly: true,
			Args: []ArgSpec{{Name: "key", Type: ArgInt, Required: true, Doc: "the hook"}}})
	}
	RegisterBackend("_test.host_serial", "cpu", func(a *Args) (Operator, error) {
		return &serialHostOp{hostOp{key: a.Int("key")}}, nil
	})
	RegisterBackend("_test.host_batch", "cpu", func(a *Args) (Operator, error) {
		return &hostOp{key: a.Int("key")}, nil
	})
}

var hostHooks sync.Map // key -> func(tag int32) error

type hostOp struct{ key int }

type serialHostOp struct{ hostOp }

func (*serialHostOp) SerialCalls() {}

func (o *hostOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	return []TensorMeta{DynamicMeta("")}, nil
}
func (o *hostOp) Setup(*Workspace) error { return Errorf(StatusInternal, "per batch") }
func (o *hostOp) Run(*Workspace) error   { return Errorf(StatusInternal, "per batch") }

func (o *hostOp) RunHostBatch(hw *HostBatchWorkspace) error {
	hook, _ := hostHooks.Load(o.key)
	tag := int32(binary.LittleEndian.Uint32(hw.In[0][0].Data))
	if err := hook.(func(int32) error)(tag); err != nil {
		return err
	}
	for i, t := range hw.In[0] {
		dst, err := hw.Output(0, i, t.DType, t.Shape)
		if err != nil {
			return err
		}
		copy(dst, t.Data)
	}
	return nil
}

// overlapProbe counts the calls of a hook running at once, and their order.
type overlapProbe struct {
	mu      sync.Mutex
	now     int
	most    int
	order   []int32
	failTag int32 // a tag whose call fails (-1: none)
	sleep   time.Duration
}

func (pr *overlapProbe) hook(tag int32) error {
	pr.mu.Lock()
	pr.now++
	pr.most = max(pr.most, pr.now)
	pr.order = append(pr.order, tag)
	pr.mu.Unlock()
	time.Sleep(pr.sleep) // long enough for the next batches to arrive
	pr.mu.Lock()
	pr.now--
	pr.mu.Unlock()
	if tag == pr.failTag {
		return Errorf(StatusData, "tag %d fails", tag)
	}
	return nil
}

func setHook(t *testing.T, key int, f func(int32) error) {
	hostHooks.Store(key, f)
	t.Cleanup(func() { hostHooks.Delete(key) })
}

// feedTagged feeds n batches of 2 samples; batch k's samples start with tag k.
func feedTagged(t *testing.T, p *Pipeline, n int, released *atomic.Int32) {
	for k := 0; k < n; k++ {
		s := [][]int32{{int32(k), 1}, {int32(k), 2}}
		if err := p.FeedInput("src", counted(s, [][]int{{1, 2}, {1, 2}}, released)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSerialHostBatchOneAtATimeInOrder: with batches prepared four ahead, a serial
// host-batch node runs one batch at a time in iteration order, and a batch that fails
// before a second serial node passes its turn there (the next batches do not wait for
// it); a plain host-batch node overlaps batches, which shows the probe sees overlap.
func TestSerialHostBatchOneAtATimeInOrder(t *testing.T) {
	// c sleeps longest: its calls overlap whichever order a batch runs a and c in.
	a := &overlapProbe{failTag: 5, sleep: 3 * time.Millisecond}
	b := &overlapProbe{failTag: -1, sleep: 3 * time.Millisecond}
	c := &overlapProbe{failTag: -1, sleep: 10 * time.Millisecond}
	setHook(t, 9001, a.hook)
	setHook(t, 9002, b.hook)
	setHook(t, 9003, c.hook)
	p := mustPipeline(t, extDesc(2, 4, `,
	 {"op": "_test.host_serial", "name": "a", "inputs": ["x"], "outputs": ["ya"], "args": {"key": 9001}},
	 {"op": "_test.host_serial", "name": "b", "inputs": ["ya"], "outputs": ["yb"], "args": {"key": 9002}},
	 {"op": "_test.host_batch", "name": "c", "inputs": ["x"], "outputs": ["yc"], "args": {"key": 9003}}`, `"yb", "yc"`))
	const n = 40
	var released atomic.Int32
	feedTagged(t, p, n, &released)
	for k := 0; k < n; k++ {
		bt, err := p.Next()
		if k == 5 {
			if err == nil || !strings.Contains(err.Error(), "tag 5 fails") {
				t.Fatalf("batch 5: %v, want node a's error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("batch %d: %v", k, err)
		}
		for out := 0; out < 2; out++ {
			v, err := bt.Output(out).SampleView(1)
			if err != nil {
				t.Fatal(err)
			}
			got := int32s(unsafe.Slice((*byte)(v.Ptr), 8))
			if got[0] != int32(k) || got[1] != 2 {
				t.Fatalf("batch %d output %d sample 1: %v, want [%d 2]", k, out, got, k)
			}
			v.Lease.Release()
		}
	}
	wantA := fmt.Sprint(seq(0, n))
	wantB := fmt.Sprint(append(seq(0, 5), seq(6, n)...))
	if a.most != 1 || fmt.Sprint(a.order) != wantA {
		t.Fatalf("serial node a: %d calls at once, order %v; want 1 at a time in order", a.most, a.order)
	}
	if b.most != 1 || fmt.Sprint(b.order) != wantB {
		t.Fatalf("serial node b: %d calls at once, order %v; want 1 at a time, in order, without batch 5", b.most, b.order)
	}
	if c.most < 2 {
		t.Fatalf("plain host-batch node c never overlapped (%d at once): the probe cannot see concurrency", c.most)
	}
}

func seq(from, to int) []int32 {
	var s []int32
	for i := from; i < to; i++ {
		s = append(s, int32(i))
	}
	return s
}

// TestCloseAbandonsBlockedHostFunction: a destroy waits at most HostCallGrace for a host
// function that does not return, says so, and returns; the batches it held are released
// when it returns.
func TestCloseAbandonsBlockedHostFunction(t *testing.T) {
	grace, w := HostCallGrace, warn
	HostCallGrace = 200 * time.Millisecond
	var msgs []string
	var mu sync.Mutex
	warn = func(m string) { mu.Lock(); msgs = append(msgs, m); mu.Unlock() }
	defer func() { HostCallGrace, warn = grace, w }()

	unblock := make(chan struct{})
	var calls atomic.Int32
	setHook(t, 9011, func(tag int32) error {
		calls.Add(1)
		if tag == 1 {
			<-unblock
		}
		return nil
	})
	p, err := NewPipeline([]byte(extDesc(2, 3, `,
	 {"op": "_test.host_serial", "name": "blocker", "inputs": ["x"], "outputs": ["y"], "args": {"key": 9011}}`, `"y"`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	var released atomic.Int32
	feedTagged(t, p, 4, &released)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	// Batch 1 blocks in the function; batches 2 and 3 wait for their turn.
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the host function was not called for batch 1")
		}
	}
	start := time.Now()
	p.Close()
	took := time.Since(start)
	if took > 2*time.Second {
		t.Fatalf("Close took %v with a blocked host function, want about %v", took, HostCallGrace)
	}
	mu.Lock()
	got := strings.Join(msgs, "\n")
	mu.Unlock()
	if !strings.Contains(got, `node "blocker"`) || !strings.Contains(got, "batch 1 of epoch") {
		t.Fatalf("Close's message: %q, want one naming the node and the batch", got)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the host function ran %d times, want 2 (batches 2 and 3 give up their turn)", n)
	}
	// Batch 0 was released by Close; batches 2 and 3 gave up; batch 1 is still held.
	for deadline := time.Now().Add(5 * time.Second); released.Load() != 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d feeds released before the function returned, want 3", released.Load())
		}
	}
	close(unblock)
	for deadline := time.Now().Add(5 * time.Second); released.Load() != 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d feeds released after the function returned, want 4", released.Load())
		}
	}
}

// TestHostTurnPassOutOfOrder: turns given up ahead of time are skipped over.
func TestHostTurnPassOutOfOrder(t *testing.T) {
	tr := newHostTurn()
	tr.pass(2)
	tr.pass(1)
	if tr.next != 0 {
		t.Fatalf("next %d, want 0", tr.next)
	}
	done := make(chan bool)
	go func() { done <- tr.wait(3) }()
	tr.pass(0)
	if ok := <-done; !ok || tr.next != 3 {
		t.Fatalf("wait(3) = %v with next %d, want true, 3", ok, tr.next)
	}
	go func() { done <- tr.wait(5) }()
	tr.close()
	if ok := <-done; ok {
		t.Fatal("wait after close returned true")
	}
}
