package external

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "io.file.read",
		Doc: "Reads the file named by each sample of its input (DALI's fn.io.file.read): the input " +
			"is the path's bytes (uint8 or int8, 1-D, e.g. from external_source); the output is the " +
			"file's bytes (uint8, 1-D). Files above the pipeline's max_file_bytes and anything " +
			"but regular files are refused; errors name the file.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"data"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "dont_use_mmap", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; files are always read, not mapped"},
			{Name: "use_o_direct", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
		},
	})
	engine.RegisterBackend("io.file.read", "cpu", func(a *engine.Args) (engine.Operator, error) {
		return &fileRead{src: source.Local{}}, nil
	})
}

type fileRead struct {
	src source.Source
}

type fileReadState struct {
	f    source.File
	path string
}

func (r *fileRead) NewWorkerState() any { return &fileReadState{} }

func (r *fileRead) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m := in[0]
	if (m.DType != engine.UInt8 && m.DType != engine.Int8) || (m.Shape != nil && len(m.Shape) != 1) {
		return nil, fmt.Errorf("input must be 1-D uint8 or int8 path bytes, got %s with shape %v", m.DType, m.Shape)
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Shape: []int{-1}}}, nil
}

func (r *fileRead) Setup(ws *engine.Workspace) error {
	st := ws.State.(*fileReadState)
	if st.f != nil { // Run was not reached for the previous sample
		st.f.Close()
		st.f = nil
	}
	in := ws.In[0]
	if len(in.Shape) != 1 {
		return engine.Errorf(engine.StatusData, "path input must be 1-D, got shape %v", in.Shape)
	}
	raw := in.Data[:in.Shape[0]]
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		raw = raw[:i] // a C string's terminator and what follows
	}
	path := string(raw)
	st.path = path
	if path == "" {
		return engine.Errorf(engine.StatusData, "empty file path")
	}
	f, err := r.src.Open(path)
	if err != nil {
		return readError(path, err)
	}
	if max := ws.Limits.MaxFileBytes; max > 0 && f.Size() > max {
		f.Close()
		return engine.Errorf(engine.StatusData, "file %q is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", path, f.Size(), max)
	}
	st.f = f
	ws.Out[0].SetShape(int(f.Size()))
	return nil
}

func (r *fileRead) Run(ws *engine.Workspace) error {
	st := ws.State.(*fileReadState)
	defer func() { st.f.Close(); st.f = nil }()
	buf := ws.Out[0].Data
	if n, err := st.f.ReadAt(buf, 0); n < len(buf) {
		if err == io.EOF {
			return engine.Errorf(engine.StatusData, "file %q shrank while reading (%d of %d bytes)", st.path, n, len(buf))
		}
		return readError(st.path, err)
	}
	return nil
}

func readError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, source.ErrNotRegular) {
		return engine.Errorf(engine.StatusData, "file %q: %v", path, err)
	}
	return &engine.Error{Status: engine.StatusData, Msg: fmt.Sprintf("cannot read file %q", path), Err: err}
}

// Close closes a file left open by a Setup whose Run never came.
func (s *fileReadState) Close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
