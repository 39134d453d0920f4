package engine

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// BenchmarkResNetPipeline runs the ResNet-50 training pipeline; set GODALI_BENCH_DATA to
// an ImageFolder tree of real photographs for meaningful figures (images/s is reported).
func BenchmarkResNetPipeline(b *testing.B) {
	root := os.Getenv("GODALI_BENCH_DATA")
	if root == "" {
		root = writeDataset(b, 4, 16)
	}
	p := mustPipeline(b, resnetJSON(root, 2, 64, 2))
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			p.Reset()
			i--
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		n += 64
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkSmallBatches runs a pipeline whose per-batch work is tiny (labels of 4
// files, no decoding), so that the executor's own cost per batch shows (batches/s).
func BenchmarkSmallBatches(b *testing.B) {
	root := writeDataset(b, 2, 8)
	p := mustPipeline(b, fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "device_id": null, "seed": 1, "prefetch_queue_depth": 2,
	 "ops": [{"op": "readers.file", "name": "r", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "random_shuffle": true}}],
	 "outputs": ["labels"]}`, root))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Next(); errors.Is(err, ErrEndOfEpoch) {
			p.Reset()
			i--
		} else if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
}
