package readers

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.sequence",
		Doc: "Reads sequences of frames stored as image files (DALI's fn.readers.sequence): every " +
			"subdirectory of file_root is one stream, its files (sorted by name) its frames. The " +
			"samples are the sequences of sequence_length frames starting at frames 0, step, " +
			"2*step, ... that fit in a stream (no padding, no sequence across streams), decoded to " +
			"FHWC uint8 (image_type RGB or GRAY); all frames of a stream must have one size.",
		MinInputs: 0, MaxInputs: 0, IsReader: true, HostOnly: true, Outputs: []string{"frames"},
		Args: append([]engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Required: true, Doc: "directory of stream directories"},
			{Name: "sequence_length", Type: engine.ArgInt, Required: true, Doc: "frames per sequence"},
			{Name: "step", Type: engine.ArgInt, Default: 1, Doc: "frames between the starts of consecutive sequences"},
			{Name: "stride", Type: engine.ArgInt, Default: 1, Doc: "distance between consecutive frames of a sequence"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "RGB, BGR or GRAY"},
			{Name: "tensor_init_bytes", Type: engine.ArgInt, Default: 1048576, Doc: "accepted for DALI compatibility"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.sequence", "cpu", newSequenceReader)
}

type sequenceReader struct {
	Base
	args                 *engine.Args
	seqLen, step, stride int
	out                  codec.OutputType
	channels             int
	streams              [][]string // frame files per stream
	seqs                 []videoSeq // file: stream index
}

func newSequenceReader(a *engine.Args) (engine.Operator, error) {
	r := &sequenceReader{args: a, seqLen: a.Int("sequence_length"), step: a.Int("step"), stride: a.Int("stride")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	if r.seqLen < 1 {
		return nil, a.Errorf("sequence_length", "must be >= 1, got %d", r.seqLen)
	}
	if r.step < 1 {
		return nil, a.Errorf("step", "must be >= 1, got %d", r.step)
	}
	if r.stride < 1 {
		return nil, a.Errorf("stride", "must be >= 1, got %d", r.stride)
	}
	if err := a.CheckFrameArgs("sequence_length", "step", "stride"); err != nil {
		return nil, err
	}
	if err := a.CheckFrameSpan(0, r.seqLen, r.stride, "sequence_length", "stride"); err != nil {
		return nil, err
	}
	switch a.String("image_type") {
	case "RGB":
		r.out, r.channels = codec.RGB, 3
	case "BGR":
		r.out, r.channels = codec.BGR, 3
	case "GRAY":
		r.out, r.channels = codec.Gray, 1
	default:
		return nil, a.Errorf("image_type", "expected RGB, BGR or GRAY, got %s", a.String("image_type"))
	}
	r.DigestPath = relToRoot(a.String("file_root"))
	return r, nil
}

func (r *sequenceReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "FHWC", Shape: []int{r.seqLen, -1, -1, r.channels}}}, nil
}

func (r *sequenceReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	root := a.String("file_root")
	if err := checkDir(a, "file_root", root); err != nil {
		return err
	}
	refs, err := scanImageFolder(source.Local{}, root, []string{"*"}, nil, true)
	if err != nil {
		return listErrorf(a, "%v", err)
	}
	// scanImageFolder gives the files by stream (label), each stream's sorted.
	var samples []engine.SampleRef
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Label == refs[i].Label {
			j++
		}
		files := make([]string, 0, j-i)
		for _, ref := range refs[i:j] {
			files = append(files, ref.Path)
		}
		sort.Strings(files)
		si := len(r.streams)
		r.streams = append(r.streams, files)
		total := 1 + (r.seqLen-1)*r.stride
		for s := 0; s+total <= len(files); s += r.step {
			r.seqs = append(r.seqs, videoSeq{int32(si), int32(s), int32(r.seqLen)})
			samples = append(samples, engine.SampleRef{Path: files[s], Label: refs[i].Label})
		}
		i = j
	}
	if len(samples) == 0 {
		return listErrorf(a, "no sequence of %d frames (stride %d) fits in the %d streams of %s", r.seqLen, r.stride, len(r.streams), root)
	}
	return r.SetSamples(samples, "sequences")
}

type sequenceReaderState struct {
	dec  *codec.Decoder
	data []byte
	info codec.Info
}

func (s *sequenceReaderState) Close() { s.dec.Close() }

func (r *sequenceReader) NewWorkerState() any { return &sequenceReaderState{dec: codec.NewDecoder()} }

func (r *sequenceReader) options(ws *engine.Workspace) codec.Options {
	return codec.Options{Out: r.out, AdjustOrientation: true, MaxPixels: ws.Limits.MaxImagePixels}
}

// readFrame reads a frame file into the state's reusable buffer.
func (st *sequenceReaderState) readFrame(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if max > 0 && fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than max_file_bytes=%d", path, fi.Size(), max)
	}
	n := int(fi.Size())
	if cap(st.data) < n {
		st.data = make([]byte, n+n/4)
	}
	st.data = st.data[:n]
	if _, err := io.ReadFull(f, st.data); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return st.data, nil
}

func (r *sequenceReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*sequenceReaderState)
	seq := r.seqs[ws.Ref.Index]
	path := r.streams[seq.file][seq.start]
	data, err := st.readFrame(path, ws.Limits.MaxFileBytes)
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if st.info, err = st.dec.Probe(data); err != nil {
		return engine.Errorf(engine.StatusData, "%s: %v", path, err)
	}
	w, h, c, err := st.dec.OutputSize(data, st.info, r.options(ws))
	if err != nil {
		return engine.Errorf(engine.StatusData, "%s: %v", path, err)
	}
	ws.Out[0].SetShape(r.seqLen, h, w, c)
	return nil
}

func (r *sequenceReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*sequenceReaderState)
	seq := r.seqs[ws.Ref.Index]
	shape := ws.Out[0].Shape
	fb := shape[1] * shape[2] * shape[3]
	opt := r.options(ws)
	for k := 0; k < r.seqLen; k++ {
		path := r.streams[seq.file][int(seq.start)+k*r.stride]
		data, err := st.readFrame(path, ws.Limits.MaxFileBytes)
		if err != nil {
			return engine.Errorf(engine.StatusData, "%v", err)
		}
		info, err := st.dec.Probe(data)
		if err != nil {
			return engine.Errorf(engine.StatusData, "%s: %v", path, err)
		}
		w, h, c, err := st.dec.OutputSize(data, info, opt)
		if err != nil {
			return engine.Errorf(engine.StatusData, "%s: %v", path, err)
		}
		if w != shape[2] || h != shape[1] || c != shape[3] {
			return engine.Errorf(engine.StatusData, "%s: frame %d is %dx%dx%d, the sequence's first frame %dx%dx%d (a stream's frames must have one size)", path, k, h, w, c, shape[1], shape[2], shape[3])
		}
		if _, _, _, err := st.dec.Decode(data, info, opt, ws.Out[0].Data[k*fb:(k+1)*fb]); err != nil {
			return engine.Errorf(engine.StatusData, "%s: %v", path, err)
		}
	}
	return nil
}
