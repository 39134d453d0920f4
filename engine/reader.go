package engine

// ReaderMeta is DALI's reader metadata (godali_reader_meta_t).
type ReaderMeta struct {
	EpochSize       int64
	EpochSizePadded int64
	ShardSize       int64
	ShardID         int
	NumShards       int
	PadLastBatch    bool
	StickToShard    bool
}

// BatchSource is implemented by reader operators: the executor asks it, on one goroutine
// and in order, which samples make up each batch.
type BatchSource interface {
	// Open lists the data set; called once by Build.
	Open() error
	// StartEpoch prepares the sample order of an epoch.
	StartEpoch(epoch int64)
	// NextBatch fills refs (len = batch size) and returns how many of them are real
	// samples of the shard (the rest is padding) and whether this is the epoch's last
	// batch; ok is false when the epoch is over and refs were not filled.
	NextBatch(refs []SampleRef) (valid int, last, ok bool)
	Meta() ReaderMeta
}
