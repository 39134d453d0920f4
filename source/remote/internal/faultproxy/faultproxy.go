// Package faultproxy is an HTTP proxy for tests and benchmarks that adds latency,
// answers a share of requests with 503 and cuts a share of response bodies short,
// so that clients' retries can be exercised against real servers.
package faultproxy

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Faults says what to do to requests; change it with Set at any time.
type Faults struct {
	Latency     time.Duration // added before each request is forwarded
	ErrorRate   float64       // share of requests answered 503
	DropRate    float64       // share of responses whose body is cut halfway
	IgnoreRange bool          // strip Range headers (a server without range support)
}

// Proxy forwards to one target and counts what it did.
type Proxy struct {
	URL    string // http://127.0.0.1:port
	target string
	srv    *http.Server
	ln     net.Listener
	tr     *http.Transport

	mu     sync.Mutex
	faults Faults
	rng    *rand.Rand

	Requests atomic.Int64 // requests received
	Errors   atomic.Int64 // answered 503 by the proxy
	Drops    atomic.Int64 // bodies cut short
	Bodies   atomic.Int64 // 200/206 responses forwarded whole
	NotMod   atomic.Int64 // 304 responses forwarded
}

// Start listens on a free loopback port and forwards to target (scheme://host:port).
func Start(target string, f Faults, seed uint64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		URL: "http://" + ln.Addr().String(), target: target, ln: ln, faults: f,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tr:  &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Set replaces the faults.
func (p *Proxy) Set(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

func (p *Proxy) roll() (f Faults, fail, drop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f = p.faults
	fail = f.ErrorRate > 0 && p.rng.Float64() < f.ErrorRate
	drop = f.DropRate > 0 && p.rng.Float64() < f.DropRate
	return
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.Requests.Add(1)
	f, fail, drop := p.roll()
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if fail {
		p.Errors.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, "injected fault", http.StatusServiceUnavailable)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	u := *r.URL
	tu, _ := http.NewRequest("GET", p.target, nil)
	u.Scheme, u.Host = tu.URL.Scheme, tu.URL.Host
	out.URL = &u
	if f.IgnoreRange {
		out.Header.Del("Range")
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	if resp.StatusCode == http.StatusNotModified {
		p.NotMod.Add(1)
	}
	body := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent
	if drop && body && r.Method != http.MethodHead {
		w.WriteHeader(resp.StatusCode)
		io.CopyN(w, resp.Body, max(resp.ContentLength/2, 0))
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		p.Drops.Add(1)
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
	if body && r.Method != http.MethodHead {
		p.Bodies.Add(1)
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
