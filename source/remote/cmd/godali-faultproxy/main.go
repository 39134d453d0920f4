// Command godali-faultproxy runs the fault proxy (source/remote/internal/faultproxy)
// as a process of its own, for benchmarks whose clients are not Go (python -m godali
// bench-remote): it listens on a free loopback port, forwards every request to
// -target after adding -latency, and prints its URL as the first line of stdout.
//
//	godali-faultproxy -target http://127.0.0.1:9000 -latency 20ms [-errors 0.01] [-limit 30m]
//
// It exits on SIGINT/SIGTERM, when its standard input reaches end of file (the process
// that started it with a pipe there has gone) or after -limit, whichever comes first,
// and then prints what it did on stderr.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/godali/godali/source/remote/internal/faultproxy"
)

func main() {
	target := flag.String("target", "", "the server to forward to, http://127.0.0.1:PORT (loopback only)")
	latency := flag.Duration("latency", 0, "latency added before each request is forwarded")
	errRate := flag.Float64("errors", 0, "share of requests answered 503")
	limit := flag.Duration("limit", 30*time.Minute, "exit after this long whatever happens")
	watchStdin := flag.Bool("stdin", true, "exit when standard input reaches end of file")
	flag.Parse()
	if err := checkTarget(*target); err != nil {
		fmt.Fprintln(os.Stderr, "godali-faultproxy:", err)
		os.Exit(2)
	}
	if *limit <= 0 || *latency < 0 || *errRate < 0 || *errRate > 1 {
		fmt.Fprintln(os.Stderr, "godali-faultproxy: -limit must be > 0, -latency >= 0 and -errors in [0, 1]")
		os.Exit(2)
	}
	p, err := faultproxy.Start(*target, faultproxy.Faults{Latency: *latency, ErrorRate: *errRate}, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "godali-faultproxy:", err)
		os.Exit(1)
	}
	fmt.Println(p.URL)

	done := make(chan string, 3)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { done <- "signal " + (<-sig).String() }()
	if *watchStdin {
		go func() { io.Copy(io.Discard, os.Stdin); done <- "end of standard input" }()
	}
	timer := time.NewTimer(*limit)
	go func() { <-timer.C; done <- fmt.Sprintf("time limit %v", *limit) }()
	why := <-done
	p.Close()
	fmt.Fprintf(os.Stderr, "godali-faultproxy: stopped (%s): %d requests, %d answered 503\n", why, p.Requests.Load(), p.Errors.Load())
}

// checkTarget accepts only http URLs on loopback.
func checkTarget(t string) error {
	u, err := url.Parse(t)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-target: expected http://127.0.0.1:PORT, got %q", t)
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
		return nil
	}
	return fmt.Errorf("-target: %q is not on loopback (127.0.0.1)", t)
}
