package readers

import (
	"fmt"
	"math"

	"github.com/godali/godali/engine"
)

// The padded stream (pad_last_batch=true under last_batch_policy "drop", when the reader
// is the pipeline's epoch reader), as DALI's reader and iterator run it: the reader reads
// its padded epochs one after the other, each R = ceil(ceil(n/k) / batch) batches
// (positions past the shard's samples repeating its last one, as without "drop"). DALI's
// iterator (LastBatchPolicy.DROP with reader_name) returns L = floor(floor(n/k) / batch)
// of them per epoch, reads and drops one more when floor(n/k) is not a multiple of the
// batch (D = ceil(floor(n/k) / batch) read per epoch), and a reset does not rewind the
// reader. When the shards differ in size (n mod k != 0) an epoch can read fewer batches
// than a padded reader epoch has, and the next epoch begins with the padded batches the
// previous one left: epoch e returns batches e*D ... e*D+L-1 of the stream.

// padStream reports whether the reader runs as the padded stream.
func (b *Base) padStream() bool { return b.pad && b.policy == "drop" }

// padCounts are R (batches per padded reader epoch), D (batches an epoch reads) and L
// (batches it returns) for batches of bs.
func (b *Base) padCounts(bs int64) (r, d, l int64) {
	n, k := int64(len(b.entries)), int64(b.shards)
	return ((n+k-1)/k + bs - 1) / bs, (n/k + bs - 1) / bs, n / k / bs
}

// padBatch is the padded reader epoch and the batch in it that batch c of epoch
// delivers.
func (b *Base) padBatch(epoch, c, bs int64) (readerEpoch, j int64, err error) {
	r, d, _ := b.padCounts(bs)
	if epoch < 0 || d > 0 && epoch > (math.MaxInt64-c)/d {
		return 0, 0, errStreamOverflow
	}
	g := epoch*d + c
	return g / r, g % r, nil
}

// padOrder is the order of padded reader epoch r, cached in order.
func (b *Base) padOrder(r int64) []int {
	if b.segIdx != r {
		_, b.order = b.EpochOrder(r, b.order[:0])
		b.segIdx = r
	}
	return b.order
}

// padBatches is EpochBatches for the padded stream: L, at least one.
func (b *Base) padBatches(bs int64) (int64, error) {
	_, _, l := b.padCounts(bs)
	if l < 1 {
		n, k := int64(len(b.entries)), int64(b.shards)
		return 0, fmt.Errorf("last_batch_policy \"drop\" leaves no batch: the smallest shard has %d samples, fewer than batch_size %d", n/k, bs)
	}
	return l, nil
}

// nextPadStream is NextBatch for the padded stream: every batch returned is full.
func (b *Base) nextPadStream(refs []engine.SampleRef) (int, bool, bool) {
	bs := int64(len(refs))
	l, err := b.padBatches(bs)
	if err != nil || int64(b.cursor) >= l*bs {
		return 0, true, false
	}
	r, j, err := b.padBatch(b.epoch, int64(b.cursor)/bs, bs)
	if err != nil {
		return 0, true, false
	}
	b.padOrder(r)
	var valid int
	for i := range refs {
		refs[i] = b.entries[b.orderAt(int(j*bs)+i, &valid)]
	}
	b.cursor += len(refs)
	return len(refs), int64(b.cursor) >= l*bs, true
}

// padStreamPlan is EpochPlan for the padded stream.
func (b *Base) padStreamPlan(bs int) []int {
	l, err := b.padBatches(int64(bs))
	if err != nil {
		return nil
	}
	out := make([]int, 0, l*int64(bs))
	var valid int
	for c := int64(0); c < l; c++ {
		r, j, err := b.padBatch(b.epoch, c, int64(bs))
		if err != nil {
			return nil
		}
		b.padOrder(r)
		for i := 0; i < bs; i++ {
			out = append(out, b.orderAt(int(j)*bs+i, &valid))
		}
	}
	return out
}

// padStreamState is SourceState for the padded stream: shard and order are those of
// the padded reader epoch at the position, StreamStart the batch where the epoch starts
// (in samples) and EpochBatches L.
func (b *Base) padStreamState(epoch, batches int64, bs int) engine.SourceState {
	l, err := b.padBatches(int64(bs))
	r, _, err2 := b.padBatch(epoch, batches, int64(bs))
	if err != nil || err2 != nil {
		return engine.SourceState{Epoch: epoch, Mode: engine.SourceModeStream, StreamStart: -1}
	}
	shard, order := b.EpochOrder(r, nil)
	st := b.state(epoch, batches, bs, shard, order)
	_, d, _ := b.padCounts(int64(bs))
	st.Mode = engine.SourceModeStream
	st.StreamStart = epoch * d * int64(bs)
	st.EpochBatches = l
	return st
}
