package engine

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// SerialHostBatch marks a HostBatchOperator whose RunHostBatch must run one call at a
// time, batch after batch in iteration order: a host program's function
// (python_function), which may keep state between calls or hand back a buffer it
// reuses, as DALI runs it. The executor then gives the node one batch at a time, in the
// order the producer planned them; the node's other batches wait for their turn while
// the workers go on with everything else (the other nodes of those batches, the next
// batches' samples).
type SerialHostBatch interface {
	HostBatchOperator
	SerialCalls()
}

func isSerialHostBatch(n *Node) bool {
	_, ok := n.Op.(SerialHostBatch)
	return ok
}

// hostTurn orders the calls of one serial host-batch node: the batch whose sequence
// number is next runs; a batch that ends without running the node (a failed sample, a
// dropped batch) passes its turn without waiting for it.
type hostTurn struct {
	mu     sync.Mutex
	cond   sync.Cond
	next   int64              // the sequence number whose turn it is
	passed map[int64]struct{} // later batches that gave up their turn already
	closed bool               // the pipeline is being destroyed: nobody waits any more
}

func newHostTurn() *hostTurn {
	t := &hostTurn{passed: map[int64]struct{}{}}
	t.cond.L = &t.mu
	return t
}

// wait blocks until it is seq's turn; false when the pipeline is destroyed first.
func (t *hostTurn) wait(seq int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.next != seq && !t.closed {
		t.cond.Wait()
	}
	return !t.closed
}

// pass ends seq's turn (it ran, or it gives its turn up without waiting for it).
func (t *hostTurn) pass(seq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case seq == t.next:
		t.next++
		for {
			if _, ok := t.passed[t.next]; !ok {
				break
			}
			delete(t.passed, t.next)
			t.next++
		}
		t.cond.Broadcast()
	case seq > t.next:
		t.passed[seq] = struct{}{}
	}
}

func (t *hostTurn) close() {
	t.mu.Lock()
	t.closed = true
	t.cond.Broadcast()
	t.mu.Unlock()
}

// hostOrder is the pipeline's ordering of its serial host-batch nodes.
type hostOrder struct {
	turns []*hostTurn // one per serial node, in the order a batch reaches them
	index map[*Node]int
	seq   int64 // the next batch's sequence number; the producer's (one at a time)

	mu     sync.Mutex
	active map[*Batch]activeHostCall // the host-batch calls running now
}

type activeHostCall struct {
	node  string
	op    string
	epoch int64
	iter  int64
	start time.Time
}

func newHostOrder(part *Partition) *hostOrder {
	o := &hostOrder{index: map[*Node]int{}, active: map[*Batch]activeHostCall{}}
	for _, nodes := range part.HostBatch {
		for _, n := range nodes {
			if isSerialHostBatch(n) {
				o.index[n] = len(o.turns)
				o.turns = append(o.turns, newHostTurn())
			}
		}
	}
	return o
}

// enter gives b its place in the order of the serial nodes' calls (the producer calls it
// in iteration order, for every batch that goes on to finish).
func (o *hostOrder) enter(b *Batch) {
	if len(o.turns) == 0 {
		return
	}
	b.seq, b.ordered = o.seq, true
	o.seq++
}

// leave passes the turns b did not take (it failed, or was dropped, before them).
func (o *hostOrder) leave(b *Batch) {
	if !b.ordered {
		return
	}
	for k := b.turnsTaken; k < len(o.turns); k++ {
		o.turns[k].pass(b.seq)
	}
	b.turnsTaken = len(o.turns)
}

func (o *hostOrder) started(b *Batch, n *Node) {
	o.mu.Lock()
	o.active[b] = activeHostCall{node: n.Name, op: n.OpName, epoch: b.Epoch, iter: b.Iteration, start: time.Now()}
	o.mu.Unlock()
}

func (o *hostOrder) ended(b *Batch) {
	o.mu.Lock()
	delete(o.active, b)
	o.mu.Unlock()
}

// running lists the serial host-batch calls in progress, oldest first.
func (o *hostOrder) running() []activeHostCall {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []activeHostCall
	for _, c := range o.active {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// abandon makes every batch waiting for a turn give up (the pipeline is being destroyed).
func (o *hostOrder) abandon() {
	for _, t := range o.turns {
		t.close()
	}
}

// HostCallGrace is how long destroying a pipeline waits for a host function (a
// python_function) that has not returned: then the batches it holds are abandoned and
// the destroy returns. The pipeline's memory is freed when the function returns; a
// function that never returns keeps it until the process exits.
var HostCallGrace = 2 * time.Second

// abandonMessage says which host calls a destroy stops waiting for.
func abandonMessage(calls []activeHostCall, waited time.Duration) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf("the function of %s node %q (batch %d of epoch %d, running for %.1f s)",
			c.op, c.node, c.iter, c.epoch, time.Since(c.start).Seconds()))
	}
	return fmt.Sprintf("godali: destroying a pipeline: %s has not returned after %.1f s; "+
		"the pipeline is destroyed without waiting for it (its batches are dropped; the memory they use is freed when the function returns)",
		strings.Join(parts, ", "), waited.Seconds())
}

// warn writes a message for the user to stderr (a destroy that cannot wait).
var warn = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
