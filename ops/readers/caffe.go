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
