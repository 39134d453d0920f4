package readers

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats"
	"github.com/godali/godali/formats/npy"
	"github.com/godali/godali/source"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.numpy",
		Doc: "Reads .npy files (numpy.save): from file_root (every file below it matching file_filter, " +
			"sorted), a file_list of paths, or files. Outputs each array with its dtype and shape in C order " +
			"(Fortran-ordered files are transposed, big-endian ones swapped). Every file must have the dtype " +
			"and number of dimensions of the first one.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Doc: "directory searched recursively (or the root of relative paths in files / file_list)"},
			{Name: "files", Type: engine.ArgStringList, Doc: "explicit list of .npy paths (relative to file_root if given)"},
			{Name: "file_list", Type: engine.ArgString, Doc: "text file with one path per line, relative to file_root (or to the list's directory)"},
			{Name: "file_filter", Type: engine.ArgString, Default: "*.npy", Doc: "glob pattern matched against file names below file_root"},
			ShuffleAfterEpochArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.numpy", "cpu", newNumpyReader)
}

type numpyReader struct {
	Base
	src   source.Source
	dtype engine.DType // of the first file: every sample must have it
	ndim  int
	typed bool
}

func newNumpyReader(a *engine.Args) (engine.Operator, error) {
	r := &numpyReader{src: source.Local{}}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	n := 0
	for _, k := range []string{"files", "file_list"} {
		if a.Has(k) {
			n++
		}
	}
	if n == 0 && a.Has("file_root") {
		n = 1
	}
	if n != 1 {
		return nil, a.Errorf("file_root", "give exactly one of file_root (a directory tree), file_list, or files")
	}
	if root := a.String("file_root"); root != "" {
		r.DigestPath = func(p string) string {
			if rel, err := filepath.Rel(root, p); err == nil {
				return rel
			}
			return p
		}
	}
	return r, nil
}

// npyDType maps a numpy dtype to godali's element types.
func npyDType(d npy.DType) (engine.DType, error) {
	switch {
	case d.Kind == 'b':
		return engine.Bool, nil
	case d.Kind == 'u' && d.Size == 1:
		return engine.UInt8, nil
	case d.Kind == 'i' && d.Size == 1:
		return engine.Int8, nil
	case d.Kind == 'i' && d.Size == 4:
		return engine.Int32, nil
	case d.Kind == 'i' && d.Size == 8:
		return engine.Int64, nil
	case d.Kind == 'f' && d.Size == 2:
		return engine.Float16, nil
	case d.Kind == 'f' && d.Size == 4:
		return engine.Float32, nil
	case d.Kind == 'f' && d.Size == 8:
		return engine.Float64, nil
	}
	return 0, fmt.Errorf("numpy dtype %s has no godali tensor type (supported: bool, uint8, int8, int32, int64, float16, float32, float64)", d)
}

// Infer lists the files and reads the first one's header: the output's dtype and number
// of dimensions are the data set's.
func (r *numpyReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if err := r.Open(); err != nil {
		return nil, err
	}
	if !r.typed {
		a := r.Args()
		first := r.Samples()[0].Path
		h, err := r.header(first)
		if err != nil {
			return nil, engine.Errorf(engine.StatusData, "%s: %s: %v", engine.Describe(a.Node, a.Schema.Name), first, err)
		}
		if r.dtype, err = npyDType(h.DType); err != nil {
			return nil, engine.Errorf(engine.StatusData, "%s: %s: %v", engine.Describe(a.Node, a.Schema.Name), first, err)
		}
		r.ndim, r.typed = len(h.Shape), true
	}
	shape := make([]int, r.ndim)
	for i := range shape {
		shape[i] = -1
	}
	return []engine.TensorMeta{{DType: r.dtype, Shape: shape}}, nil
}

func (r *numpyReader) header(path string) (npy.Header, error) {
	f, err := r.src.Open(path)
	if err != nil {
		return npy.Header{}, sampleError(err)
	}
	defer f.Close()
	return npy.ParseHeader(f, f.Size())
}

func (r *numpyReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.Args()
	root := a.String("file_root")
	bad := func(arg, p string, err error) error {
		return engine.Errorf(engine.StatusInvalidArgument, "%s: argument %q: %q cannot be read: %v", engine.Describe(a.Node, a.Schema.Name), arg, p, err)
	}
	var paths []string
	switch {
	case a.Has("files"):
		for _, f := range a.Strings("files") {
			if root != "" && !filepath.IsAbs(f) {
				f = filepath.Join(root, f)
			}
			paths = append(paths, f)
		}
	case a.Has("file_list"):
		list := a.String("file_list")
		f, err := os.Open(list)
		if err != nil {
			return bad("file_list", list, err)
		}
		base := root
		if base == "" {
			base = filepath.Dir(list)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			s := strings.TrimSpace(sc.Text())
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			if !filepath.IsAbs(s) {
				s = filepath.Join(base, s)
			}
			paths = append(paths, s)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return bad("file_list", list, err)
		}
	default:
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return bad("file_root", root, err)
		}
		filter := a.String("file_filter")
		if _, err := filepath.Match(filter, ""); err != nil {
			return a.Errorf("file_filter", "bad glob %q: %v", filter, err)
		}
		err := r.src.Walk(root, func(p string) error {
			if ok, _ := filepath.Match(filter, filepath.Base(p)); ok {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return &engine.Error{Status: engine.StatusData, Msg: engine.Describe(a.Node, a.Schema.Name) + ": file_root", Err: err}
		}
		sort.Strings(paths)
	}
	entries := make([]engine.SampleRef, len(paths))
	for i, p := range paths {
		entries[i] = engine.SampleRef{Path: p}
	}
	return r.SetSamples(entries, ".npy files")
}

type numpyState struct {
	f   source.File
	h   npy.Header
	raw []byte // Fortran-ordered data before the transpose
}

func (r *numpyReader) NewWorkerState() any { return &numpyState{} }

func (st *numpyState) Close() {
	if st.f != nil {
		st.f.Close()
		st.f = nil
	}
}

func (r *numpyReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*numpyState)
	st.Close() // Run was not reached for the previous sample
	f, err := r.src.Open(ws.Ref.Path)
	if err != nil {
		return sampleError(err)
	}
	if max := ws.Limits.MaxFileBytes; max > 0 && f.Size() > max {
		f.Close()
		return engine.Errorf(engine.StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", f.Size(), max)
	}
	h, err := npy.ParseHeader(f, f.Size())
	if err != nil {
		f.Close()
		return dataError(err)
	}
	dt, err := npyDType(h.DType)
	if err == nil && (dt != r.dtype || len(h.Shape) != r.ndim) {
		err = fmt.Errorf("array of %s with %d dimensions %v; the data set's arrays (from its first file) are %s with %d dimensions", dt, len(h.Shape), h.Shape, r.dtype, r.ndim)
	}
	if err != nil {
		f.Close()
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	st.f, st.h = f, h
	shape := ws.Out[0].Shape[:0]
	for _, d := range h.Shape {
		shape = append(shape, int(d))
	}
	ws.Out[0].Shape = shape
	return nil
}

func (r *numpyReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*numpyState)
	defer st.Close()
	out := ws.Out[0].Data
	dst := out
	if st.h.Fortran {
		if cap(st.raw) < len(out) {
			st.raw = make([]byte, len(out))
		}
		dst = st.raw[:len(out)]
	}
	if _, err := npy.ReadData(st.f, st.f.Size(), st.h, dst); err != nil {
		return dataError(err)
	}
	if st.h.DType.BigEndian {
		npy.SwapBytes(dst, st.h.DType.Size)
	}
	if st.h.Fortran {
		return npy.FortranToC(out, dst, st.h.Shape, st.h.DType.Size)
	}
	return nil
}

// dataError makes a malformed-data error from a formats parser a data error; read
// errors keep their cause.
func dataError(err error) error {
	if errors.Is(err, formats.ErrMalformed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	return sampleError(err)
}
