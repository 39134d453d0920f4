package engine

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestProcsFor(t *testing.T) {
	for _, c := range []struct{ base, workers, want int }{
		{2, 0, 2},   // no pipeline: the runtime's value
		{2, 1, 2},   // one worker on two CPUs: a P is idle already
		{2, 2, 3},   // issue 28's machine: num_threads = CPUs
		{2, 4, 5},   // more threads than CPUs
		{16, 4, 16}, // many CPUs: never lowered
		{1, 1, 2},
	} {
		if got := procsFor(c.base, c.workers); got != c.want {
			t.Errorf("procsFor(%d, %d) = %d, want %d", c.base, c.workers, got, c.want)
		}
	}
}

func liveWorkers() int {
	workerProcs.mu.Lock()
	defer workerProcs.mu.Unlock()
	return workerProcs.workers
}

func labelsPipeline(t *testing.T, threads int) *Pipeline {
	root := writeDataset(t, 1, 2)
	return mustPipeline(t, fmt.Sprintf(`{"batch_size": 2, "num_threads": %d, "device_id": null,
	 "ops": [{"op": "readers.file", "name": "r", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}}],
	 "outputs": ["labels"]}`, threads, root))
}

// TestWorkersKeepAnIdleP: while a pipeline's workers run, GOMAXPROCS is above their
// number (procs.go); after Close it is the runtime's again.
func TestWorkersKeepAnIdleP(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // a value from the environment is never changed
	before, w0 := runtime.GOMAXPROCS(0), liveWorkers()
	threads := before + 1 // more workers than Ps whatever the machine
	p := labelsPipeline(t, threads)
	if got := liveWorkers(); got != w0+threads {
		t.Fatalf("%d workers counted, want %d", got, w0+threads)
	}
	if got := runtime.GOMAXPROCS(0); got < w0+threads+1 {
		t.Errorf("GOMAXPROCS %d with %d workers running, want at least %d", got, w0+threads, w0+threads+1)
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if got := liveWorkers(); got != w0 {
		t.Fatalf("%d workers counted after Close, want %d", got, w0)
	}
	if got := runtime.GOMAXPROCS(0); w0 == 0 && got != before {
		t.Errorf("GOMAXPROCS %d after Close, want %d as before", got, before)
	}
}

// TestGOMAXPROCSFromEnvironmentKept: GOMAXPROCS set in the environment is the user's.
func TestGOMAXPROCSFromEnvironmentKept(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Setenv("GOMAXPROCS", strconv.Itoa(before))
	p := labelsPipeline(t, before+1)
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d with GOMAXPROCS=%d in the environment", got, before)
	}
	p.Close()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after Close, want %d", got, before)
	}
}

// TestYieldIfDue: a worker yields once yieldEvery has passed since its last yield, and
// only then starts a new interval.
func TestYieldIfDue(t *testing.T) {
	recent := time.Now()
	if got := yieldIfDue(recent); !got.Equal(recent) {
		t.Errorf("yieldIfDue(just now) = %v, want the same time back (not due)", got)
	}
	old := time.Now().Add(-2 * yieldEvery)
	if got := yieldIfDue(old); !got.After(old.Add(yieldEvery)) {
		t.Errorf("yieldIfDue(2 intervals ago) = %v, want now (due)", got)
	}
}
