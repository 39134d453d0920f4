package readers

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/tfrecord"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.tfrecord",
		Doc: "Reads tf.train.Example records from TFRecord files. features describes one output per feature " +
			"(a JSON list of {\"name\", \"kind\": \"fixed\"|\"var\", \"dtype\": \"int64\"|\"float32\"|\"string\", " +
			"\"shape\", \"partial_shape\", \"default\"}; godali.tfrecord builds it from DALI's features dict). " +
			"int64 features give INT64 tensors, float32 FLOAT, string the bytes (uint8, 1-D).",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"out0"}, VariableOutputs: true, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "path", Type: engine.ArgStringList, Required: true, Doc: "the TFRecord files (local paths, s3://, az://, gs:// or http(s):// URLs)"},
			{Name: "index_path", Type: engine.ArgStringList, Doc: "one index file (tfrecord2idx: \"offset size\" lines) per file; without them the files are scanned"},
			{Name: "features", Type: engine.ArgString, Required: true, Doc: "the features to extract, in output order (JSON, see the operator's doc)"},
			{Name: "verify_crc", Type: engine.ArgBool, Default: false, Doc: "check every record's CRCs"},
			ShuffleAfterEpochArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.tfrecord", "cpu", newTFRecordReader)
}

// featureJSON is one feature of the features argument.
type featureJSON struct {
	Name         string          `json:"name"`
	Kind         string          `json:"kind"`
	DType        string          `json:"dtype"`
	Shape        []int64         `json:"shape"`
	PartialShape []int64         `json:"partial_shape"`
	Default      json.RawMessage `json:"default"`
}

type tfFeature struct {
	name string
	spec tfrecord.FeatureSpec
}

// parseFeatures parses the features argument.
func parseFeatures(s string) ([]tfFeature, error) {
	var list []featureJSON
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("expected a JSON list of features: %v", err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("names no feature")
	}
	seen := map[string]bool{}
	var out []tfFeature
	for i, f := range list {
		if f.Name == "" || seen[f.Name] {
			return nil, fmt.Errorf("feature %d: name %q is empty or repeated", i, f.Name)
		}
		seen[f.Name] = true
		var dt tfrecord.DType
		var def any
		switch f.DType {
		case "int64":
			dt, def = tfrecord.Int64, int64(0)
		case "float32":
			dt, def = tfrecord.Float32, float64(0)
		case "string":
			dt, def = tfrecord.String, ""
		default:
			return nil, fmt.Errorf("feature %q: dtype %q; expected int64, float32 or string", f.Name, f.DType)
		}
		if len(f.Default) > 0 && string(f.Default) != "null" {
			var err error
			switch dt {
			case tfrecord.Int64:
				var v int64
				err = json.Unmarshal(f.Default, &v)
				def = v
			case tfrecord.Float32:
				var v float64
				err = json.Unmarshal(f.Default, &v)
				def = v
			default:
				var v string
				err = json.Unmarshal(f.Default, &v)
				def = v
			}
			if err != nil {
				return nil, fmt.Errorf("feature %q: default %s does not suit dtype %s", f.Name, f.Default, f.DType)
			}
		}
		var spec tfrecord.FeatureSpec
		var err error
		switch f.Kind {
		case "fixed":
			spec, err = tfrecord.FixedLenFeature(f.Shape, dt, def)
		case "var":
			spec, err = tfrecord.VarLenFeature(dt, def, f.PartialShape...)
		default:
			return nil, fmt.Errorf("feature %q: kind %q; expected \"fixed\" or \"var\"", f.Name, f.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("feature %q: %v", f.Name, err)
		}
		out = append(out, tfFeature{name: f.Name, spec: spec})
	}
	return out, nil
}

type tfSample struct {
	file int
	rec  tfrecord.Record
}

type tfrecordReader struct {
	Base
	args     *engine.Args
	paths    []string
	index    []string
	features []tfFeature
	verify   bool
	samples  []tfSample
	io       *readerIO
	remote   bool // some files are remote: fetch records ahead
}

func newTFRecordReader(a *engine.Args) (engine.Operator, error) {
	r := &tfrecordReader{args: a, paths: a.Strings("path"), index: a.Strings("index_path"), verify: a.Bool("verify_crc")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	if len(r.paths) == 0 {
		return nil, a.Errorf("path", "give at least one TFRecord file")
	}
	r.DigestPath = memberDigest(r.paths)
	if len(r.index) != 0 && len(r.index) != len(r.paths) {
		return nil, a.Errorf("index_path", "has %d entries; give none or one per file (path has %d)", len(r.index), len(r.paths))
	}
	var err error
	if r.features, err = parseFeatures(a.String("features")); err != nil {
		return nil, a.Errorf("features", "%v", err)
	}
	if r.io, err = newReaderIO(a); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *tfrecordReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := make([]engine.TensorMeta, len(r.features))
	for i, f := range r.features {
		s := f.spec
		switch {
		case s.DType == tfrecord.String:
			out[i] = engine.TensorMeta{DType: engine.UInt8, Shape: []int{-1}}
		case s.VarLen:
			shape := []int{-1}
			for _, d := range s.PartialShape {
				shape = append(shape, int(d))
			}
			out[i] = engine.TensorMeta{DType: tfDType(s.DType), Shape: shape}
		default:
			shape := []int{1}
			if len(s.Shape) > 0 {
				shape = shape[:0]
				for _, d := range s.Shape {
					shape = append(shape, int(d))
				}
			}
			out[i] = engine.TensorMeta{DType: tfDType(s.DType), Shape: shape}
		}
	}
	return out, nil
}

func tfDType(d tfrecord.DType) engine.DType {
	switch d {
	case tfrecord.Int64:
		return engine.Int64
	case tfrecord.Float32:
		return engine.Float32
	}
	return engine.UInt8
}

func (r *tfrecordReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	var entries []engine.SampleRef
	var samples []tfSample
	for fi, p := range r.paths {
		size, err := r.io.size(p)
		if err != nil {
			return unreadable(a, "path", p, err)
		}
		var recs []tfrecord.Record
		if len(r.index) > 0 {
			b, err := r.io.readAll(r.index[fi], 1<<30)
			if err != nil {
				return unreadable(a, "index_path", r.index[fi], err)
			}
			if recs, err = tfrecord.ReadIndex(bytes.NewReader(b)); err == nil {
				err = tfrecord.CheckIndex(recs, size)
			}
			if err != nil {
				return listErrorf(a, "index %s of %s: %v", r.index[fi], p, err)
			}
		} else {
			f, err := r.io.open(p)
			if err != nil {
				return unreadable(a, "path", p, err)
			}
			recs, err = tfrecord.Records(scanner(p, f), size, false)
			f.Close()
			if err != nil {
				return listErrorf(a, "%s: %v", p, err)
			}
		}
		for i, rec := range recs {
			samples = append(samples, tfSample{file: fi, rec: rec})
			entries = append(entries, engine.SampleRef{Path: fmt.Sprintf("%s:record %d", p, i)})
		}
	}
	if err := r.SetSamples(entries, "records"); err != nil {
		return err
	}
	r.samples = samples
	for _, p := range r.paths {
		r.remote = r.remote || remote.IsRemote(p)
	}
	return nil
}

func (r *tfrecordReader) recKey(i int) string {
	s := &r.samples[i]
	return fmt.Sprintf("%s@%d+%d", r.paths[s.file], s.rec.Offset, s.rec.Size)
}

// Close stops the reader's remote requests (engine.Closer: the pipeline is destroyed).
func (r *tfrecordReader) Close() { r.io.close() }

// Interrupt makes the reader's remote requests in flight return (engine.Interrupter).
func (r *tfrecordReader) Interrupt() { r.io.interrupt() }

// NextBatch plans the batch and starts fetching its records ahead when the files are
// remote.
func (r *tfrecordReader) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	valid, last, ok := r.Base.NextBatch(refs)
	if ok && r.remote {
		var reqs []rangeReq
		for _, ref := range refs {
			s := &r.samples[ref.Index]
			if s.rec.Size > 256<<20 {
				continue
			}
			reqs = append(reqs, rangeReq{key: r.recKey(ref.Index), path: r.paths[s.file], off: s.rec.Offset, n: s.rec.Size})
		}
		r.io.readAheadRanges(reqs)
	}
	return valid, last, ok
}

type tfState struct {
	files   *fileCache
	frame   []byte
	tensors []tfrecord.Tensor
}

func (s *tfState) Close() { s.files.Close() }

func (r *tfrecordReader) NewWorkerState() any {
	return &tfState{files: newFileCache(r.io), tensors: make([]tfrecord.Tensor, len(r.features))}
}

func (r *tfrecordReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*tfState)
	s := r.samples[ws.Ref.Index]
	if max := ws.Limits.MaxFileBytes; max > 0 && s.rec.Size > max {
		return engine.Errorf(engine.StatusData, "record is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", s.rec.Size, max)
	}
	if int64(cap(st.frame)) < s.rec.Size {
		st.frame = make([]byte, s.rec.Size)
	}
	frame := st.frame[:s.rec.Size]
	data, ahead, err := []byte(nil), false, error(nil)
	if r.remote {
		data, ahead, err = r.io.take(r.recKey(ws.Ref.Index))
		if err != nil {
			return sampleError(err)
		}
	}
	if ahead {
		frame = data
	} else if err := st.files.readAt(r.paths[s.file], frame, s.rec.Offset); err != nil {
		return err
	}
	payload, err := tfrecord.Payload(frame, s.rec.Offset, r.verify)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	ex, err := tfrecord.ParseExample(payload)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	for i, f := range r.features {
		t, err := f.spec.Extract(ex, f.name)
		if err != nil {
			return engine.Errorf(engine.StatusData, "%v", err)
		}
		st.tensors[i] = t
		dims := make([]int, len(t.Shape))
		for k, d := range t.Shape {
			dims[k] = int(d)
		}
		ws.Out[i].SetShape(dims...)
	}
	return nil
}

func (r *tfrecordReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*tfState)
	for i, t := range st.tensors {
		buf := ws.Out[i].Data
		switch t.DType {
		case tfrecord.String:
			copy(buf, t.Bytes)
		case tfrecord.Int64:
			for k, v := range t.Int64s {
				binary.LittleEndian.PutUint64(buf[8*k:], uint64(v))
			}
		case tfrecord.Float32:
			for k, v := range t.Floats {
				binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(v))
			}
		}
		st.tensors[i] = tfrecord.Tensor{} // the bytes alias the frame
	}
	return nil
}
