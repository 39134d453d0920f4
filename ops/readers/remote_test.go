package readers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestRemoteWebdatasetReadsShardsWhole: webdataset shards over HTTP give the batches
// the same shards give on local disk, over epochs, with shuffling and with more shards
// than are kept in memory; each shard is read whole with a few requests per epoch
// rather than one request per sample (regression: one HEAD and one ranged GET per
// sample, which starved the pipeline behind per-request latency). With
// shuffle_after_epoch the samples are read one request each, and give the same batches.
func TestRemoteWebdatasetReadsShardsWhole(t *testing.T) {
	d := makeWDS(t, 60, 12, nil)
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(filepath.Join(filepath.Dir(d.shards[0]), filepath.Base(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("ETag", `"`+filepath.Base(r.URL.Path)+`"`)
		http.ServeContent(w, r, r.URL.Path, time.Unix(1700000000, 0), f)
	}))
	t.Cleanup(srv.Close)
	rd := d
	rd.shards = nil
	for _, s := range d.shards {
		rd.shards = append(rd.shards, srv.URL+"/"+filepath.Base(s))
	}
	const nEpochs = 3
	for _, c := range []struct {
		common  string
		maxGets int64
	}{
		{``, 2 * 12 * nEpochs},
		{`, "random_shuffle": true, "initial_fill": 10`, 4 * 12 * nEpochs},
		{`, "num_shards": 2, "shard_id": 1, "random_shuffle": true, "initial_fill": 7, "pad_last_batch": true`, 4 * 12 * nEpochs},
		{`, "shuffle_after_epoch": true`, 1 << 30},
	} {
		for _, batch := range []int{2, 7} {
			want := epochs(t, build(t, wdsDesc(batch, d, c.common), nil), nEpochs)
			before := gets.Load()
			got := epochs(t, build(t, wdsDesc(batch, rd, c.common), nil), nEpochs)
			n := gets.Load() - before
			if len(got) != len(want) {
				t.Fatalf("%s batch %d: %d batches over HTTP, %d from local shards", c.common, batch, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s batch %d: batch %d over HTTP differs from the local one:\n%.600s\nwant\n%.600s", c.common, batch, i, got[i], want[i])
				}
			}
			t.Logf("%s batch %d: %d GET requests for %d epochs of 60 samples in 12 shards", c.common, batch, n, nEpochs)
			if n > c.maxGets {
				t.Errorf("%s batch %d: %d GET requests for %d epochs of 12 shards (60 samples), want at most %d", c.common, batch, n, nEpochs, c.maxGets)
			}
		}
	}
}
