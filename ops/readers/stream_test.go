package readers

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/godali/godali/engine"
)

// fillCounters, the reference for spanTable, are DALI's iterator counters for LastBatchPolicy.FILL without
// pad_last_batch (its _counter, _counter_per_gpu, _shard_sizes_per_gpu and _size),
// over all shards.
type fillCounters struct {
	bs, size, counter int64
	stick             bool
	ahead, sizes      []int64 // per shard: samples read ahead into the next epoch; shard sizes
}

func newFillCounters(n, k, bs int, stick bool) fillCounters {
	c := fillCounters{bs: int64(bs), stick: stick, ahead: make([]int64, k), sizes: make([]int64, k)}
	for i := range c.sizes {
		lo, hi := engine.ShardRange(n, i, k)
		c.sizes[i] = int64(hi - lo)
	}
	per := (int64(n) + int64(k) - 1) / int64(k)
	c.size = ceilDiv(per, c.bs) * c.bs
	return c
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) == (b < 0) {
		q++
	}
	return q
}

// epoch returns the number of batches of the next epoch and moves the counters on, as
// DALI's iterator does over an epoch and its reset().
func (c *fillCounters) epoch() int64 {
	var nb int64
	for c.counter < c.size {
		c.counter += c.bs
		nb++
	}
	lo := minOf(c.ahead)
	read := c.counter - lo
	for i := range c.ahead {
		c.ahead[i] += read - c.sizes[i]
	}
	c.counter = minOf(c.ahead)
	if !c.stick {
		roll(c.sizes)
	}
	need := c.sizes[0] - c.ahead[0]
	for i := range c.sizes {
		need = max(need, c.sizes[i]-c.ahead[i])
	}
	c.size = ceilDiv(need, c.bs) * c.bs
	if c.size == 0 {
		for i := range c.ahead {
			c.ahead[i] = 0
		}
		c.counter = 0
		if !c.stick {
			roll(c.sizes)
		}
		c.size = ceilDiv(maxOf(c.sizes), c.bs) * c.bs
	}
	return nb
}

func minOf(x []int64) int64 {
	m := x[0]
	for _, v := range x[1:] {
		m = min(m, v)
	}
	return m
}

func maxOf(x []int64) int64 {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	return m
}

// roll moves every element one place up, the last becoming the first (numpy.roll(x, 1)).
func roll(x []int64) {
	last := x[len(x)-1]
	copy(x[1:], x[:len(x)-1])
	x[0] = last
}

// referenceSpans runs the counters epoch by epoch, as godali did before spanTable's
// closed form: where each epoch starts and how many batches it has.
func referenceSpans(n, k, bs int, stick bool, epochs int) (starts, batches []int64) {
	c := newFillCounters(n, k, bs, stick)
	var s int64
	for range epochs {
		nb := max(c.epoch(), 1)
		starts, batches = append(starts, s), append(batches, nb)
		s += nb * int64(bs)
	}
	return starts, batches
}

func testBase(n, k int, stick bool) *Base {
	b := &Base{shards: k, stick: stick, segIdx: -1}
	b.entries = make([]engine.SampleRef, n)
	return b
}

// The closed form gives the counters' spans, epoch by epoch, over small and uneven
// shards, batches smaller and larger than them, and several of the counters' periods.
func TestStreamSpansMatchCounters(t *testing.T) {
	for n := 1; n <= 23; n++ {
		for k := 1; k <= min(n, 5); k++ {
			for bs := 1; bs <= 13; bs++ {
				for _, stick := range []bool{false, true} {
					epochs := 3*k*bs + 7
					starts, batches := referenceSpans(n, k, bs, stick, epochs)
					b := testBase(n, k, stick)
					for e := range epochs {
						s, nb, err := b.spans.span(b, int64(e), bs)
						if err != nil || s != starts[e] || nb != batches[e] {
							t.Fatalf("n=%d k=%d bs=%d stick=%v epoch %d: start %d, %d batches (%v); the counters: %d, %d", n, k, bs, stick, e, s, nb, err, starts[e], batches[e])
						}
					}
				}
			}
		}
	}
	// Larger ones, some with shards much smaller than the batch.
	for _, c := range [][3]int{{2467, 41, 59}, {2857, 27, 97}, {1000, 8, 256}, {1281167, 8, 256}, {50000, 64, 1024}} {
		for _, stick := range []bool{false, true} {
			starts, batches := referenceSpans(c[0], c[1], c[2], stick, 5000)
			b := testBase(c[0], c[1], stick)
			for e := range starts {
				s, nb, err := b.spans.span(b, int64(e), c[2])
				if err != nil || s != starts[e] || nb != batches[e] {
					t.Fatalf("%v stick=%v epoch %d: start %d, %d batches (%v); the counters: %d, %d", c, stick, e, s, nb, err, starts[e], batches[e])
				}
			}
		}
	}
}

// A huge epoch costs no memory (it was a 16-byte table entry per epoch: 10^9 epochs ran
// out of memory), its span follows from the counters' period, and one whose stream
// position overflows is refused.
func TestStreamSpansHugeEpoch(t *testing.T) {
	// Batches of 6 over shards of 10 and 11: the counters start over every few epochs
	// (the reference's first epochs show the period; spanTable computes it by itself).
	b := testBase(21, 2, false)
	const bs = 6
	starts, batches := referenceSpans(21, 2, bs, false, 60)
	period := 0
	for p := 1; p < 20 && period == 0; p++ {
		period = p
		for e := p; e < 60; e++ {
			if starts[e]-starts[e-p] != starts[p] || batches[e] != batches[e-p] {
				period = 0
				break
			}
		}
	}
	if period < 2 {
		t.Fatalf("the reference has period %d, this test wants a longer one: %v %v", period, starts, batches)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for _, e := range []int64{1e8, 1e9 + 1, 1e15 + 2} {
		p := int64(period)
		s, nb, err := b.spans.span(b, e, bs)
		if want := e/p*starts[p] + starts[e%p]; err != nil || s != want || nb != batches[e%p] {
			t.Fatalf("epoch %d: start %d, %d batches (%v); want %d, %d", e, s, nb, err, want, batches[e%p])
		}
	}
	q := testBase(1000, 7, false) // batches smaller than the shards: never starts over
	s, nb, err := q.spans.span(q, 1e12, 32)
	// The longest 1e12 passes hold ceil(1000*1e12/7) = 142857142857143 samples, which
	// whole batches of 32 round up to 142857142857152; an epoch is 4 or 5 batches.
	if err != nil || s != 142857142857152 || nb < 4 || nb > 5 {
		t.Fatalf("epoch 1e12: start %d, %d batches, %v", s, nb, err)
	}
	runtime.ReadMemStats(&ms1)
	if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 1<<16 {
		t.Fatalf("spans of huge epochs allocated %d bytes", d)
	}
	if _, _, err := q.spans.span(q, math.MaxInt64/100, 32); err == nil {
		t.Fatal("an epoch whose stream position overflows was accepted")
	}
	if got := fmt.Sprint(mulDivCeil(math.MaxInt64, 2, 2)); got != fmt.Sprint(int64(math.MaxInt64), true) {
		t.Fatalf("mulDivCeil(MaxInt64, 2, 2) = %s", got)
	}
	if _, ok := mulDivCeil(math.MaxInt64, 3, 2); ok {
		t.Fatal("mulDivCeil(MaxInt64, 3, 2) fits?")
	}
}

// policyCounters are DALI's iterator counters for LastBatchPolicy.PARTIAL and DROP
// without pad_last_batch, written out as its _DaliBaseIterator runs them (counter from
// 0 every epoch; DROP ends an epoch once a batch would run past the smallest shard,
// reading that batch, and reads it at reset() when the loop stopped before it): per
// epoch, where it starts in the stream, and the samples each batch keeps for shard
// shard (PARTIAL: bs - (counter - the size of the epoch's shard), within [0, bs]).
func policyCounters(n, k, bs, shard int, stick bool, policy string, epochs int) (starts []int64, keeps [][]int) {
	sizes := make([]int, k)
	for i := range sizes {
		lo, hi := engine.ShardRange(n, i, k)
		sizes[i] = hi - lo
	}
	smallest := sizes[k-1]
	for _, s := range sizes {
		smallest = min(smallest, s)
	}
	size := (n + k - 1) / k
	size = (size + bs - 1) / bs * bs
	if policy == "drop" {
		size = n / k
	}
	var pos int64
	for e := range epochs {
		sid := shard
		if !stick {
			sid = (shard + e) % k
		}
		starts = append(starts, pos)
		var keep []int
		counter := 0
		for counter < size {
			counter += bs
			pos += int64(bs)
			if policy == "drop" && counter > smallest {
				break // read, and dropped
			}
			if policy == "partial" {
				keep = append(keep, max(0, min(bs, bs-(counter-sizes[sid]))))
			} else {
				keep = append(keep, bs)
			}
		}
		keeps = append(keeps, keep)
	}
	return starts, keeps
}

// Under last_batch_policy "partial" and "drop" the epochs are DALI's counters for those
// policies: where each starts in the stream, how many batches it has, and each batch's
// valid samples, for every shard, over small and uneven shards and batches larger than
// them; "drop" without a full batch in the smallest shard is refused.
func TestStreamPolicySpansMatchCounters(t *testing.T) {
	for n := 1; n <= 23; n++ {
		for k := 1; k <= min(n, 5); k++ {
			for bs := 1; bs <= 9; bs++ {
				for _, stick := range []bool{false, true} {
					for _, policy := range []string{"partial", "drop"} {
						for shard := range k {
							b := testBase(n, k, stick)
							b.shardID = shard
							b.TakeLastBatchPolicy(policy)
							if policy == "drop" && n/k < bs {
								if _, _, err := b.spans.span(b, 0, bs); err == nil {
									t.Fatalf("n=%d k=%d bs=%d drop: no full batch, yet epoch 0 is accepted", n, k, bs)
								}
								continue
							}
							epochs := 2*k + 3
							starts, keeps := policyCounters(n, k, bs, shard, stick, policy, epochs)
							refs := make([]engine.SampleRef, bs)
							for e := range epochs {
								s, nb, err := b.spans.span(b, int64(e), bs)
								where := fmt.Sprintf("n=%d k=%d bs=%d stick=%v %s shard %d epoch %d", n, k, bs, stick, policy, shard, e)
								if err != nil || s != starts[e] || nb != int64(len(keeps[e])) {
									t.Fatalf("%s: start %d, %d batches (%v); the counters: %d, %d", where, s, nb, err, starts[e], len(keeps[e]))
								}
								if got, _ := b.EpochBatches(int64(e), bs); got != nb {
									t.Fatalf("%s: EpochBatches %d, span %d", where, got, nb)
								}
								b.StartEpoch(int64(e))
								for i := 0; ; i++ {
									valid, last, ok := b.NextBatch(refs)
									if !ok {
										if i != len(keeps[e]) {
											t.Fatalf("%s: %d batches, the counters %d", where, i, len(keeps[e]))
										}
										break
									}
									if i >= len(keeps[e]) || valid != keeps[e][i] || last != (i == len(keeps[e])-1) {
										t.Fatalf("%s batch %d: valid %d last %v; the counters keep %v", where, i, valid, last, keeps[e])
									}
								}
							}
						}
					}
				}
			}
		}
	}
}
