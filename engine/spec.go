package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Spec is a parsed pipeline description (docs/pipeline.md).
type Spec struct {
	BatchSize          int
	NumThreads         int
	DeviceID           *int
	PrefetchQueueDepth int
	// AutoThreads, AutoPrefetch: "auto" was given for num_threads / prefetch_queue_depth;
	// the pipeline chooses them (tuning.go) and NumThreads / PrefetchQueueDepth hold its
	// choice once it is made.
	AutoThreads  bool
	AutoPrefetch bool
	// Preallocate: "auto" (the default) scans the image headers of the decoders' local
	// files in the background and sizes their buffers from the largest (scan.go);
	// "off" does not.
	Preallocate bool
	// MaxHostBytes: Build fails when the memory plan's worst case is above it (0: no
	// budget; memplan.go).
	MaxHostBytes int64
	// SubBatchSize: the whole-batch stages (host-batch nodes such as python_function)
	// run on parts of this many samples, each part through every phase before the next
	// starts, and only the outputs are assembled whole (0: the whole batch; executor.go,
	// runParts).
	SubBatchSize   int
	Seed           int64
	MaxImagePixels int64
	MaxFileBytes   int64
	OnError        string
	// LastBatchPolicy: what the epoch's last batch holds when the epoch does not fill it
	// (DALI's LastBatchPolicy, in the engine so that C programs have it): "fill" (the
	// default: the batch is full, padded as pad_last_batch says; batch_info.valid counts
	// the epoch's samples), "partial" (only the epoch's samples: outputs and batch_info
	// have valid samples) or "drop" (the batch is not returned: the epoch ends before it).
	LastBatchPolicy string
	FirstEpoch      int64
	// EnableCheckpointing allows Checkpoint and Restore (DALI's enable_checkpointing).
	EnableCheckpointing bool
	// CheckpointedFeeds names the external source nodes whose position the feeder
	// records in checkpoints itself (godali's Python does, for a source called with the
	// iteration, BatchInfo or SampleInfo, as DALI): Checkpoint accepts a pipeline with
	// them, and a restored pipeline is fed from the position the feeder saved. Any other
	// external source makes Checkpoint fail.
	CheckpointedFeeds []string
	Nodes             []*NodeSpec
	Outputs           []string
}

// NodeSpec is one operator node as written.
type NodeSpec struct {
	Op        string                     `json:"op"`
	Name      string                     `json:"name"`
	Device    string                     `json:"device"`
	Inputs    []string                   `json:"inputs"`
	ArgInputs map[string]string          `json:"arg_inputs"`
	Outputs   []string                   `json:"outputs"`
	Args      map[string]json.RawMessage `json:"args"`
}

var topLevelKeys = []string{"batch_size", "num_threads", "device_id", "prefetch_queue_depth",
	"seed", "max_image_pixels", "max_file_bytes", "on_error", "first_epoch", "ops", "outputs",
	"last_batch_policy",
	"exec_pipelined", "exec_async", "enable_checkpointing", "checkpointed_feeds", "preallocate",
	"max_host_bytes", "sub_batch_size"}

var nodeKeys = []string{"op", "name", "device", "inputs", "arg_inputs", "outputs", "args"}

// DefaultMaxImagePixels refuses what PIL refuses (twice its warning threshold).
const DefaultMaxImagePixels = 178956970

// isAuto says whether a key's value is the string "auto" (num_threads,
// prefetch_queue_depth: the pipeline chooses).
func isAuto(raw json.RawMessage) bool {
	var v string
	return raw != nil && json.Unmarshal(raw, &v) == nil && v == "auto"
}

// ParseSpec parses and checks the top level of a pipeline description. Node arguments
// are checked when the graph is built.
func ParseSpec(data []byte) (*Spec, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		if msg := nonFiniteNumber(data, err); msg != "" {
			return nil, Errorf(StatusInvalidPipeline, "%s", msg)
		}
		return nil, Errorf(StatusInvalidPipeline, "pipeline description is not a JSON object: %v", err)
	}
	if top == nil {
		return nil, Errorf(StatusInvalidPipeline, "pipeline description is not a JSON object: got null")
	}
	// One JSON value, nothing after it but white space.
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, Errorf(StatusInvalidPipeline, "pipeline description: unexpected data after the JSON object at byte offset %d", end)
	}
	if err := checkKeys("pipeline", top, topLevelKeys); err != nil {
		return nil, err
	}
	s := &Spec{NumThreads: 4, PrefetchQueueDepth: 2, Seed: -1, MaxImagePixels: DefaultMaxImagePixels, MaxFileBytes: DefaultMaxFileBytes, OnError: "raise"}
	intKey := func(key string, dst *int64, required bool, min, max int64) error {
		raw, ok := top[key]
		if !ok {
			if required {
				return Errorf(StatusInvalidPipeline, "pipeline: missing required key %q", key)
			}
			return nil
		}
		v, err := toIntJSON(raw)
		if err != nil {
			return Errorf(StatusInvalidPipeline, "pipeline: key %q: %v", key, err)
		}
		if v < min {
			return Errorf(StatusInvalidPipeline, "pipeline: key %q must be >= %d, got %d", key, min, v)
		}
		if v > max {
			return Errorf(StatusInvalidPipeline, "pipeline: key %q must be <= %d, got %d", key, max, v)
		}
		*dst = v
		return nil
	}
	var bs, nt, pq int64 = 0, 4, 2
	if err := intKey("batch_size", &bs, true, 1, MaxBatchSize); err != nil {
		return nil, err
	}
	if s.AutoThreads = isAuto(top["num_threads"]); !s.AutoThreads {
		if err := intKey("num_threads", &nt, false, 1, MaxNumThreads); err != nil {
			return nil, err
		}
	}
	if s.AutoPrefetch = isAuto(top["prefetch_queue_depth"]); !s.AutoPrefetch {
		if err := intKey("prefetch_queue_depth", &pq, false, 1, MaxPrefetchQueueDepth); err != nil {
			return nil, err
		}
	}
	if err := intKey("seed", &s.Seed, false, -1<<62, math.MaxInt64); err != nil {
		return nil, err
	}
	if err := intKey("max_image_pixels", &s.MaxImagePixels, false, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	if err := intKey("max_file_bytes", &s.MaxFileBytes, false, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	if err := intKey("first_epoch", &s.FirstEpoch, false, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	if err := intKey("max_host_bytes", &s.MaxHostBytes, false, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	var sub int64
	if raw, ok := top["sub_batch_size"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		if err := intKey("sub_batch_size", &sub, false, 1, MaxBatchSize); err != nil {
			return nil, err
		}
	}
	s.BatchSize, s.NumThreads, s.PrefetchQueueDepth = int(bs), int(nt), int(pq)
	if sub > 0 && sub < bs {
		s.SubBatchSize = int(sub) // sub_batch_size >= batch_size: the whole batch
	}
	if raw, ok := top["device_id"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		var d int64
		if err := intKey("device_id", &d, false, 0, math.MaxInt32); err != nil {
			return nil, err
		}
		di := int(d)
		s.DeviceID = &di
	}
	if raw, ok := top["on_error"]; ok {
		if err := json.Unmarshal(raw, &s.OnError); err != nil || (s.OnError != "raise" && s.OnError != "skip") {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"on_error\" must be \"raise\" or \"skip\", got %s", raw)
		}
	}
	s.LastBatchPolicy = "fill"
	if raw, ok := top["last_batch_policy"]; ok {
		if err := json.Unmarshal(raw, &s.LastBatchPolicy); err != nil ||
			(s.LastBatchPolicy != "fill" && s.LastBatchPolicy != "partial" && s.LastBatchPolicy != "drop") {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"last_batch_policy\" must be \"fill\", \"partial\" or \"drop\", got %s", raw)
		}
	}
	s.Preallocate = true
	if raw, ok := top["preallocate"]; ok {
		var v string
		if json.Unmarshal(raw, &v) != nil || (v != "auto" && v != "off") {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"preallocate\" must be \"auto\" or \"off\", got %s", raw)
		}
		s.Preallocate = v == "auto"
	}
	if raw, ok := top["enable_checkpointing"]; ok {
		if json.Unmarshal(raw, &s.EnableCheckpointing) != nil {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"enable_checkpointing\" must be a bool, got %s", raw)
		}
	}
	if raw, ok := top["checkpointed_feeds"]; ok {
		if json.Unmarshal(raw, &s.CheckpointedFeeds) != nil {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"checkpointed_feeds\" must be a list of external source names, got %s", raw)
		}
	}
	for _, key := range []string{"exec_pipelined", "exec_async"} {
		if raw, ok := top[key]; ok {
			var b bool
			if json.Unmarshal(raw, &b) != nil {
				return nil, Errorf(StatusInvalidPipeline, "pipeline: key %q must be a bool, got %s", key, raw)
			}
		}
	}
	rawOps, ok := top["ops"]
	if !ok {
		return nil, Errorf(StatusInvalidPipeline, "pipeline: missing required key \"ops\" (a list of operator nodes)")
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(rawOps, &ops); err != nil {
		return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"ops\" must be a list of objects: %v", err)
	}
	for i, raw := range ops {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: ops[%d] is not an object: %v", i, err)
		}
		if err := checkKeys(fmt.Sprintf("ops[%d]", i), keys, nodeKeys); err != nil {
			return nil, err
		}
		n := &NodeSpec{}
		if err := json.Unmarshal(raw, n); err != nil {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: ops[%d]: %v", i, err)
		}
		if n.Op == "" {
			return nil, Errorf(StatusInvalidPipeline, "pipeline: ops[%d] has no \"op\"", i)
		}
		if n.Name == "" {
			n.Name = fmt.Sprintf("%s_%d", n.Op, i)
		}
		if n.Device == "" {
			n.Device = "cpu"
		}
		s.Nodes = append(s.Nodes, n)
	}
	rawOut, ok := top["outputs"]
	if !ok {
		return nil, Errorf(StatusInvalidPipeline, "pipeline: missing required key \"outputs\" (names of data nodes)")
	}
	if err := json.Unmarshal(rawOut, &s.Outputs); err != nil || len(s.Outputs) == 0 {
		return nil, Errorf(StatusInvalidPipeline, "pipeline: key \"outputs\" must be a non-empty list of data node names")
	}
	return s, nil
}

func checkKeys(where string, m map[string]json.RawMessage, valid []string) error {
	for k := range m {
		found := false
		for _, v := range valid {
			if k == v {
				found = true
				break
			}
		}
		if !found {
			sorted := append([]string(nil), valid...)
			sort.Strings(sorted)
			return Errorf(StatusInvalidPipeline, "%s: unknown key %q; valid: %s", where, k, strings.Join(sorted, ", "))
		}
	}
	return nil
}

func toIntJSON(raw json.RawMessage) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, err
	}
	return toInt(v)
}

// nonFiniteNumber explains a syntax error at a NaN or an infinity, which JSON does not
// have but Python's json.dumps writes for float("nan") and float("inf"): it names the
// key whose value holds it (the operator argument) and the node before it, if any.
func nonFiniteNumber(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) || se.Offset < 1 || se.Offset > int64(len(data)) {
		return ""
	}
	at := int(se.Offset) - 1
	rest := data[at:]
	if at > 0 && data[at-1] == '-' {
		at--
		rest = data[at:]
	}
	var word string
	for _, w := range []string{"NaN", "Infinity", "-Infinity", "inf", "-inf", "nan"} {
		if bytes.HasPrefix(rest, []byte(w)) {
			word = w
		}
	}
	if word == "" {
		return ""
	}
	before := data[:at]
	key := lastKey(before)
	where := "a value"
	if key != "" {
		where = fmt.Sprintf("argument %q", key)
	}
	if i := bytes.LastIndex(before, []byte(`"name"`)); i >= 0 {
		if name := firstString(before[i+len(`"name"`):]); name != "" {
			where += fmt.Sprintf(" of node %q", name)
		}
	}
	return fmt.Sprintf("pipeline description: %s is %s at byte %d: JSON has no NaN or infinity (Python's json.dumps writes them for non-finite floats); give a finite number", where, word, at)
}

// lastKey is the last object key ("key":) in b.
func lastKey(b []byte) string {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != ':' {
			continue
		}
		j := i - 1
		for j >= 0 && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
			j--
		}
		if j < 1 || b[j] != '"' {
			continue
		}
		k := bytes.LastIndexByte(b[:j], '"')
		if k < 0 {
			return ""
		}
		return string(b[k+1 : j])
	}
	return ""
}

// firstString is the first JSON string after a colon at the start of b.
func firstString(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return ""
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if len(b) == 0 || b[0] != '"' {
		return ""
	}
	if end := bytes.IndexByte(b[1:], '"'); end >= 0 {
		return string(b[1 : 1+end])
	}
	return ""
}
