package readers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

// What every reader shares lives here: the list of samples, DALI's shard arithmetic,
// the shuffling buffer, stick_to_shard, pad_last_batch, the reader metadata and
// checkpoints. A reader embeds Base, calls Init from its constructor and SetSamples
// from its Open, and implements Infer, Setup and Run; Base provides the rest of
// engine.BatchSource and engine.SourceCheckpointer.
//
// Samples are engine.SampleRefs: Path names the sample in error messages and in the
// checkpoint's files digest (a locator such as "shard.tar:key" for readers whose samples
// are not files), Label is readers.file's label (0 elsewhere), and Index is the
// sample's position in the list given to SetSamples, which a reader uses in Setup
// (ws.Ref.Index) to find its own per-sample locator.

// CommonArgs are the arguments every reader takes (DALI's reader base arguments, plus
// godali's remote-storage ones). A schema lists its own arguments and appends these:
//
//	Args: append([]engine.ArgSpec{...own...}, readers.CommonArgs()...)
func CommonArgs() []engine.ArgSpec {
	return []engine.ArgSpec{
		{Name: "random_shuffle", Type: engine.ArgBool, Default: false, Doc: "shuffle within a buffer of initial_fill samples"},
		{Name: "initial_fill", Type: engine.ArgInt, Default: 1024, Doc: "size of the shuffling buffer"},
		{Name: "shard_id", Type: engine.ArgInt, Default: 0, Doc: "shard read by this pipeline"},
		{Name: "num_shards", Type: engine.ArgInt, Default: 1, Doc: "number of shards; shard i covers [floor(n*i/k), floor(n*(i+1)/k))"},
		{Name: "stick_to_shard", Type: engine.ArgBool, Default: false, Doc: "read the same shard every epoch (default: move to the next shard each epoch)"},
		{Name: "pad_last_batch", Type: engine.ArgBool, Default: false, Doc: "repeat the last sample so every shard reads ceil(n/k) samples and the last batch is full"},
		{Name: "seed", Type: engine.ArgInt, Default: -1, Doc: "shuffling seed (-1: the pipeline's seed; shuffle_after_epoch then uses a fixed seed shared by all shards)"},
		{Name: "read_ahead", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
		{Name: "dont_use_mmap", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; files are always read, not mapped"},
		{Name: "lazy_init", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
		{Name: "prefetch_queue_depth", Type: engine.ArgInt, Default: 1, Doc: "accepted for DALI compatibility; the pipeline's prefetch applies"},
		{Name: "skip_cached_images", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
		{Name: "io_concurrency", Type: engine.ArgInt, Default: 0, Doc: "requests in flight when reading s3://, az://, gs:// or http(s):// data (0: the default, 32)"},
		{Name: "cache_dir", Type: engine.ArgString, Doc: "directory where remote objects are cached on local disk (none: no cache)"},
		{Name: "cache_size", Type: engine.ArgInt, Default: 0, Doc: "bound of cache_dir in bytes, least recently used objects evicted first (0: 10 GiB)"},
		{Name: "io_timeout", Type: engine.ArgFloat, Default: 0.0, Doc: "seconds one attempt of a remote request (HEAD, ranged GET, listing page) may take, body included, before it is retried; a request is tried at most 8 times, then the sample (or build) fails naming the URL (0: 30 s)"},
	}
}

// AllowOutsideRootArg is the opt-in of the readers that take lists of files (a
// file_list, COCO's annotations) to entries outside the data set; see listScope.
var AllowOutsideRootArg = engine.ArgSpec{Name: "allow_outside_root", Type: engine.ArgBool, Default: false,
	Doc: "let the entries of a file list name files outside the data set: local paths outside file_root " +
		"(or the list's directory) through an absolute path or '..', URLs when the root is local, and, for a " +
		"remote list or root, other schemes, hosts or buckets and local files. Off by default: a list is data, " +
		"and a list served by someone else must not make the pipeline read local files or other servers"}

// ShuffleAfterEpochArg is DALI's shuffle_after_epoch, which only some readers take; a
// schema that lists it gets its behaviour from Base.
var ShuffleAfterEpochArg = engine.ArgSpec{Name: "shuffle_after_epoch", Type: engine.ArgBool, Default: false,
	Doc: "shuffle the whole data set every epoch, identically on every shard (exclusive with random_shuffle and stick_to_shard)"}

// defaultShuffleSeed is shared by every shard so that shuffle_after_epoch permutes the
// data set identically everywhere.
const defaultShuffleSeed = 0x6d2b79f5

// Base is the sample plan of a reader. Its methods run on the executor's planning
// goroutine, except SourceState, which recomputes what it needs.
type Base struct {
	args     *engine.Args
	entries  []engine.SampleRef
	shardID  int
	shards   int
	shuffle  bool
	fill     int
	perEpoch bool
	stick    bool
	pad      bool
	seed     int64
	pipeSeed uint64
	policy   string        // the pipeline's last_batch_policy, when this is its epoch reader
	limits   engine.Limits // the pipeline's (engine.LimitsTaker)

	order  []int // the epoch's sample order (indices into entries)
	length int   // samples in the epoch (padded)
	cursor int

	// The continuous stream (pad_last_batch=false, see stream.go): the epoch being
	// planned, the segment of the stream cached in order, and the epochs' spans.
	epoch  int64
	segIdx int64 // segment whose order is in order (-1: none)
	segLo  int64 // its first stream position
	spans  spanTable

	// DigestPath, if set, maps a sample's Path to what the files digest records (e.g.
	// relative to a root, so that a data set moved elsewhere still matches).
	DigestPath func(string) string
	digestOnce sync.Once
	digest     string
}

// Init reads and checks the common arguments.
func (b *Base) Init(a *engine.Args) error {
	*b = Base{args: a, shardID: a.Int("shard_id"), shards: a.Int("num_shards"),
		shuffle: a.Bool("random_shuffle"), fill: a.Int("initial_fill"),
		perEpoch: a.Declares("shuffle_after_epoch") && a.Bool("shuffle_after_epoch"), stick: a.Bool("stick_to_shard"),
		pad: a.Bool("pad_last_batch"), seed: int64(a.Int("seed")), segIdx: -1}
	if b.shards < 1 {
		return a.Errorf("num_shards", "must be >= 1, got %d", b.shards)
	}
	if b.shardID < 0 || b.shardID >= b.shards {
		return a.Errorf("shard_id", "must be in [0, num_shards=%d), got %d", b.shards, b.shardID)
	}
	if b.fill < 1 {
		return a.Errorf("initial_fill", "must be >= 1, got %d", b.fill)
	}
	if b.perEpoch && (b.shuffle || b.stick) {
		return a.Errorf("shuffle_after_epoch", "cannot be combined with random_shuffle or stick_to_shard")
	}
	// As DALI's loaders: shuffle_after_epoch implies stick_to_shard (each epoch permutes
	// the whole data set and every shard keeps its slice of the permutation).
	b.stick = b.stick || b.perEpoch
	if a.Int("io_concurrency") < 0 {
		return a.Errorf("io_concurrency", "must be >= 0, got %d", a.Int("io_concurrency"))
	}
	if a.Int("cache_size") < 0 {
		return a.Errorf("cache_size", "must be >= 0, got %d", a.Int("cache_size"))
	}
	return nil
}

// Args returns the reader's arguments.
func (b *Base) Args() *engine.Args { return b.args }

// Opened reports whether SetSamples has succeeded.
func (b *Base) Opened() bool { return b.entries != nil }

// Samples returns the list given to SetSamples.
func (b *Base) Samples() []engine.SampleRef { return b.entries }

// SetSamples installs the data set, numbering the samples (Index) in list order. what
// names a sample in messages ("files", "samples", "records").
func (b *Base) SetSamples(entries []engine.SampleRef, what string) error {
	a := b.args
	if len(entries) == 0 {
		return listErrorf(a, "no %s found", what)
	}
	if len(entries) < b.shards {
		// DALI's wording (scripts match it): the number of input samples: N, needs to be
		// at least equal to the requested number of shards: S.
		return listErrorf(a, "The number of input samples: %d, needs to be at least equal to the requested number of shards: %d (%d %s cannot be split into num_shards=%d shards).", len(entries), b.shards, len(entries), what, b.shards)
	}
	for i := range entries {
		entries[i].Index = i
	}
	b.entries = entries
	return nil
}

// SetPipelineSeed is called by the executor before Open.
func (b *Base) SetPipelineSeed(s uint64) { b.pipeSeed = s }

// TakeLimits keeps the pipeline's limits (engine.LimitsTaker), for the remote
// read-ahead that runs before a sample's Setup.
func (b *Base) TakeLimits(l engine.Limits) { b.limits = l }

// MaxFileBytes is the pipeline's max_file_bytes (0: no limit).
func (b *Base) MaxFileBytes() int64 { return b.limits.MaxFileBytes }

// Meta is DALI's reader metadata.
func (b *Base) Meta() engine.ReaderMeta {
	n := int64(len(b.entries))
	k := int64(b.shards)
	m := engine.ReaderMeta{EpochSize: n, EpochSizePadded: n, ShardID: b.shardID, NumShards: b.shards,
		PadLastBatch: b.pad, StickToShard: b.stick}
	lo, hi := engine.ShardRange(len(b.entries), b.shardID, b.shards)
	m.ShardSize = int64(hi - lo)
	if b.pad {
		per := (n + k - 1) / k
		m.EpochSizePadded = per * k
		m.ShardSize = per
	}
	return m
}

// StartEpoch prepares the epoch's order.
func (b *Base) StartEpoch(epoch int64) {
	b.epoch = epoch // the padded stream's, should the policy become "drop"
	if b.stream() || b.padStream() {
		b.cursor, b.segIdx = 0, -1
		return
	}
	_, b.order = b.EpochOrder(epoch, b.order[:0])
	b.length = b.epochLength()
	b.cursor = 0
}

// epochLength is the number of positions every shard reads per epoch: ceil(n/k).
func (b *Base) epochLength() int { return (len(b.entries) + b.shards - 1) / b.shards }

// EpochOrder returns the shard an epoch reads and its sample order (indices into the
// samples, appended to buf). It depends only on the arguments, the pipeline seed and
// the epoch, so a checkpoint can recompute it instead of storing it, and a reader can
// use it to plan its reads ahead.
func (b *Base) EpochOrder(epoch int64, buf []int) (shard int, order []int) {
	n := len(b.entries)
	shard = b.shardID
	if !b.stick {
		shard = int((int64(b.shardID) + epoch) % int64(b.shards))
	}
	var rng engine.RNG
	seed := b.pipeSeed
	if b.seed >= 0 {
		seed = uint64(b.seed)
	}
	lo, hi := engine.ShardRange(n, shard, b.shards)
	if b.perEpoch {
		if b.seed < 0 {
			seed = defaultShuffleSeed
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		rng.Seed(seed, uint64(epoch), 0x5eed)
		for i := n - 1; i > 0; i-- {
			j := rng.Intn(i + 1)
			all[i], all[j] = all[j], all[i]
		}
		order = append(buf, all[lo:hi]...)
	} else {
		order = buf
		for i := lo; i < hi; i++ {
			order = append(order, i)
		}
	}
	if b.shuffle {
		rng.Seed(seed, uint64(epoch), 0xb0ff)
		order = bufferShuffle(order, b.fill, &rng)
	}
	return shard, order
}

// bufferShuffle emits samples in the order a shuffling buffer of size fill produces:
// DALI's random_shuffle is local, not a full permutation.
func bufferShuffle(in []int, fill int, rng *engine.RNG) []int {
	out := make([]int, 0, len(in))
	buf := make([]int, 0, fill)
	next := 0
	for next < len(in) && len(buf) < fill {
		buf = append(buf, in[next])
		next++
	}
	for len(buf) > 0 {
		j := rng.Intn(len(buf))
		out = append(out, buf[j])
		if next < len(in) {
			buf[j] = in[next]
			next++
		} else {
			buf[j] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
		}
	}
	return out
}

// NextBatch follows DALI. With pad_last_batch every shard runs ceil(ceil(n/k) / batch)
// batches per epoch, so that data-parallel ranks take the same number of steps, and
// positions past the shard's samples repeat the last one. Without it the reader is one
// continuous stream (stream.go).
func (b *Base) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	if b.stream() {
		return b.nextStream(refs)
	}
	if b.padStream() {
		return b.nextPadStream(refs)
	}
	if b.cursor >= b.length {
		return 0, true, false
	}
	valid := 0
	for j := range refs {
		refs[j] = b.entries[b.orderAt(b.cursor+j, &valid)]
	}
	b.cursor += len(refs)
	return valid, b.cursor >= b.length, true
}

// ReplayBatch implements engine.BatchReplayer: NextBatch without what a reader adds
// to it (reading ahead), for batches a restored pipeline has already delivered.
func (b *Base) ReplayBatch(refs []engine.SampleRef) (int, bool, bool) {
	return b.NextBatch(refs)
}

// orderAt is the sample at position pos of the epoch, counting real ones in valid.
func (b *Base) orderAt(pos int, valid *int) int {
	size := len(b.order)
	switch {
	case pos < size:
		*valid++
		return b.order[pos]
	default: // pad_last_batch
		return b.order[size-1]
	}
}

// EpochPlan returns the indices of the samples the current epoch delivers, position
// by position, for batches of batchSize (padding and wrapping included): what a reader
// reads ahead.
func (b *Base) EpochPlan(batchSize int) []int {
	if batchSize < 1 {
		batchSize = 1
	}
	if b.stream() {
		return b.streamPlan(batchSize)
	}
	if b.padStream() {
		return b.padStreamPlan(batchSize)
	}
	n := (b.length + batchSize - 1) / batchSize * batchSize
	out := make([]int, n)
	var valid int
	for p := range out {
		out[p] = b.orderAt(p, &valid)
	}
	return out
}

// SourceState implements engine.SourceCheckpointer. It recomputes the epoch's order
// rather than reading the live one, which the producer has moved ahead of the consumer.
func (b *Base) SourceState(epoch, batches int64, batchSize int) engine.SourceState {
	if b.stream() {
		return b.streamState(epoch, batches, batchSize)
	}
	if b.padStream() {
		return b.padStreamState(epoch, batches, batchSize)
	}
	shard, order := b.EpochOrder(epoch, nil)
	return b.state(epoch, batches, batchSize, shard, order)
}

func (b *Base) state(epoch, batches int64, batchSize, shard int, order []int) engine.SourceState {
	h := sha256.New()
	var w [8]byte
	for _, i := range order {
		binary.LittleEndian.PutUint64(w[:], uint64(i))
		h.Write(w[:])
	}
	return engine.SourceState{Epoch: epoch, Shard: shard, Position: batches * int64(batchSize),
		EpochLength: b.epochLength(), NumFiles: len(b.entries), FilesDigest: b.filesDigest(),
		OrderDigest: hex.EncodeToString(h.Sum(nil)[:16])}
}

// filesDigest identifies the data set: the samples' paths (through DigestPath, then
// source.Location: a URL without its credentials and signature) and labels, in listing
// order.
func (b *Base) filesDigest() string {
	b.digestOnce.Do(func() {
		h := sha256.New()
		for _, e := range b.entries {
			p := e.Path
			if b.DigestPath != nil {
				p = b.DigestPath(p)
			}
			p = source.Location(p) // no secret, and the same after a URL is signed again
			fmt.Fprintf(h, "%s\x00%d\n", p, e.Label)
		}
		b.digest = hex.EncodeToString(h.Sum(nil)[:16])
	})
	return b.digest
}
