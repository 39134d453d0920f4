package readers

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/tar"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.webdataset",
		Doc: "Reads webdataset shards: tar archives whose files sharing a key (the name up to the first dot " +
			"of the base name) form one sample. Each entry of ext is an output: a ';'-separated set of " +
			"extensions whose component goes there, as raw bytes (uint8, 1-D) unless dtypes says otherwise.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"out0"}, VariableOutputs: true, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "paths", Type: engine.ArgStringList, Required: true, Doc: "the tar archives (local paths, s3://, az://, gs:// or http(s):// URLs)"},
			{Name: "index_paths", Type: engine.ArgStringList, Doc: "one index file (DALI's wds2idx format) per archive; without them the archives are scanned"},
			{Name: "ext", Type: engine.ArgStringList, Required: true, Doc: "one entry per output: the ';'-separated extensions that go to it"},
			{Name: "missing_component_behavior", Type: engine.ArgString, Default: "", Doc: "a sample with no component for an output: \"empty\" (default, an empty tensor), \"skip\" (drop the sample) or \"error\""},
			{Name: "case_sensitive_extensions", Type: engine.ArgBool, Default: true, Doc: "match extensions case-sensitively"},
			{Name: "dtypes", Type: engine.ArgDTypeList, Doc: "element type of each output (default UINT8); a component's size must be a multiple of the type's"},
			ShuffleAfterEpochArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.webdataset", "cpu", newWebdatasetReader)
}

// wdsPart is where one output of one sample lies: a byte range of an archive, or
// nothing (size -1: the component is missing, the output is empty).
type wdsPart struct {
	off, size int64
}

type wdsSample struct {
	shard int
	parts []wdsPart // one per output
}

type webdatasetReader struct {
	Base
	args    *engine.Args
	paths   []string
	index   []string
	exts    []map[string]bool // per output
	fold    bool              // case-insensitive extensions
	missing string
	dtypes  []engine.DType
	samples []wdsSample
	io      *readerIO
	remote  bool // some shards are remote: fetch samples ahead
	// shardEnd is, per shard, where its last sample's last component ends.
	shardEnd []int64
}

func newWebdatasetReader(a *engine.Args) (engine.Operator, error) {
	r := &webdatasetReader{args: a, paths: a.Strings("paths"), index: a.Strings("index_paths"),
		fold: !a.Bool("case_sensitive_extensions")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	if len(r.paths) == 0 {
		return nil, a.Errorf("paths", "give at least one tar archive")
	}
	r.DigestPath = memberDigest(r.paths)
	if len(r.index) != 0 && len(r.index) != len(r.paths) {
		return nil, a.Errorf("index_paths", "has %d entries; give none or one per archive (paths has %d)", len(r.index), len(r.paths))
	}
	exts := a.Strings("ext")
	if len(exts) == 0 {
		return nil, a.Errorf("ext", "give at least one extension set (one per output)")
	}
	for i, set := range exts {
		m := map[string]bool{}
		for _, e := range strings.Split(set, ";") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			if r.fold {
				e = strings.ToLower(e)
			}
			m[e] = true
		}
		if len(m) == 0 {
			return nil, a.Errorf("ext", "entry %d (%q) names no extension", i, set)
		}
		r.exts = append(r.exts, m)
	}
	switch m := a.String("missing_component_behavior"); m {
	case "", "empty":
		r.missing = "empty"
	case "skip", "error":
		r.missing = m
	default:
		return nil, a.Errorf("missing_component_behavior", "expected \"empty\", \"skip\" or \"error\", got %q", m)
	}
	r.dtypes = make([]engine.DType, len(exts))
	for i := range r.dtypes {
		r.dtypes[i] = engine.UInt8
	}
	if a.Given("dtypes") {
		ds := a.Strings("dtypes")
		if len(ds) != len(exts) {
			return nil, a.Errorf("dtypes", "has %d entries; give one per output (ext has %d)", len(ds), len(exts))
		}
		for i, s := range ds {
			d, err := engine.ParseDType(s)
			if err != nil || d.Size() == 0 {
				return nil, a.Errorf("dtypes", "entry %d: %q is not a numeric type", i, s)
			}
			r.dtypes[i] = d
		}
	}
	var err error
	if r.io, err = newReaderIO(a); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *webdatasetReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := make([]engine.TensorMeta, len(r.exts))
	for i := range out {
		out[i] = engine.TensorMeta{DType: r.dtypes[i], Shape: []int{-1}}
	}
	return out, nil
}

func (r *webdatasetReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	var entries []engine.SampleRef
	var samples []wdsSample
	for si, p := range r.paths {
		var list []tar.Sample
		var err error
		if len(r.index) > 0 {
			list, err = r.readIndex(si)
		} else {
			list, err = r.scan(p)
		}
		if err != nil {
			return err
		}
		for _, s := range list {
			ws := wdsSample{shard: si, parts: make([]wdsPart, len(r.exts))}
			missing := -1
			for o, set := range r.exts {
				ws.parts[o] = wdsPart{size: -1}
				for _, c := range s.Components {
					ext := c.Ext
					if r.fold {
						ext = strings.ToLower(ext)
					}
					if set[ext] {
						ws.parts[o] = wdsPart{off: c.Offset, size: c.Size}
						break
					}
				}
				if ws.parts[o].size < 0 && missing < 0 {
					missing = o
				}
			}
			if missing >= 0 {
				switch r.missing {
				case "skip":
					continue
				case "error":
					return listErrorf(a, "sample %q of %s has no component for output %d (extensions %q); missing_component_behavior=\"error\"",
						s.Key, p, missing, a.Strings("ext")[missing])
				}
			}
			samples = append(samples, ws)
			entries = append(entries, engine.SampleRef{Path: p + ":" + s.Key})
		}
	}
	if err := r.SetSamples(entries, "webdataset samples"); err != nil {
		return err
	}
	r.samples = samples
	r.shardEnd = make([]int64, len(r.paths))
	for _, s := range samples {
		_, end := s.span()
		r.shardEnd[s.shard] = max(r.shardEnd[s.shard], end)
	}
	for _, p := range r.paths {
		r.remote = r.remote || remote.IsRemote(p)
	}
	return nil
}

// scan lists the samples of an archive without an index.
func (r *webdatasetReader) scan(p string) ([]tar.Sample, error) {
	a := r.args
	f, err := r.io.open(p)
	if err != nil {
		return nil, unreadable(a, "paths", p, err)
	}
	defer f.Close()
	list, err := tar.Samples(scanner(p, f), f.Size(), tar.Options{CaseInsensitive: r.fold})
	if err != nil {
		return nil, listErrorf(a, "archive %s: %v", p, err)
	}
	return list, nil
}

// readIndex reads the index of archive si and checks it against the archive's size.
func (r *webdatasetReader) readIndex(si int) ([]tar.Sample, error) {
	a := r.args
	p, ip := r.paths[si], r.index[si]
	b, err := r.io.readAll(ip, 1<<30)
	if err != nil {
		return nil, unreadable(a, "index_paths", ip, err)
	}
	list, err := tar.ReadIndex(bytes.NewReader(b))
	if err != nil {
		return nil, listErrorf(a, "index %s: %v", ip, err)
	}
	size, err := r.io.size(p)
	if err != nil {
		return nil, unreadable(a, "paths", p, err)
	}
	if err := tar.CheckIndex(list, size); err != nil {
		return nil, listErrorf(a, "index %s does not match archive %s: %v", ip, p, err)
	}
	return list, nil
}

type wdsState struct {
	files *fileCache
	span  []byte // the sample's bytes fetched ahead (remote shards), from spanOff
	off   int64
	ahead bool
}

// span is the byte range of a sample's components in its shard.
func (s *wdsSample) span() (off, end int64) {
	off, end = -1, -1
	for _, p := range s.parts {
		if p.size <= 0 {
			continue
		}
		if off < 0 || p.off < off {
			off = p.off
		}
		end = max(end, p.off+p.size)
	}
	return off, end
}

func (r *webdatasetReader) spanKey(i int) string {
	s := &r.samples[i]
	off, end := s.span()
	return fmt.Sprintf("%s@%d+%d", r.paths[s.shard], off, end-off)
}

// Close stops the reader's remote requests (engine.Closer: the pipeline is destroyed).
func (r *webdatasetReader) Close() { r.io.close() }

// Interrupt makes the reader's remote requests in flight return (engine.Interrupter).
func (r *webdatasetReader) Interrupt() { r.io.interrupt() }

// NextBatch plans the batch and starts fetching its samples' bytes ahead when the
// shards are remote. A remote shard is read whole into memory, front to back with a
// few large ranged requests, as soon as a sample of it is planned (or about to be: the
// next batches' samples are looked at too), and its samples are served from there;
// the shuffling buffer keeps the samples in use within initial_fill of the order on
// disk, so only a few shards are needed at a time. With shuffle_after_epoch (any
// sample of any shard at any time) or a shard over 1 GiB, each sample is fetched by a
// ranged request of its own instead.
func (r *webdatasetReader) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	valid, last, ok := r.Base.NextBatch(refs)
	if ok && r.remote {
		var ranged, whole []rangeReq
		for _, ref := range refs {
			s := &r.samples[ref.Index]
			off, end := s.span()
			if off < 0 || end-off > 256<<20 {
				continue
			}
			q := rangeReq{key: r.spanKey(ref.Index), path: r.paths[s.shard], off: off, n: end - off}
			if r.wholeShard(s.shard) {
				whole = append(whole, q)
			} else {
				ranged = append(ranged, q)
			}
		}
		r.io.readAheadRanges(ranged)
		if len(whole) > 0 {
			var soon []string
			seen := map[int]bool{}
			for p := r.cursor; p < min(len(r.order), r.cursor+2*len(refs)); p++ {
				si := r.samples[r.order[p]].shard
				if !seen[si] && r.wholeShard(si) {
					seen[si] = true
					soon = append(soon, r.paths[si])
				}
			}
			r.io.readAheadShards(whole, soon, r.keepShards(len(refs)))
		}
	}
	return valid, last, ok
}

// wholeShard says whether remote shard si is read whole (NextBatch).
func (r *webdatasetReader) wholeShard(si int) bool {
	return !r.perEpoch && remote.IsRemote(r.paths[si]) && r.shardEnd[si] <= maxShardInMemory
}

// keepShards is how many whole shards stay in memory: those that the samples within
// the shuffling buffer and the next batches can come from, and two more.
func (r *webdatasetReader) keepShards(batch int) int {
	perShard := max(1, len(r.samples)/len(r.paths))
	window := 3 * batch
	if r.shuffle {
		window += r.fill
	}
	return (window+perShard-1)/perShard + 2
}

func (r *webdatasetReader) NewWorkerState() any { return &wdsState{files: newFileCache(r.io)} }

func (s *wdsState) Close() { s.files.Close() }

func (r *webdatasetReader) Setup(ws *engine.Workspace) error {
	s := &r.samples[ws.Ref.Index]
	st := ws.State.(*wdsState)
	st.span, st.ahead = nil, false
	if r.remote {
		data, ok, err := r.io.take(r.spanKey(ws.Ref.Index))
		if ok && err != nil {
			return sampleError(err)
		}
		if ok {
			st.span, st.ahead = data, true
			st.off, _ = s.span()
		}
	}
	for o, part := range s.parts {
		n := int64(0)
		if part.size > 0 {
			n = part.size
		}
		es := int64(r.dtypes[o].Size())
		if n%es != 0 {
			return engine.Errorf(engine.StatusData, "output %d: component of %d bytes is not a whole number of %s values (%d bytes each)", o, n, r.dtypes[o], es)
		}
		if max := ws.Limits.MaxFileBytes; max > 0 && n > max {
			return engine.Errorf(engine.StatusData, "output %d: component is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", o, n, max)
		}
		ws.Out[o].SetShape(int(n / es))
	}
	return nil
}

func (r *webdatasetReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*wdsState)
	s := &r.samples[ws.Ref.Index]
	for o, part := range s.parts {
		if part.size <= 0 {
			continue
		}
		if st.ahead {
			copy(ws.Out[o].Data[:part.size], st.span[part.off-st.off:])
			continue
		}
		if err := st.files.readAt(r.paths[s.shard], ws.Out[o].Data[:part.size], part.off); err != nil {
			return err
		}
	}
	st.span, st.ahead = nil, false
	return nil
}

// readRange reads len(buf) bytes at off of f, naming what went wrong.
func readRange(f source.File, buf []byte, off int64) error {
	n, err := f.ReadAt(buf, off)
	if n < len(buf) {
		if err == io.EOF || err == nil {
			return engine.Errorf(engine.StatusData, "archive is shorter than its index says (%d of %d bytes at offset %d)", n, len(buf), off)
		}
		return sampleError(err)
	}
	return nil
}
