package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// The same cases as S3 (remote_test.go, hardening_test.go) against Azurite (az://)
// and fake-gcs-server (gs://), each behind the fault proxy.

// cloudKind is one emulated store: fixture uploads the objects and returns a Store
// reaching the emulator through a fault proxy and the URL prefix of the objects.
type cloudKind struct {
	name    string
	fixture func(t *testing.T, data map[string][]byte, f faultproxy.Faults, opts Options) (*Store, string, *faultproxy.Proxy)
}

var clouds = []cloudKind{{"azure", azureFixture}, {"gcs", gcsFixture}}

func azureFixture(t *testing.T, data map[string][]byte, f faultproxy.Faults, opts Options) (*Store, string, *faultproxy.Proxy) {
	endpoint := azuriteServer(t)
	container := bucketName(t, "c")
	putAzure(t, endpoint, container, data)
	p, err := faultproxy.Start(strings.TrimSuffix(endpoint, "/"+azuriteAccount), f, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	azureEnv(t, p.URL+"/"+azuriteAccount)
	st := NewStore(opts)
	t.Cleanup(st.CloseIdleConnections)
	return st, "az://" + container + "/", p
}

func gcsFixture(t *testing.T, data map[string][]byte, f faultproxy.Faults, opts Options) (*Store, string, *faultproxy.Proxy) {
	endpoint := fakeGCSServer(t)
	bucket := bucketName(t, "g")
	putGCS(t, endpoint, bucket, data)
	p, err := faultproxy.Start(endpoint, f, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	gcsEnv(t, p.URL)
	st := NewStore(opts)
	t.Cleanup(st.CloseIdleConnections)
	return st, "gs://" + bucket + "/", p
}

func forClouds(t *testing.T, fn func(t *testing.T, c cloudKind)) {
	for _, c := range clouds {
		t.Run(c.name, func(t *testing.T) { fn(t, c) })
	}
}

// TestCloudOpenListReadAt: listing (with continuation for Azure: 7 names a page),
// names with spaces and non-ASCII letters, sizes and ETags, ranged reads, a missing
// object.
func TestCloudOpenListReadAt(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		names, data := testObjects(23, 40<<10, 11)
		data["dir/a b/ünï.bin"] = []byte("spaces and letters")
		data["dir/x+y%z.bin"] = []byte("reserved characters")
		names = append(names, "dir/a b/ünï.bin", "dir/x+y%z.bin")
		st, base, p := c.fixture(t, data, faultproxy.Faults{}, Options{Azure: AzureOptions{PageSize: 7}})
		ctx := context.Background()
		got, err := st.List(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(names)
		if len(got) != len(names) {
			t.Fatalf("listed %d objects, want %d", len(got), len(names))
		}
		for i, o := range got {
			if o.URL != base+names[i] || o.Size != int64(len(data[names[i]])) || o.ETag == "" {
				t.Errorf("listing %d: %+v, want %s of %d bytes with an ETag", i, o, base+names[i], len(data[names[i]]))
			}
		}
		if c.name == "azure" && p.Requests.Load() < 4 {
			t.Errorf("a listing of %d blobs, 7 a page, made %d requests", len(names), p.Requests.Load())
		}
		sub, err := st.List(ctx, base+"dir/")
		if err != nil || len(sub) != 2 {
			t.Fatalf("listing dir/: %v, %v", sub, err)
		}
		for _, o := range got {
			testOpen(t, st, o.URL, data[strings.TrimPrefix(o.URL, base)])
			obj, err := st.Open(ctx, o.URL)
			if err != nil {
				t.Fatal(err)
			}
			if obj.Info().ETag != o.ETag {
				t.Errorf("%s: ETag %s at open, %s in the listing", o.URL, obj.Info().ETag, o.ETag)
			}
		}
		_, err = st.Open(ctx, base+"no/such")
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), base+"no/such") {
			t.Errorf("missing object: %v", err)
		}
	})
}

func TestCloudFetcherUnderFaults(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		names, data := testObjects(80, 300<<10, 5)
		st, base, p := c.fixture(t, data, faults, Options{})
		f := NewFetcher(st, fetchOpts())
		items := Infos(urls(base, names)...)
		s := f.Stream(context.Background(), items)
		defer s.Close()
		checkStream(t, s, items, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
		if p.Errors.Load() == 0 || p.Drops.Load() == 0 || f.Stats().Retries == 0 {
			t.Fatalf("faults were not exercised: %d 503s, %d drops, %d retries", p.Errors.Load(), p.Drops.Load(), f.Stats().Retries)
		}
		// The same through the listing (sizes and ETags known) and a shard reader.
		var listed []ObjectInfo
		err := f.retry(context.Background(), base, func(ctx context.Context) error {
			var err error
			listed, err = st.List(ctx, base)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		s2 := f.Stream(context.Background(), listed)
		defer s2.Close()
		checkStream(t, s2, listed, func(u string) []byte { return data[strings.TrimPrefix(u, base)] })
		big := names[0]
		for _, n := range names {
			if len(data[n]) > len(data[big]) {
				big = n
			}
		}
		r, err := f.OpenReader(context.Background(), base+big)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(b, data[big]) {
			t.Fatalf("shard reader: %d bytes, %v", len(b), err)
		}
	})
}

// TestCloudStormsAndCuts: every request answered 503, then every body cut short: the
// Fetcher gives up after its attempts with an error naming the object, and succeeds
// once the store recovers.
func TestCloudStormsAndCuts(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		names, data := testObjects(3, 100<<10, 6)
		data[names[0]] = bytes.Repeat([]byte("x"), 100<<10)
		st, base, p := c.fixture(t, data, faultproxy.Faults{}, Options{})
		f := NewFetcher(st, FetchOptions{ChunkSize: 32 << 10, Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
		url := base + names[0]
		for _, fl := range []struct {
			f    faultproxy.Faults
			want string
		}{{faultproxy.Faults{ErrorRate: 1}, "HTTP 503"}, {faultproxy.Faults{DropRate: 1}, "EOF"}} {
			p.Set(fl.f)
			_, err := f.Get(context.Background(), url)
			var e *Error
			if !errors.As(err, &e) || e.Attempts != 3 || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), fl.want) {
				t.Errorf("%+v: got %v, want an *Error naming %s with %q after 3 attempts", fl.f, err, url, fl.want)
			}
		}
		p.Set(faultproxy.Faults{})
		b, err := f.Get(context.Background(), url)
		if err != nil || !bytes.Equal(b, data[names[0]]) {
			t.Fatalf("after the store recovered: %d bytes, %v", len(b), err)
		}
	})
}

// TestCloudStallsTimeOut: a store that answers nothing within io_timeout costs at
// most attempts x timeout, for opens, reads and listing pages alike.
func TestCloudStallsTimeOut(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		_, data := testObjects(2, 1<<10, 8)
		st, base, p := c.fixture(t, data, faultproxy.Faults{}, Options{})
		f := NewFetcher(st, FetchOptions{AttemptTimeout: 150 * time.Millisecond, Retry: RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond}})
		fsys := NewFS(context.Background(), f)
		p.Set(faultproxy.Faults{Latency: 10 * time.Second})
		url := base + "k0000.bin"
		start := time.Now()
		_, err := f.Get(context.Background(), url)
		var e *Error
		if took := time.Since(start); !errors.As(err, &e) || e.Attempts != 2 || took > 2*time.Second ||
			!strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "AttemptTimeout") {
			t.Errorf("stalled GET: %v after %v, want an *Error naming %s and the timeout after 2 attempts", err, took, url)
		}
		start = time.Now()
		_, err = fsys.Open(url)
		if took := time.Since(start); err == nil || took > 2*time.Second || !strings.Contains(err.Error(), url) {
			t.Errorf("stalled open: %v after %v", err, took)
		}
		start = time.Now()
		_, err = fsys.List(base)
		if took := time.Since(start); err == nil || took > 2*time.Second || !strings.Contains(err.Error(), "no complete answer") {
			t.Errorf("stalled listing: %v after %v", err, took)
		}
		p.Set(faultproxy.Faults{})
	})
}

// TestCloudOversizeRefused: max_file_bytes refuses a larger object from its size
// (listing or first response), before its body is read.
func TestCloudOversizeRefused(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		data := map[string][]byte{"big.bin": bytes.Repeat([]byte{7}, 1<<20), "small.bin": []byte("ok")}
		st, base, p := c.fixture(t, data, faultproxy.Faults{}, Options{})
		f := NewFetcher(st, FetchOptions{ChunkSize: 64 << 10})
		listed, err := st.List(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		for _, items := range [][]ObjectInfo{listed, Infos(base+"big.bin", base+"small.bin")} {
			bodies := p.Bodies.Load()
			s := f.StreamUpTo(context.Background(), items, 1000)
			var results []Result
			for {
				r, ok := s.Next()
				if !ok {
					break
				}
				results = append(results, r)
			}
			s.Close()
			if len(results) != 2 || !errors.Is(results[0].Err, ErrTooLarge) || results[1].Err != nil || string(results[1].Data) != "ok" {
				t.Fatalf("results %+v", results)
			}
			// At most the first 64 KiB chunk of big.bin was asked for, never the whole.
			if n := p.Bodies.Load() - bodies; n > 2 {
				t.Errorf("%d bodies fetched for one small object and one refused", n)
			}
		}
	})
}

// TestCloudCache: a second epoch comes from the disk cache (no GET), and a damaged
// entry is fetched again.
func TestCloudCache(t *testing.T) {
	forClouds(t, func(t *testing.T, c cloudKind) {
		names, data := testObjects(10, 50<<10, 9)
		st, base, _ := c.fixture(t, data, faultproxy.Faults{}, Options{})
		dir := t.TempDir()
		cache, err := OpenCache(dir, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		f := NewFetcher(st, FetchOptions{Cache: cache})
		listed, err := st.List(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		want := func(u string) []byte { return data[strings.TrimPrefix(u, base)] }
		readStream(t, f, listed, want)
		before := f.Stats()
		readStream(t, f, listed, want)
		after := f.Stats()
		if after.CacheHits-before.CacheHits != int64(len(names)) || after.Requests != before.Requests {
			t.Errorf("second epoch: %d cache hits, %d requests; want %d hits and none", after.CacheHits-before.CacheHits, after.Requests-before.Requests, len(names))
		}
		// Damage every entry at rest: each is refetched, with the right bytes.
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && fi.Size() > 64 {
				b, _ := os.ReadFile(p)
				b[len(b)-1] ^= 0xff
				os.WriteFile(p, b, 0o644)
			}
			return nil
		})
		readStream(t, f, listed, want)
	})
}

func TestCloudURLErrors(t *testing.T) {
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "")
	t.Setenv("AZURE_STORAGE_SERVICE_ENDPOINT", "")
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	for url, want := range map[string]string{
		"az://":                       "no container",
		"az://c/x?sig=abc":            "take no query",
		"az://c/x":                    "AZURE_STORAGE_ACCOUNT",
		"gs://":                       "no bucket",
		"gs://b/x?X-Goog-Signature=s": "take no query",
	} {
		_, err := st.Open(context.Background(), url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", url, err, want)
		}
		if strings.Contains(fmt.Sprint(err), "abc") {
			t.Errorf("%s: the error shows the signature: %v", url, err)
		}
	}
	for url, want := range map[string]bool{"az://c/k": true, "gs://b/k": true, "AZ://c/k": true, "azx://c": false} {
		if IsRemote(url) != want {
			t.Errorf("IsRemote(%s) = %v", url, !want)
		}
	}
}
