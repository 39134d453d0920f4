package readers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats"
	"github.com/godali/godali/formats/npy"
	"github.com/godali/godali/ops/internal/npydtype"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.numpy",
		Doc: "Reads .npy files (numpy.save): from file_root (every file below it matching file_filter, " +
			"sorted), a file_list of paths, or files. Outputs each array with its dtype and shape in C order " +
			"(Fortran-ordered files are transposed, big-endian ones swapped). Every file must have the dtype " +
			"and number of dimensions of the first one. Paths may be s3://, az://, gs:// or http(s):// URLs. A region of interest " +
			"(roi_start / rel_roi_start with roi_end / rel_roi_end / roi_shape / rel_roi_shape, on roi_axes) reads " +
			"only that part of each array (its contiguous runs); out_of_bounds_policy says what a region leaving the " +
			"array does: error, trim_to_shape, or pad (with fill_value). Region bounds are rounded to the nearest " +
			"integer (halves away from zero), relative ones after scaling by the extent.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Doc: "directory searched recursively (or the root of relative paths in files / file_list)"},
			{Name: "files", Type: engine.ArgStringList, Doc: "explicit list of .npy paths (relative to file_root if given)"},
			{Name: "file_list", Type: engine.ArgString, Doc: "text file (local path or URL) with one path per line, relative to file_root (or to the list's directory); entries outside it are refused unless allow_outside_root is set"},
			{Name: "file_filter", Type: engine.ArgString, Default: "*.npy", Doc: "glob pattern matched against file names below file_root"},
			{Name: "roi_start", Type: engine.ArgFloatList, TensorInput: true, Doc: "region start, absolute coordinates (one per roi_axes entry; default 0)"},
			{Name: "rel_roi_start", Type: engine.ArgFloatList, TensorInput: true, Doc: "region start relative to the extent (0..1)"},
			{Name: "roi_end", Type: engine.ArgFloatList, TensorInput: true, Doc: "region end (exclusive), absolute coordinates (default: the extent)"},
			{Name: "rel_roi_end", Type: engine.ArgFloatList, TensorInput: true, Doc: "region end relative to the extent"},
			{Name: "roi_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "region shape, absolute"},
			{Name: "rel_roi_shape", Type: engine.ArgFloatList, TensorInput: true, Doc: "region shape relative to the extent"},
			{Name: "roi_axes", Type: engine.ArgIntList, Default: []int64{}, Doc: "dimensions the region arguments refer to, in their order (default: all, in order)"},
			{Name: "out_of_bounds_policy", Type: engine.ArgString, Default: "error", Doc: "error, trim_to_shape or pad: what a region leaving the array does"},
			{Name: "fill_value", Type: engine.ArgFloat, Default: 0.0, Doc: "value of the padding (out_of_bounds_policy=pad)"},
			{Name: "cache_header_information", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
			{Name: "use_o_direct", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; no effect"},
			ShuffleAfterEpochArg,
			AllowOutsideRootArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.numpy", "cpu", newNumpyReader)
}

type numpyReader struct {
	Base
	io     *readerIO
	remote bool         // some files are remote: fetch them ahead (without a region)
	dtype  engine.DType // of the first file: every sample must have it
	ndim   int
	typed  bool
	roi    bool   // a region argument was given
	policy string // out_of_bounds_policy
	fill   []byte // fill_value as one element of dtype
}

var roiArgs = []string{"roi_start", "rel_roi_start", "roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape"}

func newNumpyReader(a *engine.Args) (engine.Operator, error) {
	r := &numpyReader{policy: a.String("out_of_bounds_policy")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	var err error
	if r.io, err = newReaderIO(a); err != nil {
		return nil, err
	}
	n := 0
	for _, k := range []string{"files", "file_list"} {
		if a.Given(k) {
			n++
		}
	}
	if n == 0 && a.Given("file_root") {
		n = 1
	}
	if n != 1 {
		return nil, a.Errorf("file_root", "give exactly one of file_root (a directory tree), file_list, or files")
	}
	switch r.policy {
	case "error", "trim_to_shape", "pad":
	default:
		return nil, a.Errorf("out_of_bounds_policy", "expected error, trim_to_shape or pad, got %q", r.policy)
	}
	for _, k := range roiArgs {
		r.roi = r.roi || a.Given(k)
	}
	if a.Given("roi_start") && a.Given("rel_roi_start") {
		return nil, a.Errorf("rel_roi_start", "give at most one of roi_start and rel_roi_start")
	}
	ends := 0
	for _, k := range roiArgs[2:] {
		if a.Given(k) {
			ends++
		}
	}
	if ends > 1 {
		return nil, a.Errorf("roi_end", "give at most one of roi_end, rel_roi_end, roi_shape and rel_roi_shape")
	}
	seen := map[int64]bool{}
	for _, ax := range a.Ints("roi_axes") {
		if ax < 0 || seen[ax] {
			return nil, a.Errorf("roi_axes", "must list distinct non-negative dimensions, got %v", a.Ints("roi_axes"))
		}
		seen[ax] = true
	}
	if root := a.String("file_root"); root != "" {
		r.DigestPath = relToRoot(root)
	}
	return r, nil
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
			return nil, listErrorf(a, "%s: %v", first, err)
		}
		if r.dtype, err = npydtype.Of(h.DType); err != nil {
			return nil, listErrorf(a, "%s: %v", first, err)
		}
		if err := engine.CheckNDim("its array", len(h.Shape)); err != nil {
			return nil, listErrorf(a, "%s: %v", first, err)
		}
		r.ndim, r.typed = len(h.Shape), true
		for _, ax := range a.Ints("roi_axes") {
			if ax >= int64(r.ndim) {
				return nil, a.Errorf("roi_axes", "dimension %d of arrays with %d dimensions (from %s)", ax, r.ndim, first)
			}
		}
		r.fill = make([]byte, r.dtype.Size())
		engine.WriteScalarSat(r.fill, r.dtype, a.Float("fill_value"))
	}
	shape := make([]int, r.ndim)
	for i := range shape {
		shape[i] = -1
	}
	return []engine.TensorMeta{{DType: r.dtype, Shape: shape}}, nil
}

func (r *numpyReader) header(path string) (npy.Header, error) {
	f, err := r.io.open(path)
	if err != nil {
		return npy.Header{}, sampleError(err)
	}
	defer f.Close()
	return npy.ParseHeader(scanner(path, f), f.Size())
}

// Close stops the reader's remote requests (engine.Closer: the pipeline is destroyed).
func (r *numpyReader) Close() { r.io.close() }

// Interrupt makes the reader's remote requests in flight return (engine.Interrupter).
func (r *numpyReader) Interrupt() { r.io.interrupt() }

// NextBatch plans the batch and, for remote files read whole, starts fetching them.
func (r *numpyReader) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	valid, last, ok := r.Base.NextBatch(refs)
	if ok && r.remote && !r.roi {
		paths := make([]string, len(refs))
		for i := range refs {
			paths[i] = refs[i].Path
		}
		r.io.readAhead(paths, r.MaxFileBytes())
	}
	return valid, last, ok
}

func (r *numpyReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.Args()
	root := a.String("file_root")
	var paths []string
	switch {
	case a.Given("files"):
		for _, f := range a.Strings("files") {
			if root != "" {
				f = joinPath(root, f)
			}
			paths = append(paths, f)
		}
	case a.Given("file_list"):
		list := a.String("file_list")
		data, err := r.io.readAll(list, 1<<30)
		if err != nil {
			return unreadable(a, "file_list", list, err)
		}
		scope := newListScope(a, "file_list", list, root)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for line := 1; sc.Scan(); line++ {
			s := strings.TrimSpace(sc.Text())
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			p := joinPath(scope.root, s)
			if err := scope.check(s, p); err != nil {
				return engine.Errorf(engine.StatusInvalidArgument, "%s: line %d: %v", a.Where(), line, err)
			}
			paths = append(paths, p)
		}
		if err := sc.Err(); err != nil {
			return unreadable(a, "file_list", list, err)
		}
	default:
		if !remote.IsRemote(root) {
			if st, err := os.Stat(root); err != nil || !st.IsDir() {
				if err == nil {
					err = errors.New("not a directory")
				}
				return unreadable(a, "file_root", root, err)
			}
		}
		filter := a.String("file_filter")
		if _, err := filepath.Match(filter, ""); err != nil {
			return a.Errorf("file_filter", "bad glob %q: %v", filter, err)
		}
		src, err := r.io.src(root)
		if err == nil {
			err = src.Walk(root, func(p string) error {
				if ok, _ := filepath.Match(filter, baseOf(p)); ok {
					paths = append(paths, p)
				}
				return nil
			})
		}
		if err != nil {
			return &engine.Error{Status: engine.StatusData, Msg: a.Where() + ": file_root", Err: err}
		}
		sort.Strings(paths)
	}
	entries := make([]engine.SampleRef, len(paths))
	for i, p := range paths {
		entries[i] = engine.SampleRef{Path: p}
		r.remote = r.remote || remote.IsRemote(p)
	}
	return r.SetSamples(entries, ".npy files")
}

type numpyState struct {
	f       source.File
	rd      io.ReaderAt // f, or the file fetched ahead
	size    int64
	h       npy.Header
	raw     []byte // Fortran-ordered data before the transpose
	scratch []byte
	// The region (in the array's coordinates) and, when it leaves the array (pad), the
	// part inside it.
	start, shape   []int64
	istart, ishape []int64
	pad            bool
	box            []byte
}

func (r *numpyReader) NewWorkerState() any { return &numpyState{} }

func (st *numpyState) Close() {
	if st.f != nil {
		st.f.Close()
		st.f = nil
	}
	st.rd = nil
}

func (r *numpyReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*numpyState)
	st.Close() // Run was not reached for the previous sample
	if data, ok, err := r.io.take(ws.Ref.Path); ok {
		if err != nil {
			return sampleError(err)
		}
		st.rd, st.size = bytes.NewReader(data), int64(len(data))
	} else {
		f, err := r.io.open(ws.Ref.Path)
		if err != nil {
			return sampleError(err)
		}
		st.f, st.rd, st.size = f, f, f.Size()
	}
	if max := ws.Limits.MaxFileBytes; max > 0 && st.size > max && !r.roi {
		st.Close()
		return engine.Errorf(engine.StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", st.size, max)
	}
	h, err := npy.ParseHeader(st.rd, st.size)
	if err != nil {
		st.Close()
		return dataError(err)
	}
	dt, err := npydtype.Of(h.DType)
	if err == nil && (dt != r.dtype || len(h.Shape) != r.ndim) {
		err = fmt.Errorf("array of %s with %d dimensions %v; the data set's arrays (from its first file) are %s with %d dimensions", dt, len(h.Shape), h.Shape, r.dtype, r.ndim)
	}
	if err == nil && r.roi {
		err = r.region(ws, st, h)
	}
	if err != nil {
		st.Close()
		if _, ok := err.(*engine.Error); ok {
			return err
		}
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	st.h = h
	dims := h.Shape
	if r.roi {
		dims = st.shape
	}
	shape := ws.Out[0].Shape[:0]
	for _, d := range dims {
		shape = append(shape, int(d))
	}
	ws.Out[0].Shape = shape
	return nil
}

// region works out the sample's region from the arguments and the array's shape.
func (r *numpyReader) region(ws *engine.Workspace, st *numpyState, h npy.Header) error {
	a := r.Args()
	n := len(h.Shape)
	axes := a.Ints("roi_axes")
	if len(axes) == 0 {
		axes = make([]int64, n)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	startF := make([]float64, n)
	endF := make([]float64, n)
	for d := 0; d < n; d++ {
		endF[d] = float64(h.Shape[d])
	}
	get := func(name string) ([]float64, error) {
		v, err := a.FloatsAt(ws, name, nil)
		if err != nil {
			return nil, err
		}
		if len(v) != len(axes) {
			return nil, a.ArgDataErrorf(ws, name, "%d values for %d region axes %v", len(v), len(axes), axes)
		}
		return v, nil
	}
	for _, k := range []string{"roi_start", "rel_roi_start"} {
		if !a.Given(k) {
			continue
		}
		v, err := get(k)
		if err != nil {
			return err
		}
		for i, ax := range axes {
			startF[ax] = v[i]
			if k == "rel_roi_start" {
				startF[ax] = v[i] * float64(h.Shape[ax])
			}
		}
	}
	for _, k := range roiArgs[2:] {
		if !a.Given(k) {
			continue
		}
		v, err := get(k)
		if err != nil {
			return err
		}
		for i, ax := range axes {
			ext := float64(h.Shape[ax])
			switch k {
			case "roi_end":
				endF[ax] = v[i]
			case "rel_roi_end":
				endF[ax] = v[i] * ext
			case "roi_shape":
				endF[ax] = startF[ax] + v[i]
			case "rel_roi_shape":
				endF[ax] = startF[ax] + v[i]*ext
			}
		}
	}
	st.start, st.shape = resize(st.start, n), resize(st.shape, n)
	st.istart, st.ishape = resize(st.istart, n), resize(st.ishape, n)
	st.pad = false
	for d := 0; d < n; d++ {
		lo, hi := int64(math.Round(startF[d])), int64(math.Round(endF[d]))
		if math.IsNaN(startF[d]) || math.IsNaN(endF[d]) || math.Abs(startF[d]) > 1<<52 || math.Abs(endF[d]) > 1<<52 {
			return a.DataErrorf(ws, "region [%v, %v) of dimension %d is not a valid range", startF[d], endF[d], d)
		}
		if hi < lo {
			return a.DataErrorf(ws, "region of dimension %d ends (%d) before it starts (%d)", d, hi, lo)
		}
		ext := h.Shape[d]
		if lo < 0 || hi > ext {
			switch r.policy {
			case "error":
				return a.DataErrorf(ws, "region [%d, %d) of dimension %d leaves the array of shape %v (out_of_bounds_policy=\"error\"; use \"trim_to_shape\" or \"pad\")", lo, hi, d, h.Shape)
			case "trim_to_shape":
				lo, hi = min(max(lo, 0), ext), min(max(hi, 0), ext)
			case "pad":
				st.pad = true
			}
		}
		st.start[d], st.shape[d] = lo, hi-lo
		ilo, ihi := min(max(lo, 0), ext), min(max(hi, 0), ext)
		st.istart[d], st.ishape[d] = ilo, ihi-ilo
	}
	return nil
}

func resize(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}

func (r *numpyReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*numpyState)
	defer st.Close()
	out := ws.Out[0].Data
	item := st.h.DType.Size
	if r.roi {
		dst := out
		if st.pad {
			vol := int64(item)
			for _, d := range st.ishape {
				vol *= d
			}
			if int64(cap(st.box)) < vol {
				st.box = make([]byte, vol)
			}
			dst = st.box[:vol]
		}
		var err error
		if st.scratch, err = npy.ReadBox(st.rd, st.size, st.h, st.istart, st.ishape, dst, st.scratch); err != nil {
			return dataError(err)
		}
		if st.h.DType.BigEndian {
			npy.SwapBytes(dst, item)
		}
		if st.pad {
			padBox(out, dst, st.start, st.shape, st.istart, st.ishape, r.fill)
		}
		return nil
	}
	dst := out
	if st.h.Fortran {
		if cap(st.raw) < len(out) {
			st.raw = make([]byte, len(out))
		}
		dst = st.raw[:len(out)]
	}
	if _, err := npy.ReadData(st.rd, st.size, st.h, dst); err != nil {
		return dataError(err)
	}
	if st.h.DType.BigEndian {
		npy.SwapBytes(dst, item)
	}
	if st.h.Fortran {
		return npy.FortranToC(out, dst, st.h.Shape, item)
	}
	return nil
}

// padBox writes the region start+shape into out (C order): fill everywhere, and the
// part inside the array (in, C-ordered, at istart with ishape) where it lies.
func padBox(out, in []byte, start, shape, istart, ishape []int64, fill []byte) {
	item := len(fill)
	for i := 0; i+item <= len(out); i += item {
		copy(out[i:], fill)
	}
	n := len(shape)
	vol := int64(1)
	for _, d := range ishape {
		vol *= d
	}
	if vol == 0 {
		return
	}
	if n == 0 {
		copy(out, in)
		return
	}
	ostride := make([]int64, n)
	ostride[n-1] = int64(item)
	for d := n - 2; d >= 0; d-- {
		ostride[d] = ostride[d+1] * shape[d+1]
	}
	row := ishape[n-1] * int64(item)
	idx := make([]int64, n-1)
	var src int64
	for {
		var o int64
		for d := 0; d < n; d++ {
			k := istart[d] - start[d]
			if d < n-1 {
				k += idx[d]
			}
			o += k * ostride[d]
		}
		copy(out[o:o+row], in[src:src+row])
		src += row
		d := n - 2
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < ishape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// dataError makes a malformed-data error from a formats parser a data error; read
// errors keep their cause.
func dataError(err error) error {
	if errors.Is(err, formats.ErrMalformed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	return sampleError(err)
}
