package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// testObjects makes n objects with sizes drawn up to maxSize (some empty, some exactly
// a chunk multiple), named k000..., filled with seeded random bytes.
func testObjects(n int, maxSize int, seed uint64) (names []string, data map[string][]byte) {
	rng := rand.New(rand.NewPCG(seed, 7))
	data = map[string][]byte{}
	for i := range n {
		size := rng.IntN(maxSize + 1)
		switch i % 17 {
		case 3:
			size = 0
		case 5:
			size = 64 << 10
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("k%04d.bin", i)
		names = append(names, name)
		data[name] = b
	}
	return names, data
}

// nginxFixture writes objects under a fresh directory of nginx's root and returns the
// base URL (through a new fault proxy) and that directory.
func nginxFixture(t *testing.T, data map[string][]byte, f faultproxy.Faults) (base string, dir string, p *faultproxy.Proxy) {
	url, root := nginxServer(t)
	dir = filepath.Join(root, testName(t))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range data {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := faultproxy.Start(url, f, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p.URL + "/" + testName(t) + "/", dir, p
}

// s3Fixture creates a bucket holding the objects (written straight to moto) and
// returns a Store configured through the environment to reach moto via a fault proxy.
func s3Fixture(t *testing.T, data map[string][]byte, f faultproxy.Faults, opts Options) (*Store, string, *faultproxy.Proxy) {
	endpoint := motoServer(t)
	p, err := faultproxy.Start(endpoint, f, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s3Env(t, p.URL)
	bucket := strings.ReplaceAll(testName(t), "-", "")
	bucket = "b" + bucket[:min(len(bucket), 50)]
	direct := NewStore(Options{S3: S3Options{Endpoint: endpoint}})
	putObjects(t, direct, bucket, data)
	direct.CloseIdleConnections()
	st := NewStore(opts)
	t.Cleanup(st.CloseIdleConnections)
	return st, "s3://" + bucket + "/", p
}

func s3Client(t *testing.T, st *Store) *s3.Client {
	b, err := st.backend(context.Background(), "s3://x/y")
	if err != nil {
		t.Fatal(err)
	}
	return b.(*s3Backend).client
}

func putObjects(t *testing.T, st *Store, bucket string, data map[string][]byte) {
	ctx := context.Background()
	c := s3Client(t, st)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		var owned interface{ ErrorCode() string }
		if !errors.As(err, &owned) || !strings.Contains(owned.ErrorCode(), "BucketAlready") {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
	}
	for name, b := range data {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(name), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
}

func urls(base string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = base + n
	}
	return out
}

// checkStream reads a whole stream and checks every object arrives exactly once, in
// order, with the right bytes.
func checkStream(t *testing.T, s *Stream, items []ObjectInfo, want func(url string) []byte) []Result {
	t.Helper()
	var got []Result
	for {
		r, ok := s.Next()
		if !ok {
			break
		}
		got = append(got, r)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(got) != len(items) {
		t.Fatalf("got %d results for %d objects", len(got), len(items))
	}
	for i, r := range got {
		if r.Index != i || r.Info.URL != items[i].URL {
			t.Fatalf("result %d is index %d (%s), want %s", i, r.Index, r.Info.URL, items[i].URL)
		}
		if r.Err != nil {
			t.Fatalf("object %s: %v", r.Info.URL, r.Err)
		}
		w := want(r.Info.URL)
		if !bytes.Equal(r.Data, w) {
			t.Fatalf("object %s: %d bytes differ from the %d written", r.Info.URL, len(r.Data), len(w))
		}
		if r.Info.Size != int64(len(w)) {
			t.Fatalf("object %s: Info.Size %d, want %d", r.Info.URL, r.Info.Size, len(w))
		}
	}
	return got
}

func TestScheme(t *testing.T) {
	for in, want := range map[string]string{
		"s3://b/k": "s3", "HTTPS://x/y": "https", "http://x": "http", "/data/a.jpg": "",
		"file:///a": "file", "C:/x": "", "rel/a://b": "", "": "",
	} {
		if got := scheme(in); got != want {
			t.Errorf("scheme(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		s              string
		start, end, tt int64
		ok             bool
	}{
		{"bytes 0-99/1000", 0, 99, 1000, true}, {"bytes */0", 0, -1, 0, true},
		{"bytes 5-9/*", 5, 9, -1, true}, {"bytes 9-5/10", 0, 0, 0, false}, {"items 0-1/2", 0, 0, 0, false},
	} {
		a, b, tt, ok := parseContentRange(c.s)
		if ok != c.ok || ok && (a != c.start || b != c.end || tt != c.tt) {
			t.Errorf("parseContentRange(%q) = %d %d %d %v", c.s, a, b, tt, ok)
		}
	}
}

// testOpen checks Open/ReadAt/ReadAll of one object against its bytes.
func testOpen(t *testing.T, st *Store, url string, want []byte) {
	t.Helper()
	ctx := context.Background()
	o, err := st.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if o.Info().Size != int64(len(want)) || o.Info().ETag == "" && IsRemote(url) {
		t.Fatalf("%s: Info %+v, want size %d and an ETag", url, o.Info(), len(want))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		off := rng.Int64N(int64(len(want)) + 1)
		n := rng.IntN(len(want)/2 + 2)
		p := make([]byte, n)
		got, err := o.ReadAt(p, off)
		end := min(off+int64(n), int64(len(want)))
		if got != int(end-off) || !bytes.Equal(p[:got], want[off:end]) {
			t.Fatalf("%s: ReadAt(%d bytes at %d) = %d, %v; bytes differ or short", url, n, off, got, err)
		}
		if (off+int64(n) > int64(len(want))) != (err == io.EOF) || err != nil && err != io.EOF {
			t.Fatalf("%s: ReadAt(%d bytes at %d) error %v", url, n, off, err)
		}
	}
	all, err := o.ReadAll(1 << 30)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("%s: ReadAll: %v (%d bytes, want %d)", url, err, len(all), len(want))
	}
	if len(want) > 1 {
		if _, err := o.ReadAll(int64(len(want) - 1)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: ReadAll below the size: %v, want ErrTooLarge", url, err)
		}
	}
}

func TestHTTPOpenReadAt(t *testing.T) {
	names, data := testObjects(4, 200<<10, 1)
	base, _, p := nginxFixture(t, data, faultproxy.Faults{})
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	for _, n := range names {
		testOpen(t, st, base+n, data[n])
	}
	_, err := st.Open(context.Background(), base+"missing.bin")
	var e *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || !strings.Contains(err.Error(), base+"missing.bin") {
		t.Fatalf("missing object: %v, want ErrNotFound naming the URL", err)
	}
	if _, err := st.List(context.Background(), base); !errors.Is(err, ErrListUnsupported) {
		t.Fatalf("List over http: %v, want ErrListUnsupported", err)
	}
	// A server that ignores Range: ReadAt still returns the right bytes.
	p.Set(faultproxy.Faults{IgnoreRange: true})
	for _, n := range names[:2] {
		testOpen(t, st, base+n, data[n])
	}
}

func TestS3OpenListPaginated(t *testing.T) {
	names, data := testObjects(23, 40<<10, 2)
	data["dir/"] = nil
	st, base, p := s3Fixture(t, data, faultproxy.Faults{}, Options{S3: S3Options{PageSize: 5}})
	before := p.Requests.Load()
	list, err := st.List(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if pages := p.Requests.Load() - before; pages != 5 {
		t.Errorf("listing 23 keys by 5 took %d requests, want 5 pages", pages)
	}
	if len(list) != len(names) {
		t.Fatalf("List returned %d objects, want %d", len(list), len(names))
	}
	for i, o := range list {
		if o.URL != base+names[i] || o.Size != int64(len(data[names[i]])) || o.ETag == "" {
			t.Fatalf("List[%d] = %+v, want %s of %d bytes with an ETag", i, o, base+names[i], len(data[names[i]]))
		}
	}
	sub, err := st.List(context.Background(), base+"k001")
	if err != nil || len(sub) != 10 {
		t.Fatalf("List(prefix k001) = %d objects, %v; want 10", len(sub), err)
	}
	for _, n := range names[:4] {
		testOpen(t, st, base+n, data[n])
	}
	if _, err := st.Open(context.Background(), base+"missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v, want ErrNotFound", err)
	}
	if _, err := st.Open(context.Background(), "s3://"); err == nil || !strings.Contains(err.Error(), "no bucket") {
		t.Fatalf("s3:// without bucket: %v", err)
	}
}

func TestS3PathStyleOption(t *testing.T) {
	s3Env(t, "http://127.0.0.1:1")
	for _, c := range []struct {
		env  string
		want bool
	}{{"", true}, {"auto", true}, {"false", false}, {"1", true}} {
		t.Setenv("GODALI_S3_PATH_STYLE", c.env)
		b, err := newS3Backend(context.Background(), S3Options{}, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.client.Options().UsePathStyle; got != c.want {
			t.Errorf("GODALI_S3_PATH_STYLE=%q with an endpoint: path style %v, want %v", c.env, got, c.want)
		}
	}
	t.Setenv("GODALI_S3_PATH_STYLE", "sideways")
	if _, err := newS3Backend(context.Background(), S3Options{}, 4); err == nil || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("bad GODALI_S3_PATH_STYLE: %v", err)
	}
	t.Setenv("GODALI_S3_PATH_STYLE", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	b, err := newS3Backend(context.Background(), S3Options{}, 4)
	if err != nil || b.client.Options().UsePathStyle {
		t.Errorf("no endpoint: path style should be off (virtual hosts on AWS): %v", err)
	}
}

var faults = faultproxy.Faults{Latency: time.Millisecond, ErrorRate: 0.15, DropRate: 0.15}

func fetchOpts() FetchOptions {
	return FetchOptions{Concurrency: 16, ChunkSize: 64 << 10, Retry: RetryPolicy{MaxAttempts: 12, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}}
}

func TestFetcherUnderFaultsHTTP(t *testing.T) {
	names, data := testObjects(150, 300<<10, 3)
	base, _, p := nginxFixture(t, data, faults)
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	f := NewFetcher(st, fetchOpts())
	items := Infos(urls(base, names)...)
	s := f.Stream(context.Background(), items)
	defer s.Close()
	checkStream(t, s, items, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
	if p.Errors.Load() == 0 || p.Drops.Load() == 0 || f.Stats().Retries == 0 {
		t.Fatalf("faults were not exercised: %d 503s, %d drops, %d retries", p.Errors.Load(), p.Drops.Load(), f.Stats().Retries)
	}
	t.Logf("%d requests, %d retries, proxy: %d 503s, %d drops", f.Stats().Requests, f.Stats().Retries, p.Errors.Load(), p.Drops.Load())
}

func TestFetcherUnderFaultsS3(t *testing.T) {
	names, data := testObjects(120, 300<<10, 4)
	st, base, p := s3Fixture(t, data, faults, Options{})
	f := NewFetcher(st, fetchOpts())
	items := Infos(urls(base, names)...)
	s := f.Stream(context.Background(), items)
	defer s.Close()
	checkStream(t, s, items, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
	if p.Errors.Load() == 0 || p.Drops.Load() == 0 {
		t.Fatalf("faults were not exercised: %d 503s, %d drops", p.Errors.Load(), p.Drops.Load())
	}
}

func TestFetcherIgnoredRange(t *testing.T) {
	names, data := testObjects(20, 300<<10, 5)
	base, _, _ := nginxFixture(t, data, faultproxy.Faults{IgnoreRange: true})
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	f := NewFetcher(st, fetchOpts())
	items := Infos(urls(base, names)...)
	s := f.Stream(context.Background(), items)
	defer s.Close()
	checkStream(t, s, items, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
}

func TestFetcherErrors(t *testing.T) {
	names, data := testObjects(3, 1000, 6)
	base, _, p := nginxFixture(t, data, faultproxy.Faults{ErrorRate: 1})
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	opts := fetchOpts()
	opts.Retry.MaxAttempts = 3
	f := NewFetcher(st, opts)
	_, err := f.Get(context.Background(), base+names[0])
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 || e.Attempts != 3 || !strings.Contains(err.Error(), base+names[0]) {
		t.Fatalf("always 503: %v, want an *Error naming the URL after 3 attempts", err)
	}
	if got := p.Requests.Load(); got != 3 {
		t.Fatalf("always 503: %d requests, want 3", got)
	}
	// 404 is final: one request, and the stream goes on with the next object.
	p.Set(faultproxy.Faults{})
	before := p.Requests.Load()
	items := Infos(base+"missing.bin", base+names[1])
	s := f.Stream(context.Background(), items)
	defer s.Close()
	r, _ := s.Next()
	if !errors.Is(r.Err, ErrNotFound) || !strings.Contains(r.Err.Error(), "missing.bin") {
		t.Fatalf("missing object: %v", r.Err)
	}
	r, _ = s.Next()
	if r.Err != nil || !bytes.Equal(r.Data, data[names[1]]) {
		t.Fatalf("object after a missing one: %v", r.Err)
	}
	if got := p.Requests.Load() - before; got != 2 {
		t.Fatalf("404 was retried: %d requests for 2 objects", got)
	}
	if _, err := f.Get(context.Background(), "ftp://host/x"); !errors.Is(err, ErrUnsupportedScheme) {
		t.Fatalf("ftp: %v", err)
	}
}

func TestFetcherCancelNoLeak(t *testing.T) {
	names, data := testObjects(100, 2000, 7)
	base, _, p := nginxFixture(t, data, faultproxy.Faults{})
	runtime.GC()
	baseline := runtime.NumGoroutine()
	st := NewStore(Options{})
	f := NewFetcher(st, FetchOptions{Concurrency: 8})
	ctx, cancel := context.WithCancel(context.Background())
	items := Infos(urls(base, names)...)
	s := f.Stream(ctx, items)
	if r, ok := s.Next(); !ok || r.Err != nil {
		t.Fatalf("first object: %v", r.Err)
	}
	p.Set(faultproxy.Faults{Latency: time.Hour}) // everything now hangs in flight
	for range 3 {
		s.Next() // some were already read ahead
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	n := 0
	for {
		if _, ok := s.Next(); !ok {
			break
		}
		n++
	}
	if !errors.Is(s.Err(), context.Canceled) || n >= len(items)-4 {
		t.Fatalf("after cancel: Err %v after %d more objects", s.Err(), n)
	}
	s.Close()
	st.CloseIdleConnections()
	p.Close() // its connections to nginx were made after the baseline too
	// The HTTP transport's connection goroutines end asynchronously: wait for them.
	for i := 0; i < 200 && runtime.NumGoroutine() > baseline; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseline {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before the stream:\n%s", g, baseline, buf[:runtime.Stack(buf, true)])
	}
}
