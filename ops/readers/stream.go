package readers

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
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

// The epochs follow the counters of the pipeline's last_batch_policy (DALI's iterator
// keeps one set per policy) when the reader is the pipeline's epoch reader:
//
//   - "fill" (the default): as above.
//   - "partial": every epoch reads roundUp(ceil(n/k), batch) positions of the stream,
//     the longest shard rounded up to whole batches, starting where the previous one
//     ended; a batch's valid samples are those left of the epoch's shard (its size less
//     the positions before the batch).
//   - "drop": every epoch returns floor(floor(n/k) / batch) batches, all full, floor(n/k)
//     being the smallest shard; after them it reads, and drops, the incomplete batch
//     when there is one, so the next epoch starts at roundUp(floor(n/k), batch).

// TakeLastBatchPolicy implements engine.PolicyTaker.
func (b *Base) TakeLastBatchPolicy(policy string) {
	b.policy = policy
	if b.stream() || b.padStream() {
		b.segIdx = -1
	}
}

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
	start, nb, err := b.spans.span(b, b.epoch, bs)
	if err != nil { // refused by CheckEpoch before the epoch started
		return 0, true, false
	}
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
	switch b.policy {
	case "partial":
		valid = int(min(max(b.segLen(b.epoch)-int64(b.cursor), 0), int64(bs)))
	case "drop":
		valid = bs
	}
	b.cursor += bs
	return valid, int64(b.cursor) >= end, true
}

// streamPlan is EpochPlan for the continuous stream.
func (b *Base) streamPlan(bs int) []int {
	start, nb, err := b.spans.span(b, b.epoch, bs)
	if err != nil {
		return nil
	}
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
	start, nb, err := b.spans.span(b, epoch, bs)
	if err != nil { // refused by CheckEpoch; a state no checkpoint matches
		return engine.SourceState{Epoch: epoch, Mode: engine.SourceModeStream, StreamStart: -1}
	}
	s, _ := b.segmentAt(start + batches*int64(bs))
	shard, order := b.EpochOrder(s, nil)
	st := b.state(epoch, batches, bs, shard, order)
	st.Mode = engine.SourceModeStream
	st.StreamStart = start
	st.EpochBatches = nb
	return st
}

// EpochBatches implements engine.EpochBatcher: the batches epoch delivers, the batch
// last_batch_policy "drop" drops not counted.
func (b *Base) EpochBatches(epoch int64, batchSize int) (int64, error) {
	if b.stream() {
		_, nb, err := b.spans.span(b, epoch, batchSize)
		return nb, err
	}
	if b.padStream() {
		return b.padBatches(int64(batchSize))
	}
	bs := int64(batchSize)
	length := int64(b.epochLength())
	return (length + bs - 1) / bs, nil
}

// CheckEpoch implements engine.EpochChecker: an epoch whose place in the stream does
// not fit in 64 bits is refused before it starts.
func (b *Base) CheckEpoch(epoch int64, batchSize int) error {
	if !b.stream() {
		return nil
	}
	if _, _, err := b.spans.span(b, epoch, batchSize); err != nil {
		return engine.Errorf(engine.StatusInvalidArgument, "%s: epoch %d: %v", b.args.Where(), epoch, err)
	}
	return nil
}

// spanTable gives, for one batch size, where each epoch starts in the stream and how
// many batches it has: DALI's iterator counters (LastBatchPolicy.FILL without
// pad_last_batch, over all shards) in closed form, so that any epoch, 10^9 included,
// takes O(1) memory and time. It is shared by the planning goroutine and SourceState,
// hence the lock.
//
// The counters, written out: after L epochs since they last started over, the stream
// has been read up to roundUp(M(L)), M(L) being the longest L passes of any shard
// (L*ceil(n/k) with stick_to_shard; otherwise a shard's L passes cover L consecutive
// shards, and the longest such run holds ceil(n*L/k) samples), rounded up to whole
// batches. Every epoch therefore ends on the first batch boundary at or after every
// shard's pass; when that boundary already covers the next pass as well (batches larger
// than the shards), the counters start over: the period. streamSpans_test.go checks the
// closed form against the counters written out epoch by epoch.
type spanTable struct {
	mu     sync.Mutex
	bs     int64
	period int64 // epochs after which the counters start over; 0: never
	cycle  int64 // stream positions one period spans
}

// errStreamOverflow reports an epoch whose stream position does not fit in int64.
var errStreamOverflow = errors.New("the epoch's position in the reader's stream overflows a 64-bit integer")

// passes is M(L): the samples of the longest L consecutive passes of any shard.
func (b *Base) passes(l int64) (int64, bool) {
	n, k := int64(len(b.entries)), int64(b.shards)
	if b.stick {
		return mulDivCeil(l, (n+k-1)/k, 1)
	}
	return mulDivCeil(l, n, k)
}

// batchEnd is roundUp(M(L)): the stream position where the counters' epoch L-1 ends.
func (b *Base) batchEnd(l, bs int64) (int64, bool) {
	m, ok := b.passes(l)
	if !ok {
		return 0, false
	}
	return roundUp(m, bs)
}

func (t *spanTable) span(b *Base, epoch int64, bs int) (start, batches int64, err error) {
	if b.policy == "partial" || b.policy == "drop" {
		return b.fixedSpan(epoch, int64(bs))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bs != int64(bs) {
		t.bs = int64(bs)
		t.period, t.cycle = b.counterPeriod(t.bs)
	}
	if epoch < 0 {
		return 0, 0, errStreamOverflow
	}
	var base int64
	l := epoch
	if t.period > 0 {
		q := epoch / t.period
		l = epoch % t.period
		var ok bool
		if base, ok = mulDivCeil(q, t.cycle, 1); !ok {
			return 0, 0, errStreamOverflow
		}
	}
	lo, ok1 := b.batchEnd(l, t.bs)
	hi, ok2 := b.batchEnd(l+1, t.bs)
	if !ok1 || !ok2 || base > math.MaxInt64-hi {
		return 0, 0, errStreamOverflow
	}
	nb := (hi - lo) / t.bs
	if nb < 1 {
		// Not reached by the arithmetic above; an epoch never comes out empty.
		nb = 1
	}
	return base + lo, nb, nil
}

// fixedSpan is span under last_batch_policy "partial" or "drop", whose epochs all read
// the same number of stream positions.
func (b *Base) fixedSpan(epoch, bs int64) (start, batches int64, err error) {
	n, k := int64(len(b.entries)), int64(b.shards)
	var per int64
	var ok bool
	if b.policy == "partial" {
		per, ok = roundUp((n+k-1)/k, bs)
		batches = per / bs
	} else {
		per, ok = roundUp(n/k, bs)
		batches = n / k / bs
		if batches < 1 {
			return 0, 0, fmt.Errorf("last_batch_policy \"drop\" leaves no batch: the smallest shard has %d samples, fewer than batch_size %d", n/k, bs)
		}
	}
	if !ok || epoch < 0 {
		return 0, 0, errStreamOverflow
	}
	if start, ok = mulDivCeil(epoch, per, 1); !ok {
		return 0, 0, errStreamOverflow
	}
	return start, batches, nil
}

// counterPeriod finds the first L >= 1 at which the counters start over
// (roundUp(M(L)) >= M(L+1)) and the stream positions one period spans; 0 when they
// never do. M(L) mod bs and M(L+1)-M(L) repeat with period k*bs (bs with
// stick_to_shard), so a period is either found there or never; and it can only exist
// when batches are larger than the smallest shard.
func (b *Base) counterPeriod(bs int64) (period, cycle int64) {
	n, k := int64(len(b.entries)), int64(b.shards)
	if bs <= n/k {
		return 0, 0
	}
	span := bs
	if !b.stick {
		span = k * bs
	}
	for l := int64(1); l <= span; l++ {
		end, ok1 := b.batchEnd(l, bs)
		next, ok2 := b.passes(l + 1)
		if !ok1 || !ok2 {
			return 0, 0
		}
		if end >= next {
			return l, end
		}
	}
	return 0, 0
}

// mulDivCeil is ceil(a*b/c) for a, b >= 0 and c > 0, through 128 bits; false when it
// does not fit in int64.
func mulDivCeil(a, b, c int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 || q == 0 && r != 0 {
		return 0, false
	}
	return int64(q), true
}

// roundUp rounds m >= 0 up to a multiple of bs.
func roundUp(m, bs int64) (int64, bool) {
	r := m % bs
	if r == 0 {
		return m, true
	}
	if m > math.MaxInt64-(bs-r) {
		return 0, false
	}
	return m + bs - r, true
}
