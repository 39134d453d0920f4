package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// TestCloudThroughput (GODALI_CLOUD_BENCH=1; skipped otherwise, it takes about a
// minute) streams the same objects, cold, through a Fetcher from local files, moto
// (s3://), Azurite (az://) and fake-gcs-server (gs://), each behind the fault proxy
// with 0 and 50 ms added per request, and prints MB/s. benchmarks/RESULTS.md quotes it.
func TestCloudThroughput(t *testing.T) {
	if os.Getenv("GODALI_CLOUD_BENCH") != "1" {
		t.Skip("set GODALI_CLOUD_BENCH=1 to measure read throughput from the emulators")
	}
	names, data := testObjects(384, 200<<10, 21)
	var total int64
	for _, b := range data {
		total += int64(len(b))
	}
	dir := t.TempDir()
	for n, b := range data {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	type store struct {
		name  string
		setup func(lat time.Duration) (*Store, string)
	}
	withLatency := func(fix func(*testing.T, map[string][]byte, faultproxy.Faults, Options) (*Store, string, *faultproxy.Proxy)) func(time.Duration) (*Store, string) {
		var p *faultproxy.Proxy
		var st *Store
		var base string
		return func(lat time.Duration) (*Store, string) {
			if p == nil {
				st, base, p = fix(t, data, faultproxy.Faults{}, Options{})
			}
			p.Set(faultproxy.Faults{Latency: lat})
			return st, base
		}
	}
	stores := []store{
		{"local", func(time.Duration) (*Store, string) { return NewStore(Options{}), dir + "/" }},
		{"s3 (moto)", withLatency(s3Fixture)},
		{"az (Azurite)", withLatency(azureFixture)},
		{"gs (fake-gcs-server)", withLatency(gcsFixture)},
	}
	fmt.Printf("%d objects, %.1f MB, io_concurrency 32, cold (no cache)\n", len(names), float64(total)/1e6)
	fmt.Printf("%-22s %-8s %8s %8s\n", "store", "latency", "seconds", "MB/s")
	for _, s := range stores {
		for _, lat := range []time.Duration{0, 50 * time.Millisecond} {
			if s.name == "local" && lat > 0 {
				continue
			}
			st, base := s.setup(lat)
			f := NewFetcher(st, FetchOptions{Concurrency: 32})
			best := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				str := f.Stream(context.Background(), Infos(urls(base, names)...))
				n := 0
				for {
					r, ok := str.Next()
					if !ok {
						break
					}
					if r.Err != nil || len(r.Data) != len(data[strings.TrimPrefix(r.Info.URL, base)]) {
						t.Fatalf("%s: %v", r.Info.URL, r.Err)
					}
					n++
				}
				str.Close()
				if n != len(names) {
					t.Fatalf("%s: %d objects", s.name, n)
				}
				best = min(best, time.Since(start))
			}
			fmt.Printf("%-22s %-8v %8.2f %8.1f\n", s.name, lat, best.Seconds(), float64(total)/1e6/best.Seconds())
		}
	}
}
