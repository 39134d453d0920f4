package remote

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/godali/godali/source"
)

// FS is the remote side of source.Source: the interface readers.file and every other
// reader list and read through, whether the data is local (source.Local) or behind a
// URL. Paths are URLs (s3://bucket/key, http(s)://host/path) or local paths. Opens and
// reads go through the Fetcher: retries with backoff, then an *Error naming the
// object; whole-object reads use its chunking and cache. Errors are *fs.PathError
// values wrapping the *Error, and errors.Is(err, fs.ErrNotExist) holds for missing
// objects.
type FS struct {
	f   *Fetcher
	ctx context.Context
}

var _ source.Source = (*FS)(nil)

// NewFS returns an FS reading through f; ctx bounds every request (nil: Background).
func NewFS(ctx context.Context, f *Fetcher) *FS {
	if ctx == nil {
		ctx = context.Background()
	}
	return &FS{f: f, ctx: ctx}
}

// Fetcher returns the Fetcher the FS reads through.
func (s *FS) Fetcher() *Fetcher { return s.f }

// pathErr wraps err as a *fs.PathError naming path without its secrets.
func pathErr(op, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: source.Redact(path), Err: err}
}

// Is makes errors.Is(err, fs.ErrNotExist) hold for a missing object.
func (e *Error) Is(target error) bool {
	return target == fs.ErrNotExist && errors.Is(e.Err, ErrNotFound)
}

// Open opens an object (one HEAD request under the per-attempt timeout, retried).
func (s *FS) Open(path string) (source.File, error) {
	var o *object
	err := s.f.retry(s.ctx, path, func(actx context.Context) error {
		var err error
		o, err = s.f.store.open(actx, path)
		return err
	})
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	return &fsFile{fs: s, o: o}, nil
}

// Stat returns an object's size.
func (s *FS) Stat(path string) (int64, error) {
	f, err := s.Open(path)
	if err != nil {
		return 0, pathErr("stat", path, err)
	}
	defer f.Close()
	return f.Size(), nil
}

// listAll lists every object under dir (a "directory": dir + "/"), all pages.
func (s *FS) listAll(dir string) ([]ObjectInfo, string, error) {
	// A URL's query (an Azure SAS URL's signature) stays after the path.
	prefix, query := splitQuery(dir)
	if IsRemote(dir) && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	full := prefix + query
	var out []ObjectInfo
	// A listing is many pages: each page request has the per-attempt timeout, not
	// the whole listing (a large bucket takes minutes).
	err := s.f.retryWithin(s.ctx, dir, 0, func(actx context.Context) error {
		var err error
		out, err = s.f.store.List(withPageTimeout(actx, s.f.opts.AttemptTimeout), full)
		return err
	})
	if err != nil {
		return nil, prefix, pathErr("list", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, prefix, nil
}

// List returns the entries directly under dir: objects, and "directories" (common
// prefixes up to the next '/'), sorted by name. HTTP has no listing.
func (s *FS) List(dir string) ([]source.Entry, error) {
	if !IsRemote(dir) {
		return source.Local{}.List(dir)
	}
	all, prefix, err := s.listAll(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []source.Entry
	for _, o := range all {
		u, _ := splitQuery(o.URL)
		rest, ok := strings.CutPrefix(u, prefix)
		if !ok || rest == "" {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, source.Entry{Name: name, Dir: isDir})
	}
	if len(out) == 0 {
		return nil, pathErr("list", dir, &Error{Op: "list", URL: dir, Err: ErrNotFound})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Walk calls fn with every object under root, in lexical order.
func (s *FS) Walk(root string, fn func(path string) error) error {
	if !IsRemote(root) {
		return source.Local{}.Walk(root, fn)
	}
	all, _, err := s.listAll(root)
	if err != nil {
		return err
	}
	for _, o := range all {
		if err := fn(o.URL); err != nil {
			return err
		}
	}
	return nil
}

// fsFile is an opened object. ReadAt of the whole object goes through the Fetcher
// (chunked, cached); other ranges are one ranged request each, retried.
type fsFile struct {
	fs *FS
	o  *object // its ctx is the finished attempt's: reads pass their own
}

func (f *fsFile) Size() int64  { return f.o.Info().Size }
func (f *fsFile) Close() error { return nil }

func (f *fsFile) ReadAt(p []byte, off int64) (int, error) {
	info := f.o.Info()
	if off == 0 && int64(len(p)) == info.Size && info.Size > 0 {
		s := f.fs.f.Stream(f.fs.ctx, []ObjectInfo{info})
		defer s.Close()
		r, ok := s.Next()
		if !ok {
			return 0, pathErr("read", info.URL, s.Err())
		}
		if r.Err != nil {
			return 0, pathErr("read", info.URL, r.Err)
		}
		if int64(len(r.Data)) != info.Size {
			return 0, pathErr("read", info.URL, &Error{Op: "get", URL: info.URL, Err: ErrChanged})
		}
		return copy(p, r.Data), nil
	}
	var n int
	var rerr error
	err := f.fs.f.retry(f.fs.ctx, info.URL, func(actx context.Context) error {
		n, rerr = f.o.readAt(actx, p, off)
		if rerr == io.EOF {
			return nil
		}
		return rerr
	})
	if err != nil {
		return n, pathErr("read", info.URL, err)
	}
	return n, rerr
}

// splitQuery splits a remote URL before its query ("?..."); a local path is not split.
func splitQuery(u string) (string, string) {
	if !IsRemote(u) {
		return u, ""
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i], u[i:]
	}
	return u, ""
}
