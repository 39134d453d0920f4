package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user + system) the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// nextBatch is p's next batch, the next epoch's first at the end of one.
func nextBatch(b *testing.B, p *Pipeline) *Batch {
	out, err := p.Next()
	if errors.Is(err, ErrEndOfEpoch) {
		p.Reset()
		out, err = p.Next()
	}
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// runImages runs p for b.N batches of batch images and reports images/s and the
// process's CPU milliseconds per image (what a busy machine does not distort).
func runImages(b *testing.B, p *Pipeline, batch int) {
	n := 0
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nextBatch(b, p)
		n += batch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "images/s")
	b.ReportMetric(float64(processCPU(b)-cpu0)/1e6/float64(n), "cpu-ms/img")
}

// BenchmarkResNetPipeline runs the ResNet-50 training pipeline; set GODALI_BENCH_DATA to
// an ImageFolder tree of real photographs for meaningful figures (images/s and CPU
// ms per image are reported; the prefetched batches' work falls partly outside the
// window, so run enough batches).
func BenchmarkResNetPipeline(b *testing.B) {
	root := os.Getenv("GODALI_BENCH_DATA")
	if root == "" {
		root = writeDataset(b, 4, 16)
	}
	p := mustPipeline(b, resnetJSON(root, 2, 64, 2))
	runImages(b, p, 64)
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
		nextBatch(b, p)
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
	runImages(b, p, 64)
}

// BenchmarkVideoPipeline runs video_bench.py's godali pipeline (random 16-frame clips,
// resize shorter side 128 linear, crop 112 normalised to float, flipped at random) over
// the .mp4 files in GODALI_BENCH_VIDEOS (benchmarks/video_bench.py makes them); it is
// skipped without them. The CPU metric is per delivered frame.
func BenchmarkVideoPipeline(b *testing.B) {
	p := mustPipeline(b, videoBenchJSON(b, benchVideos(b), false))
	runImages(b, p, 8*16)
}

// benchVideos lists the .mp4 files in GODALI_BENCH_VIDEOS, skipping the benchmark
// without them.
func benchVideos(b *testing.B) []string {
	dir := os.Getenv("GODALI_BENCH_VIDEOS")
	files, _ := filepath.Glob(filepath.Join(dir, "*.mp4"))
	if dir == "" || len(files) == 0 {
		b.Skip("set GODALI_BENCH_VIDEOS to a directory of .mp4 clips")
	}
	return files
}

// videoBenchJSON is BenchmarkVideoPipeline's pipeline; with clips, it also outputs each
// clip's file (its index in files) and first frame.
func videoBenchJSON(b *testing.B, files []string, clips bool) string {
	list, _ := json.Marshal(files)
	extra, outs := "", `["out"]`
	if clips {
		extra, outs = `, "labels": [], "enable_frame_num": true`, `["out", "file", "first"]`
	}
	return fmt.Sprintf(`{"batch_size": 8, "num_threads": 2, "device_id": null, "seed": 1, "prefetch_queue_depth": 2,
	"ops": [
	 {"op": "readers.video", "name": "Reader", "outputs": %s, "args": {"filenames": %s, "sequence_length": 16, "step": 1, "random_shuffle": true%s}},
	 {"op": "resize", "name": "resize", "inputs": ["v"], "outputs": ["r"], "args": {"resize_shorter": 128, "interp_type": "INTERP_LINEAR", "antialias": false}},
	 {"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"], "args": {"probability": 0.5}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["r"], "arg_inputs": {"mirror": "mirror"}, "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [112, 112], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": %s}`, map[bool]string{false: `["v"]`, true: `["v", "file", "first"]`}[clips], list, extra, outs)
}
