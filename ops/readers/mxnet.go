package readers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/recordio"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.mxnet",
		Doc: "Reads MXNet RecordIO files (path: .rec files, index_path: their .idx files, in the same " +
			"order), records in index order. Outputs the record's data (uint8, 1-D: the encoded image of " +
			"mxnet.recordio.pack_img) and its label (float32: [1], or the label array when the header's flag is > 0).",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "path", Type: engine.ArgStringList, Required: true, Doc: ".rec files"},
			{Name: "index_path", Type: engine.ArgStringList, Required: true, Doc: ".idx files (mxnet's MXIndexedRecordIO index), one per .rec file"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.mxnet", "cpu", newMXNetReader)
}

type mxRecord struct {
	file int
	rec  recordio.Record
}

type mxnetReader struct {
	Base
	src     source.Source
	paths   []string
	records []mxRecord
	sizes   []int64 // of each .rec file when listed
	mu      sync.Mutex
	files   []source.File // opened on first use, shared by the workers
}

func newMXNetReader(a *engine.Args) (engine.Operator, error) {
	r := &mxnetReader{src: source.Local{}}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	r.paths = a.Strings("path")
	if len(r.paths) == 0 {
		return nil, a.Errorf("path", "needs at least one .rec file")
	}
	if n := len(a.Strings("index_path")); n != len(r.paths) {
		return nil, a.Errorf("index_path", "has %d entries but path has %d (one .idx per .rec)", n, len(r.paths))
	}
	return r, nil
}

func (r *mxnetReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: engine.UInt8, Shape: []int{-1}}, {DType: engine.Float32, Shape: []int{-1}}}, nil
}

func (r *mxnetReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.Args()
	var entries []engine.SampleRef
	r.records, r.sizes = nil, nil
	for i, p := range r.paths {
		size, err := r.src.Stat(p)
		if err != nil {
			return unreadable(a, "path", p, err)
		}
		idx := a.Strings("index_path")[i]
		b, err := source.ReadFile(r.src, idx, 0)
		if err != nil {
			return unreadable(a, "index_path", idx, err)
		}
		ie, err := recordio.ReadIndex(bytes.NewReader(b))
		var recs []recordio.Record
		var keys []string
		if err == nil {
			recs, keys, err = recordio.Extents(ie, size)
		}
		if err != nil {
			return listErrorf(a, "%s: %v", idx, err)
		}
		for j, rec := range recs {
			r.records = append(r.records, mxRecord{file: i, rec: rec})
			entries = append(entries, engine.SampleRef{Path: fmt.Sprintf("%s[%s]", p, keys[j])})
		}
		r.sizes = append(r.sizes, size)
	}
	r.files = make([]source.File, len(r.paths))
	return r.SetSamples(entries, "records")
}

func (r *mxnetReader) file(i int) (source.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files[i] == nil {
		f, err := r.src.Open(r.paths[i])
		if err != nil {
			return nil, err
		}
		r.files[i] = f
	}
	return r.files[i], nil
}

// Close releases the open .rec files (the executor calls it when the pipeline closes).
func (r *mxnetReader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, f := range r.files {
		if f != nil {
			f.Close()
			r.files[i] = nil
		}
	}
}

type mxnetState struct {
	payload []byte
	labels  []float32
	data    []byte
}

func (r *mxnetReader) NewWorkerState() any { return &mxnetState{} }

func (r *mxnetReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*mxnetState)
	m := r.records[ws.Ref.Index]
	if max := ws.Limits.MaxFileBytes; max > 0 && m.rec.Size > max {
		return engine.Errorf(engine.StatusData, "record is %d bytes, more than max_file_bytes=%d", m.rec.Size, max)
	}
	f, err := r.file(m.file)
	if err != nil {
		return sampleError(err)
	}
	st.payload, err = recordio.ReadRecord(f, min(f.Size(), r.sizes[m.file]), m.rec, st.payload)
	if err != nil {
		return dataError(err)
	}
	if _, st.labels, st.data, err = recordio.Unpack(st.payload); err != nil {
		return dataError(err)
	}
	ws.Out[0].SetShape(len(st.data))
	if len(ws.Out) > 1 {
		ws.Out[1].SetShape(len(st.labels))
	}
	return nil
}

func (r *mxnetReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*mxnetState)
	copy(ws.Out[0].Data, st.data)
	if len(ws.Out) > 1 {
		for i, l := range st.labels {
			binary.LittleEndian.PutUint32(ws.Out[1].Data[4*i:], math.Float32bits(l))
		}
	}
	return nil
}
