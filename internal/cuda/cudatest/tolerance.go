//go:build cuda

package cudatest

import "testing"

// CompareDecoded applies DALI's tolerance for GPU against CPU JPEG decoding (within 4
// levels, as IDCT and chroma upsampling differ): a mean absolute difference of at most
// 1 level and at most 0.5% of the values more than 4 levels apart.
func CompareDecoded(t testing.TB, name string, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d bytes, want %d", name, len(got), len(want))
		return
	}
	var sum float64
	far, worst := 0, 0
	for i := range want {
		d := int(got[i]) - int(want[i])
		if d < 0 {
			d = -d
		}
		sum += float64(d)
		if d > 4 {
			far++
		}
		worst = max(worst, d)
	}
	mean := sum / float64(max(len(want), 1))
	if mean > 1 || float64(far) > 0.005*float64(len(want)) {
		t.Errorf("%s: mean |diff| %.3f, %d of %d values differ by more than 4 (max %d)", name, mean, far, len(want), worst)
	}
}
