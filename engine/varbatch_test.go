package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

// Variable batch size: batch_size is the pipeline's maximum; an iteration has as many
// samples as its external sources were fed (DALI's max_batch_size).

func float32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// fedBatch is n samples of shape [1, 2] holding base+2i, base+2i+1.
func fedBatch(n int, base int32) *Feed {
	var s [][]int32
	var shapes [][]int
	for i := 0; i < n; i++ {
		s = append(s, []int32{base + int32(2*i), base + int32(2*i) + 1})
		shapes = append(shapes, []int{1, 2})
	}
	return counted(s, shapes, new(atomic.Int32))
}

func varDesc(batch int) string {
	// x: ragged (ndim only); d: dense (declared shape), through cast to float.
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": 2, "seed": 7, "device_id": null, "ops": [
	 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 2}},
	 {"op": "external_source", "name": "fixed", "outputs": ["d"], "args": {"dtype": "INT32", "ndim": 2, "shape": [1, 2]}},
	 {"op": "cast", "name": "c", "inputs": ["d"], "outputs": ["f"], "args": {"dtype": "FLOAT"}},
	 {"op": "random.uniform", "name": "u", "outputs": ["r"], "args": {"range": [0, 1]}}],
	 "outputs": ["x", "f", "r"]}`, batch)
}

func TestVariableBatchSizes(t *testing.T) {
	p := mustPipeline(t, varDesc(4))
	sizes := []int{4, 1, 3, 4, 2}
	for k, n := range sizes {
		base := int32(100 * k)
		if err := p.FeedInput("src", fedBatch(n, base)); err != nil {
			t.Fatal(err)
		}
		if err := p.FeedInput("fixed", fedBatch(n, base+50)); err != nil {
			t.Fatal(err)
		}
	}
	for k, n := range sizes {
		b, err := p.Next()
		if err != nil {
			t.Fatalf("batch %d: %v", k, err)
		}
		if b.Size() != n || b.Valid != n {
			t.Fatalf("batch %d: Size %d Valid %d, want %d", k, b.Size(), b.Valid, n)
		}
		for o := 0; o < b.NumOutputs(); o++ {
			if got := b.Output(o).NumSamples(); got != n {
				t.Fatalf("batch %d output %d: %d samples, want %d", k, o, got, n)
			}
		}
		base := int32(100 * k)
		for i := 0; i < n; i++ { // ragged output: per sample
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			got := int32s(unsafe.Slice((*byte)(v.Ptr), 8))
			v.Lease.Release()
			if got[0] != base+int32(2*i) || got[1] != base+int32(2*i)+1 {
				t.Fatalf("batch %d sample %d: got %v", k, i, got)
			}
		}
		v, err := b.Output(1).DenseView() // dense output: [n, 1, 2]
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(v.Shape) != fmt.Sprintf("[%d 1 2]", n) {
			t.Fatalf("batch %d: dense view shape %v, want [%d 1 2]", k, v.Shape, n)
		}
		got := float32s(unsafe.Slice((*byte)(v.Ptr), 8*n))
		v.Lease.Release()
		for j, x := range got {
			if want := float32(base + 50 + int32(j)); x != want {
				t.Fatalf("batch %d element %d: got %v want %v", k, j, x, want)
			}
		}
		if _, err := b.Output(1).SampleView(n); err == nil {
			t.Fatalf("batch %d: sample %d of a batch of %d should be out of range", k, n, n)
		}
	}
}

// A sample's random stream depends on its iteration and index only, not on the sizes of
// the batches before it.
func TestVariableBatchRandomStreams(t *testing.T) {
	draw := func(sizes []int) [][]float32 {
		p := mustPipeline(t, varDesc(4))
		var out [][]float32
		for _, n := range sizes {
			if err := p.FeedInput("src", fedBatch(n, 0)); err != nil {
				t.Fatal(err)
			}
			if err := p.FeedInput("fixed", fedBatch(n, 0)); err != nil {
				t.Fatal(err)
			}
			b, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			v, err := b.Output(2).DenseView()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), float32s(unsafe.Slice((*byte)(v.Ptr), 4*n))...))
			v.Lease.Release()
		}
		return out
	}
	a := draw([]int{4, 4})
	b := draw([]int{1, 3})
	if fmt.Sprint(a[1][:3]) != fmt.Sprint(b[1]) {
		t.Fatalf("iteration 1 draws %v with batches [4 4], %v with [1 3]: want the same leading samples", a[1], b[1])
	}
	if a[0][0] != b[0][0] {
		t.Fatalf("iteration 0 sample 0: %v vs %v", a[0][0], b[0][0])
	}
}

func TestVariableBatchRefusals(t *testing.T) {
	p := mustPipeline(t, varDesc(3))
	var calls atomic.Int32
	err := p.FeedInput("src", counted([][]int32{{1, 2}, {1, 2}, {1, 2}, {1, 2}}, [][]int{{1, 2}, {1, 2}, {1, 2}, {1, 2}}, &calls))
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `node "src"`) ||
		!strings.Contains(err.Error(), "got a batch of 4 samples, more than the pipeline's max_batch_size (batch_size) 3") {
		t.Fatalf("a batch over the maximum: %v", err)
	}
	err = p.FeedInput("src", &Feed{DType: Int32, Release: func() { calls.Add(1) }})
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), "empty batch") {
		t.Fatalf("an empty batch: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("refused feeds released %d times, want 2", calls.Load())
	}
	// Sources that disagree on the iteration's size fail that batch; the next goes on.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.FeedInput("src", fedBatch(2, 0)))
	must(p.FeedInput("fixed", fedBatch(3, 0)))
	must(p.FeedInput("src", fedBatch(1, 0)))
	must(p.FeedInput("fixed", fedBatch(1, 0)))
	_, err = p.Next()
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `"src" 2 samples, "fixed" 3`) {
		t.Fatalf("disagreeing sources: %v", err)
	}
	b, err := p.Next()
	if err != nil || b.Size() != 1 {
		t.Fatalf("the batch after: %v (size %v)", err, b)
	}
}

func TestVariableBatchWithReaderRefused(t *testing.T) {
	root := writeDataset(t, 2, 3)
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "device_id": null, "ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}},
	 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 2}}],
	 "outputs": ["labels", "x"]}`, root)
	p := mustPipeline(t, desc)
	if err := p.FeedInput("src", fedBatch(1, 0)); err != nil {
		t.Fatal(err)
	}
	_, err := p.Next()
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `reader "Reader" gives batches of batch_size 2`) {
		t.Fatalf("a smaller feed with a reader: %v", err)
	}
	if err := p.FeedInput("src", fedBatch(2, 0)); err != nil {
		t.Fatal(err)
	}
	if b, err := p.Next(); err != nil || b.Size() != 2 {
		t.Fatalf("a full feed with a reader: %v", err)
	}
}

// Changing the batch size maps no memory once each size has been seen: the dense
// outputs' buffers are leased for batch_size samples whatever the batch's size.
func TestVariableBatchPoolSteadyState(t *testing.T) {
	p := mustPipeline(t, varDesc(8))
	run := func(n int) {
		t.Helper()
		if err := p.FeedInput("src", fedBatch(n, 0)); err != nil {
			t.Fatal(err)
		}
		if err := p.FeedInput("fixed", fedBatch(n, 0)); err != nil {
			t.Fatal(err)
		}
		if b, err := p.Next(); err != nil || b.Size() != n {
			t.Fatalf("size %d: %v", n, err)
		}
	}
	sizes := []int{8, 1, 5, 8, 2, 7, 3}
	for _, n := range sizes { // warm-up: every size once
		run(n)
	}
	before := p.Pool().Stats().Allocations
	for k := 0; k < 3; k++ {
		for _, n := range sizes {
			run(n)
		}
	}
	if after := p.Pool().Stats().Allocations; after != before {
		t.Fatalf("the pool mapped %d buffers in steady state with changing batch sizes, want 0", after-before)
	}
}

// As in DALI, operators given the same seed draw the same numbers; the others draw
// streams of their own.
func TestExplicitSeedSharesStreams(t *testing.T) {
	p := mustPipeline(t, `{"batch_size": 4, "num_threads": 2, "seed": 3, "device_id": null, "ops": [
	 {"op": "random.uniform", "name": "a", "outputs": ["a"], "args": {"seed": 77}},
	 {"op": "random.uniform", "name": "b", "outputs": ["b"], "args": {"seed": 77}},
	 {"op": "random.uniform", "name": "c", "outputs": ["c"], "args": {"seed": 78}},
	 {"op": "random.uniform", "name": "d", "outputs": ["d"]}],
	 "outputs": ["a", "b", "c", "d"]}`)
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	var got [4][]float32
	for k := range got {
		v, err := b.Output(k).DenseView()
		if err != nil {
			t.Fatal(err)
		}
		got[k] = append([]float32(nil), float32s(unsafe.Slice((*byte)(v.Ptr), 16))...)
		v.Lease.Release()
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
		t.Fatalf("seed 77 twice: %v and %v, want the same", got[0], got[1])
	}
	if fmt.Sprint(got[0]) == fmt.Sprint(got[2]) || fmt.Sprint(got[0]) == fmt.Sprint(got[3]) {
		t.Fatalf("other seeds drew the same numbers: %v %v %v", got[0], got[2], got[3])
	}
}
