package imaging

import (
	"math"
	"math/rand"
	"testing"
)

// TestFloatTapsMatchLinearInterpolation: without antialiasing the linear taps are the
// two nearest pixel centres weighted by distance (edges repeated), written out here;
// with it, every output's weights still sum to 1. An identity window copies.
func TestFloatTapsMatchLinearInterpolation(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for iter := 0; iter < 100; iter++ {
		n := 2 + rng.Intn(40)
		lo := rng.Float64() * float64(n) / 2
		size := 1 + rng.Float64()*(float64(n)-lo-1)
		out := 1 + rng.Intn(50)
		src := make([]float32, n)
		for i := range src {
			src[i] = rng.Float32() * 100
		}
		var ft FloatTaps
		if err := ft.Init(n, lo, lo+size, out, InterpLinear, false); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, out)
		if err := ResampleAxis(got, src, func(s []float32, k int) float32 { return s[k] }, 1, n, 1, &ft); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < out; i++ {
			c := lo + (float64(i)+0.5)*size/float64(out) - 0.5
			x0 := math.Floor(c)
			f := c - x0
			at := func(j int) float64 { return float64(src[min(max(j, 0), n-1)]) }
			want := at(int(x0))*(1-f) + at(int(x0)+1)*f
			if math.Abs(float64(got[i])-want) > 1e-3*math.Max(1, math.Abs(want)) {
				t.Fatalf("n=%d window [%g, %g) out=%d: output %d = %g, want %g", n, lo, lo+size, out, i, got[i], want)
			}
		}
		if err := ft.Init(n, lo, lo+size, out, InterpLinear, true); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < out; i++ {
			var s float64
			for k := 0; k < ft.Taps; k++ {
				s += float64(ft.W[i*ft.Taps+k])
			}
			if math.Abs(s-1) > 1e-5 {
				t.Fatalf("antialiased weights of output %d sum to %g", i, s)
			}
		}
	}
	var ft FloatTaps
	if err := ft.Init(5, 0, 5, 5, InterpLinear, true); err != nil {
		t.Fatal(err)
	}
	src := []float32{1, 2, 3, 4, 5}
	got := make([]float32, 5)
	if err := ResampleAxis(got, src, func(s []float32, k int) float32 { return s[k] }, 1, 5, 1, &ft); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if math.Abs(float64(got[i]-src[i])) > 1e-5 {
			t.Fatalf("identity window: got %v", got)
		}
	}
}
