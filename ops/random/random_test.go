package random

import (
	"math"
	"testing"

	"github.com/godali/godali/engine"
)

// A range one float32 ulp wide: every draw, stored as FLOAT, is lo (DALI's [lo, hi)).
func TestUniformBelowOneULP(t *testing.T) {
	lo := float64(float32(0.7))
	hi := float64(math.Nextafter32(float32(lo), 1))
	for _, u := range []float64{0, 0.25, 0.5, 0.75, 0.999999} {
		v := uniformBelow(lo+(hi-lo)*u, lo, hi, engine.Float32)
		if got := float64(float32(v)); got != lo {
			t.Errorf("u=%g: stored %v, want %v", u, got, lo)
		}
	}
	if v := uniformBelow(2, 1, 2, engine.Float64); !(v < 2 && v >= 1) {
		t.Errorf("FLOAT64: %v not in [1, 2)", v)
	}
	if v := uniformBelow(1.5, 1, 2, engine.Float32); v != 1.5 {
		t.Errorf("a draw inside the range changed: %v", v)
	}
}
