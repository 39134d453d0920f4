package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// Issue 16: requests without a timeout, oversized objects downloaded before the size
// limit applied, secrets of URLs in errors and cache headers, cache entries damaged at
// rest served as they are. The servers here are httptest servers on loopback.

const (
	password  = "PASSWORD-not-shown"
	signature = "SIGNATURE-not-shown"
	secToken  = "TOKEN-not-shown"
	credValue = "AKIACREDENTIAL-not-shown"
)

var secrets = []string{password, signature, secToken, credValue}

// secretURL is base's path p with a password and presigned S3 query parameters.
func secretURL(base, p string) string {
	return strings.Replace(base, "http://", "http://alice:"+password+"@", 1) + p +
		"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + credValue +
		"&X-Amz-Security-Token=" + secToken + "&X-Amz-Signature=" + signature
}

func noSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Fatalf("%s shows a secret (%s): %s", what, sec, s)
		}
	}
}

// stallServer answers HEAD and GET as content, except the methods in stall (by
// method, or "RANGE" for GETs with a Range header), which it never answers until the
// test ends. It counts requests by kind.
type stallServer struct {
	*httptest.Server
	stall    map[string]bool
	requests sync.Map // kind -> *atomic.Int64
	done     chan struct{}
}

func newStallServer(t *testing.T, body []byte, stall ...string) *stallServer {
	s := &stallServer{stall: map[string]bool{}, done: make(chan struct{})}
	for _, k := range stall {
		s.stall[k] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method
		if r.Header.Get("Range") != "" {
			kind = "RANGE"
		}
		n, _ := s.requests.LoadOrStore(kind, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if s.stall[kind] {
			select {
			case <-s.done:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "x", time.Unix(1700000000, 0), bytes.NewReader(body))
	}))
	t.Cleanup(func() { close(s.done); s.Close() })
	return s
}

func (s *stallServer) count(kind string) int64 {
	n, ok := s.requests.Load(kind)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

func quickFetcher(timeout time.Duration, attempts int, cache *Cache) *Fetcher {
	return NewFetcher(NewStore(Options{}), FetchOptions{Concurrency: 4, AttemptTimeout: timeout, Cache: cache,
		Retry: RetryPolicy{MaxAttempts: attempts, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}})
}

// checkTimedOut checks that err came back within the attempts' time, names the URL
// redacted, says it timed out, and counts the attempts.
func checkTimedOut(t *testing.T, what string, err error, took time.Duration, url string, attempts int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error from a server that never answers", what)
	}
	t.Logf("%s: %v after %v", what, err, took)
	noSecrets(t, what+" error", err.Error())
	// 3 attempts of 200 ms and backoffs of at most 40 ms: well under 2 s.
	if took > 2*time.Second {
		t.Fatalf("%s: took %v for %d attempts of 200 ms", what, took, attempts)
	}
	var e *Error
	if !errors.As(err, &e) || e.Attempts != attempts {
		t.Fatalf("%s: %v, want an *Error after %d attempts", what, err, attempts)
	}
	host := strings.TrimPrefix(strings.SplitN(url, "@", 2)[1], "")
	host = strings.SplitN(host, "?", 2)[0]
	if !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "alice:xxxxx@") || !strings.Contains(err.Error(), "AttemptTimeout") {
		t.Fatalf("%s: %v does not name the (redacted) URL %s and the timeout", what, err, host)
	}
}

func TestStalledHEADTimesOut(t *testing.T) {
	srv := newStallServer(t, []byte("payload"), "HEAD")
	f := quickFetcher(200*time.Millisecond, 3, nil)
	fsys := NewFS(context.Background(), f)
	url := secretURL(srv.URL, "/obj.bin")
	start := time.Now()
	_, err := fsys.Open(url)
	checkTimedOut(t, "HEAD", err, time.Since(start), url, 3)
	if got := srv.count("HEAD"); got != 3 {
		t.Fatalf("%d HEAD requests, want 3 (bounded retries)", got)
	}
	// OpenReader (webdataset shards) opens with the same HEAD.
	start = time.Now()
	_, err = f.OpenReader(context.Background(), url)
	checkTimedOut(t, "OpenReader", err, time.Since(start), url, 3)
}

func TestStalledRangedGETTimesOut(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 1000)
	srv := newStallServer(t, body, "RANGE")
	f := quickFetcher(200*time.Millisecond, 3, nil)
	fsys := NewFS(context.Background(), f)
	url := secretURL(srv.URL, "/rec.tfrecord")
	file, err := fsys.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = file.ReadAt(make([]byte, 100), 50) // a record: one ranged GET
	checkTimedOut(t, "ranged GET", err, time.Since(start), url, 3)
	if !strings.Contains(err.Error(), "read ") {
		t.Fatalf("ReadAt error %v is not a read error", err)
	}
	if got := srv.count("RANGE"); got != 3 {
		t.Fatalf("%d ranged GETs, want 3", got)
	}
	// The Fetcher's whole-object reads start with a ranged GET too.
	start = time.Now()
	_, err = f.Get(context.Background(), url)
	checkTimedOut(t, "Get", err, time.Since(start), url, 3)
}

// A body that stops halfway is cut by the same per-attempt timeout.
func TestStalledBodyTimesOut(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		if r.Method == http.MethodHead {
			return
		}
		w.Header().Set("Content-Range", "bytes 0-999/1000")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(make([]byte, 500))
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	f := quickFetcher(200*time.Millisecond, 3, nil)
	url := secretURL(srv.URL, "/half.bin")
	start := time.Now()
	_, err := f.Get(context.Background(), url)
	checkTimedOut(t, "stalled body", err, time.Since(start), url, 3)
}

// Cancelling the FS's context (the reader's Interrupt, at the pipeline's Close) makes a
// request stalled with a long per-attempt timeout return at once.
func TestInterruptStopsStalledRequest(t *testing.T) {
	srv := newStallServer(t, []byte("payload"), "HEAD")
	ctx, cancel := context.WithCancel(context.Background())
	fsys := NewFS(ctx, quickFetcher(time.Hour, 8, nil))
	url := secretURL(srv.URL, "/obj.bin")
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := fsys.Open(url)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || took > 2*time.Second {
		t.Fatalf("after cancel: %v after %v, want context.Canceled at once", err, took)
	}
	noSecrets(t, "cancelled open", err.Error())
	if !strings.Contains(err.Error(), "/obj.bin") {
		t.Fatalf("cancelled open: %v does not name the URL", err)
	}
}

// lazyObject is a large object made up as it is read (never stored): byte i is i%251.
type lazyObject struct {
	size, off int64
	served    *atomic.Int64
}

func (l *lazyObject) Read(p []byte) (int, error) {
	if l.off >= l.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), l.size-l.off))
	for i := range n {
		p[i] = byte((l.off + int64(i)) % 251)
	}
	l.off += int64(n)
	l.served.Add(int64(n))
	return n, nil
}

func (l *lazyObject) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		l.off = off
	case io.SeekCurrent:
		l.off += off
	case io.SeekEnd:
		l.off = l.size + off
	}
	return l.off, nil
}

// LazyServer serves objects of size bytes generated as they are sent, counting the
// bytes; ignoreRange answers every GET with the whole object (200).
func lazyServer(t testing.TB, size int64, ignoreRange bool) (*httptest.Server, *atomic.Int64) {
	served := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ignoreRange {
			r.Header.Del("Range")
		}
		w.Header().Set("ETag", `"big"`)
		http.ServeContent(w, r, "big.bin", time.Unix(1700000000, 0), &lazyObject{size: size, served: served})
	}))
	t.Cleanup(srv.Close)
	return srv, served
}

// Objects of 1.5 GB are refused by the size the first response gives, several at
// once, without being downloaded: the bytes the server sends and the memory the
// process allocates stay small.
func TestOversizedRefusedBeforeDownload(t *testing.T) {
	const size = 1500 << 20
	const limit = 256 << 20
	for _, ignoreRange := range []bool{false, true} {
		srv, served := lazyServer(t, size, ignoreRange)
		f := NewFetcher(NewStore(Options{}), FetchOptions{Concurrency: 8, ChunkSize: 8 << 20})
		var urls []string
		for i := range 6 {
			urls = append(urls, fmt.Sprintf("%s/big%d.bin", srv.URL, i))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		s := f.StreamUpTo(context.Background(), Infos(urls...), limit)
		n := 0
		for {
			r, ok := s.Next()
			if !ok {
				break
			}
			n++
			if !errors.Is(r.Err, ErrTooLarge) || !strings.Contains(r.Err.Error(), r.Info.URL) || !strings.Contains(r.Err.Error(), fmt.Sprint(size)) {
				t.Fatalf("ignoreRange=%v: %s: %v, want ErrTooLarge naming the URL and the size", ignoreRange, r.Info.URL, r.Err)
			}
		}
		s.Close()
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("ignoreRange=%v: 6 objects of %d bytes refused in %v; %d bytes sent by the server, %d bytes allocated",
			ignoreRange, int64(size), took, served.Load(), alloc)
		if n != len(urls) {
			t.Fatalf("%d results for %d objects", n, len(urls))
		}
		// Before the fix each object was read whole: 6 x 1.5 GB.
		if alloc > 64<<20 {
			t.Fatalf("ignoreRange=%v: %d bytes allocated to refuse 6 objects", ignoreRange, alloc)
		}
		// A refused body is not read, but the kernel's socket buffers take what the
		// server wrote before the connection closed: a few MiB per object at most.
		if served.Load() > 6*(16<<20) {
			t.Fatalf("ignoreRange=%v: the server sent %d bytes for 6 refused objects", ignoreRange, served.Load())
		}
	}
}

// A password, presigned signature, credential and token in the URL are in no error
// message and in no cache file, whether the request succeeds, fails or is refused.
func TestSecretsNotShownOrStored(t *testing.T) {
	body := bytes.Repeat([]byte("secret-free bytes "), 5000)
	var authOK atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != password {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		authOK.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/missing"):
			http.NotFound(w, r)
		case strings.HasPrefix(r.URL.Path, "/busy"):
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			w.Header().Set("ETag", `"e1"`)
			http.ServeContent(w, r, "x", time.Unix(1700000000, 0), bytes.NewReader(body))
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cache, err := OpenCache(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	f := quickFetcher(time.Second, 3, cache)
	fsys := NewFS(context.Background(), f)

	// Success: fetched (authenticated), cached, and read again from the cache.
	good := secretURL(srv.URL, "/data/a.bin")
	for range 2 {
		got, err := f.Get(context.Background(), good)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("authenticated fetch: %v", err)
		}
	}
	sr, err := f.OpenReader(context.Background(), secretURL(srv.URL, "/data/shard.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(sr); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("shard read: %v", err)
	}
	sr.Close()
	if authOK.Load() == 0 {
		t.Fatal("the server never saw the credentials")
	}
	if n, _ := cache.Len(); n != 2 {
		t.Fatalf("cache holds %d entries, want 2", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		noSecrets(t, "cache file "+filepath.Base(p), string(b))
		noSecrets(t, "cache file name", p)
		if !bytes.Contains(b, []byte("alice:xxxxx@")) {
			t.Fatalf("cache header does not name the redacted URL: %.200s", b)
		}
	}

	// Failures: 404, 503 after retries, refused connection, unsupported scheme, a
	// bad URL; through the Fetcher and the FS (fs.PathError).
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, u := range []string{
		secretURL(srv.URL, "/missing.bin"), secretURL(srv.URL, "/busy.bin"), secretURL(closed.URL, "/x.bin"),
		strings.Replace(secretURL(srv.URL, "/x"), "http://", "ftp://", 1), secretURL(srv.URL, "/%zz"),
	} {
		_, err := f.Get(context.Background(), u)
		if err == nil {
			t.Fatalf("%s: no error", u)
		}
		noSecrets(t, "Get error", err.Error())
		noSecrets(t, "Get error (%+v)", fmt.Sprintf("%+v", err))
		_, err = fsys.Open(u)
		if err == nil {
			t.Fatalf("%s: no error", u)
		}
		noSecrets(t, "FS.Open error", err.Error())
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			t.Fatalf("FS.Open error %T, want *fs.PathError", err)
		}
		noSecrets(t, "PathError.Path", pe.Path)
		t.Logf("%v", err)
	}
	// Refused as too large.
	_, err = fsys.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	s := f.StreamUpTo(context.Background(), Infos(secretURL(srv.URL, "/data/b.bin")), 10)
	r, _ := s.Next()
	s.Close()
	if !errors.Is(r.Err, ErrTooLarge) {
		t.Fatalf("too large: %v", r.Err)
	}
	noSecrets(t, "too-large error", r.Err.Error())
}

// A cache entry whose bytes were damaged at rest (same length: the size check cannot
// see it) fails its checksum, is dropped and the object fetched again, by whole
// object reads and by shard readers alike.
func TestCacheCorruptionRefetched(t *testing.T) {
	body := make([]byte, 300<<10)
	for i := range body {
		body[i] = byte(i * 7)
	}
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("ETag", `"stable"`)
		http.ServeContent(w, r, "x", time.Unix(1700000000, 0), bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cache, err := OpenCache(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(NewStore(Options{}), FetchOptions{Concurrency: 4, ChunkSize: 64 << 10, Cache: cache})

	corrupt := func(url string) {
		t.Helper()
		p := filepath.Join(dir, cacheName(url))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("no cache entry for %s: %v", url, err)
		}
		n := len(b)
		for _, off := range []int{n - 1, n - 1000, n - len(body)/2} {
			b[off] ^= 0x5a
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(url string, shard bool) ([]byte, bool) {
		t.Helper()
		if shard {
			r, err := f.OpenReader(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			return b, r.cached != nil
		}
		s := f.Stream(context.Background(), Infos(url))
		defer s.Close()
		res, _ := s.Next()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		return res.Data, res.FromCache
	}
	for _, shard := range []bool{false, true} {
		url := fmt.Sprintf("%s/obj-%v.bin", srv.URL, shard)
		if b, _ := read(url, shard); !bytes.Equal(b, body) {
			t.Fatal("first read differs")
		}
		if b, hit := read(url, shard); !bytes.Equal(b, body) || !hit {
			t.Fatalf("shard=%v: second read: from cache %v", shard, hit)
		}
		corrupt(url)
		before := gets.Load()
		b, hit := read(url, shard)
		if !bytes.Equal(b, body) {
			t.Fatalf("shard=%v: the damaged cache entry was served", shard)
		}
		if hit || gets.Load() == before {
			t.Fatalf("shard=%v: damaged entry: from cache %v, %d GETs; want it fetched again", shard, hit, gets.Load()-before)
		}
		// The entry written again is good and served.
		if b, hit := read(url, shard); !bytes.Equal(b, body) || !hit {
			t.Fatalf("shard=%v: read after the refetch: from cache %v", shard, hit)
		}
	}
}

// The S3 secret key (AWS_SECRET_ACCESS_KEY) signs requests; it is in no error and no
// cache file, whatever the store answers.
func TestS3SecretKeyNeverShown(t *testing.T) {
	const secretKey = "SECRETKEY-not-shown-0123456789"
	data := map[string][]byte{"a.bin": bytes.Repeat([]byte("s3"), 4000)}
	st, base, p := s3Fixture(t, data, faultproxy.Faults{}, Options{})
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey) // read when the S3 client is made, below
	dir := t.TempDir()
	cache, err := OpenCache(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFetcher(st, FetchOptions{Concurrency: 2, Cache: cache, AttemptTimeout: 5 * time.Second,
		Retry: RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	fsys := NewFS(context.Background(), f)
	if b, err := f.Get(context.Background(), base+"a.bin"); err != nil || !bytes.Equal(b, data["a.bin"]) {
		t.Fatalf("get: %v", err)
	}
	var msgs []string
	for _, u := range []string{base + "missing.bin", "s3://no-such-bucket-here/x", "s3://"} {
		if _, err := f.Get(context.Background(), u); err != nil {
			msgs = append(msgs, err.Error())
		}
		if _, err := fsys.Open(u); err != nil {
			msgs = append(msgs, err.Error())
		}
		if _, err := fsys.List(u); err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	p.Set(faultproxy.Faults{ErrorRate: 1}) // every request answered 503
	if _, err := fsys.Open(base + "a.bin"); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) < 7 {
		t.Fatalf("only %d errors: %q", len(msgs), msgs)
	}
	for _, m := range msgs {
		if strings.Contains(m, secretKey) {
			t.Fatalf("error shows the secret key: %s", m)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Fatal("nothing cached")
	}
	for _, p := range files {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secretKey)) {
			t.Fatalf("cache file %s holds the secret key", p)
		}
	}
	t.Logf("%d errors checked, e.g. %s", len(msgs), msgs[0])
}
