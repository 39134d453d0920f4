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

// Interrupter is implemented by operators whose work can block on I/O (the readers of
// remote data): Interrupt makes their requests in flight return at once, and later
// ones fail. Pipeline.Interrupt calls it, and Close does first, before it waits for
// the batches in flight and the workers.
type Interrupter interface{ Interrupt() }

// LimitsTaker is implemented by readers and other operators that enforce the
// pipeline's limits before a sample reaches Setup (a remote read-ahead refusing files
// over max_file_bytes before downloading them, a streamed video's planner bounding the
// frames its probe may decode); NewPipeline hands them the limits.
type LimitsTaker interface{ TakeLimits(Limits) }

// PolicyTaker is implemented by readers whose epochs depend on the pipeline's
// last_batch_policy (DALI's iterator keeps different counters per policy over a reader
// without pad_last_batch). The epoch reader is handed the policy, the others "fill".
type PolicyTaker interface{ TakeLastBatchPolicy(policy string) }

// EpochBatcher is implemented by readers that know how many batches an epoch delivers.
type EpochBatcher interface {
	EpochBatches(epoch int64, batchSize int) (int64, error)
}

// BatchReplayer is implemented by readers that start reading a batch's data as soon as
// it is planned (remote read-ahead): a restored pipeline replays the plan of the batches
// already taken with ReplayBatch, which moves the plan like NextBatch but reads nothing.
type BatchReplayer interface {
	ReplayBatch(refs []SampleRef) (valid int, last, ok bool)
}

// EpochChecker is implemented by readers whose arithmetic bounds the epochs they can
// start (a stream position must fit in 64 bits): Build and Restore ask it before the
// pipeline starts at an epoch that first_epoch or a checkpoint names.
type EpochChecker interface {
	CheckEpoch(epoch int64, batchSize int) error
}

// SourceState is a reader's progress as a checkpoint records it: enough to check that a
// restored reader, replaying the epoch's plan, is where the saved one was.
type SourceState struct {
	Epoch       int64  `json:"epoch"`
	Shard       int    `json:"shard"`        // shard read in this epoch (moves unless stick_to_shard)
	Position    int64  `json:"position"`     // positions of the epoch already planned: batches * batch_size
	EpochLength int    `json:"epoch_length"` // positions per epoch: ceil(n / num_shards)
	NumFiles    int    `json:"num_files"`
	FilesDigest string `json:"files_digest"` // of the listed files (relative to file_root) and labels
	OrderDigest string `json:"order_digest"` // of the epoch's sample order, shuffling included

	// A reader that runs as one continuous stream (DALI's readers without
	// pad_last_batch) says so in Mode, and where the epoch starts in its stream and how
	// many batches the epoch has; Shard and OrderDigest are then those of the stream's
	// segment (one pass over a shard) at Position. Empty Mode: every epoch starts at
	// its shard's beginning and has ceil(EpochLength / batch size) batches.
	Mode         string `json:"mode,omitempty"`
	StreamStart  int64  `json:"stream_start,omitempty"`
	EpochBatches int64  `json:"epoch_batches,omitempty"`
}

// SourceModeStream is SourceState.Mode of a reader that runs as one continuous stream.
const SourceModeStream = "stream"

// SourceCheckpointer is implemented by readers whose sample order is a function of
// their arguments, the pipeline seed and the epoch: a checkpoint then only records where
// the consumer is, and a restored reader replays the plan up to there.
type SourceCheckpointer interface {
	// SourceState describes the source after StartEpoch(epoch) and `batches` calls of
	// NextBatch with batchSize refs. It must not disturb a running epoch.
	SourceState(epoch, batches int64, batchSize int) SourceState
}

// ShardRange is DALI's shard arithmetic: shard i of k over n samples.
func ShardRange(n, i, k int) (begin, end int) {
	return int(int64(n) * int64(i) / int64(k)), int(int64(n) * int64(i+1) / int64(k))
}
