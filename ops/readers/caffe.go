package readers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/caffe"
	"github.com/godali/godali/formats/lmdb"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.caffe",
		Doc: "Reads a Caffe LMDB (path) of caffe.Datum records, in key order. Outputs, each when its " +
			"*_available argument is true: the image (uint8: the encoded bytes, 1-D, or [H, W, C] for a Datum " +
			"with encoded=false) and the label (int32, [1]).",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "path", Type: engine.ArgString, Required: true, Doc: "LMDB directory (or its data.mdb)"},
			{Name: "image_available", Type: engine.ArgBool, Default: true, Doc: "output the image"},
			{Name: "label_available", Type: engine.ArgBool, Default: true, Doc: "output the label"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.caffe", "cpu", newCaffeReader(false))
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.caffe2",
		Doc: "Reads a Caffe2 LMDB (path) of caffe2.TensorProtos records, in key order. Outputs, in order: the " +
			"image when image_available (uint8: a STRING proto's bytes, 1-D, or a BYTE proto as [H, W, C]), the " +
			"label unless label_type is 4 (0: one int32/float value, [1]; 1: sparse indices -> a [num_labels] " +
			"0/1 vector; 2: a dense vector; 3: sparse indices with weights in the next proto -> float " +
			"[num_labels]), then additional_inputs tensors (float, int32 or int64, 1-D), then the bbox ([4] int32) " +
			"when bbox is true.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label", "out2", "out3", "out4", "out5", "out6", "out7"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "path", Type: engine.ArgString, Required: true, Doc: "LMDB directory (or its data.mdb)"},
			{Name: "image_available", Type: engine.ArgBool, Default: true, Doc: "the first proto is the image"},
			{Name: "label_type", Type: engine.ArgInt, Default: 0, Doc: "0 single label, 1 multi-label sparse, 2 multi-label dense, 3 multi-label weighted sparse, 4 no label"},
			{Name: "num_labels", Type: engine.ArgInt, Default: 1, Doc: "length of the label vector for label_type 1 and 3"},
			{Name: "additional_inputs", Type: engine.ArgInt, Default: 0, Doc: "number of extra protos after the label, each an output"},
			{Name: "bbox", Type: engine.ArgBool, Default: false, Doc: "the proto after the additional inputs is a bounding box of 4 int32"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.caffe2", "cpu", newCaffeReader(true))
}

// Caffe2 label types (caffe2/image/image_input.h).
const (
	singleLabel = iota
	multiLabelSparse
	multiLabelDense
	multiLabelWeightedSparse
	noLabel
)

type caffeReader struct {
	Base
	caffe2    bool
	path      string
	image     bool
	label     bool // caffe: label_available; caffe2: label_type != 4
	labelType int
	numLabels int
	extra     int
	bbox      bool
	outs      []engine.TensorMeta
	db        *lmdb.DB
	recs      []lmdb.Record
}

func newCaffeReader(c2 bool) engine.Factory {
	return func(a *engine.Args) (engine.Operator, error) {
		r := &caffeReader{caffe2: c2, path: a.String("path"), image: a.Bool("image_available")}
		if err := r.Init(a); err != nil {
			return nil, err
		}
		if r.path == "" {
			return nil, a.Errorf("path", "needs the LMDB directory")
		}
		if !c2 {
			r.label = a.Bool("label_available")
		} else {
			r.labelType, r.numLabels, r.extra, r.bbox = a.Int("label_type"), a.Int("num_labels"), a.Int("additional_inputs"), a.Bool("bbox")
			if r.labelType < singleLabel || r.labelType > noLabel {
				return nil, a.Errorf("label_type", "must be 0 to 4, got %d", r.labelType)
			}
			if r.numLabels < 1 || r.numLabels > 1<<24 {
				return nil, a.Errorf("num_labels", "must be in [1, 2^24], got %d", r.numLabels)
			}
			if r.extra < 0 {
				return nil, a.Errorf("additional_inputs", "must be >= 0, got %d", r.extra)
			}
			r.label = r.labelType != noLabel
		}
		if r.image {
			// encoded bytes (1-D, as readers.file's); a caffe database of raw Datums
			// gives [H, W, C] (Infer reads the first record)
			r.outs = append(r.outs, engine.TensorMeta{DType: engine.UInt8, Shape: []int{-1}})
		}
		if r.label {
			m := engine.TensorMeta{DType: engine.Int32, Shape: []int{1}}
			if c2 {
				m = engine.TensorMeta{DType: engine.DTypeInvalid, Shape: []int{-1}} // int32 or float: from the data
				if r.labelType == multiLabelWeightedSparse {
					m.DType = engine.Float32
				}
			}
			r.outs = append(r.outs, m)
		}
		for i := 0; i < r.extra; i++ {
			r.outs = append(r.outs, engine.TensorMeta{DType: engine.DTypeInvalid, Shape: []int{-1}})
		}
		if r.bbox {
			r.outs = append(r.outs, engine.TensorMeta{DType: engine.Int32, Shape: []int{4}})
		}
		if len(r.outs) == 0 {
			return nil, a.Errorf("image_available", "nothing to output: the image and the label are both off")
		}
		if len(r.outs) > len(a.Schema.Outputs) {
			return nil, a.Errorf("additional_inputs", "%d outputs in all; at most %d", len(r.outs), len(a.Schema.Outputs))
		}
		return r, nil
	}
}

// Infer gives the outputs the arguments select. Element types a Caffe2 database decides
// (labels, additional inputs) are read from its first record.
func (r *caffeReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	unknown := false
	for _, m := range r.outs {
		unknown = unknown || m.DType == engine.DTypeInvalid
	}
	if unknown {
		if err := r.Open(); err != nil {
			return nil, err
		}
		a := r.Args()
		v, err := r.db.Read(r.recs[0], nil, 0)
		var p caffe2Sample
		if err == nil {
			err = r.parse2(v, &p)
		}
		if err != nil {
			return nil, listErrorf(a, "%s, first record: %v", r.path, err)
		}
		for i := range r.outs {
			if r.outs[i].DType == engine.DTypeInvalid {
				r.outs[i].DType = p.outs[i].dtype
			}
		}
	}
	if !r.caffe2 && r.image {
		if err := r.Open(); err != nil {
			return nil, err
		}
		if len(r.recs) > 0 {
			a := r.Args()
			v, err := r.db.Read(r.recs[0], nil, 0)
			var p caffe2Sample
			if err == nil {
				err = r.parse1(v, &p)
			}
			if err != nil {
				return nil, engine.Errorf(engine.StatusData, "%s: %s, first record: %v", a.Where(), r.path, err)
			}
			if len(p.outs[0].shape) == 3 {
				r.outs[0].Shape, r.outs[0].Layout = []int{-1, -1, -1}, "HWC"
			}
		}
	}
	return r.outs, nil
}

func (r *caffeReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.Args()
	if _, err := os.Stat(r.path); err != nil {
		return unreadable(a, "path", r.path, err)
	}
	if r.db == nil {
		db, err := lmdb.Open(r.path)
		var pe *fs.PathError
		if errors.As(err, &pe) && (pe.Op == "open" || pe.Op == "stat") {
			return argPathErrorf(a, "path", r.path, "is not a readable LMDB database: %v", err)
		}
		if err != nil { // a malformed or unreadable data file: the message names it
			return listErrorf(a, "%v", err)
		}
		r.db = db
	}
	r.recs = r.db.Records()
	entries := make([]engine.SampleRef, len(r.recs))
	for i, rec := range r.recs {
		entries[i] = engine.SampleRef{Path: fmt.Sprintf("%s[%q]", r.path, rec.Key)}
	}
	return r.SetSamples(entries, "records in LMDB "+r.path)
}

// Close releases the database (the executor calls it when the pipeline closes).
func (r *caffeReader) Close() {
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

// caffe2Out is one output of a sample: its dtype, shape and little-endian bytes.
type caffe2Out struct {
	dtype engine.DType
	shape []int
	data  []byte
}

type caffe2Sample struct {
	value []byte
	outs  []caffe2Out
}

func (r *caffeReader) NewWorkerState() any { return &caffe2Sample{} }

func (r *caffeReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*caffe2Sample)
	if r.db == nil {
		return engine.Errorf(engine.StatusInternal, "database closed")
	}
	v, err := r.db.Read(r.recs[ws.Ref.Index], st.value, ws.Limits.MaxFileBytes)
	if err != nil {
		return dataError(err)
	}
	st.value = v
	if r.caffe2 {
		err = r.parse2(v, st)
	} else {
		err = r.parse1(v, st)
	}
	if err != nil {
		return dataError(err)
	}
	for i := range ws.Out {
		o := st.outs[i]
		if o.dtype != r.outs[i].DType {
			return engine.Errorf(engine.StatusData, "output %d is %s in this record, %s in the database's first record", i, o.dtype, r.outs[i].DType)
		}
		ws.Out[i].SetShape(o.shape...)
	}
	return nil
}

func (r *caffeReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*caffe2Sample)
	for i := range ws.Out {
		copy(ws.Out[i].Data, st.outs[i].data)
	}
	return nil
}

func (st *caffe2Sample) add(dt engine.DType, data []byte, shape ...int) {
	st.outs = append(st.outs, caffe2Out{dtype: dt, shape: shape, data: data})
}

// parse1 reads a caffe.Datum as DALI's Caffe parser does.
func (r *caffeReader) parse1(v []byte, st *caffe2Sample) error {
	st.outs = st.outs[:0]
	d, err := caffe.ParseDatum(v)
	if err != nil {
		return err
	}
	if r.image {
		if !d.HasData {
			return fmt.Errorf("caffe Datum has no data, and image_available is true")
		}
		if d.IsEncoded() {
			st.add(engine.UInt8, d.Data, len(d.Data))
		} else {
			h, w, c := int(d.Height), int(d.Width), int(d.Channels)
			if h < 0 || w < 0 || c < 0 || int64(h)*int64(w)*int64(c) != int64(len(d.Data)) {
				return fmt.Errorf("caffe Datum: raw data of %d bytes for height %d, width %d, channels %d", len(d.Data), h, w, c)
			}
			st.add(engine.UInt8, d.Data, h, w, c)
		}
	}
	if r.label {
		if !d.HasLabel {
			return fmt.Errorf("caffe Datum has no label, and label_available is true")
		}
		st.add(engine.Int32, binary.LittleEndian.AppendUint32(nil, uint32(d.Label)), 1)
	}
	return nil
}

// parse2 reads a caffe2.TensorProtos as DALI's Caffe2 parser does.
func (r *caffeReader) parse2(v []byte, st *caffe2Sample) error {
	st.outs = st.outs[:0]
	ps, err := caffe.ParseTensorProtos(v)
	if err != nil {
		return err
	}
	next := 0
	proto := func(what string) (*caffe.TensorProto, error) {
		if next >= len(ps) {
			return nil, fmt.Errorf("caffe2 TensorProtos has %d protos; the %s would be proto %d", len(ps), what, next)
		}
		next++
		return &ps[next-1], nil
	}
	if r.image {
		p, err := proto("image")
		if err != nil {
			return err
		}
		switch p.DataType {
		case caffe.String:
			if len(p.StringData) != 1 {
				return fmt.Errorf("caffe2 image proto: %d strings, want 1", len(p.StringData))
			}
			st.add(engine.UInt8, p.StringData[0], len(p.StringData[0]))
		case caffe.Byte:
			if len(p.Dims) != 2 && len(p.Dims) != 3 {
				return fmt.Errorf("caffe2 image proto: BYTE data with dims %v, want [H, W] or [H, W, C]", p.Dims)
			}
			c := int64(1)
			if len(p.Dims) == 3 {
				c = p.Dims[2]
			}
			h, w := p.Dims[0], p.Dims[1]
			if h < 0 || w < 0 || c < 0 || h > math.MaxInt32 || w > math.MaxInt32 || c > math.MaxInt32 || h*w*c != int64(len(p.ByteData)) {
				return fmt.Errorf("caffe2 image proto: %d bytes for dims %v", len(p.ByteData), p.Dims)
			}
			st.add(engine.UInt8, p.ByteData, int(h), int(w), int(c))
		default:
			return fmt.Errorf("caffe2 image proto has data type %d, want STRING (4, encoded) or BYTE (3, raw)", p.DataType)
		}
	}
	if r.label {
		p, err := proto("label")
		if err != nil {
			return err
		}
		if p.DataType != caffe.Int32 && p.DataType != caffe.Float {
			return fmt.Errorf("caffe2 label proto has data type %d, want INT32 (2) or FLOAT (1)", p.DataType)
		}
		isInt := p.DataType == caffe.Int32
		n := len(p.FloatData)
		if isInt {
			n = len(p.Int32Data)
		}
		at := func(i int) float64 {
			if isInt {
				return float64(p.Int32Data[i])
			}
			return float64(p.FloatData[i])
		}
		dt := engine.Float32
		if isInt {
			dt = engine.Int32
		}
		switch r.labelType {
		case singleLabel, multiLabelDense:
			if r.labelType == singleLabel && n != 1 {
				return fmt.Errorf("caffe2 label proto holds %d values; label_type 0 wants 1", n)
			}
			st.add(dt, numbers(dt, n, at), n)
		case multiLabelSparse, multiLabelWeightedSparse:
			var weights *caffe.TensorProto
			if r.labelType == multiLabelWeightedSparse {
				if weights, err = proto("label weights"); err != nil {
					return err
				}
				if len(weights.FloatData) != n {
					return fmt.Errorf("caffe2 label weights: %d floats for %d indices", len(weights.FloatData), n)
				}
				dt = engine.Float32
			}
			vec := make([]float64, r.numLabels)
			for i := 0; i < n; i++ {
				k := at(i)
				if k < 0 || k >= float64(r.numLabels) || k != math.Trunc(k) {
					return fmt.Errorf("caffe2 label index %v outside [0, num_labels=%d)", k, r.numLabels)
				}
				vec[int(k)] = 1
				if weights != nil {
					vec[int(k)] = float64(weights.FloatData[i])
				}
			}
			st.add(dt, numbers(dt, r.numLabels, func(i int) float64 { return vec[i] }), r.numLabels)
		}
	}
	for i := 0; i < r.extra; i++ {
		p, err := proto(fmt.Sprintf("additional input %d", i))
		if err != nil {
			return err
		}
		switch p.DataType {
		case caffe.Float:
			st.add(engine.Float32, numbers(engine.Float32, len(p.FloatData), func(j int) float64 { return float64(p.FloatData[j]) }), len(p.FloatData))
		case caffe.Int32:
			st.add(engine.Int32, numbers(engine.Int32, len(p.Int32Data), func(j int) float64 { return float64(p.Int32Data[j]) }), len(p.Int32Data))
		case caffe.Int64:
			b := make([]byte, 0, 8*len(p.Int64Data))
			for _, x := range p.Int64Data {
				b = binary.LittleEndian.AppendUint64(b, uint64(x))
			}
			st.add(engine.Int64, b, len(p.Int64Data))
		default:
			return fmt.Errorf("caffe2 additional input %d has data type %d, want FLOAT (1), INT32 (2) or INT64 (10)", i, p.DataType)
		}
	}
	if r.bbox {
		p, err := proto("bbox")
		if err != nil {
			return err
		}
		if p.DataType != caffe.Int32 || len(p.Int32Data) != 4 {
			return fmt.Errorf("caffe2 bbox proto: want 4 INT32 values, got data type %d with %d", p.DataType, len(p.Int32Data))
		}
		st.add(engine.Int32, numbers(engine.Int32, 4, func(j int) float64 { return float64(p.Int32Data[j]) }), 4)
	}
	return nil
}

// numbers writes n values as little-endian int32 or float32.
func numbers(dt engine.DType, n int, at func(int) float64) []byte {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		if dt == engine.Int32 {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(at(i))))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(at(i))))
		}
	}
	return b
}
