package engine

import (
	"errors"
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
