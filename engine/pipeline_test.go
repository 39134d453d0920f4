package engine

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// writeDataset writes an ImageFolder tree of JPEGs of known content (Go's encoder, an
// independent implementation) and returns its root.
func writeDataset(t testing.TB, classes, perClass int) string {
	t.Helper()
	root := t.TempDir()
	sizes := [][2]int{{320, 240}, {500, 375}, {180, 260}, {640, 480}, {256, 256}, {300, 200}}
	for c := 0; c < classes; c++ {
		dir := filepath.Join(root, fmt.Sprintf("class%02d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perClass; i++ {
			sz := sizes[(c*perClass+i)%len(sizes)]
			writeJPEG(t, filepath.Join(dir, fmt.Sprintf("img%03d.JPEG", i)), sz[0], sz[1], c*perClass+i)
		}
	}
	return root
}

func writeJPEG(t testing.TB, path string, w, h, seed int) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8(0)
			if ((x/12)+(y/12)+seed)%2 == 0 {
				v = 200
			}
			img.Set(x, y, color.RGBA{uint8(255 * x / w), uint8(255 * y / h), v, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 92}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func resnetJSON(root string, threads, batch, depth int) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": %d, "device_id": null, "seed": 12, "prefetch_queue_depth": %d,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "random_shuffle": true, "pad_last_batch": true}},
	 {"op": "decoders.image_random_crop", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"],
	  "args": {"output_type": "RGB", "random_aspect_ratio": [0.8, 1.25], "random_area": [0.1, 1.0], "num_attempts": 100}},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_x": 224, "resize_y": 224, "interp_type": "INTERP_TRIANGULAR"}},
	 {"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"], "args": {"probability": 0.5}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "arg_inputs": {"mirror": "mirror"}, "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [224, 224], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": ["out", "labels"]}`, batch, threads, depth, root)
}

func mustPipeline(t testing.TB, desc string) *Pipeline {
	t.Helper()
	p, err := NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// eachBatch runs Next until the end of the epoch and calls f with every batch.
func eachBatch(t testing.TB, p *Pipeline, f func(*Batch)) {
	t.Helper()
	for {
		b, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		f(b)
	}
}

// epochBytes runs one epoch and returns each batch's output bytes.
func epochBytes(t testing.TB, p *Pipeline) [][]byte {
	var out [][]byte
	eachBatch(t, p, func(b *Batch) {
		v, err := b.Output(0).DenseView()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte(nil), v.Lease.Bytes()...))
		v.Lease.Release()
	})
	return out
}

func TestResNetPipeline(t *testing.T) {
	root := writeDataset(t, 3, 5)
	p := mustPipeline(t, resnetJSON(root, 2, 4, 2))
	n := 0
	for {
		b, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		img := b.Output(0)
		if !img.Dense || !sameShape(img.SampleShape(0), []int{3, 224, 224}) {
			t.Fatalf("images: dense %v shape %v", img.Dense, img.SampleShape(0))
		}
		lab, _ := b.Output(1).DenseView()
		for i := 0; i < 4; i++ {
			l := readScalar(lab.Lease.Bytes()[4*i:], Int32)
			if l < 0 || l > 2 {
				t.Errorf("label %v", l)
			}
		}
		lab.Lease.Release()
		if want := min(4, 15-4*(n-1)); b.Valid != want {
			t.Errorf("batch %d valid %d, want %d", n, b.Valid, want)
		}
	}
	if n != 4 {
		t.Errorf("%d batches, want ceil(15/4) = 4", n)
	}
}

func TestSameSeedAnyThreadCountSameBytes(t *testing.T) {
	root := writeDataset(t, 2, 5)
	ref := epochBytes(t, mustPipeline(t, resnetJSON(root, 1, 4, 1)))
	for _, threads := range []int{2, 3, 5} {
		got := epochBytes(t, mustPipeline(t, resnetJSON(root, threads, 4, 3)))
		if len(got) != len(ref) {
			t.Fatalf("%d threads: %d batches, want %d", threads, len(got), len(ref))
		}
		for i := range got {
			if !bytes.Equal(got[i], ref[i]) {
				t.Errorf("%d threads: batch %d differs from the 1-thread run", threads, i)
			}
		}
	}
	other := epochBytes(t, mustPipeline(t, strings.Replace(resnetJSON(root, 2, 4, 2), `"seed": 12`, `"seed": 13`, 1)))
	if bytes.Equal(other[0], ref[0]) {
		t.Errorf("a different seed gave the same first batch")
	}
}

func TestSteadyStateAllocatesNoBuffers(t *testing.T) {
	root := writeDataset(t, 2, 8)
	p := mustPipeline(t, resnetJSON(root, 2, 4, 2))
	run := func() {
		for {
			_, err := p.Next()
			if errors.Is(err, ErrEndOfEpoch) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	// Both outputs have static shapes: Build maps their buffers for the batches in
	// flight and the current one, so no epoch maps more, whatever the timing.
	before := p.Pool().Stats()
	if before.Allocations == 0 {
		t.Fatalf("Build reserved nothing: %+v", before)
	}
	run()
	run()
	run()
	after := p.Pool().Stats()
	if after.Allocations != before.Allocations {
		t.Errorf("pool allocated %d buffers after Build", after.Allocations-before.Allocations)
	}
	if after.Acquires <= before.Acquires {
		t.Errorf("pool was not used: %+v", after)
	}
}

func TestEpochShardsAndPadding(t *testing.T) {
	files := make([]string, 10)
	for i := range files {
		files[i] = fmt.Sprintf("f%02d", i)
	}
	reader := func(args string) BatchSource {
		p, err := NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 4, "ops": [{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s] %s}}], "outputs": ["l"]}`,
			quoteAll(files), args)))
		if err != nil {
			t.Fatal(err)
		}
		r := p.epochSource()
		if err := r.Open(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	epoch := func(r BatchSource, e int64) (seen []int, valid []int) {
		r.StartEpoch(e)
		refs := make([]SampleRef, 4)
		for {
			v, _, ok := r.NextBatch(refs)
			if !ok {
				return
			}
			valid = append(valid, v)
			for i := 0; i < v; i++ {
				seen = append(seen, refs[i].Index)
			}
		}
	}
	// DALI's arithmetic: shard i of k covers [floor(n*i/k), floor(n*(i+1)/k)).
	for i, want := range [][2]int{{0, 3}, {3, 6}, {6, 10}} {
		if b, e := ShardRange(10, i, 3); b != want[0] || e != want[1] {
			t.Errorf("ShardRange(10, %d, 3) = %d, %d; want %v", i, b, e, want)
		}
	}
	r := reader(`, "shard_id": 2, "num_shards": 3, "stick_to_shard": true`)
	if s, v := epoch(r, 0); fmt.Sprint(s) != "[6 7 8 9]" || fmt.Sprint(v) != "[4]" {
		t.Errorf("shard 2/3: %v valid %v", s, v)
	}
	r = reader(`, "shard_id": 0, "num_shards": 3, "pad_last_batch": true, "stick_to_shard": true`)
	if m := r.Meta(); m.ShardSize != 4 || m.EpochSize != 10 || m.EpochSizePadded != 12 {
		t.Errorf("padded meta %+v", m)
	}
	r.StartEpoch(0)
	refs := make([]SampleRef, 4)
	if v, last, ok := r.NextBatch(refs); v != 3 || !last || !ok || refs[3].Index != 2 {
		t.Errorf("padded shard 0: valid %d last %v ok %v refs %v, want 3 real samples and the last repeated", v, last, ok, refs)
	}
	// Without padding every shard still runs ceil(ceil(n/k)/batch) batches (equal step
	// counts across data-parallel ranks), wrapping around its start.
	r = reader(`, "shard_id": 0, "num_shards": 3, "stick_to_shard": true`)
	if s, v := epoch(r, 0); fmt.Sprint(s) != "[0 1 2]" || fmt.Sprint(v) != "[3]" {
		t.Errorf("unpadded shard 0: %v valid %v", s, v)
	}
	r = reader(`, "shard_id": 0, "num_shards": 3, "pad_last_batch": true`)
	if s, _ := epoch(r, 1); fmt.Sprint(s) != "[3 4 5]" {
		t.Errorf("epoch 1 without stick_to_shard reads shard 1: %v", s)
	}
	// Without pad_last_batch the reader is one stream: epoch 0 filled its batch with
	// shard 1's first sample, so epoch 1 goes on after it.
	r = reader(`, "shard_id": 0, "num_shards": 3`)
	if s, _ := epoch(r, 1); fmt.Sprint(s) != "[4 5]" {
		t.Errorf("epoch 1 of the stream: %v, want [4 5]", s)
	}
	// shuffle_after_epoch: the shards of one epoch together cover every sample once.
	for e := int64(0); e < 3; e++ {
		var all []int
		var orders []string
		for s := 0; s < 2; s++ {
			r := reader(fmt.Sprintf(`, "shard_id": %d, "num_shards": 2, "shuffle_after_epoch": true, "pad_last_batch": true`, s))
			seen, _ := epoch(r, e)
			all = append(all, seen...)
			orders = append(orders, fmt.Sprint(seen))
		}
		sort.Ints(all)
		if fmt.Sprint(all) != "[0 1 2 3 4 5 6 7 8 9]" {
			t.Errorf("epoch %d: shards cover %v", e, all)
		}
	}
	// random_shuffle is a permutation of the shard, and differs between epochs.
	r = reader(`, "random_shuffle": true, "initial_fill": 4, "seed": 7`)
	a, _ := epoch(r, 0)
	b, _ := epoch(r, 1)
	sa := append([]int(nil), a...)
	sort.Ints(sa)
	if fmt.Sprint(sa) != "[0 1 2 3 4 5 6 7 8 9]" || fmt.Sprint(a) == fmt.Sprint(b) {
		t.Errorf("random_shuffle epochs %v %v", a, b)
	}
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func TestBadFilesNameTheFileAndPipelineGoesOn(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jpg")
	writeJPEG(t, good, 64, 48, 0)
	bad := filepath.Join(dir, "broken.jpg")
	os.WriteFile(bad, []byte("definitely not an image"), 0o644)
	trunc := filepath.Join(dir, "truncated.jpg")
	data, _ := os.ReadFile(good)
	os.WriteFile(trunc, data[:len(data)/2], 0o644)
	desc := func(onError string) string {
		return fmt.Sprintf(`{"batch_size": 2, "num_threads": 2, "on_error": %q, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q, %q, %q, %q, %q, %q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}], "outputs": ["img"]}`,
			onError, good, good, bad, good, good, trunc)
	}
	p := mustPipeline(t, desc("raise"))
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := p.Next()
	if err == nil || StatusOf(err) != StatusData || !strings.Contains(err.Error(), "broken.jpg") {
		t.Fatalf("bad file: %v", err)
	}
	_, err = p.Next()
	if err == nil || !strings.Contains(err.Error(), "truncated.jpg") {
		t.Fatalf("truncated file: %v", err)
	}
	if _, err := p.Next(); !errors.Is(err, ErrEndOfEpoch) {
		t.Fatalf("want end of epoch, got %v", err)
	}
	p.Reset()
	if _, err := p.Next(); err != nil {
		t.Fatalf("after reset: %v", err)
	}

	p = mustPipeline(t, desc("skip"))
	var skipped int64
	for {
		b, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			break
		}
		if err != nil {
			t.Fatalf("skip policy: %v", err)
		}
		skipped += b.Skipped
		for i := 0; i < 2; i++ {
			if s := b.Output(0).SampleShape(i); !sameShape(s, []int{48, 64, 3}) {
				t.Errorf("replaced sample shape %v", s)
			}
		}
	}
	if skipped != 2 {
		t.Errorf("skipped %d samples, want 2", skipped)
	}
}

func TestDecompressionBombRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.jpg")
	writeJPEG(t, big, 300, 300, 0)
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 1, "max_image_pixels": 50000, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}], "outputs": ["img"]}`, big))
	before := p.Pool().Stats()
	_, err := p.Next()
	if err == nil || !strings.Contains(err.Error(), "max_image_pixels") || !strings.Contains(err.Error(), "big.jpg") {
		t.Fatalf("bomb: %v", err)
	}
	if after := p.Pool().Stats(); after.Acquires != before.Acquires {
		t.Errorf("refused image still took %d buffers", after.Acquires-before.Acquires)
	}
}

func TestExportOutlivesPipeline(t *testing.T) {
	root := writeDataset(t, 2, 2)
	p, err := NewPipeline([]byte(resnetJSON(root, 2, 2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	p.Build()
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.Output(0).SampleView(1)
	want := append([]byte(nil), v.Lease.Bytes()...)
	pool := p.Pool()
	p.Close()
	if !bytes.Equal(v.Lease.Bytes(), want) {
		t.Fatal("exported memory changed after Close")
	}
	if s := pool.Stats(); s.Outstanding != 1 {
		t.Errorf("outstanding %d after close, want 1 (the export)", s.Outstanding)
	}
	v.Lease.Release()
	if s := pool.Stats(); s.Outstanding != 0 || s.ReservedBytes != 0 {
		t.Errorf("after release: %+v", s)
	}
}

// TestResetWhileDispatchingKeepsEveryCredit resets pipelines right after a batch is
// taken, while the producer may be handing the next batch's samples to the workers: a
// batch dropped there must give back its prefetch credit, or after
// prefetch_queue_depth such resets Next would wait forever. (A batch is taken first:
// a Reset before any batch of the epoch is taken leaves the producer running, and its
// credits are then legitimately in use.)
func TestResetWhileDispatchingKeepsEveryCredit(t *testing.T) {
	root := writeDataset(t, 2, 12)
	p := mustPipeline(t, resnetJSON(root, 2, 4, 2))
	loop := make(chan error, 1)
	go func() {
		for i := 0; i < 200; i++ {
			if err := p.Run(); err != nil {
				loop <- err
				return
			}
			if _, err := p.Next(); err != nil {
				loop <- err
				return
			}
			if err := p.Reset(); err != nil {
				loop <- err
				return
			}
			if p.running {
				loop <- fmt.Errorf("Reset after a batch was taken left the producer running")
				return
			}
		}
		loop <- nil
	}()
	select {
	case err := <-loop:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Next blocked during the resets: a dropped batch kept its prefetch credit")
	}
	if got := len(p.credits); got != p.Spec.PrefetchQueueDepth {
		t.Fatalf("%d of %d prefetch credits left after 200 resets", got, p.Spec.PrefetchQueueDepth)
	}
	done := make(chan int)
	go func() { done <- len(epochBytes(t, p)) }()
	select {
	case n := <-done:
		if n != 6 {
			t.Fatalf("epoch after the resets: %d batches, want 6", n)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Next blocked for a minute after the resets")
	}
}
