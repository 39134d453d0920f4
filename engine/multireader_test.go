package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeTextFolder writes an ImageFolder tree whose files hold their own relative path
// (tag/classNN/fNN), so that a batch says exactly which file each sample read.
func writeTextFolder(t testing.TB, tag string, perClass []int) (root string, files []string) {
	t.Helper()
	root = t.TempDir()
	for c, n := range perClass {
		dir := filepath.Join(root, fmt.Sprintf("class%02d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s/class%02d/f%02d.jpg", tag, c, i)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.jpg", i)), []byte(name), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
	}
	return root, files
}

// twoReaders is a pipeline of two readers.file over different roots, the first
// (epoch reader by default) and the second with its own arguments.
func twoReaders(rootA, rootB, argsA, argsB string, threads, depth int) string {
	return fmt.Sprintf(`{"batch_size": 2, "num_threads": %d, "prefetch_queue_depth": %d, "seed": 5, "enable_checkpointing": true,
	"ops": [
	 {"op": "readers.file", "name": "A", "outputs": ["a", "la"], "args": {"file_root": %q %s}},
	 {"op": "readers.file", "name": "B", "outputs": ["b", "lb"], "args": {"file_root": %q %s}},
	 {"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"range": [0, 1000]}}],
	"outputs": ["a", "la", "b", "lb", "u"]}`, threads, depth, rootA, argsA, rootB, argsB)
}

// samplesOf returns the batch's samples of output k as strings (file contents) or, for
// labels, as their decimal value.
func samplesOf(t testing.TB, b *Batch, k int, label bool) []string {
	t.Helper()
	o := b.Output(k)
	var out []string
	if label { // dense [N]: one lease for the batch
		v, err := o.DenseView()
		if err != nil {
			t.Fatal(err)
		}
		data := v.Lease.Bytes()
		for i := 0; i < o.NumSamples(); i++ {
			out = append(out, fmt.Sprint(readScalar(data[4*i:], o.Meta.DType)))
		}
		v.Lease.Release()
		return out
	}
	for i := 0; i < o.NumSamples(); i++ {
		v, err := o.SampleView(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(v.Lease.Bytes()))
		v.Lease.Release()
	}
	return out
}

func labelOf(name string) string {
	var c int
	fmt.Sscanf(strings.Split(name, "/")[1], "class%02d", &c)
	return fmt.Sprint(c)
}

// Two readers over different folders of different sizes: every batch holds a batch of
// each; the first reader defines the epochs, the second goes on across them by itself,
// wrapping around its own data set as a lone reader does.
func TestSeveralReadersEachPlanTheirOwnSamples(t *testing.T) {
	rootA, filesA := writeTextFolder(t, "A", []int{3, 2}) // 5 files: 3 batches of 2, the last wraps
	rootB, filesB := writeTextFolder(t, "B", []int{1, 1, 1})
	p := mustPipeline(t, twoReaders(rootA, rootB, "", "", 2, 2))
	if got := p.EpochReader(); got != "A" {
		t.Fatalf("epoch reader %q, want A", got)
	}
	bs := 2
	// Reference: without shuffling and pad_last_batch, a reader's stream is its sorted
	// files over and over (DALI's continuous stream). An epoch of the epoch reader has
	// the batches that finish its pass over the files from where the stream stands.
	plan := func(files []string, batch int64) []string {
		var out []string
		for j := 0; j < bs; j++ {
			out = append(out, files[(int(batch)*bs+j)%len(files)])
		}
		return out
	}
	var aBatches, bBatches int64
	nA := int64(len(filesA))
	for epoch := int64(0); epoch < 4; epoch++ {
		ahead := aBatches*int64(bs) - epoch*nA // of this epoch's pass, read in the last one
		perEpoch := (nA - ahead + int64(bs) - 1) / int64(bs)
		segEnd := (epoch + 1) * nA
		var iters int64
		eachBatch(t, p, func(b *Batch) {
			if b.Epoch != epoch || b.Iteration != iters {
				t.Fatalf("batch %d of epoch %d, want %d of %d", b.Iteration, b.Epoch, iters, epoch)
			}
			wantA, wantB := plan(filesA, aBatches), plan(filesB, bBatches)
			a, la, bb, lb := samplesOf(t, b, 0, false), samplesOf(t, b, 1, true), samplesOf(t, b, 2, false), samplesOf(t, b, 3, true)
			for j := 0; j < bs; j++ {
				if a[j] != wantA[j] || la[j] != labelOf(wantA[j]) || bb[j] != wantB[j] || lb[j] != labelOf(wantB[j]) {
					t.Fatalf("epoch %d batch %d sample %d: A %s (label %s), B %s (label %s); want %s, %s", epoch, iters, j, a[j], la[j], bb[j], lb[j], wantA[j], wantB[j])
				}
			}
			if want := min(int64(bs), segEnd-aBatches*int64(bs)); int64(b.Valid) != want {
				t.Fatalf("epoch %d batch %d: valid %d, want %d (the epoch reader's)", epoch, iters, b.Valid, want)
			}
			if b.Last != (iters == perEpoch-1) {
				t.Fatalf("epoch %d batch %d: last %v", epoch, iters, b.Last)
			}
			if got := b.ReaderSources(1)[0].Path; !strings.HasSuffix(got, strings.TrimPrefix(wantB[0], "B")) {
				t.Fatalf("ReaderSources(1)[0] = %s, want %s", got, wantB[0])
			}
			iters++
			aBatches++
			bBatches++
		})
		if iters != perEpoch {
			t.Fatalf("epoch %d had %d batches, want %d (reader A's)", epoch, iters, perEpoch)
		}
		if err := p.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	for name, n := range map[string]int64{"A": 5, "B": 3} {
		m, err := p.ReaderMeta(name)
		if err != nil || m.EpochSize != n {
			t.Fatalf("ReaderMeta(%s) = %+v, %v; want epoch size %d", name, m, err, n)
		}
	}
	if _, err := p.ReaderMeta("C"); StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `"A", "B"`) {
		t.Fatalf("ReaderMeta(C): %v", err)
	}
}

// The second reader shuffles by itself: each of its epochs is a permutation of its
// files, whatever the epoch reader does; the same seed gives the same batches.
func TestSeveralReadersShuffleIndependentlyAndDeterministically(t *testing.T) {
	rootA, _ := writeTextFolder(t, "A", []int{4, 4})         // 8 files: 4 batches per epoch
	rootB, filesB := writeTextFolder(t, "B", []int{3, 2, 3}) // 8 files: 4 batches per epoch
	desc := func(threads int) string {
		return twoReaders(rootA, rootB, `, "random_shuffle": true`, `, "shuffle_after_epoch": true`, threads, 3)
	}
	run := func(threads int) (streamB []string, all []string) {
		p := mustPipeline(t, desc(threads))
		for e := 0; e < 3; e++ {
			eachBatch(t, p, func(b *Batch) {
				streamB = append(streamB, samplesOf(t, b, 2, false)...)
				for k := 0; k < 5; k++ {
					all = append(all, samplesOf(t, b, k, k == 1 || k == 3 || k == 4)...)
				}
			})
			if err := p.Reset(); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	b1, all1 := run(1)
	// 3 epochs of A (4 batches each) are 12 batches: 3 whole epochs of B.
	if len(b1) != 24 {
		t.Fatalf("%d samples of B, want 24", len(b1))
	}
	want := append([]string{}, filesB...)
	sort.Strings(want)
	var orders []string
	for e := 0; e < 3; e++ {
		got := append([]string{}, b1[8*e:8*e+8]...)
		orders = append(orders, strings.Join(got, ","))
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("epoch %d of B is not a permutation of its files: %v", e, got)
		}
	}
	if orders[0] == orders[1] && orders[1] == orders[2] {
		t.Fatalf("shuffle_after_epoch: B's three epochs have the same order %s", orders[0])
	}
	_, all3 := run(3)
	if strings.Join(all1, "|") != strings.Join(all3, "|") {
		t.Fatal("same seed, 1 and 3 threads: batches differ")
	}
}

// Checkpoints carry every reader's state: a restored pipeline gives exactly the batches
// the original gives next, wherever the readers' epochs stand.
func TestCheckpointSeveralReaders(t *testing.T) {
	rootA, _ := writeTextFolder(t, "A", []int{3, 2})
	rootB, _ := writeTextFolder(t, "B", []int{2, 1, 4}) // 7 files: 4 batches per epoch
	desc := func(threads, depth int) string {
		return twoReaders(rootA, rootB, `, "random_shuffle": true, "initial_fill": 3`, `, "shuffle_after_epoch": true`, threads, depth)
	}
	checkResume(t, desc, 17, 6, allCuts(12))

	// The checkpoint records both readers; a pipeline without the second refuses it.
	p := mustPipeline(t, desc(1, 1))
	reference(t, p, 5)
	ckpt, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"other_readers"`, `"B"`} {
		if !strings.Contains(string(ckpt), want) {
			t.Fatalf("checkpoint lacks %s:\n%s", want, ckpt)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(ckpt, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc["state"].(map[string]any), "other_readers")
	edited, _ := json.Marshal(doc)
	q := newPipeline(t, desc(1, 1))
	if err := q.Restore(edited); StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `reader "B"`) {
		t.Fatalf("restore without reader B's state: %v", err)
	}
	delete(doc["pipeline"].(map[string]any), "other_readers")
	edited, _ = json.Marshal(doc)
	if err := q.Restore(edited); StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `reader "B"`) {
		t.Fatalf("restore of a fingerprint without reader B: %v", err)
	}
}

// SetEpochReader makes another reader define the epochs; the consumer's place in every
// stream is kept, and a checkpoint restores the choice.
func TestSetEpochReader(t *testing.T) {
	rootA, filesA := writeTextFolder(t, "A", []int{3, 2}) // 3 batches per epoch
	rootB, _ := writeTextFolder(t, "B", []int{4, 3})      // 4 batches per epoch
	desc := func(threads, depth int) string {
		return twoReaders(rootA, rootB, "", `, "random_shuffle": true`, threads, depth)
	}
	p := mustPipeline(t, desc(2, 2))
	first := takeNext(t, p) // A's batch 0, B's batch 0
	if err := p.SetEpochReader("C"); StatusOf(err) != StatusInvalidArgument {
		t.Fatalf("SetEpochReader(C): %v", err)
	}
	if err := p.SetEpochReader("B"); err != nil {
		t.Fatal(err)
	}
	// B has given one batch of its epoch 0: three more, then the end of the epoch.
	var steps []step
	for i := 0; i < 4; i++ {
		steps = append(steps, takeNext(t, p))
	}
	for i, s := range steps[:3] {
		if s.eoe || s.epoch != 0 || s.iter != int64(i+1) {
			t.Fatalf("step %d after SetEpochReader(B): %v", i, s)
		}
	}
	if !steps[3].eoe {
		t.Fatalf("after B's 4 batches: %v, want the end of the epoch", steps[3])
	}
	// A went on: its samples after the switch continue its stream (batch 1, 2, then
	// positions 6 and 7 of its stream: its files over and over without shuffling).
	if want := filesA[1] + filesA[2]; string(steps[2].outputs[0]) != want || string(first.outputs[0]) != filesA[0]+filesA[1] {
		t.Fatalf("reader A's stream did not go on across its epoch: %q then %q, want %q", first.outputs[0], steps[2].outputs[0], want)
	}
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	take := takeNext(t, p)
	ckpt, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ckpt), `"epoch_reader": "B"`) || take.epoch != 1 {
		t.Fatalf("after reset, %v; checkpoint:\n%s", take, ckpt)
	}
	want := reference(t, p, 8)
	r := restored(t, desc(1, 1), ckpt)
	if got := r.EpochReader(); got != "B" {
		t.Fatalf("restored epoch reader %q", got)
	}
	replay(t, r, want, "restored with epoch reader B")
}
