package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// streamModel is DALI's reader stream written out: rank r reads pass after pass over a
// shard (the next one each pass unless stick), and an epoch has the batches that
// finish, on every rank, the pass it started in (DALI's FILL counters; equal to them
// when batches are not larger than the shards). It returns, per epoch, the samples of
// rank r.
func streamModel(n, k, r, bs, epochs int, stick bool) [][]int {
	shardOf := func(rank, seg int) (int, int) {
		s := rank
		if !stick {
			s = (rank + seg) % k
		}
		return ShardRange(n, s, k)
	}
	streamOf := func(rank, length int) []int {
		var out []int
		for seg := 0; len(out) < length; seg++ {
			lo, hi := shardOf(rank, seg)
			for i := lo; i < hi; i++ {
				out = append(out, i)
			}
		}
		return out[:length]
	}
	var out [][]int
	pos := 0
	for e := 0; e < epochs; e++ {
		need := 0
		for rank := 0; rank < k; rank++ {
			end := 0 // end of this rank's pass e in its stream
			for seg := 0; seg <= e; seg++ {
				lo, hi := shardOf(rank, seg)
				end += hi - lo
			}
			need = max(need, end-pos)
		}
		nb := (need + bs - 1) / bs
		s := streamOf(r, pos+nb*bs)
		out = append(out, s[pos:])
		pos += nb * bs
	}
	return out
}

func TestReaderStreamMatchesModel(t *testing.T) {
	n := 10
	files := make([]string, n)
	for i := range files {
		files[i] = fmt.Sprintf("f%02d", i)
	}
	for _, k := range []int{1, 2, 3} {
		for _, bs := range []int{1, 2, 3} {
			for _, stick := range []bool{false, true} {
				for r := 0; r < k; r++ {
					p, err := NewPipeline([]byte(fmt.Sprintf(`{"batch_size": %d, "ops": [{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s], "shard_id": %d, "num_shards": %d, "stick_to_shard": %v}}], "outputs": ["l"]}`,
						bs, quoteAll(files), r, k, stick)))
					if err != nil {
						t.Fatal(err)
					}
					src := p.epochSource()
					if err := src.Open(); err != nil {
						t.Fatal(err)
					}
					want := streamModel(n, k, r, bs, 3*k+2, stick)
					for e, w := range want {
						src.StartEpoch(int64(e))
						refs := make([]SampleRef, bs)
						var got []int
						for {
							_, last, ok := src.NextBatch(refs)
							if !ok {
								break
							}
							for _, ref := range refs {
								got = append(got, ref.Index)
							}
							if last != (len(got) == len(w)) {
								t.Fatalf("k=%d bs=%d stick=%v rank %d epoch %d: last=%v after %d samples of %d", k, bs, stick, r, e, last, len(got), len(w))
							}
						}
						if fmt.Sprint(got) != fmt.Sprint(w) {
							t.Fatalf("k=%d bs=%d stick=%v rank %d epoch %d: %v, want %v", k, bs, stick, r, e, got, w)
						}
					}
					p.Close()
				}
			}
		}
	}
}

// Checkpoints of the stream at every cut of three epochs of uneven shards, and a
// checkpoint of an older godali (no stream position) refused with the reason.
func TestCheckpointStream(t *testing.T) {
	root := writeSmallDataset(t, 3, 7) // 21 samples
	desc := func(threads, depth int) string {
		return ckptJSON(root, threads, depth, `, "shard_id": 1, "num_shards": 2, "random_shuffle": true, "initial_fill": 5`, "")
	}
	checkResume(t, desc, 24, 6, allCuts(18))

	p := mustPipeline(t, desc(1, 1))
	takeNext(t, p)
	ckpt, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(ckpt, &doc); err != nil {
		t.Fatal(err)
	}
	st := doc["state"].(map[string]any)["reader"].(map[string]any)
	if st["mode"] != SourceModeStream {
		t.Fatalf("reader state %v, want mode %q", st, SourceModeStream)
	}
	delete(st, "mode")
	delete(st, "stream_start")
	delete(st, "epoch_batches")
	old, _ := json.Marshal(doc)
	q := newPipeline(t, desc(1, 1))
	if err := q.Restore(old); err == nil || !strings.Contains(err.Error(), "continuous stream") {
		t.Fatalf("restoring a checkpoint without the stream position: %v", err)
	}
}

// A pipeline starts at epoch 10^9 (first_epoch, or a checkpoint's) in bounded memory
// (one table entry per epoch ran out of memory), resumes from a checkpoint taken
// there, and refuses an epoch whose stream position overflows, naming it.
func TestStreamHugeEpoch(t *testing.T) {
	files := make([]string, 10)
	for i := range files {
		files[i] = fmt.Sprintf("f%02d", i)
	}
	desc := func(first int64) []byte {
		return []byte(fmt.Sprintf(`{"batch_size": 4, "first_epoch": %d, "enable_checkpointing": true, "seed": 3, "ops": [{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s], "shard_id": 1, "num_shards": 3, "random_shuffle": true}}], "outputs": ["l"]}`, first, quoteAll(files)))
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	p, err := NewPipeline(desc(1e9))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	src := p.epochSource()
	if err := src.Open(); err != nil {
		t.Fatal(err)
	}
	if err := src.(EpochChecker).CheckEpoch(1e9, 4); err != nil {
		t.Fatal(err)
	}
	src.StartEpoch(1e9)
	refs := make([]SampleRef, 4)
	if _, _, ok := src.NextBatch(refs); !ok {
		t.Fatal("epoch 1e9 has no batch")
	}
	ckpt, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms1)
	if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 16<<20 {
		t.Fatalf("a pipeline at epoch 1e9 allocated %d bytes", d)
	}
	q, err := NewPipeline(desc(0))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Restore(ckpt); err != nil {
		t.Fatalf("restoring a checkpoint at epoch 1e9: %v", err)
	}
	bad := strings.Replace(string(ckpt), `"epoch": 1000000000`, `"epoch": 4611686018427387904`, 2)
	r, err := NewPipeline(desc(0))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Restore([]byte(bad)); err == nil || !strings.Contains(err.Error(), "epoch 4611686018427387904") || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("a checkpoint at epoch 2^62: %v", err)
	}
	s, err := NewPipeline(desc(math.MaxInt64 / 2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Build(); err == nil || !strings.Contains(err.Error(), "overflows") || !strings.Contains(err.Error(), `"R"`) {
		t.Fatalf("first_epoch 2^62: %v", err)
	}
}
