package readers

import (
	"sync"

	"github.com/godali/godali/engine"
)

// The continuous reader stream (pad_last_batch=false), as DALI's readers run: a reader
// reads one endless stream of segments, segment s being one pass over the shard that
// epoch s reads (shard_id+s mod num_shards, or shard_id with stick_to_shard) in that
// epoch's order (EpochOrder(s)). A batch that runs past the end of a segment is filled
// with the first samples of the next one, and the next epoch goes on after them, so
// within an epoch no sample repeats.
//
// An epoch is what DALI's iterator (LastBatchPolicy.FILL, reader_name) counts as one:
// its number of batches follows the iterator's counters over all num_shards shards
// (every rank computes the same, so data-parallel ranks take the same number of steps),
// which take into account the samples each shard read ahead of the next epoch. The
// batch_info's valid counts the samples of a batch before the end of the segment the
// epoch started in.

// stream reports whether the reader runs as one continuous stream.
func (b *Base) stream() bool { return !b.pad }

// segLen is the number of samples of segment s.
func (b *Base) segLen(s int64) int64 {
	shard := b.shardID
	if !b.stick {
		shard = int((int64(b.shardID) + s) % int64(b.shards))
	}
	lo, hi := engine.ShardRange(len(b.entries), shard, b.shards)
	return int64(hi - lo)
}

// segmentAt returns the segment holding stream position p and its first position.
func (b *Base) segmentAt(p int64) (s, lo int64) {
	if b.stick {
		l := b.segLen(0)
		s = p / l
		return s, s * l
	}
	n := int64(len(b.entries))
	c := p / n
	s, lo = c*int64(b.shards), c*n
	for {
		l := b.segLen(s)
		if p < lo+l {
			return s, lo
		}
		lo += l
		s++
	}
}

// sampleAt is the sample at stream position p, through the cached segment order.
func (b *Base) sampleAt(p int64) int {
	if b.segIdx < 0 || p < b.segLo || p >= b.segLo+int64(len(b.order)) {
		b.segIdx, b.segLo = b.segmentAt(p)
		_, b.order = b.EpochOrder(b.segIdx, b.order[:0])
	}
	return b.order[p-b.segLo]
}

// nextStream is NextBatch for the continuous stream.
func (b *Base) nextStream(refs []engine.SampleRef) (int, bool, bool) {
	bs := len(refs)
	start, nb := b.spans.span(b, b.epoch, bs)
	end := nb * int64(bs)
	if int64(b.cursor) >= end {
		return 0, true, false
	}
	s0, lo0 := b.segmentAt(start)
	own := lo0 + b.segLen(s0)
	valid := 0
	for j := range refs {
		p := start + int64(b.cursor+j)
		refs[j] = b.entries[b.sampleAt(p)]
		if p < own {
			valid++
		}
	}
	b.cursor += bs
	return valid, int64(b.cursor) >= end, true
}

// streamPlan is EpochPlan for the continuous stream.
func (b *Base) streamPlan(bs int) []int {
	start, nb := b.spans.span(b, b.epoch, bs)
	out := make([]int, nb*int64(bs))
	for i := range out {
		out[i] = b.sampleAt(start + int64(i))
	}
	return out
}

// streamState is SourceState for the continuous stream: besides the epoch and the
// position in it, where the epoch starts in the stream and how many batches it has;
// shard and order are those of the segment at the position.
func (b *Base) streamState(epoch, batches int64, bs int) engine.SourceState {
	start, nb := b.spans.span(b, epoch, bs)
	s, _ := b.segmentAt(start + batches*int64(bs))
	shard, order := b.EpochOrder(s, nil)
	st := b.state(epoch, batches, bs, shard, order)
	st.Mode = engine.SourceModeStream
	st.StreamStart = start
	st.EpochBatches = nb
	return st
}

// spanTable memoizes, for one batch size, where each epoch starts in the stream and
// how many batches it has, extending DALI's iterator counters epoch by epoch. It is
// shared by the planning goroutine and SourceState, hence the lock.
type spanTable struct {
	mu      sync.Mutex
	bs      int
	starts  []int64
	batches []int64
	c       fillCounters
}

func (t *spanTable) span(b *Base, epoch int64, bs int) (start, batches int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bs != bs || t.starts == nil {
		t.bs = bs
		t.starts, t.batches = t.starts[:0], t.batches[:0]
		t.c = newFillCounters(len(b.entries), b.shards, bs, b.stick)
	}
	for int64(len(t.batches)) <= epoch {
		var s int64
		if k := len(t.batches); k > 0 {
			s = t.starts[k-1] + t.batches[k-1]*int64(bs)
		}
		nb := t.c.epoch()
		if nb < 1 {
			// DALI's arithmetic can leave an epoch empty when batches are larger than
			// the shards; the engine gives it one batch rather than an empty epoch.
			nb = 1
		}
		t.starts = append(t.starts, s)
		t.batches = append(t.batches, nb)
	}
	return t.starts[epoch], t.batches[epoch]
}

// fillCounters are DALI's iterator counters for LastBatchPolicy.FILL without
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
