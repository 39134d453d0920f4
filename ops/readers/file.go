package readers

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.file",
		Doc: "Reads files from a directory tree (file_root: one label per sorted subdirectory, like " +
			"torchvision's ImageFolder), a file_list of \"path label\" lines, or files+labels. " +
			"Outputs the encoded bytes (uint8, 1-D) and an int32 label of shape [1].",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label"}, IsReader: true,
		Args: []engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Doc: "directory: each sorted subdirectory is a class"},
			{Name: "file_list", Type: engine.ArgString, Doc: "text file of \"path label\" lines, paths relative to file_root (or to the list's directory)"},
			{Name: "files", Type: engine.ArgStringList, Doc: "explicit list of paths (relative to file_root if given)"},
			{Name: "labels", Type: engine.ArgIntList, Doc: "labels for files (default: the file's index)"},
			{Name: "file_filters", Type: engine.ArgStringList, Default: []string{"*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm", "*.pbm", "*.webp", "*.gif"}, Doc: "glob patterns of files taken from file_root"},
			{Name: "case_sensitive_filter", Type: engine.ArgBool, Default: false, Doc: "match file_filters case-sensitively"},
			{Name: "random_shuffle", Type: engine.ArgBool, Default: false, Doc: "shuffle within a buffer of initial_fill samples"},
			{Name: "initial_fill", Type: engine.ArgInt, Default: 1024, Doc: "size of the shuffling buffer"},
			{Name: "shuffle_after_epoch", Type: engine.ArgBool, Default: false, Doc: "shuffle the whole data set every epoch, identically on every shard (exclusive with random_shuffle and stick_to_shard)"},
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
		},
	})
	engine.RegisterBackend("readers.file", "cpu", newFileReader)
}

// fileReaderDefaultShuffleSeed is shared by every shard so that shuffle_after_epoch
// permutes the data set identically everywhere.
const fileReaderDefaultShuffleSeed = 0x6d2b79f5

type fileReader struct {
	args     *engine.Args
	src      source.Source // where the files are listed and read
	opened   bool
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

	order  []int // the epoch's sample order (indices into entries)
	length int   // samples in the epoch (padded)
	cursor int

	digestOnce sync.Once // filesDigest, computed once the entries are listed
	digest     string
}

func newFileReader(a *engine.Args) (engine.Operator, error) {
	r := &fileReader{args: a, src: source.Local{}, shardID: a.Int("shard_id"), shards: a.Int("num_shards"),
		shuffle: a.Bool("random_shuffle"), fill: a.Int("initial_fill"),
		perEpoch: a.Bool("shuffle_after_epoch"), stick: a.Bool("stick_to_shard"),
		pad: a.Bool("pad_last_batch"), seed: int64(a.Int("seed"))}
	if r.shards < 1 {
		return nil, a.Errorf("num_shards", "must be >= 1, got %d", r.shards)
	}
	if r.shardID < 0 || r.shardID >= r.shards {
		return nil, a.Errorf("shard_id", "must be in [0, num_shards=%d), got %d", r.shards, r.shardID)
	}
	if r.fill < 1 {
		return nil, a.Errorf("initial_fill", "must be >= 1, got %d", r.fill)
	}
	if r.perEpoch && (r.shuffle || r.stick) {
		return nil, a.Errorf("shuffle_after_epoch", "cannot be combined with random_shuffle or stick_to_shard")
	}
	sources := 0
	for _, k := range []string{"file_list", "files"} {
		if a.Has(k) {
			sources++
		}
	}
	if a.Has("file_root") && !a.Has("file_list") && !a.Has("files") {
		sources++
	}
	if sources != 1 {
		return nil, a.Errorf("file_root", "give exactly one of file_root (a directory tree), file_list, or files")
	}
	if a.Has("labels") && !a.Has("files") {
		return nil, a.Errorf("labels", "labels go with files")
	}
	if a.Has("labels") && len(a.Ints("labels")) != len(a.Strings("files")) {
		return nil, a.Errorf("labels", "has %d entries but files has %d", len(a.Ints("labels")), len(a.Strings("files")))
	}
	return r, nil
}

func (r *fileReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: engine.UInt8, Shape: []int{-1}}, {DType: engine.Int32, Shape: []int{1}}}, nil
}

// SetPipelineSeed is called by the executor before Open.
func (r *fileReader) SetPipelineSeed(s uint64) { r.pipeSeed = s }

func (r *fileReader) Open() error {
	if r.opened {
		return nil
	}
	a := r.args
	root := a.String("file_root")
	// Paths the description names must exist: a wrong one is the caller's argument, not
	// a bad sample.
	if root != "" {
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			why := "is not a directory"
			if err != nil {
				why = "cannot be read: " + err.Error()
			}
			return engine.Errorf(engine.StatusInvalidArgument, "%s: argument \"file_root\": %q %s", engine.Describe(a.Node, a.Schema.Name), root, why)
		}
	}
	if a.Has("file_list") {
		if _, err := os.Stat(a.String("file_list")); err != nil {
			return engine.Errorf(engine.StatusInvalidArgument, "%s: argument \"file_list\": %q cannot be read: %v", engine.Describe(a.Node, a.Schema.Name), a.String("file_list"), err)
		}
	}
	var err error
	r.entries = nil // a failed Open may be retried: start from no files
	switch {
	case a.Has("files"):
		files, labels := a.Strings("files"), a.Ints("labels")
		for i, f := range files {
			if root != "" && !filepath.IsAbs(f) {
				f = filepath.Join(root, f)
			}
			l := int32(i)
			if labels != nil {
				l = int32(labels[i])
			}
			r.entries = append(r.entries, engine.SampleRef{Path: f, Label: l})
		}
	case a.Has("file_list"):
		r.entries, err = readFileList(r.src, a.String("file_list"), root)
	default:
		r.entries, err = scanImageFolder(r.src, root, a.Strings("file_filters"), a.Bool("case_sensitive_filter"))
	}
	if err != nil {
		return &engine.Error{Status: engine.StatusData, Msg: engine.Describe(a.Node, a.Schema.Name), Err: err}
	}
	if len(r.entries) == 0 {
		return engine.Errorf(engine.StatusData, "%s: no files found (file_root=%q, file_list=%q, filters %v)", engine.Describe(a.Node, a.Schema.Name), root, a.String("file_list"), a.Strings("file_filters"))
	}
	if len(r.entries) < r.shards {
		return engine.Errorf(engine.StatusData, "%s: %d files cannot be split into num_shards=%d shards", engine.Describe(a.Node, a.Schema.Name), len(r.entries), r.shards)
	}
	for i := range r.entries {
		r.entries[i].Index = i
	}
	r.opened = true
	return nil
}

func scanImageFolder(src source.Source, root string, filters []string, caseSensitive bool) ([]engine.SampleRef, error) {
	dirs, err := src.List(root)
	if err != nil {
		return nil, fmt.Errorf("file_root: %w", err)
	}
	var classes []string
	for _, d := range dirs {
		if d.Dir {
			classes = append(classes, d.Name)
		}
	}
	sort.Strings(classes)
	if len(classes) == 0 {
		return nil, fmt.Errorf("file_root %q has no class subdirectories", root)
	}
	match := func(name string) bool {
		if !caseSensitive {
			name = strings.ToLower(name)
		}
		for _, f := range filters {
			if !caseSensitive {
				f = strings.ToLower(f)
			}
			if ok, _ := filepath.Match(f, name); ok {
				return true
			}
		}
		return false
	}
	var out []engine.SampleRef
	for label, c := range classes {
		var files []string
		err := src.Walk(filepath.Join(root, c), func(p string) error {
			if match(filepath.Base(p)) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			out = append(out, engine.SampleRef{Path: f, Label: int32(label)})
		}
	}
	return out, nil
}

func readFileList(src source.Source, list, root string) ([]engine.SampleRef, error) {
	f, err := src.Open(list)
	if err != nil {
		return nil, fmt.Errorf("file_list: %w", err)
	}
	defer f.Close()
	if root == "" {
		root = filepath.Dir(list)
	}
	var out []engine.SampleRef
	sc := bufio.NewScanner(io.NewSectionReader(f, 0, f.Size()))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		i := strings.LastIndexAny(s, " \t")
		if i < 0 {
			return nil, fmt.Errorf("file_list %s:%d: expected \"path label\", got %q", list, line, s)
		}
		label, err := strconv.ParseInt(strings.TrimSpace(s[i+1:]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("file_list %s:%d: label %q is not an integer", list, line, s[i+1:])
		}
		p := strings.TrimSpace(s[:i])
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		out = append(out, engine.SampleRef{Path: p, Label: int32(label)})
	}
	return out, sc.Err()
}

func (r *fileReader) Meta() engine.ReaderMeta {
	n := int64(len(r.entries))
	k := int64(r.shards)
	m := engine.ReaderMeta{EpochSize: n, EpochSizePadded: n, ShardID: r.shardID, NumShards: r.shards,
		PadLastBatch: r.pad, StickToShard: r.stick}
	b, e := engine.ShardRange(len(r.entries), r.shardID, r.shards)
	m.ShardSize = int64(e - b)
	if r.pad {
		per := (n + k - 1) / k
		m.EpochSizePadded = per * k
		m.ShardSize = per
	}
	return m
}

func (r *fileReader) StartEpoch(epoch int64) {
	_, r.order = r.epochOrder(epoch, r.order[:0])
	r.length = r.epochLength()
	r.cursor = 0
}

// epochLength is the number of positions every shard reads per epoch: ceil(n/k).
func (r *fileReader) epochLength() int { return (len(r.entries) + r.shards - 1) / r.shards }

// epochOrder returns the shard an epoch reads and its sample order (indices into
// entries, appended to buf). It depends only on the arguments, the pipeline seed and the
// epoch, so a checkpoint can recompute it instead of storing it.
func (r *fileReader) epochOrder(epoch int64, buf []int) (shard int, order []int) {
	n := len(r.entries)
	shard = r.shardID
	if !r.stick {
		shard = int((int64(r.shardID) + epoch) % int64(r.shards))
	}
	var rng engine.RNG
	seed := r.pipeSeed
	if r.seed >= 0 {
		seed = uint64(r.seed)
	}
	b, e := engine.ShardRange(n, shard, r.shards)
	if r.perEpoch {
		if r.seed < 0 {
			seed = fileReaderDefaultShuffleSeed
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
		order = append(buf, all[b:e]...)
	} else {
		order = buf
		for i := b; i < e; i++ {
			order = append(order, i)
		}
	}
	if r.shuffle {
		rng.Seed(seed, uint64(epoch), 0xb0ff)
		order = bufferShuffle(order, r.fill, &rng)
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

// NextBatch follows DALI: every shard runs ceil(ceil(n/k) / batch) batches per epoch,
// so that data-parallel ranks take the same number of steps; positions past the shard's
// samples repeat the last one (pad_last_batch) or wrap around to its start.
func (r *fileReader) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	if r.cursor >= r.length {
		return 0, true, false
	}
	size := len(r.order)
	valid := 0
	for j := range refs {
		pos := r.cursor + j
		var idx int
		switch {
		case pos < size:
			idx = r.order[pos]
			valid++
		case r.pad:
			idx = r.order[size-1]
		default:
			idx = r.order[(pos-size)%size]
		}
		refs[j] = r.entries[idx]
	}
	r.cursor += len(refs)
	return valid, r.cursor >= r.length, true
}

type fileReaderState struct {
	f    source.File
	size int
}

func (r *fileReader) NewWorkerState() any { return &fileReaderState{} }

func (r *fileReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*fileReaderState)
	if st.f != nil { // Run was not reached for the previous sample
		st.f.Close()
		st.f = nil
	}
	f, err := r.src.Open(ws.Ref.Path)
	if err != nil {
		return sampleError(err)
	}
	if max := ws.Limits.MaxFileBytes; max > 0 && f.Size() > max {
		f.Close()
		return engine.Errorf(engine.StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", f.Size(), max)
	}
	st.f, st.size = f, int(f.Size())
	ws.Out[0].SetShape(st.size)
	if len(ws.Out) > 1 {
		ws.Out[1].SetShape(1)
	}
	return nil
}

func (r *fileReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*fileReaderState)
	defer func() { st.f.Close(); st.f = nil }()
	buf := ws.Out[0].Data
	if off, err := st.f.ReadAt(buf, 0); off < len(buf) {
		if err == io.EOF {
			return fmt.Errorf("file shrank while reading (%d of %d bytes)", off, len(buf))
		}
		return sampleError(err)
	}
	if len(ws.Out) > 1 {
		engine.WriteScalar(ws.Out[1].Data, engine.Int32, float64(ws.Ref.Label))
	}
	return nil
}

// SourceState implements SourceCheckpointer. It recomputes the epoch's order rather than
// reading the live one, which the producer has moved ahead of the consumer.
func (r *fileReader) SourceState(epoch, batches int64, batchSize int) engine.SourceState {
	shard, order := r.epochOrder(epoch, nil)
	h := sha256.New()
	var b [8]byte
	for _, i := range order {
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		h.Write(b[:])
	}
	return engine.SourceState{Epoch: epoch, Shard: shard, Position: batches * int64(batchSize),
		EpochLength: r.epochLength(), NumFiles: len(r.entries), FilesDigest: r.filesDigest(),
		OrderDigest: hex.EncodeToString(h.Sum(nil)[:16])}
}

// filesDigest identifies the data set: paths relative to file_root (so that a data set
// moved to another root still matches) and labels, in listing order.
func (r *fileReader) filesDigest() string {
	r.digestOnce.Do(func() {
		root := r.args.String("file_root")
		h := sha256.New()
		for _, e := range r.entries {
			p := e.Path
			if root != "" {
				if rel, err := filepath.Rel(root, p); err == nil {
					p = rel
				}
			}
			fmt.Fprintf(h, "%s\x00%d\n", p, e.Label)
		}
		r.digest = hex.EncodeToString(h.Sum(nil)[:16])
	})
	return r.digest
}

// sampleError words a source error about a sample's file without the path, which the
// executor's error for the sample names already.
func sampleError(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(pe.Err, source.ErrNotRegular):
		return engine.Errorf(engine.StatusData, "%v", pe.Err)
	case pe.Op == "open":
		return fmt.Errorf("cannot open: %w", pe.Err)
	case pe.Op == "stat":
		return fmt.Errorf("cannot stat: %w", pe.Err)
	}
	return fmt.Errorf("read error: %w", pe.Err)
}
