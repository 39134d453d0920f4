package readers_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/testref"
)

// Issue 16, remote half: file lists that point outside their data set, objects over
// max_file_bytes, servers that never answer, Close during a stalled read, and URL
// secrets, through whole pipelines against httptest servers on loopback.

const (
	urlPassword  = "PASSWORD-not-shown"
	urlSignature = "SIGNATURE-not-shown"
)

func withSecrets(base, p string) string {
	return strings.Replace(base, "http://", "http://alice:"+urlPassword+"@", 1) + p + "?X-Amz-Signature=" + urlSignature + "&X-Amz-Expires=60"
}

func noURLSecrets(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, urlPassword) || strings.Contains(s, urlSignature) {
		t.Fatalf("%s shows a secret of the URL: %s", what, s)
	}
}

// fileServer serves files (path -> bytes) with ETags; a handler hook may take a
// request over.
func fileServer(t *testing.T, files map[string][]byte, hook func(w http.ResponseWriter, r *http.Request) bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hook != nil && hook(w, r) {
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, len(b)))
		http.ServeContent(w, r, r.URL.Path, time.Unix(1700000000, 0), bytes.NewReader(b))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func buildErr(desc string) error {
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Build()
}

func fileListDesc(list, extra string) string {
	return fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "ops": [{"op": "readers.file", "name": "R", "outputs": ["a", "b"],
		"args": {"file_list": %q %s}}], "outputs": ["a"]}`, list, extra)
}

// A file_list served over HTTP may name only objects of its own server: not local
// files (/etc/hostname was read), not other hosts, unless allow_outside_root is set.
func TestRemoteFileListStaysOnItsServer(t *testing.T) {
	local := filepath.Join(t.TempDir(), "local.jpg")
	if err := os.WriteFile(local, []byte("a local file"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/data/a.jpg":       []byte("remote a"),
		"/up.jpg":           []byte("remote up"),
		"/data/local.txt":   []byte(local + " 0\n"),
		"/data/etc.txt":     []byte("a.jpg 0\n/etc/hostname 1\n"),
		"/data/other.txt":   []byte("a.jpg 0\nhttp://other.example:8080/x.jpg 1\n"),
		"/data/s3.txt":      []byte("s3://bucket/x.jpg 1\n"),
		"/data/fileurl.txt": []byte("file:///etc/hostname 1\n"),
		"/data/ok.txt":      []byte("a.jpg 0\n../up.jpg 1\nsub/../a.jpg 2\n"),
	}
	srv := fileServer(t, files, nil)
	for _, c := range []struct{ list, entry string }{
		{"local.txt", local}, {"etc.txt", "/etc/hostname"}, {"other.txt", "http://other.example:8080/x.jpg"},
		{"s3.txt", "s3://bucket/x.jpg"},
	} {
		list := withSecrets(srv.URL, "/data/"+c.list)
		err := buildErr(fileListDesc(list, ""))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.entry)) || !strings.Contains(err.Error(), "allow_outside_root") {
			t.Fatalf("%s: %v, want the entry %q refused, naming allow_outside_root", c.list, err, c.entry)
		}
		noURLSecrets(t, "refusal", err.Error())
		t.Logf("%s: %v", c.list, err)
	}
	// file:// is no scheme of the reader's: the entry is a relative name on the server.
	// Relative entries, '..' included, resolve under the list's directory URL.
	for _, l := range []string{"ok.txt", "fileurl.txt"} {
		if err := buildErr(fileListDesc(srv.URL+"/data/"+l, "")); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	// The opt-in: the local file is read.
	p := build(t, fileListDesc(srv.URL+"/data/local.txt", `, "allow_outside_root": true`), nil)
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := batchDump(t, b); !strings.Contains(got, fmt.Sprintf("%x", "a local file")) {
		t.Fatalf("allow_outside_root: batch %s does not hold the local file", got)
	}

	// readers.numpy's file_list follows the same rule.
	err = buildErr(fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "readers.numpy", "name": "R", "outputs": ["a"],
		"args": {"file_list": %q}}], "outputs": ["a"]}`, srv.URL+"/data/local.txt"))
	if err == nil || !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), "allow_outside_root") {
		t.Fatalf("readers.numpy: %v, want %s refused", err, local)
	}
}

// A local file_list may name files below its root (file_root, or the list's
// directory: relative paths, as DALI documents, and absolute paths inside it); paths
// outside it and URLs need allow_outside_root.
func TestLocalFileListStaysUnderRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "c"), 0o755)
	for p, b := range map[string]string{"root/c/a.jpg": "A", "outside.jpg": "O"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.txt", "c/a.jpg 0\n"+filepath.Join(root, "c/a.jpg")+" 1\nc/../c/a.jpg 2\n")
	if err := buildErr(fileListDesc(ok, "")); err != nil {
		t.Fatal(err)
	}
	if err := buildErr(fileListDesc(ok, fmt.Sprintf(`, "file_root": %q`, root))); err != nil {
		t.Fatal(err)
	}
	for _, entry := range []string{filepath.Join(dir, "outside.jpg"), "../outside.jpg", "http://example.com/x.jpg"} {
		list := write("bad.txt", "c/a.jpg 0\n"+entry+" 1\n")
		err := buildErr(fileListDesc(list, ""))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", entry)) || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("entry %s: %v, want it refused naming the entry and its line", entry, err)
		}
		if err := buildErr(fileListDesc(list, `, "allow_outside_root": true`)); err != nil {
			t.Fatalf("entry %s with allow_outside_root: %v", entry, err)
		}
	}
}

// lazyBytes is an object made up as it is read: it is never stored anywhere.
type lazyBytes struct {
	size, off int64
	sent      *atomic.Int64
}

func (l *lazyBytes) Read(p []byte) (int, error) {
	if l.off >= l.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), l.size-l.off))
	clear(p[:n])
	l.off += int64(n)
	l.sent.Add(int64(n))
	return n, nil
}

func (l *lazyBytes) Seek(off int64, whence int) (int64, error) {
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

// Remote files over max_file_bytes are refused by size before they are downloaded,
// as local ones are: several 1.5 GB objects fetched ahead at once used to reach
// 2.9 GB RSS and a fatal out of memory.
func TestRemoteOversizedFilesRefusedBeforeDownload(t *testing.T) {
	const size = 1500 << 20
	sent := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"big"`)
		http.ServeContent(w, r, "big.jpg", time.Unix(1700000000, 0), &lazyBytes{size: size, sent: sent})
	}))
	t.Cleanup(srv.Close)
	var files []string
	for i := range 8 {
		files = append(files, fmt.Sprintf("%s/big%d.jpg", srv.URL, i))
	}
	for _, onError := range []string{"raise", "skip"} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sent.Store(0)
		start := time.Now()
		p := build(t, fmt.Sprintf(`{"batch_size": 8, "num_threads": 2, "on_error": %q, "ops": [{"op": "readers.file", "name": "R",
			"outputs": ["a", "b"], "args": {"files": %s}}], "outputs": ["a"]}`, onError, quoted(files)), nil)
		_, err := p.Next()
		took := time.Since(start)
		p.Close()
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("on_error=%s: %v in %v; %d bytes sent by the server, %d bytes allocated; process %s", onError, err, took, sent.Load(), alloc, vmHWM())
		if err == nil || !strings.Contains(err.Error(), "max_file_bytes") || !strings.Contains(err.Error(), srv.URL+"/big") {
			t.Fatalf("on_error=%s: %v, want a max_file_bytes error naming the URL", onError, err)
		}
		if alloc > 128<<20 || sent.Load() > 8*(16<<20) {
			t.Fatalf("on_error=%s: %d bytes allocated, %d sent: the objects were downloaded", onError, alloc, sent.Load())
		}
	}
}

// vmHWM is the process's peak resident size as /proc/self/status reports it.
func vmHWM() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return "VmHWM: unknown"
}

// stalling is a server that answers HEAD but never a GET of a path with the given
// suffix (until the test ends).
func stalling(t *testing.T, files map[string][]byte, suffix string, method string) *httptest.Server {
	done := make(chan struct{})
	srv := fileServer(t, files, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != method || !strings.HasSuffix(r.URL.Path, suffix) {
			return false
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
		return true
	})
	t.Cleanup(func() { close(done) })
	return srv
}

// A server that never answers costs io_timeout per attempt and 8 attempts: build()
// and Next() fail naming the (redacted) URL instead of blocking.
func TestStalledServerFailsWithinTimeout(t *testing.T) {
	testref.Long(t, "waits out a read timeout")
	// file_list: the list's HEAD never answers.
	srv := stalling(t, map[string][]byte{"/l/list.txt": []byte("a.jpg 0\n")}, "list.txt", http.MethodHead)
	start := time.Now()
	err := buildErr(fileListDesc(withSecrets(srv.URL, "/l/list.txt"), `, "io_timeout": 0.2`))
	took := time.Since(start)
	t.Logf("file_list HEAD: %v after %v", err, took)
	// 8 attempts of 0.2 s plus backoffs (50 ms doubling, capped at 2 s, jittered): < 6 s.
	if err == nil || took > 10*time.Second || !strings.Contains(err.Error(), "/l/list.txt") || !strings.Contains(err.Error(), "after 8 attempts") {
		t.Fatalf("file_list HEAD: %v after %v", err, took)
	}
	noURLSecrets(t, "build error", err.Error())

	// tfrecord records: the index and the HEAD answer, the ranged GETs of the records
	// never do.
	files := map[string][]byte{"/t/part.tfrecord": make([]byte, 64), "/t/part.idx": []byte("0 32\n32 32\n")}
	srv = stalling(t, files, ".tfrecord", http.MethodGet)
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "ops": [{"op": "readers.tfrecord", "name": "R", "outputs": ["l"],
		"args": {"path": [%q], "index_path": [%q], "io_timeout": 0.2,
		"features": "[{\"name\": \"label\", \"kind\": \"fixed\", \"dtype\": \"int64\", \"shape\": [1], \"default\": -1}]"}}], "outputs": ["l"]}`,
		withSecrets(srv.URL, "/t/part.tfrecord"), srv.URL+"/t/part.idx")
	p := build(t, desc, nil)
	start = time.Now()
	_, err = p.Next()
	took = time.Since(start)
	t.Logf("tfrecord ranged GET: %v after %v", err, took)
	if err == nil || took > 10*time.Second || !strings.Contains(err.Error(), "/t/part.tfrecord") || !strings.Contains(err.Error(), "after 8 attempts") {
		t.Fatalf("tfrecord ranged GET: %v after %v", err, took)
	}
	noURLSecrets(t, "run error", err.Error())
}

// Close interrupts a read stalled on a server that never answers (the default
// io_timeout is 30 s x 8 attempts): it returns promptly, and so does the Next that
// waited on the read.
func TestCloseInterruptsStalledRead(t *testing.T) {
	srv := stalling(t, map[string][]byte{"/x/a.jpg": []byte("abc")}, "a.jpg", http.MethodGet)
	p, err := engine.NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "ops": [{"op": "readers.file", "name": "R",
		"outputs": ["a", "b"], "args": {"files": [%q]}}], "outputs": ["a"]}`, srv.URL+"/x/a.jpg")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	go func() { _, err := p.Next(); next <- err }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-next:
		t.Fatalf("Next returned before Close: %v", err)
	default:
	}
	start := time.Now()
	p.Close()
	took := time.Since(start)
	select {
	case err = <-next:
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5 s after Close")
	}
	t.Logf("Close took %v; Next: %v", took, err)
	if took > 3*time.Second {
		t.Fatalf("Close took %v with a read stalled", took)
	}
	if err == nil || !strings.Contains(err.Error(), "/x/a.jpg") || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Next after Close: %v", err)
	}
}

// URL secrets appear neither in the errors a pipeline returns nor in cache_dir.
func TestPipelineErrorsAndCacheHideSecrets(t *testing.T) {
	files := map[string][]byte{"/d/a.jpg": bytes.Repeat([]byte("A"), 5000), "/d/b.jpg": []byte("B")}
	srv := fileServer(t, files, nil)
	cache := t.TempDir()
	good := []string{withSecrets(srv.URL, "/d/a.jpg"), withSecrets(srv.URL, "/d/b.jpg")}
	p := build(t, fmt.Sprintf(`{"batch_size": 2, "ops": [{"op": "readers.file", "name": "R", "outputs": ["a", "b"],
		"args": {"files": %s, "cache_dir": %q}}], "outputs": ["a"]}`, quoted(good), cache), nil)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	ents, _ := os.ReadDir(cache)
	if len(ents) != 2 {
		t.Fatalf("cache_dir holds %d files, want 2", len(ents))
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(cache, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		noURLSecrets(t, "cache_dir file "+e.Name(), string(b))
	}
	for _, onError := range []string{"raise", "skip"} {
		bad := []string{withSecrets(srv.URL, "/d/missing.jpg"), good[1]}
		p := build(t, fmt.Sprintf(`{"batch_size": 2, "on_error": %q, "ops": [{"op": "readers.file", "name": "R", "outputs": ["a", "b"],
			"args": {"files": %s, "cache_dir": %q}}], "outputs": ["a"]}`, onError, quoted(bad), cache), nil)
		b, err := p.Next()
		if onError == "raise" {
			if err == nil || !strings.Contains(err.Error(), "/d/missing.jpg") {
				t.Fatalf("missing file: %v", err)
			}
			noURLSecrets(t, "sample error", err.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Skips) == 0 {
			t.Fatal("on_error=skip: no skip recorded")
		}
		for _, s := range b.Skips {
			noURLSecrets(t, "skip record", fmt.Sprintf("%+v", s))
		}
	}
}
