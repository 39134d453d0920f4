package imaging

// Scratch holds grow-only buffers that the kernels reuse across calls, so that a worker
// that keeps one Scratch stops allocating once it has seen its largest image. One per
// worker thread: a Scratch is not safe for concurrent use. The zero value is ready.
type Scratch struct {
	plan  ResizePlan // returned by NewResizePlan(..., s)
	tmp   []byte     // horizontal-pass output rows (byte-wise vertical pass)
	row   []byte     // one resampled row on its way to the normalizer
	acc   []int32    // vertical-pass accumulators for filters with more than 4 taps
	ring  []uint64   // horizontally resampled rows awaiting the vertical pass
	tags  []int32    // source row held by each ring slot
	acc64 []int64    // paired vertical-pass accumulators for more than 4 taps
	flt   []float32  // float intermediate of separable filters (gaussian blur)
}

// Bytes returns how many bytes the scratch buffers hold, for memory accounting.
func (s *Scratch) Bytes() int {
	return cap(s.tmp) + cap(s.row) + 4*cap(s.acc) + 8*cap(s.ring) + 4*cap(s.tags) + 8*cap(s.acc64) + 4*cap(s.flt) + s.plan.bytes()
}

// Release drops the buffers so that the memory can be reclaimed (after an unusually
// large image, say); the Scratch stays usable.
func (s *Scratch) Release() { *s = Scratch{} }

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
