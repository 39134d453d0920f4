package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The reference for a resumed pipeline is the same pipeline run without interruption:
// a checkpoint after N consumer steps, restored into a fresh pipeline, must give
// bit-identical batches (images, labels, valid counts, epochs, iterations) to steps
// N, N+1, ... of the uninterrupted run, whatever num_threads and prefetch_queue_depth
// the three runs use.

// writeSmallDataset writes an ImageFolder tree of small JPEGs, so that many pipelines
// per test stay fast.
func writeSmallDataset(t testing.TB, classes, perClass int) string {
	t.Helper()
	root := t.TempDir()
	for c := 0; c < classes; c++ {
		dir := filepath.Join(root, fmt.Sprintf("class%02d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perClass; i++ {
			k := c*perClass + i
			writeJPEG(t, filepath.Join(dir, fmt.Sprintf("img%03d.jpg", i)), 40+8*(k%5), 36+6*(k%4), k)
		}
	}
	return root
}

// ckptJSON is a training-style pipeline: shuffling reader, random crop, resize, random
// mirror, normalisation, and a random.uniform output that exposes the random streams.
func ckptJSON(root string, threads, depth int, readerArgs, top string) string {
	return fmt.Sprintf(`{"batch_size": 4, "num_threads": %d, "prefetch_queue_depth": %d, "seed": 21,
	"enable_checkpointing": true %s,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q %s}},
	 {"op": "decoders.image_random_crop", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"], "args": {"random_area": [0.2, 1.0]}},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_x": 24, "resize_y": 24}},
	 {"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"]},
	 {"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"range": [0, 1000]}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "arg_inputs": {"mirror": "mirror"}, "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "crop": [24, 24], "mean": [120, 110, 100], "std": [60, 60, 60]}}],
	"outputs": ["out", "labels", "u"]}`, threads, depth, top, root, readerArgs)
}

// step is one consumer call and what it gave.
type step struct {
	reset   bool // the call was Reset
	eoe     bool // Next reported the end of the epoch
	epoch   int64
	iter    int64
	valid   int
	skipped int64
	outputs [][]byte
}

func (s step) String() string {
	switch {
	case s.reset:
		return "reset"
	case s.eoe:
		return "end of epoch"
	}
	return fmt.Sprintf("batch %d of epoch %d", s.iter, s.epoch)
}

func takeNext(t testing.TB, p *Pipeline) step {
	t.Helper()
	b, err := p.Next()
	if errors.Is(err, ErrEndOfEpoch) {
		return step{eoe: true}
	}
	if err != nil {
		t.Fatal(err)
	}
	s := step{epoch: b.Epoch, iter: b.Iteration, valid: b.Valid, skipped: b.Skipped}
	for i := range b.outs {
		o := b.Output(i)
		var buf []byte
		for j := 0; j < o.NumSamples(); j++ {
			v, err := o.SampleView(j)
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, v.Lease.Bytes()...)
			v.Lease.Release()
		}
		s.outputs = append(s.outputs, buf)
	}
	return s
}

// reference runs n consumer steps: Next until the end of an epoch, then Reset.
func reference(t testing.TB, p *Pipeline, n int) []step {
	var out []step
	for len(out) < n {
		if len(out) > 0 && out[len(out)-1].eoe {
			if err := p.Reset(); err != nil {
				t.Fatal(err)
			}
			out = append(out, step{reset: true})
			continue
		}
		out = append(out, takeNext(t, p))
	}
	return out
}

// replay makes p repeat the calls of want and checks what it gives.
func replay(t testing.TB, p *Pipeline, want []step, label string) {
	t.Helper()
	for i, w := range want {
		if w.reset {
			if err := p.Reset(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got := takeNext(t, p)
		if got.eoe != w.eoe || got.epoch != w.epoch || got.iter != w.iter || got.valid != w.valid || got.skipped != w.skipped {
			t.Fatalf("%s: step %d: got %v (valid %d, skipped %d), want %v (valid %d, skipped %d)", label, i, got, got.valid, got.skipped, w, w.valid, w.skipped)
		}
		for k := range w.outputs {
			if !bytes.Equal(got.outputs[k], w.outputs[k]) {
				t.Fatalf("%s: step %d (%v): output %d differs", label, i, w, k)
			}
		}
	}
}

func newPipeline(t testing.TB, desc string) *Pipeline {
	t.Helper()
	p, err := NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func restored(t testing.TB, desc string, ckpt []byte) *Pipeline {
	t.Helper()
	p := newPipeline(t, desc)
	if err := p.Restore(ckpt); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkResume checks checkpoints taken after every cut: the pipeline that took it goes
// on as the reference does, and so does a fresh pipeline restored from it.
func checkResume(t *testing.T, desc func(threads, depth int) string, total, m int, cuts []int) {
	ref := reference(t, mustPipeline(t, desc(1, 1)), total)
	for _, n := range cuts {
		if n+m > total {
			t.Fatalf("cut %d + %d steps past the reference's %d", n, m, total)
		}
		name := fmt.Sprintf("after_%d_steps", n)
		t.Run(name, func(t *testing.T) {
			a := mustPipeline(t, desc(3, 3)) // workers run ahead of the consumer
			replay(t, a, ref[:n], "original")
			ckpt, err := a.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			replay(t, a, ref[n:n+m], "original after checkpoint")
			threads := 1 + 2*(n%2)
			r := restored(t, desc(threads, 2), ckpt)
			// Before its first batch, the restored pipeline is where the original was.
			if again, err := r.Checkpoint(); err != nil || !bytes.Equal(again, ckpt) {
				t.Fatalf("checkpoint of the restored pipeline differs (%v):\n%s\nwant\n%s", err, again, ckpt)
			}
			replay(t, r, ref[n:n+m], fmt.Sprintf("restored (%d threads)", threads))
		})
	}
}

func allCuts(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = i
	}
	return c
}

func TestCheckpointResumesBitIdentical(t *testing.T) {
	root := writeSmallDataset(t, 3, 7) // 21 samples: 6 batches of 4 per epoch, the last padded
	desc := func(threads, depth int) string {
		return ckptJSON(root, threads, depth, `, "random_shuffle": true, "initial_fill": 8, "pad_last_batch": true`, "")
	}
	// One epoch is 8 steps: 6 batches, the end of the epoch, the reset. Every cut of
	// the first two epochs: mid-epoch, after the last batch, after the end was reported
	// (before the reset), after the reset.
	checkResume(t, desc, 28, 11, allCuts(17))
}

func TestCheckpointWithShards(t *testing.T) {
	root := writeSmallDataset(t, 3, 7)
	for _, tc := range []struct{ name, args string }{
		// Shard 1 of 3 moves to shard 2, then 0: 7 samples, 2 batches (the second wraps).
		{"moving_shards", `, "shard_id": 1, "num_shards": 3, "random_shuffle": true, "initial_fill": 3`},
		{"moving_shards_padded", `, "shard_id": 1, "num_shards": 2, "random_shuffle": true, "pad_last_batch": true`},
		{"shuffle_after_epoch", `, "shard_id": 0, "num_shards": 3, "shuffle_after_epoch": true`},
		{"stick_to_shard", `, "shard_id": 2, "num_shards": 3, "stick_to_shard": true, "random_shuffle": true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc := func(threads, depth int) string { return ckptJSON(root, threads, depth, tc.args, "") }
			checkResume(t, desc, 20, 9, allCuts(10))
		})
	}
}

func TestCheckpointWithSkippedSamples(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := 0; i < 8; i++ { // 2 batches per epoch
		f := filepath.Join(dir, fmt.Sprintf("f%d.jpg", i))
		if i == 2 || i == 7 {
			os.WriteFile(f, []byte("not an image"), 0o644)
		} else {
			writeJPEG(t, f, 40+4*i, 32, i)
		}
		files = append(files, f)
	}
	desc := func(threads, depth int) string {
		return ckptJSON("", threads, depth, `, "files": [`+quoteAll(files)+`], "random_shuffle": true`, `, "on_error": "skip"`)
	}
	ref := reference(t, mustPipeline(t, desc(1, 1)), 12)
	var skipped int64
	for _, s := range ref {
		skipped += s.skipped
	}
	if skipped != 6 { // two bad files, three epochs
		t.Fatalf("reference skipped %d samples, want 6", skipped)
	}
	checkResume(t, desc, 12, 6, allCuts(7))
}

func TestCheckpointRandomSeedIsCarried(t *testing.T) {
	root := writeSmallDataset(t, 2, 5)
	desc := func(threads, depth int) string {
		return strings.Replace(ckptJSON(root, threads, depth, `, "random_shuffle": true`, ""), `"seed": 21`, `"seed": -1`, 1)
	}
	a := mustPipeline(t, desc(2, 2))
	takeNext(t, a)
	ckpt, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, a, 6)
	replay(t, restored(t, desc(1, 1), ckpt), want, "restored with seed -1")
	// A description with an explicit seed is another pipeline.
	other := newPipeline(t, strings.Replace(desc(1, 1), `"seed": -1`, `"seed": 5`, 1))
	if err := other.Restore(ckpt); err == nil || !strings.Contains(err.Error(), "seed is -1 in the checkpoint, 5 in this pipeline") {
		t.Errorf("seed mismatch: %v", err)
	}
}

func TestCheckpointWithoutReader(t *testing.T) {
	desc := func(threads, depth int) string {
		return fmt.Sprintf(`{"batch_size": 3, "num_threads": %d, "prefetch_queue_depth": %d, "seed": 4, "enable_checkpointing": true,
		"ops": [{"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"shape": [5]}},
		        {"op": "random.coin_flip", "name": "c", "outputs": ["c"]}], "outputs": ["u", "c"]}`, threads, depth)
	}
	checkResume(t, desc, 9, 4, []int{0, 1, 5})
}

func TestCheckpointDocument(t *testing.T) {
	root := writeSmallDataset(t, 2, 5)
	desc := ckptJSON(root, 2, 2, `, "random_shuffle": true, "shard_id": 1, "num_shards": 2`, "")
	p := newPipeline(t, desc)
	// Before the build: the initial state.
	ckpt, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(ckpt, &doc); err != nil {
		t.Fatal(err)
	}
	state := doc["state"].(map[string]any)
	if doc["format"] != "godali-checkpoint" || doc["version"] != float64(1) || state["epoch"] != float64(0) || state["iteration"] != float64(0) {
		t.Errorf("initial checkpoint: %s", ckpt)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	reference(t, p, 4) // 2 batches, the end, the reset: epoch 1 reads shard 0
	ckpt, _ = p.Checkpoint()
	json.Unmarshal(ckpt, &doc)
	state = doc["state"].(map[string]any)
	reader := state["reader"].(map[string]any)
	if state["epoch"] != float64(1) || state["iteration"] != float64(0) || reader["shard"] != float64(0) || reader["num_files"] != float64(10) {
		t.Errorf("after one epoch: %s", ckpt)
	}
	fp := doc["pipeline"].(map[string]any)
	if fp["batch_size"] != float64(4) || fp["seed"] != float64(21) || fp["reader"].(map[string]any)["args"].(map[string]any)["random_shuffle"] != true {
		t.Errorf("fingerprint: %v", fp)
	}
}

func TestCheckpointRefusesAnotherPipeline(t *testing.T) {
	root := writeSmallDataset(t, 2, 5)
	base := ckptJSON(root, 2, 2, `, "random_shuffle": true`, "")
	a := mustPipeline(t, base)
	takeNext(t, a)
	ckpt, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	// Settings that do not change outputs may differ.
	moved := t.TempDir()
	if err := os.Rename(root, filepath.Join(moved, "data")); err != nil {
		t.Fatal(err)
	}
	same := ckptJSON(filepath.Join(moved, "data"), 5, 4, `, "random_shuffle": true`, `, "first_epoch": 3, "max_image_pixels": 1000000`)
	if err := newPipeline(t, same).Restore(ckpt); err != nil {
		t.Errorf("same pipeline, other threads, depth and file_root: %v", err)
	}
	root = filepath.Join(moved, "data")
	base = ckptJSON(root, 2, 2, `, "random_shuffle": true`, "")
	for _, tc := range []struct{ name, desc, want string }{
		{"batch_size", strings.Replace(base, `"batch_size": 4`, `"batch_size": 8`, 1), "batch_size is 4 in the checkpoint, 8 in this pipeline"},
		{"seed", strings.Replace(base, `"seed": 21`, `"seed": 22`, 1), "seed is 21 in the checkpoint, 22 in this pipeline"},
		{"reader_arg", strings.Replace(base, `"random_shuffle": true`, `"random_shuffle": false`, 1), `argument "random_shuffle" of reader "Reader" is true in the checkpoint, false in this pipeline`},
		{"reader_default", strings.Replace(base, `"random_shuffle": true`, `"random_shuffle": true, "initial_fill": 16`, 1), `argument "initial_fill" of reader "Reader" is 1024 in the checkpoint, 16`},
		{"node_arg", strings.Replace(base, `"resize_x": 24`, `"resize_x": 32`, 1), `node "resize" differs`},
		{"on_error", strings.Replace(base, `"enable_checkpointing": true`, `"enable_checkpointing": true, "on_error": "skip"`, 1), `on_error is "raise" in the checkpoint, "skip"`},
		{"outputs", strings.Replace(base, `"outputs": ["out", "labels", "u"]`, `"outputs": ["out", "labels"]`, 1), "outputs is"},
		{"no_reader", `{"batch_size": 4, "seed": 21, "enable_checkpointing": true, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["c"]}], "outputs": ["c"]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newPipeline(t, tc.desc).Restore(ckpt)
			if err == nil || StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an invalid-argument error containing %q", err, tc.want)
			}
		})
	}
	// The data set changed under the same description.
	writeJPEG(t, filepath.Join(root, "class00", "zzz.jpg"), 40, 40, 99)
	err = newPipeline(t, base).Restore(ckpt)
	if err == nil || !strings.Contains(err.Error(), "data set changed") || !strings.Contains(err.Error(), "lists 11 files, the checkpoint's listed 10") {
		t.Errorf("changed data set: %v", err)
	}
	os.Remove(filepath.Join(root, "class00", "zzz.jpg"))
	os.Rename(filepath.Join(root, "class00", "img000.jpg"), filepath.Join(root, "class00", "renamed.jpg"))
	err = newPipeline(t, base).Restore(ckpt)
	if err == nil || !strings.Contains(err.Error(), "names or labels differ") {
		t.Errorf("renamed file: %v", err)
	}
}

func TestCheckpointStateErrors(t *testing.T) {
	root := writeSmallDataset(t, 2, 3)
	on := ckptJSON(root, 1, 1, "", "")
	off := strings.Replace(on, `"enable_checkpointing": true`, `"enable_checkpointing": false`, 1)
	p := mustPipeline(t, off)
	if _, err := p.Checkpoint(); StatusOf(err) != StatusState || !strings.Contains(err.Error(), "enable_checkpointing") {
		t.Errorf("checkpoint while disabled: %v", err)
	}
	if err := newPipeline(t, off).Restore([]byte("{}")); StatusOf(err) != StatusState || !strings.Contains(err.Error(), "enable_checkpointing") {
		t.Errorf("restore while disabled: %v", err)
	}
	q := mustPipeline(t, on)
	ckpt, err := q.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Restore(ckpt); StatusOf(err) != StatusState || !strings.Contains(err.Error(), "before building") {
		t.Errorf("restore after build: %v", err)
	}
	q.Close()
	if _, err := q.Checkpoint(); StatusOf(err) != StatusInvalidHandle {
		t.Errorf("checkpoint after close: %v", err)
	}
}

func TestCheckpointGarbageIsAnError(t *testing.T) {
	root := writeSmallDataset(t, 2, 3)
	desc := ckptJSON(root, 1, 1, `, "random_shuffle": true`, "")
	a := mustPipeline(t, desc)
	takeNext(t, a)
	good, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(path []string, v any) string {
		var doc map[string]any
		json.Unmarshal(good, &doc)
		m := doc
		for _, k := range path[:len(path)-1] {
			m = m[k].(map[string]any)
		}
		m[path[len(path)-1]] = v
		b, _ := json.Marshal(doc)
		return string(b)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "empty document"},
		{"not_json", "this is not a checkpoint", "not a godali checkpoint"},
		{"array", "[1, 2]", "not a godali checkpoint"},
		{"other_json", `{"hello": 1}`, `"format" is missing`},
		{"truncated", string(good[:len(good)/2]), "not a godali checkpoint"},
		{"version", edit([]string{"version"}, 99), "version 99 is not supported"},
		{"version_type", edit([]string{"version"}, "one"), `"version" is "one"`},
		{"unknown_key", edit([]string{"state", "cursor"}, 3), "unknown field"},
		{"epoch_type", edit([]string{"state", "epoch"}, "x"), `malformed: "state.epoch" is a string, expected an integer`},
		{"negative", edit([]string{"state", "iteration"}, -1), "must be >= 0"},
		{"past_end", edit([]string{"state", "iteration"}, 1000), "is not batch 1000"},
		{"edited_fingerprint", edit([]string{"pipeline", "digest"}, "0000"), "does not match its digest"},
		{"wrong_seed", edit([]string{"state", "seed"}, 3), "seed 3 differs"},
		{"wrong_order", edit([]string{"state", "reader", "order_digest"}, "ab"), "orders epoch 0 differently"},
		{"no_state", edit([]string{"state"}, nil), `"state" is null, expected an object`},
		{"no_reader_state", edit([]string{"state", "reader"}, nil), `no "reader" state`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newPipeline(t, desc).Restore([]byte(tc.text))
			if err == nil || StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an invalid-argument error containing %q", err, tc.want)
			}
		})
	}
	// Random damage: an error or, where the damage is harmless (white space), success;
	// never a panic.
	p := newPipeline(t, desc)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 400; i++ {
		b := append([]byte(nil), good...)
		for k := 0; k < 1+rng.Intn(3); k++ {
			j := rng.Intn(len(b))
			switch rng.Intn(3) {
			case 0:
				b[j] = byte(rng.Intn(256))
			case 1:
				b = append(b[:j], b[j+1:]...)
			default:
				b = append(b[:j], append([]byte{"0123456789\"{}[],:-"[rng.Intn(18)]}, b[j:]...)...)
			}
		}
		if err := p.Restore(b); err != nil && StatusOf(err) != StatusInvalidArgument {
			t.Fatalf("damaged checkpoint %q: status %d: %v", b, StatusOf(err), err)
		}
	}
}

// An external source named in checkpointed_feeds: the feeder records its position, so
// Checkpoint takes the rest of the state (here a random stream), and a restored pipeline
// fed from that position gives what the original gives next. Any other external source
// is refused, naming it.
func TestCheckpointWithCheckpointedFeed(t *testing.T) {
	desc := func(feeds string) string {
		return `{"batch_size": 2, "num_threads": 2, "prefetch_queue_depth": 2, "seed": 7, "enable_checkpointing": true` + feeds + `,
		"ops": [{"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 2, "layout": "HW"}},
		        {"op": "external_source", "name": "other", "outputs": ["y"], "args": {"dtype": "INT32", "ndim": 2, "layout": "HW"}},
		        {"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"shape": [3]}}], "outputs": ["x", "y", "u"]}`
	}
	var calls atomic.Int32
	feed := func(p *Pipeline, k int) {
		t.Helper()
		for _, name := range []string{"src", "other"} {
			s := [][]int32{{int32(10 * k)}, {int32(10*k + 1)}}
			if err := p.FeedInput(name, counted(s, [][]int{{1, 1}, {1, 1}}, &calls)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const feeds = `, "checkpointed_feeds": ["src", "other"]`
	a := mustPipeline(t, desc(feeds))
	for k := 0; k < 3; k++ { // the third is queued ahead when the checkpoint is taken
		feed(a, k)
	}
	takeNext(t, a)
	takeNext(t, a)
	ckpt, err := a.Checkpoint()
	if err != nil {
		t.Fatalf("checkpoint with the sources in checkpointed_feeds: %v", err)
	}
	want := takeNext(t, a)

	r := restored(t, desc(feeds), ckpt)
	feed(r, 2) // the feeder's saved position: its third batch
	replay(t, r, []step{want}, "restored")

	b := mustPipeline(t, desc(`, "checkpointed_feeds": ["src"]`))
	if _, err := b.Checkpoint(); err == nil || !strings.Contains(err.Error(), `external source "other" does not support checkpoints`) {
		t.Fatalf("checkpoint with \"other\" not in checkpointed_feeds: %v, want the refusal naming it", err)
	}
	if _, err := NewPipeline([]byte(desc(`, "checkpointed_feeds": ["u"]`))); err == nil || !strings.Contains(err.Error(), `checkpointed_feeds names "u", which is not an external source`) {
		t.Fatalf("checkpointed_feeds naming a random operator: %v, want an error naming it", err)
	}
}
