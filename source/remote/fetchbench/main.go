// Command fetchbench measures remote.Fetcher throughput against io_concurrency: it
// serves -objects objects of -size bytes from a local HTTP server, puts the fault
// proxy in front with each -latency added to every request, and streams all objects
// once per concurrency setting.
//
//	go run ./source/remote/fetchbench -objects 512 -size 102400 -latency 20ms,50ms
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/godali/godali/source/remote"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

func main() {
	objects := flag.Int("objects", 512, "number of objects")
	size := flag.Int("size", 100<<10, "bytes per object")
	latencies := flag.String("latency", "20ms,50ms", "latencies added per request, comma-separated")
	concs := flag.String("concurrency", "1,4,16,32,64,128", "io_concurrency values, comma-separated")
	errRate := flag.Float64("errors", 0, "share of requests answered 503")
	flag.Parse()
	if err := run(*objects, *size, *latencies, *concs, *errRate); err != nil {
		fmt.Fprintln(os.Stderr, "fetchbench:", err)
		os.Exit(1)
	}
}

func run(objects, size int, latencies, concs string, errRate float64) error {
	dir, err := os.MkdirTemp("", "fetchbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, objects)
	for i := range names {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		names[i] = fmt.Sprintf("obj%05d.bin", i)
		if err := os.WriteFile(filepath.Join(dir, names[i]), b, 0o644); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(ln)
	defer srv.Close()

	fmt.Printf("%d objects x %d bytes over HTTP on loopback, fault proxy adding latency\n", objects, size)
	fmt.Printf("%-9s %-12s %10s %10s %10s %8s\n", "latency", "concurrency", "seconds", "MB/s", "objects/s", "retries")
	for _, ls := range strings.Split(latencies, ",") {
		lat, err := time.ParseDuration(strings.TrimSpace(ls))
		if err != nil {
			return err
		}
		p, err := faultproxy.Start("http://"+ln.Addr().String(), faultproxy.Faults{Latency: lat, ErrorRate: errRate}, 3)
		if err != nil {
			return err
		}
		urls := make([]string, objects)
		for i, n := range names {
			urls[i] = p.URL + "/" + n
		}
		for _, cs := range strings.Split(concs, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(cs))
			if err != nil {
				return err
			}
			st := remote.NewStore(remote.Options{MaxConnsPerHost: max(c, 2)})
			f := remote.NewFetcher(st, remote.FetchOptions{Concurrency: c})
			start := time.Now()
			s := f.Stream(context.Background(), remote.Infos(urls...))
			var bytes int64
			for {
				r, ok := s.Next()
				if !ok {
					break
				}
				if r.Err != nil {
					s.Close()
					return r.Err
				}
				bytes += int64(len(r.Data))
			}
			s.Close()
			sec := time.Since(start).Seconds()
			st.CloseIdleConnections()
			fmt.Printf("%-9v %-12d %10.2f %10.1f %10.0f %8d\n", lat, c, sec, float64(bytes)/sec/1e6, float64(objects)/sec, f.Stats().Retries)
		}
		p.Close()
	}
	return nil
}
