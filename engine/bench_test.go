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

// valJSON is the ResNet-50 validation pipeline: full decode, resize of the shorter side
// to 256 (triangular), centre crop 224 normalised to float CHW.
func valJSON(root string, threads, batch, depth int) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": %d, "device_id": null, "seed": 12, "prefetch_queue_depth": %d,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "pad_last_batch": true}},
	 {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"], "args": {"output_type": "RGB"}},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_shorter": 256, "interp_type": "INTERP_TRIANGULAR"}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [224, 224], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": ["out", "labels"]}`, batch, threads, depth, root)
}

// BenchmarkValPipeline runs the validation pipeline (valJSON); GODALI_BENCH_DATA as
// for BenchmarkResNetPipeline.
func BenchmarkValPipeline(b *testing.B) {
	root := os.Getenv("GODALI_BENCH_DATA")
	if root == "" {
		root = writeDataset(b, 4, 16)
	}
	p := mustPipeline(b, valJSON(root, 2, 64, 2))
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
