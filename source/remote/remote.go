package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/godali/godali/source"
)

// ObjectInfo names one object and what is known about it. Size is -1 and ETag ""
// when unknown (a bare URL handed to a Fetcher); List fills both for S3.
type ObjectInfo struct {
	URL  string
	Size int64
	ETag string
}

// Infos turns bare URLs into ObjectInfos of unknown size and ETag.
func Infos(urls ...string) []ObjectInfo {
	out := make([]ObjectInfo, len(urls))
	for i, u := range urls {
		out[i] = ObjectInfo{URL: u, Size: -1}
	}
	return out
}

// Object is an opened object of known size and ETag. ReadAt reads a byte range with
// one ranged request under the context given to Open, and follows io.ReaderAt: it
// returns io.EOF when the range runs past the end.
type Object interface {
	io.ReaderAt
	Info() ObjectInfo
	// ReadAll reads the whole object, failing with ErrTooLarge (before reading) when
	// it is larger than max bytes.
	ReadAll(max int64) ([]byte, error)
}

// Sentinel errors, matched with errors.Is through *Error.
var (
	ErrNotFound          = errors.New("object not found")
	ErrChanged           = errors.New("object changed while it was being read (ETag mismatch)")
	ErrListUnsupported   = errors.New("listing is not available over HTTP; give the reader an index (list) file of the object URLs")
	ErrTooLarge          = errors.New("object larger than the allowed maximum")
	ErrUnsupportedScheme = errors.New("unsupported URL scheme (expected s3://, az://, gs://, http://, https:// or a local path)")
	ErrBadURL            = errors.New("malformed URL")
)

// Error is a failed operation on one object: it names the object URL, the HTTP status
// when there was one, and how many attempts were made. Its message never shows a
// secret the URL carries (a password, a presigned signature or token): see
// source.Redact.
type Error struct {
	Op       string // "open", "get", "list"
	URL      string // as given (with its secrets): use Error() or source.Redact to show it
	Status   int    // HTTP status, 0 if none
	Attempts int    // attempts made (0 or 1: no retry)
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote %s %s", e.Op, e.URL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	// The wrapped errors may quote the URL too (net/http's *url.Error keeps the query).
	return source.Redact(b.String())
}

func (e *Error) Unwrap() error { return e.Err }

// getRequest is one ranged read. Len < 0 reads from Off to the end.
type getRequest struct {
	Off, Len    int64
	IfMatch     string // fail with ErrChanged unless the object still has this ETag
	IfNoneMatch string // answer NotModified when the object still has this ETag
}

// getResponse is a backend's answer. When Partial is false the server sent the whole
// object from byte 0 whatever range was asked (a server that ignores Range).
type getResponse struct {
	Body        io.ReadCloser // nil when NotModified or Empty
	Off         int64         // offset of Body's first byte in the object
	Len         int64         // bytes in Body, -1 if unknown
	Total       int64         // object size, -1 if unknown
	ETag        string
	Partial     bool
	NotModified bool
	// Unsatisfiable: the range starts at or past the end (Total, when known, says
	// where the end is); for Off 0 it means an empty object.
	Unsatisfiable bool
}

// backend is one URL scheme.
type backend interface {
	get(ctx context.Context, url string, r getRequest) (*getResponse, error)
	stat(ctx context.Context, url string) (ObjectInfo, error)
	list(ctx context.Context, prefix string) ([]ObjectInfo, error)
}

// Options configures a Store. The zero value works: settings come from the
// environment (doc.go).
type Options struct {
	// HTTPClient is used for http(s) URLs; nil builds one keeping MaxConnsPerHost
	// idle connections per host.
	HTTPClient *http.Client
	// MaxConnsPerHost bounds idle connections kept per host (default 64); it should be
	// at least the Fetcher's Concurrency, or connections are reopened all the time.
	MaxConnsPerHost int
	S3              S3Options
	Azure           AzureOptions
	GCS             GCSOptions
}

// Store opens and lists objects by URL scheme: s3://bucket/key, az://container/blob
// (and https://ACCOUNT.blob.core.windows.net/...), gs://bucket/object, http(s)://...,
// and local paths (or file:// URLs). It is safe for concurrent use.
type Store struct {
	opts  Options
	http  *httpBackend
	file  fileBackend
	s3mu  sync.Mutex // guards the clients below, built on first use
	s3    *s3Backend
	az    *azureBackend
	gcs   *gcsBackend
	owned *http.Transport // the transport built here, closed by CloseIdleConnections
}

// NewStore returns a Store. The S3 client is built on first use of an s3:// URL.
func NewStore(opts Options) *Store {
	if opts.MaxConnsPerHost <= 0 {
		opts.MaxConnsPerHost = 64
	}
	s := &Store{opts: opts}
	client := opts.HTTPClient
	if client == nil {
		s.owned = newTransport(opts.MaxConnsPerHost)
		client = &http.Client{Transport: s.owned}
	}
	s.http = &httpBackend{client: client}
	return s
}

// CloseIdleConnections closes the idle connections of the transports built by the
// Store (the HTTP one and the S3 client's).
func (s *Store) CloseIdleConnections() {
	if s.owned != nil {
		s.owned.CloseIdleConnections()
	}
	s.s3mu.Lock()
	var trs []*http.Transport
	if s.s3 != nil {
		trs = append(trs, s.s3.transport)
	}
	if s.az != nil {
		trs = append(trs, s.az.transport)
	}
	if s.gcs != nil {
		trs = append(trs, s.gcs.transport)
	}
	s.s3mu.Unlock()
	for _, t := range trs {
		if t != nil {
			t.CloseIdleConnections()
		}
	}
}

func (s *Store) backend(ctx context.Context, url string) (backend, error) {
	switch scheme(url) {
	case "http", "https":
		if isAzureHost(url) {
			return s.azure()
		}
		return s.http, nil
	case "az":
		return s.azure()
	case "gs":
		s.s3mu.Lock()
		defer s.s3mu.Unlock()
		if s.gcs == nil {
			b, err := newGCSBackend(s.opts.GCS, s.opts.MaxConnsPerHost)
			if err != nil {
				return nil, err
			}
			s.gcs = b
		}
		return s.gcs, nil
	case "s3":
		s.s3mu.Lock()
		defer s.s3mu.Unlock()
		if s.s3 == nil {
			b, err := newS3Backend(ctx, s.opts.S3, s.opts.MaxConnsPerHost)
			if err != nil {
				return nil, err
			}
			s.s3 = b
		}
		return s.s3, nil
	case "", "file":
		return s.file, nil
	}
	return nil, &Error{Op: "open", URL: url, Err: ErrUnsupportedScheme}
}

func (s *Store) azure() (backend, error) {
	s.s3mu.Lock()
	defer s.s3mu.Unlock()
	if s.az == nil {
		b, err := newAzureBackend(s.opts.Azure, s.opts.MaxConnsPerHost)
		if err != nil {
			return nil, err
		}
		s.az = b
	}
	return s.az, nil
}

// scheme returns the lower-case URL scheme, "" for a local path.
func scheme(url string) string {
	i := strings.Index(url, "://")
	if i <= 0 {
		return ""
	}
	s := strings.ToLower(url[:i])
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return ""
		}
	}
	return s
}

// IsRemote reports whether url names an object store or web object rather than a
// local file.
func IsRemote(url string) bool {
	switch scheme(url) {
	case "s3", "az", "gs", "http", "https":
		return true
	}
	return false
}

// Open stats the object (one HEAD request for remote URLs) and returns it. Its reads
// run under ctx.
func (s *Store) Open(ctx context.Context, url string) (Object, error) {
	return s.open(ctx, url)
}

func (s *Store) open(ctx context.Context, url string) (*object, error) {
	b, err := s.backend(ctx, url)
	if err != nil {
		return nil, err
	}
	info, err := b.stat(ctx, url)
	if err != nil {
		return nil, err
	}
	return &object{ctx: ctx, b: b, info: info}, nil
}

// List returns the objects under prefix, in key order for S3, Azure and GCS (all
// pages); local
// prefixes list a directory's regular files, recursively. HTTP has no listing and
// fails with ErrListUnsupported.
func (s *Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	b, err := s.backend(ctx, prefix)
	if err != nil {
		return nil, err
	}
	return b.list(ctx, prefix)
}

// get is the one entry point the Fetcher uses for reads.
func (s *Store) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	b, err := s.backend(ctx, url)
	if err != nil {
		return nil, err
	}
	return b.get(ctx, url, r)
}

type object struct {
	ctx  context.Context
	b    backend
	info ObjectInfo
}

func (o *object) Info() ObjectInfo { return o.info }

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	return o.readAt(o.ctx, p, off)
}

// readAt is ReadAt under ctx (the FS gives each attempt its own deadline).
func (o *object) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &Error{Op: "get", URL: o.info.URL, Err: fmt.Errorf("negative offset %d", off)}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= o.info.Size {
		return 0, io.EOF
	}
	want := int64(len(p))
	var eof error
	if off+want > o.info.Size {
		want = o.info.Size - off
		eof = io.EOF
	}
	if want == 0 {
		return 0, eof
	}
	resp, err := o.b.get(ctx, o.info.URL, getRequest{Off: off, Len: want, IfMatch: strongETag(o.info.ETag)})
	if err != nil {
		return 0, err
	}
	if resp.Unsatisfiable || resp.Body == nil {
		return 0, io.EOF
	}
	defer resp.Body.Close()
	if resp.Off < off { // the server ignored Range: skip to off
		if _, err := io.CopyN(io.Discard, resp.Body, off-resp.Off); err != nil {
			return 0, &Error{Op: "get", URL: o.info.URL, Err: fmt.Errorf("skipping to offset %d of a full response: %w", off, err)}
		}
	}
	n, err := io.ReadFull(resp.Body, p[:want])
	if err != nil {
		return n, &Error{Op: "get", URL: o.info.URL, Err: fmt.Errorf("reading bytes %d-%d: %w", off, off+want-1, err)}
	}
	return n, eof
}

func (o *object) ReadAll(max int64) ([]byte, error) {
	if o.info.Size > max {
		return nil, &Error{Op: "get", URL: o.info.URL, Err: fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, o.info.Size, max)}
	}
	resp, err := o.b.get(o.ctx, o.info.URL, getRequest{Len: -1, IfMatch: strongETag(o.info.ETag)})
	if err != nil {
		return nil, err
	}
	if resp.Unsatisfiable || resp.Body == nil {
		return []byte{}, nil
	}
	defer resp.Body.Close()
	return readBody(resp.Body, o.info.URL, resp.Len, max)
}

// readBody reads a whole body of n bytes (-1: unknown), at most max.
func readBody(r io.Reader, url string, n, max int64) ([]byte, error) {
	if n > max {
		return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, n, max)}
	}
	if n >= 0 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("reading %d bytes: %w", n, err)}
		}
		return buf, nil
	}
	buf, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, &Error{Op: "get", URL: url, Err: err}
	}
	if int64(len(buf)) > max {
		return nil, &Error{Op: "get", URL: url, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return buf, nil
}

// strongETag returns etag when it may be used in If-Match (strong comparison), "" for
// a weak one.
func strongETag(etag string) string {
	if strings.HasPrefix(etag, "W/") {
		return ""
	}
	return etag
}
