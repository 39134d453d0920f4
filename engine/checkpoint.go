package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/godali/godali/source"
)

// A checkpoint (docs/pipeline.md, "Checkpoints") records where the consumer of a
// pipeline is: the epoch, how many of its batches Next has handed out, and whether the
// end of the epoch was reported. Everything else a resumed pipeline needs is a function
// of the description and the seed: the readers' sample order (shard rotation, buffered
// and per-epoch shuffles) follows from (seed, epoch), and every random stream is seeded
// per (seed, epoch, position, node). So the checkpoint stores the seed actually used and
// the consumer's position, and a restored pipeline replays the reader's plan up to there
// without reading a file. Batches the workers prepared ahead of the consumer
// (prefetch_queue_depth) are not part of the state: they are prepared again.
//
// The fingerprint describes the pipeline as written, so that restoring into another
// pipeline fails with a message that names what differs; the reader's state carries
// digests of its file list and of the epoch's order, so that a changed data set is
// refused instead of silently resuming elsewhere.
//
// A checkpoint holds no secret: URLs among the reader's arguments are stored redacted
// (source.Redact) and compared by their Location (scheme, host, path and the query
// parameters that name the object), and the files digest is of the files' Locations. So
// a checkpoint resumes after the credentials changed or a presigned URL was signed
// again, and is refused, naming the differing location, when a URL names another object.

const (
	checkpointFormat = "godali-checkpoint"
	// CheckpointVersion is the version of the checkpoint document this engine writes and
	// reads.
	CheckpointVersion = 1
)

type checkpointDoc struct {
	Format   string              `json:"format"`
	Version  int                 `json:"version"`
	Pipeline pipelineFingerprint `json:"pipeline"`
	State    checkpointState     `json:"state"`
	// Iterator is the state of a framework iterator over the pipeline (the Python
	// iterators' counters). The engine accepts it and leaves it alone.
	Iterator json.RawMessage `json:"iterator,omitempty"`
	// ExternalSources is the feeder's record of the checkpointed_feeds sources (the
	// Python package's: each callable source's epoch, iteration and data type). The
	// engine accepts it and leaves it alone.
	ExternalSources json.RawMessage `json:"external_sources,omitempty"`
}

type pipelineFingerprint struct {
	Digest    string             `json:"digest"` // of the fields below
	BatchSize int                `json:"batch_size"`
	Seed      int64              `json:"seed"` // as written; -1: a random seed (state.seed has the one drawn)
	OnError   string             `json:"on_error"`
	Outputs   []string           `json:"outputs"`
	Reader    *readerFingerprint `json:"reader"` // the description's first reader
	// OtherReaders are the pipeline's further readers, by name.
	OtherReaders map[string]*readerFingerprint `json:"other_readers,omitempty"`
	Nodes        map[string]string             `json:"nodes"` // other nodes: name -> digest of op, device, inputs, outputs, arguments
}

type readerFingerprint struct {
	Name string                     `json:"name"`
	Op   string                     `json:"op"`
	Args map[string]json.RawMessage `json:"args"` // defaults filled in
}

type checkpointState struct {
	Seed       uint64       `json:"seed"`      // seed of the random streams and the shuffles
	Epoch      int64        `json:"epoch"`     // epoch of the consumer
	Iteration  int64        `json:"iteration"` // batches of that epoch the consumer has taken
	EndOfEpoch bool         `json:"end_of_epoch"`
	Reader     *SourceState `json:"reader"` // the description's first reader
	// OtherReaders are the further readers' states, by name: each at its own epoch and
	// position (they go on across the pipeline's epochs by themselves).
	OtherReaders map[string]*SourceState `json:"other_readers,omitempty"`
	// EpochReader names the reader that defines the epochs (Epoch, Iteration,
	// EndOfEpoch) when it is not the first one.
	EpochReader string `json:"epoch_reader,omitempty"`
	// LastBatchPolicy is the pipeline's last_batch_policy when it is not "fill": the
	// epoch reader's epochs depend on it, and a restored pipeline takes it.
	LastBatchPolicy string `json:"last_batch_policy,omitempty"`
}

// readerArgsIgnored are reader arguments a checkpoint does not compare: file_root may
// move (the file list is compared, relative to it).
var readerArgsIgnored = map[string]bool{"file_root": true}

func errCheckpointDisabled() error {
	return Errorf(StatusState, "checkpointing is not enabled for this pipeline: create it with \"enable_checkpointing\": true (Python: enable_checkpointing=True)")
}

func digestJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("godali: checkpoint digest: %v", err)) // only plain values are digested
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// fingerprint describes the pipeline as written. Settings that do not change outputs
// (num_threads, prefetch_queue_depth, device_id, first_epoch) are left out, so a run may
// resume with other ones.
func (p *Pipeline) fingerprint() pipelineFingerprint {
	f := pipelineFingerprint{BatchSize: p.Spec.BatchSize, Seed: p.Spec.Seed, OnError: p.Spec.OnError,
		Outputs: append([]string{}, p.Spec.Outputs...), Nodes: map[string]string{}}
	for _, n := range p.Graph.Declared {
		if n.Schema.IsReader {
			rf := &readerFingerprint{Name: n.Name, Op: n.OpName, Args: map[string]json.RawMessage{}}
			for k, v := range n.Args.Values() {
				b, _ := json.Marshal(mapURLs(v, source.Redact))
				rf.Args[k] = b
			}
			if n == p.Graph.Reader {
				f.Reader = rf
			} else {
				if f.OtherReaders == nil {
					f.OtherReaders = map[string]*readerFingerprint{}
				}
				f.OtherReaders[n.Name] = rf
			}
			continue
		}
		args := n.Args.Values()
		for k, v := range args {
			args[k] = mapURLs(v, source.Location)
		}
		desc := map[string]any{"op": n.OpName, "device": n.Device, "args": args}
		var in, argIn, out []string
		for _, d := range n.In {
			in = append(in, d.Name)
		}
		for _, d := range n.Out {
			out = append(out, d.Name)
		}
		for _, k := range n.argInputNames() {
			argIn = append(argIn, k)
		}
		desc["inputs"], desc["outputs"], desc["arg_inputs"] = in, out, argIn
		f.Nodes[n.Name] = digestJSON(desc)
	}
	f.Digest = f.digest()
	return f
}

func (f pipelineFingerprint) digest() string {
	f.Digest = ""
	return digestJSON(f)
}

// argInputNames are the node's per-sample arguments with the data node feeding each,
// as "name=data", sorted.
func (n *Node) argInputNames() []string {
	var out []string
	for k, i := range n.Args.perInput {
		if i < len(n.ArgIn) {
			out = append(out, k+"="+n.ArgIn[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// Checkpoint returns the pipeline's state after the batches the consumer has taken with
// Next, as a JSON document (docs/pipeline.md). A pipeline restored from it (Restore,
// before Build) gives, from its first Next on, exactly what this one gives from its next
// Next on.
func (p *Pipeline) Checkpoint() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if !p.Spec.EnableCheckpointing {
		return nil, errCheckpointDisabled()
	}
	if names := p.feeds.unrecorded(p.Spec.CheckpointedFeeds); names != "" {
		return nil, Errorf(StatusState, "external source %s does not support checkpoints: its data comes from outside the pipeline", names)
	}
	doc := checkpointDoc{Format: checkpointFormat, Version: CheckpointVersion, Pipeline: p.fingerprint(),
		State: checkpointState{Seed: p.seed, Epoch: p.epoch, Iteration: p.taken, EndOfEpoch: p.atEnd}}
	for i, r := range p.readers {
		sc, ok := r.src.(SourceCheckpointer)
		if !ok {
			return nil, Errorf(StatusState, "%s does not support checkpoints", describe(r.node.Name, r.node.OpName))
		}
		if err := r.src.Open(); err != nil { // idempotent; lists the files before Build
			return nil, err
		}
		epoch, taken := r.epoch, r.taken
		if i == p.primary {
			epoch, taken = p.epoch, p.taken
		}
		st := sc.SourceState(epoch, taken, p.Spec.BatchSize)
		if i == 0 {
			doc.State.Reader = &st
			continue
		}
		if doc.State.OtherReaders == nil {
			doc.State.OtherReaders = map[string]*SourceState{}
		}
		doc.State.OtherReaders[r.node.Name] = &st
	}
	if p.primary > 0 {
		doc.State.EpochReader = p.readers[p.primary].node.Name
	}
	if p.Spec.LastBatchPolicy != "fill" {
		doc.State.LastBatchPolicy = p.Spec.LastBatchPolicy
	}
	return json.MarshalIndent(doc, "", " ")
}

// Restore sets the pipeline to the state a checkpoint describes. It must come before
// Build. The checkpoint must come from a pipeline with the same description (up to
// num_threads, prefetch_queue_depth, device_id and first_epoch, and the reader's
// file_root) and the same data set; otherwise the error names what differs.
func (p *Pipeline) Restore(data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Errorf(StatusInvalidHandle, "pipeline is destroyed")
	}
	if !p.Spec.EnableCheckpointing {
		return errCheckpointDisabled()
	}
	if p.built {
		return Errorf(StatusState, "restore a checkpoint before building the pipeline: this one is built already")
	}
	doc, err := parseCheckpoint(data)
	if err != nil {
		return err
	}
	if err := p.fingerprint().matches(&doc.Pipeline); err != nil {
		return err
	}
	st := &doc.State
	if st.Epoch < 0 || st.Iteration < 0 {
		return checkpointErr("state: epoch %d and iteration %d must be >= 0", st.Epoch, st.Iteration)
	}
	if p.Spec.Seed != -1 && st.Seed != uint64(p.Spec.Seed) {
		return checkpointErr("state: seed %d differs from the description's seed %d", st.Seed, p.Spec.Seed)
	}
	if len(p.readers) == 0 {
		if st.Reader != nil || st.EndOfEpoch || len(st.OtherReaders) > 0 || st.EpochReader != "" {
			return checkpointErr("state: has reader state or an end of epoch, but the pipeline has no reader")
		}
		p.seed = st.Seed
		p.epoch, p.taken, p.atEnd = st.Epoch, st.Iteration, st.EndOfEpoch
		return nil
	}
	primary := 0
	if st.EpochReader != "" {
		i, err := p.readerIndex(st.EpochReader)
		if err != nil {
			return checkpointErr("state: epoch_reader %q is not a reader of this pipeline", st.EpochReader)
		}
		primary = i
	}
	// Every reader's state, with the positions a restored pipeline goes on from.
	pos := make([]readerPos, len(p.readers))
	states := make([]*SourceState, len(p.readers))
	for i, r := range p.readers {
		if i == 0 {
			states[i] = st.Reader
		} else {
			states[i] = st.OtherReaders[r.node.Name]
		}
		if states[i] == nil {
			key := "reader"
			if i > 0 {
				key = "other_readers." + r.node.Name
			}
			return checkpointErr("state: no %q state, but the pipeline has reader %q", key, r.node.Name)
		}
	}
	if len(st.OtherReaders) != len(p.readers)-1 {
		return checkpointErr("state: has %d other_readers, the pipeline has %d readers besides %q", len(st.OtherReaders), len(p.readers)-1, p.readers[0].node.Name)
	}
	policy := st.LastBatchPolicy
	if policy == "" {
		policy = "fill"
	} else if policy != "fill" && policy != "partial" && policy != "drop" {
		return checkpointErr("state: last_batch_policy %q is not \"fill\", \"partial\" or \"drop\"", policy)
	}
	oldPolicy, oldPrimary := p.Spec.LastBatchPolicy, p.primary
	p.Spec.LastBatchPolicy, p.primary = policy, primary
	p.setReaderSeeds(st.Seed)
	p.setReaderPolicies()
	for i, r := range p.readers {
		err := r.src.Open()
		if err == nil {
			err = p.checkReaderState(r, i == primary, st, states[i], &pos[i])
		}
		if err != nil {
			// leave the pipeline as it was
			p.Spec.LastBatchPolicy, p.primary = oldPolicy, oldPrimary
			p.setReaderSeeds(p.seed)
			p.setReaderPolicies()
			return err
		}
	}
	p.seed = st.Seed
	for i, r := range p.readers {
		r.epoch, r.taken = pos[i].epoch, pos[i].iter
	}
	p.epoch, p.taken, p.atEnd = st.Epoch, st.Iteration, st.EndOfEpoch
	return nil
}

// checkReaderState checks a reader's saved state against what the reader computes for
// the same position, and returns that position: the checkpoint's epoch and iteration for
// the epoch reader, the reader's own for the others.
func (p *Pipeline) checkReaderState(r *readerSlot, epochReader bool, st *checkpointState, want *SourceState, pos *readerPos) error {
	sc, ok := r.src.(SourceCheckpointer)
	if !ok {
		return Errorf(StatusState, "%s does not support checkpoints", describe(r.node.Name, r.node.OpName))
	}
	bs := int64(p.Spec.BatchSize)
	*pos = readerPos{st.Epoch, st.Iteration}
	if !epochReader {
		if want.Epoch < 0 || want.Position < 0 || want.Position%bs != 0 {
			return checkpointErr("state: reader %q is at epoch %d position %d, which is not the start of a batch (corrupt document)", r.node.Name, want.Epoch, want.Position)
		}
		*pos = readerPos{want.Epoch, want.Position / bs}
	}
	if err := checkEpoch(r, pos.epoch, p.Spec.BatchSize); err != nil {
		return checkpointErr("state: %v", err)
	}
	got := sc.SourceState(pos.epoch, pos.iter, p.Spec.BatchSize)
	return checkSourceState(r.node.Name, want, got, pos.epoch, pos.iter, epochReader && st.EndOfEpoch, st.Seed, p.Spec.BatchSize)
}

func checkpointErr(format string, args ...any) error {
	return Errorf(StatusInvalidArgument, "checkpoint: "+format, args...)
}

// parseCheckpoint decodes and checks the form of a checkpoint document.
func parseCheckpoint(data []byte) (*checkpointDoc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, checkpointErr("empty document")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, checkpointErr("not a godali checkpoint (a JSON object with \"format\": %q): %v", checkpointFormat, err)
	}
	var format string
	if json.Unmarshal(probe["format"], &format) != nil || format != checkpointFormat {
		return nil, checkpointErr("not a godali checkpoint: \"format\" is %s, expected %q", orMissing(probe["format"]), checkpointFormat)
	}
	var version int
	if json.Unmarshal(probe["version"], &version) != nil {
		return nil, checkpointErr("\"version\" is %s, expected an int", orMissing(probe["version"]))
	}
	if version != CheckpointVersion {
		return nil, checkpointErr("version %d is not supported: this godali reads version %d", version, CheckpointVersion)
	}
	for _, key := range []string{"pipeline", "state"} {
		if raw, ok := probe[key]; !ok || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return nil, checkpointErr("malformed: %q is %s, expected an object", key, orMissing(raw))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	doc := &checkpointDoc{}
	if err := dec.Decode(doc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, checkpointErr("malformed: %q is a %s, expected %s", te.Field, te.Value, jsonTypeName(te.Type))
		}
		return nil, checkpointErr("malformed: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return doc, nil
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "an integer"
	case reflect.Bool:
		return "a bool"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	}
	return "an object"
}

func orMissing(raw json.RawMessage) string {
	if raw == nil {
		return "missing"
	}
	return string(raw)
}

// matches compares the fingerprint of this pipeline (f) with a checkpoint's (c) and
// names the first difference.
func (f pipelineFingerprint) matches(c *pipelineFingerprint) error {
	differ := func(what string, ckpt, here any) error {
		return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: %s is %v in the checkpoint, %v in this pipeline", what, ckpt, here)
	}
	if c.BatchSize != f.BatchSize {
		return differ("batch_size", c.BatchSize, f.BatchSize)
	}
	if c.Seed != f.Seed {
		return differ("seed", c.Seed, f.Seed)
	}
	if c.OnError != f.OnError {
		return differ("on_error", strconvQuote(c.OnError), strconvQuote(f.OnError))
	}
	if strings.Join(c.Outputs, ",") != strings.Join(f.Outputs, ",") || len(c.Outputs) != len(f.Outputs) {
		return differ("outputs", fmt.Sprintf("%q", c.Outputs), fmt.Sprintf("%q", f.Outputs))
	}
	switch {
	case c.Reader == nil && f.Reader != nil:
		return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: it has no reader, this pipeline has reader %q", f.Reader.Name)
	case c.Reader != nil && f.Reader == nil:
		return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: it has reader %q, this pipeline has none", c.Reader.Name)
	case c.Reader != nil:
		if err := c.Reader.matches(f.Reader, differ); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.OtherReaders) {
		fr, ok := f.OtherReaders[name]
		if !ok {
			return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: it has reader %q, this pipeline has not", name)
		}
		if err := c.OtherReaders[name].matches(fr, differ); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(f.OtherReaders) {
		if _, ok := c.OtherReaders[name]; !ok {
			return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: this pipeline has reader %q, the checkpoint's has not", name)
		}
	}
	for _, name := range sortedKeys(c.Nodes) {
		d, ok := f.Nodes[name]
		if !ok {
			return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: it has node %q, this pipeline has not", name)
		}
		if d != c.Nodes[name] {
			return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: node %q differs (operator, device, inputs, outputs or arguments)", name)
		}
	}
	for _, name := range sortedKeys(f.Nodes) {
		if _, ok := c.Nodes[name]; !ok {
			return Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: this pipeline has node %q, the checkpoint's has not", name)
		}
	}
	if c.digest() != c.Digest {
		return checkpointErr("the pipeline fingerprint does not match its digest (the document was edited or is corrupt)")
	}
	return nil
}

// matches compares a checkpoint's reader (c) with this pipeline's (f).
func (c *readerFingerprint) matches(f *readerFingerprint, differ func(what string, ckpt, here any) error) error {
	if c.Name != f.Name || c.Op != f.Op {
		return differ("the reader", fmt.Sprintf("%q (%s)", c.Name, c.Op), fmt.Sprintf("%q (%s)", f.Name, f.Op))
	}
	keys := map[string]bool{}
	for k := range c.Args {
		keys[k] = true
	}
	for k := range f.Args {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		if readerArgsIgnored[k] {
			continue
		}
		a, b := compactJSON(c.Args[k]), compactJSON(f.Args[k])
		if a == b {
			continue
		}
		what := fmt.Sprintf("argument %q of reader %q", k, f.Name)
		ca, fa := locations(c.Args[k]), locations(f.Args[k])
		if ca == nil || fa == nil {
			return differ(what, orUnset(a), orUnset(b))
		}
		if reflect.DeepEqual(ca, fa) {
			continue // the same objects, other credentials or signatures
		}
		err := differ(what, jsonText(ca), jsonText(fa))
		cl, cok := ca.([]any)
		fl, fok := fa.([]any)
		switch {
		case cok && fok && len(cl) != len(fl):
			err = Errorf(StatusInvalidArgument, "checkpoint is from a different pipeline: %s has %d entries in the checkpoint, %d in this pipeline", what, len(cl), len(fl))
		case cok && fok:
			for i := range cl {
				if !reflect.DeepEqual(cl[i], fl[i]) {
					err = differ(fmt.Sprintf("entry %d of %s", i, what), jsonText(cl[i]), jsonText(fl[i]))
					break
				}
			}
		}
		if hasURL(ca) || hasURL(fa) {
			e := err.(*Error)
			e.Msg += " (URLs are compared without their credentials and signatures)"
		}
		return err
	}
	return nil
}

// mapURLs applies f to the URLs (source.IsURL) among an argument's values: a string or
// a list of strings. Other values and strings are returned as they are.
func mapURLs(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		if source.IsURL(v) {
			return f(v)
		}
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = mapURLs(s, f).(string)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = mapURLs(s, f)
		}
		return out
	}
	return v
}

// locations decodes a checkpoint's argument value with its URLs replaced by their
// Locations (source.Location); nil if it is not JSON.
func locations(raw json.RawMessage) any {
	var v any
	if raw == nil || json.Unmarshal(raw, &v) != nil || v == nil {
		return nil
	}
	return mapURLs(v, source.Location)
}

func hasURL(v any) bool {
	switch v := v.(type) {
	case string:
		return source.IsURL(v)
	case []any:
		for _, s := range v {
			if hasURL(s) {
				return true
			}
		}
	}
	return false
}

// jsonText is v as JSON, with & < > as they are (URLs stay readable).
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

func compactJSON(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

func describeMode(m string) string {
	if m == SourceModeStream {
		return "runs as one continuous stream across epochs (pad_last_batch=false)"
	}
	return "starts every epoch at its shard's beginning"
}

// checkSourceState compares the reader state a checkpoint saved (want) with what this
// pipeline's reader computes (got) for batch iteration of epoch.
func checkSourceState(reader string, want *SourceState, got SourceState, epoch, iteration int64, endOfEpoch bool, seed uint64, batchSize int) error {
	where := fmt.Sprintf("reader %q", reader)
	if want.Epoch != epoch || want.Position != iteration*int64(batchSize) {
		return checkpointErr("state: %s is at epoch %d position %d, which is not batch %d of epoch %d (corrupt document)", where, want.Epoch, want.Position, iteration, epoch)
	}
	if want.NumFiles != got.NumFiles {
		return checkpointErr("the data set changed: %s lists %d files, the checkpoint's listed %d", where, got.NumFiles, want.NumFiles)
	}
	if want.FilesDigest != got.FilesDigest {
		return checkpointErr("the data set changed: %s lists %d files as the checkpoint's did, but their names or labels differ", where, got.NumFiles)
	}
	if want.EpochLength != got.EpochLength {
		return checkpointErr("state: %s reads %d samples per epoch, the checkpoint says %d (corrupt document)", where, got.EpochLength, want.EpochLength)
	}
	if want.Mode != got.Mode {
		return checkpointErr("state: %s %s, but the checkpoint's %s; the checkpoint cannot be resumed exactly (a checkpoint saved before godali's readers ran as a continuous stream without pad_last_batch resumes only with pad_last_batch=true)", where, describeMode(got.Mode), describeMode(want.Mode))
	}
	batches := (int64(got.EpochLength) + int64(batchSize) - 1) / int64(batchSize)
	if got.Mode == SourceModeStream {
		if want.StreamStart != got.StreamStart || want.EpochBatches != got.EpochBatches {
			return checkpointErr("state: %s starts epoch %d at stream position %d with %d batches, the checkpoint says position %d with %d batches (corrupt document)", where, epoch, got.StreamStart, got.EpochBatches, want.StreamStart, want.EpochBatches)
		}
		batches = got.EpochBatches
	}
	if iteration > batches {
		return checkpointErr("state: %s: iteration %d is past the end of the epoch (%d batches)", where, iteration, batches)
	}
	if endOfEpoch && iteration != batches {
		return checkpointErr("state: end_of_epoch with iteration %d, but the epoch has %d batches", iteration, batches)
	}
	if want.Shard != got.Shard {
		return checkpointErr("state: %s reads shard %d in epoch %d, the checkpoint says %d", where, got.Shard, epoch, want.Shard)
	}
	if want.OrderDigest != got.OrderDigest {
		return checkpointErr("state: %s orders epoch %d differently from the checkpoint's reader (seed %d)", where, epoch, seed)
	}
	return nil
}
