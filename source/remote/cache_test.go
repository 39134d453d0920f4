package remote

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

func readStream(t *testing.T, f *Fetcher, items []ObjectInfo, want func(string) []byte) []Result {
	t.Helper()
	s := f.Stream(context.Background(), items)
	defer s.Close()
	return checkStream(t, s, items, want)
}

func TestCacheHTTP(t *testing.T) {
	names, data := testObjects(30, 200<<10, 8)
	base, dir, p := nginxFixture(t, data, faultproxy.Faults{})
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	cache, err := OpenCache(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := fetchOpts()
	opts.Cache = cache
	f := NewFetcher(st, opts)
	items := Infos(urls(base, names)...)
	want := func(u string) []byte { return data[strings.TrimPrefix(u, base)] }

	readStream(t, f, items, want)
	bodies := p.Bodies.Load()
	if n, _ := cache.Len(); n != len(names) {
		t.Fatalf("cache holds %d entries after reading %d objects", n, len(names))
	}
	// Bare URLs: each object costs one conditional request answered 304, no body.
	for _, r := range readStream(t, f, items, want) {
		if !r.FromCache {
			t.Fatalf("%s not served from the cache", r.Info.URL)
		}
	}
	if p.Bodies.Load() != bodies || p.NotMod.Load() != int64(len(names)) {
		t.Fatalf("second read: %d bodies and %d 304s from the server, want 0 and %d", p.Bodies.Load()-bodies, p.NotMod.Load(), len(names))
	}
	// Known ETags (as a listing gives them): no request at all.
	withTags := make([]ObjectInfo, len(items))
	for i, it := range items {
		o, err := st.Open(context.Background(), it.URL)
		if err != nil {
			t.Fatal(err)
		}
		withTags[i] = o.Info()
	}
	before := p.Requests.Load()
	readStream(t, f, withTags, want)
	if got := p.Requests.Load() - before; got != 0 {
		t.Fatalf("read with known ETags made %d requests, want 0", got)
	}
	// A changed object (new ETag) is fetched again, with its new bytes.
	changed := names[1]
	data[changed] = append(bytes.Repeat([]byte("new"), 1000), data[changed]...)
	if err := os.WriteFile(filepath.Join(dir, changed), data[changed], 0o644); err != nil {
		t.Fatal(err)
	}
	res := readStream(t, f, items[:3], want)
	if res[1].FromCache || !res[0].FromCache {
		t.Fatalf("changed object served from cache %v, unchanged %v", res[1].FromCache, res[0].FromCache)
	}
}

func TestCacheLRUAndCrashSafety(t *testing.T) {
	names, data := testObjects(12, 10<<10, 9)
	for _, n := range names {
		data[n] = append(data[n], 1) // no empty objects here
	}
	base, _, p := nginxFixture(t, data, faultproxy.Faults{})
	st := NewStore(Options{})
	defer st.CloseIdleConnections()
	dir := t.TempDir()
	total := int64(0)
	for _, n := range names[:6] {
		total += int64(len(data[n])) + 200
	}
	cache, err := OpenCache(dir, total) // room for about 6 of 12
	if err != nil {
		t.Fatal(err)
	}
	opts := fetchOpts()
	opts.Cache = cache
	opts.Concurrency = 1 // deterministic LRU order
	f := NewFetcher(st, opts)
	want := func(u string) []byte { return data[strings.TrimPrefix(u, base)] }
	readStream(t, f, Infos(urls(base, names)...), want)
	n, size := cache.Len()
	if size > total || n == 0 || n >= len(names) {
		t.Fatalf("cache holds %d entries, %d bytes, bound %d", n, size, total)
	}
	// The most recent entries stayed; the first ones were evicted.
	first := readStream(t, f, Infos(base+names[0]), want)[0]
	last := readStream(t, f, Infos(base+names[len(names)-1]), want)[0]
	if first.FromCache || !last.FromCache {
		t.Fatalf("LRU: first object cached %v (want evicted), last %v (want kept)", first.FromCache, last.FromCache)
	}

	// A damaged entry (length disagreeing with its header) and a leftover temporary
	// file are never served; reopening the cache removes the temporary file.
	lastURL := base + names[len(names)-1]
	entry := filepath.Join(dir, cacheName(lastURL))
	st2, _ := os.Stat(entry)
	if err := os.Truncate(entry, st2.Size()-1); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, cacheName(base+names[0])+".tmp123")
	os.WriteFile(tmp, []byte(`{"url":"`+base+names[0]+`","etag":"x","size":3}`+"\nabc"), 0o644)
	bodies := p.Bodies.Load()
	r := readStream(t, f, Infos(lastURL), want)[0]
	if r.FromCache || p.Bodies.Load() != bodies+1 {
		t.Fatalf("truncated entry was served from the cache")
	}
	if _, err := OpenCache(dir, total); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file survived OpenCache: %v", err)
	}
}

func TestShardReaderS3(t *testing.T) {
	_, data := testObjects(1, 0, 10)
	big := make([]byte, 3<<20+12345)
	for i := range big {
		big[i] = byte(i*7 + i>>13)
	}
	data["shard-000.tar"] = big
	st, base, p := s3Fixture(t, data, faults, Options{})
	cache, err := OpenCache(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := fetchOpts()
	opts.ChunkSize = 256 << 10
	opts.Cache = cache
	f := NewFetcher(st, opts)
	url := base + "shard-000.tar"
	for pass := range 2 {
		r, err := f.OpenReader(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		bodies := p.Bodies.Load()
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("pass %d: %v, %d bytes (want %d), equal %v", pass, err, len(got), len(big), bytes.Equal(got, big))
		}
		if pass == 1 && p.Bodies.Load() != bodies {
			t.Fatalf("second read of the shard fetched %d bodies, want it from the cache", p.Bodies.Load()-bodies)
		}
	}
	if p.Drops.Load() == 0 {
		t.Fatalf("faults were not exercised")
	}
	// Closing mid-read leaves no cache entry behind and stops the requests.
	cache2, _ := OpenCache(t.TempDir(), 0)
	opts.Cache = cache2
	r, err := NewFetcher(st, opts).OpenReader(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(r, make([]byte, 1000))
	r.Close()
	if n, _ := cache2.Len(); n != 0 {
		t.Fatalf("a partial read left %d cache entries", n)
	}
}

func TestLocalFiles(t *testing.T) {
	names, data := testObjects(5, 100<<10, 11)
	dir := t.TempDir()
	for n, b := range data {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	st := NewStore(Options{})
	list, err := st.List(context.Background(), dir)
	if err != nil || len(list) != len(names) {
		t.Fatalf("List(%s) = %d, %v", dir, len(list), err)
	}
	for _, n := range names {
		testOpen(t, st, filepath.Join(dir, n), data[n])
	}
	opts := fetchOpts()
	items := Infos(urls(dir+"/", names)...)
	readStream(t, NewFetcher(st, opts), items, func(u string) []byte { return data[filepath.Base(u)] })
}
