package imaging

import "testing"

func TestDisplaceNearestAndLinear(t *testing.T) {
	w, h, c := 5, 4, 2
	src := make([]uint8, w*h*c)
	for i := range src {
		src[i] = uint8(i * 7)
	}
	dst := make([]uint8, len(src))
	// NN with the identity (pixel centres): the image itself
	p := Displacement{Interp: InterpNN, Map: func(x, y int) (float64, float64) { return float64(x) + 0.5, float64(y) + 0.5 }}
	if err := DisplaceImage(&p, dst, w, h, src, w, h, c); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if dst[i] != src[i] {
			t.Fatalf("identity NN: element %d is %d, want %d", i, dst[i], src[i])
		}
	}
	// linear half a pixel right of the centres: the mean of horizontal neighbours,
	// the last column blends with the fill value
	f := make([]float32, len(src))
	fs := make([]float32, len(src))
	for i, v := range src {
		fs[i] = float32(v)
	}
	q := Displacement{Interp: InterpLinear, Fill: 100, Map: func(x, y int) (float64, float64) { return float64(x) + 1, float64(y) + 0.5 }}
	if err := DisplaceImage(&q, f, w, h, fs, w, h, c); err != nil {
		t.Fatal(err)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				right := float32(100)
				if x+1 < w {
					right = fs[(y*w+x+1)*c+k]
				}
				want := (fs[(y*w+x)*c+k] + right) / 2
				if got := f[(y*w+x)*c+k]; got != want {
					t.Fatalf("(%d,%d,%d): got %g, want %g", x, y, k, got, want)
				}
			}
		}
	}
	if err := DisplaceImage(&Displacement{Interp: InterpCubic, Map: p.Map}, dst, w, h, src, w, h, c); err == nil {
		t.Fatal("INTERP_CUBIC: want an error")
	}
}
