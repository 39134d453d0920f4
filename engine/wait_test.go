package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// WaitReady polled before every Next (as the Python package does, to stay responsive to
// Ctrl-C) gives the same batches as Next alone, across epochs and a reset that drops
// the batch WaitReady had taken from the queue; an external source nothing was fed to
// reports ready (Next then fails at once) instead of waiting.
func TestWaitReadyBeforeNext(t *testing.T) {
	root := writeSmallDataset(t, 3, 5)
	desc := ckptJSON(root, 2, 2, "", "")
	collect := func(wait bool) []string {
		p := mustPipeline(t, desc)
		defer p.Close()
		var out []string
		for e := 0; e < 3; e++ {
			for i := 0; ; i++ {
				if wait {
					for {
						ok, err := p.WaitReady(5 * time.Millisecond)
						if err != nil {
							t.Fatal(err)
						}
						if ok {
							break
						}
					}
				}
				s := takeNext(t, p)
				if s.eoe {
					break
				}
				out = append(out, fmt.Sprintf("%d/%d:%x", s.epoch, s.iter, s.outputs))
				if e == 1 && i == 1 {
					// A reset mid-epoch after WaitReady took the next batch from the queue.
					if wait {
						if ok, err := p.WaitReady(10 * time.Second); !ok || err != nil {
							t.Fatalf("WaitReady: %v %v", ok, err)
						}
					}
					break
				}
			}
			if err := p.Reset(); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	plain, polled := collect(false), collect(true)
	if len(plain) == 0 || fmt.Sprint(plain) != fmt.Sprint(polled) {
		t.Fatalf("with WaitReady:\n%v\nwithout:\n%v", polled, plain)
	}

	p := mustPipeline(t, `{"batch_size": 2, "ops": [{"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 1}}], "outputs": ["x"]}`)
	defer p.Close()
	ok, err := p.WaitReady(10 * time.Second)
	if !ok || err != nil {
		t.Fatalf("WaitReady with nothing fed: %v %v", ok, err)
	}
	if _, err := p.Next(); err == nil || errors.Is(err, ErrEndOfEpoch) {
		t.Fatalf("Next with nothing fed: %v", err)
	}
}
