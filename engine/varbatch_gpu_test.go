//go:build cuda

package engine

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// A smaller iteration through the GPU stage: the GPU outputs have the fed batch's size,
// dense and per sample, and equal the CPU operator's.
func TestGPUVariableBatchSize(t *testing.T) {
	p := mustPipeline(t, `{"batch_size": 4, "num_threads": 2, "device_id": 0, "prefetch_queue_depth": 2, "ops": [
	 {"op": "external_source", "name": "src", "outputs": ["img"], "args": {"dtype": "UINT8", "ndim": 3, "layout": "HWC", "shape": [4, 6, 3]}},
	 {"op": "_to_gpu", "name": "up", "device": "mixed", "inputs": ["img"], "outputs": ["x"]},
	 {"op": "flip", "name": "fg", "device": "gpu", "inputs": ["x"], "outputs": ["g"], "args": {"horizontal": 1}},
	 {"op": "flip", "name": "fc", "inputs": ["img"], "outputs": ["c"], "args": {"horizontal": 1}}],
	 "outputs": ["g", "c"]}`)
	rng := rand.New(rand.NewSource(1))
	sizes := []int{4, 1, 3, 4, 2}
	for _, n := range sizes {
		f := &Feed{DType: UInt8, Copy: true}
		for i := 0; i < n; i++ {
			b := make([]byte, 4*6*3)
			rng.Read(b)
			f.Samples = append(f.Samples, FeedSample{Data: b, Shape: []int{4, 6, 3}})
		}
		if err := p.FeedInput("src", f); err != nil {
			t.Fatal(err)
		}
	}
	for k, n := range sizes {
		b, err := p.Next()
		if err != nil {
			t.Fatalf("batch %d: %v", k, err)
		}
		if b.Size() != n || b.Output(0).NumSamples() != n || !b.Output(0).OnGPU {
			t.Fatalf("batch %d: size %d, GPU output %d samples (on GPU %v), want %d", k, b.Size(), b.Output(0).NumSamples(), b.Output(0).OnGPU, n)
		}
		v, err := b.Output(0).DenseView()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(v.Shape) != fmt.Sprintf("[%d 4 6 3]", n) {
			t.Fatalf("batch %d: dense GPU view shape %v", k, v.Shape)
		}
		dense := fetch(t, v)
		for i := 0; i < n; i++ {
			_, g := sampleBytes(t, b, 0, i)
			_, c := sampleBytes(t, b, 1, i)
			if !bytes.Equal(g, c) || !bytes.Equal(dense[i*72:(i+1)*72], c) {
				t.Fatalf("batch %d sample %d: GPU flip differs from the CPU one", k, i)
			}
		}
	}
}
