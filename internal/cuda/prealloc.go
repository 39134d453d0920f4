package cuda

// Reservation is a number of equally sized blocks a stage reserves at build time.
type Reservation struct {
	Bytes int // per block
	Count int
}

// DecodeReservation sizes the decoder's output blocks from DALI's
// preallocate_width_hint/preallocate_height_hint: one block per sample of a hinted
// width x height x channels image, for every batch that can be in flight (the
// prefetch depth plus the batch being filled). Hints of 0 reserve nothing: the pool then
// grows to the largest image during warm-up, as DALI does.
func DecodeReservation(widthHint, heightHint, channels, batchSize, prefetchDepth int) Reservation {
	if widthHint <= 0 || heightHint <= 0 || channels <= 0 || batchSize <= 0 {
		return Reservation{}
	}
	if prefetchDepth < 1 {
		prefetchDepth = 1
	}
	return Reservation{Bytes: widthHint * heightHint * channels, Count: batchSize * (prefetchDepth + 1)}
}

// BatchReservation sizes dense batch outputs ([N, ...] tensors, e.g.
// crop_mirror_normalize's): one block per batch in flight. Consumers may hold exported
// batches longer; those are extra blocks that the pool adds once and reuses.
func BatchReservation(sampleBytes, batchSize, prefetchDepth int) Reservation {
	if sampleBytes <= 0 || batchSize <= 0 {
		return Reservation{}
	}
	if prefetchDepth < 1 {
		prefetchDepth = 1
	}
	return Reservation{Bytes: sampleBytes * batchSize, Count: prefetchDepth + 1}
}

// Apply reserves r in p.
func (r Reservation) Apply(p *Pool) error { return p.Reserve(r.Bytes, r.Count) }
