package readers

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.file",
		Doc: "Reads files from a directory tree (file_root: one label per sorted subdirectory, like " +
			"torchvision's ImageFolder), a file_list of \"path label\" lines, or files+labels. " +
			"Outputs the encoded bytes (uint8, 1-D) and an int32 label of shape [1].",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"data", "label"}, IsReader: true,
		Args: append([]engine.ArgSpec{
			{Name: "file_root", Type: engine.ArgString, Doc: "directory: each sorted subdirectory is a class"},
			{Name: "file_list", Type: engine.ArgString, Doc: "text file (local path or URL) of \"path label\" lines, paths relative to file_root (or to the list's directory); entries outside it are refused unless allow_outside_root is set"},
			{Name: "files", Type: engine.ArgStringList, Doc: "explicit list of paths (relative to file_root if given)"},
			{Name: "labels", Type: engine.ArgIntList, Doc: "labels for files (default: the file's index)"},
			{Name: "file_filters", Type: engine.ArgStringList, Default: []string{"*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff", "*.pnm", "*.ppm", "*.pgm", "*.pbm", "*.webp", "*.gif"}, Doc: "glob patterns of files taken from file_root"},
			{Name: "case_sensitive_filter", Type: engine.ArgBool, Default: false, Doc: "match file_filters and dir_filters case-sensitively"},
			{Name: "dir_filters", Type: engine.ArgStringList, Doc: "glob patterns of the subdirectories of file_root taken as classes (labels number the matching ones in sorted order); ignored with file_list or files"},
			{Name: "tensor_init_bytes", Type: engine.ArgInt, Default: 1048576, Doc: "DALI's per-sample memory hint; accepted for compatibility (godali sizes buffers from the files)"},
			ShuffleAfterEpochArg,
			AllowOutsideRootArg,
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.file", "cpu", newFileReader)
}

type fileReader struct {
	Base
	args   *engine.Args
	io     *readerIO // where the files are listed and read
	remote bool      // some files are remote: fetch them ahead
}

func newFileReader(a *engine.Args) (engine.Operator, error) {
	r := &fileReader{args: a}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	var err error
	if r.io, err = newReaderIO(a); err != nil {
		return nil, err
	}
	if root := a.String("file_root"); root != "" {
		r.DigestPath = relToRoot(root)
	}
	sources := 0
	for _, k := range []string{"file_list", "files"} {
		if a.Given(k) {
			sources++
		}
	}
	if a.Given("file_root") && !a.Given("file_list") && !a.Given("files") {
		sources++
	}
	if sources != 1 {
		return nil, a.Errorf("file_root", "give exactly one of file_root (a directory tree), file_list, or files")
	}
	if a.Given("labels") && !a.Given("files") {
		return nil, a.Errorf("labels", "labels go with files")
	}
	if a.Given("labels") && len(a.Ints("labels")) != len(a.Strings("files")) {
		return nil, a.Errorf("labels", "has %d entries but files has %d", len(a.Ints("labels")), len(a.Strings("files")))
	}
	return r, nil
}

func (r *fileReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return []engine.TensorMeta{{DType: engine.UInt8, Shape: []int{-1}}, {DType: engine.Int32, Shape: []int{1}}}, nil
}

// LocalFiles lists the reader's local files (engine.LocalFiles: the pipeline's header
// scan reads them); remote ones are left out. Empty before Open.
func (r *fileReader) LocalFiles() []string {
	var paths []string
	for _, e := range r.entries {
		if !remote.IsRemote(e.Path) {
			paths = append(paths, e.Path)
		}
	}
	return paths
}

func (r *fileReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	root := a.String("file_root")
	// Paths the description names must exist: a wrong one is the caller's argument, not
	// a bad sample.
	if root != "" && !remote.IsRemote(root) {
		if err := checkDir(a, "file_root", root); err != nil {
			return err
		}
	}
	if a.Given("file_list") && !remote.IsRemote(a.String("file_list")) {
		if _, err := os.Stat(a.String("file_list")); err != nil {
			return unreadable(a, "file_list", a.String("file_list"), err)
		}
	}
	var err error
	var entries []engine.SampleRef
	switch {
	case a.Given("files"):
		files, labels := a.Strings("files"), a.Ints("labels")
		for i, f := range files {
			if root != "" {
				f = joinPath(root, f)
			}
			l := int32(i)
			if labels != nil {
				l = int32(labels[i])
			}
			entries = append(entries, engine.SampleRef{Path: f, Label: l})
		}
	case a.Given("file_list"):
		var src source.Source
		if src, err = r.io.src(a.String("file_list")); err == nil {
			entries, err = readFileList(src, newListScope(a, "file_list", a.String("file_list"), root))
		}
	default:
		var src source.Source
		if src, err = r.io.src(root); err == nil {
			entries, err = scanImageFolder(src, root, a.Strings("file_filters"), a.Strings("dir_filters"), a.Bool("case_sensitive_filter"))
		}
	}
	if err != nil {
		return &engine.Error{Status: engine.StatusData, Msg: a.Where(), Err: err}
	}
	if len(entries) == 0 {
		return listErrorf(a, "no files found (file_root=%q, file_list=%q, filters %v)", root, a.String("file_list"), a.Strings("file_filters"))
	}
	for _, e := range entries {
		if remote.IsRemote(e.Path) {
			r.remote = true
			break
		}
	}
	return r.SetSamples(entries, "files")
}

func scanImageFolder(src source.Source, root string, filters, dirFilters []string, caseSensitive bool) ([]engine.SampleRef, error) {
	dirs, err := src.List(root)
	if err != nil {
		return nil, fmt.Errorf("file_root: %w", err)
	}
	matchAny := func(name string, globs []string) bool {
		if !caseSensitive {
			name = strings.ToLower(name)
		}
		for _, f := range globs {
			if !caseSensitive {
				f = strings.ToLower(f)
			}
			if ok, _ := filepath.Match(f, name); ok {
				return true
			}
		}
		return false
	}
	var classes []string
	for _, d := range dirs {
		if d.Dir && (len(dirFilters) == 0 || matchAny(d.Name, dirFilters)) {
			classes = append(classes, d.Name)
		}
	}
	sort.Strings(classes)
	if len(classes) == 0 {
		if len(dirFilters) > 0 {
			return nil, fmt.Errorf("file_root %q has no class subdirectories matching dir_filters %v", root, dirFilters)
		}
		return nil, fmt.Errorf("file_root %q has no class subdirectories", root)
	}
	match := func(name string) bool { return matchAny(name, filters) }
	var out []engine.SampleRef
	for label, c := range classes {
		var files []string
		err := src.Walk(joinPath(root, c), func(p string) error {
			if match(baseOf(p)) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			out = append(out, engine.SampleRef{Path: f, Label: int32(label)})
		}
	}
	return out, nil
}

// readFileList reads a file_list's "path label" lines; every path must lie in scope.
func readFileList(src source.Source, scope listScope) ([]engine.SampleRef, error) {
	list, root := scope.list, scope.root
	f, err := src.Open(list)
	if err != nil {
		return nil, fmt.Errorf("file_list: %w", err)
	}
	defer f.Close()
	var out []engine.SampleRef
	sc := bufio.NewScanner(io.NewSectionReader(f, 0, f.Size()))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		i := strings.LastIndexAny(s, " \t")
		if i < 0 {
			return nil, fmt.Errorf("file_list %s:%d: expected \"path label\", got %q", list, line, s)
		}
		label, err := strconv.ParseInt(strings.TrimSpace(s[i+1:]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("file_list %s:%d: label %q is not an integer", list, line, s[i+1:])
		}
		entry := strings.TrimSpace(s[:i])
		p := joinPath(root, entry)
		if err := scope.check(entry, p); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, engine.SampleRef{Path: p, Label: int32(label)})
	}
	return out, sc.Err()
}

type fileReaderState struct {
	f       source.File
	data    []byte // the file, when it was fetched ahead
	fetched bool
	size    int
}

// Close stops the reader's remote requests (engine.Closer: the pipeline is destroyed).
func (r *fileReader) Close() { r.io.close() }

// Interrupt makes the reader's remote requests in flight return (engine.Interrupter).
func (r *fileReader) Interrupt() { r.io.interrupt() }

// NextBatch plans the batch and starts fetching its remote files ahead.
func (r *fileReader) NextBatch(refs []engine.SampleRef) (int, bool, bool) {
	valid, last, ok := r.Base.NextBatch(refs)
	if ok && r.remote {
		paths := make([]string, len(refs))
		for i := range refs {
			paths[i] = refs[i].Path
		}
		r.io.readAhead(paths, r.MaxFileBytes())
	}
	return valid, last, ok
}

func (r *fileReader) NewWorkerState() any { return &fileReaderState{} }

func (r *fileReader) Setup(ws *engine.Workspace) error {
	st := ws.State.(*fileReaderState)
	if st.f != nil { // Run was not reached for the previous sample
		st.f.Close()
		st.f = nil
	}
	st.data, st.fetched = nil, false
	if data, ok, err := r.io.take(ws.Ref.Path); ok {
		if err != nil {
			return sampleError(err)
		}
		if max := ws.Limits.MaxFileBytes; max > 0 && int64(len(data)) > max {
			return engine.Errorf(engine.StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", len(data), max)
		}
		st.data, st.fetched, st.size = data, true, len(data)
		ws.Out[0].SetShape(st.size)
		if len(ws.Out) > 1 {
			ws.Out[1].SetShape(1)
		}
		return nil
	}
	f, err := openSample(r.io, ws)
	if err != nil {
		return err
	}
	st.f, st.size = f, int(f.Size())
	ws.Out[0].SetShape(st.size)
	if len(ws.Out) > 1 {
		ws.Out[1].SetShape(1)
	}
	return nil
}

func (r *fileReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*fileReaderState)
	if st.fetched {
		copy(ws.Out[0].Data, st.data)
		st.data, st.fetched = nil, false
		if len(ws.Out) > 1 {
			engine.WriteScalar(ws.Out[1].Data, engine.Int32, float64(ws.Ref.Label))
		}
		return nil
	}
	defer func() { st.f.Close(); st.f = nil }()
	if err := readSample(st.f, ws.Out[0].Data); err != nil {
		return err
	}
	if len(ws.Out) > 1 {
		engine.WriteScalar(ws.Out[1].Data, engine.Int32, float64(ws.Ref.Label))
	}
	return nil
}

// sampleError words a source error about a sample's file without the path, which the
// executor's error for the sample names already.
func sampleError(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(pe.Err, source.ErrNotRegular):
		return engine.Errorf(engine.StatusData, "%v", pe.Err)
	case pe.Op == "open":
		return fmt.Errorf("cannot open: %w", pe.Err)
	case pe.Op == "stat":
		return fmt.Errorf("cannot stat: %w", pe.Err)
	}
	return fmt.Errorf("read error: %w", pe.Err)
}

// memberDigest is a DigestPath for samples named archive + ":" + member: the archive's
// URL (one of archives) by its Location, the member as it is. (A presigned archive URL
// ends in its signature, which the member would otherwise be taken to be part of.)
func memberDigest(archives []string) func(string) string {
	urls := map[string]bool{}
	for _, a := range archives {
		if source.IsURL(a) {
			urls[a] = true
		}
	}
	return func(p string) string {
		for i := strings.LastIndexByte(p, ':'); i > 0 && len(urls) > 0; i = strings.LastIndexByte(p[:i], ':') {
			if urls[p[:i]] {
				return source.Location(p[:i]) + p[i:]
			}
		}
		return p
	}
}

// relToRoot is a DigestPath that names files by their path relative to root.
func relToRoot(root string) func(string) string {
	return func(p string) string {
		if rel, err := filepath.Rel(root, p); err == nil {
			return rel
		}
		return p
	}
}

// openSample opens the sample's file, refusing one over the pipeline's max_file_bytes.
func openSample(rio *readerIO, ws *engine.Workspace) (source.File, error) {
	f, err := rio.open(ws.Ref.Path)
	if err != nil {
		return nil, sampleError(err)
	}
	if max := ws.Limits.MaxFileBytes; max > 0 && f.Size() > max {
		f.Close()
		return nil, engine.Errorf(engine.StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", f.Size(), max)
	}
	return f, nil
}

// readSample fills buf (sized from the file in Setup) with the file's bytes.
func readSample(f source.File, buf []byte) error {
	if off, err := f.ReadAt(buf, 0); off < len(buf) {
		if err == io.EOF {
			return fmt.Errorf("file shrank while reading (%d of %d bytes)", off, len(buf))
		}
		return sampleError(err)
	}
	return nil
}
