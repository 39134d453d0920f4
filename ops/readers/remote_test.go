package readers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRestoreDoesNotFetchReplayedBatches: a pipeline restored mid-epoch replays the
// plan of the batches already taken without fetching their remote files (regression:
// the read-ahead of NextBatch fetched every replayed batch), and gives the batch the
// saved pipeline gave next.
func TestRestoreDoesNotFetchReplayedBatches(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		http.ServeContent(w, r, r.URL.Path, time.Unix(1700000000, 0), strings.NewReader("content of "+r.URL.Path))
	}))
	t.Cleanup(srv.Close) // after the pipelines close (cleanups run last first)
	var files []string
	for i := 0; i < 40; i++ {
		files = append(files, fmt.Sprintf("%s/f%02d.jpg", srv.URL, i))
	}
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "prefetch_queue_depth": 1, "enable_checkpointing": true, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"files": %s}}], "outputs": ["a", "b"]}`, quoted(files))
	p := build(t, desc, nil)
	for i := 0; i < 15; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := batchDump(t, b)
	p.Close()

	before := requests.Load()
	q := build(t, desc, cp)
	b, err = q.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := batchDump(t, b); got != want {
		t.Fatalf("restored batch:\n%s\nwant\n%s", got, want)
	}
	// 15 batches (30 files) were replayed; reading ahead a few batches costs a few
	// requests per file.
	n := requests.Load() - before
	t.Logf("%d requests after the restore", n)
	if n >= 20 {
		t.Errorf("the restored pipeline made %d requests for its first batch: replayed batches were fetched", n)
	}
}
