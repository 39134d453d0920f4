package imaging

import (
	"math"
	"testing"
)

// TestRemapShiftsAndInterpolates: maps that add (dx, dy) reproduce the image shifted by
// whole pixels exactly (the fill where the source lies outside, with BorderConstant);
// half-pixel maps average the 2x2 neighbours with InterpLinear; Shift -0.5 (corner
// origin) on maps of pixel centres (x + 0.5) is the identity; NaN reads the fill.
func TestRemapShiftsAndInterpolates(t *testing.T) {
	const w, h, c = 7, 5, 2
	src := make([]uint8, w*h*c)
	for i := range src {
		src[i] = uint8(3*i + 1)
	}
	at := func(x, y, ch int) uint8 { return src[(y*w+x)*c+ch] }
	maps := func(f func(x, y int) (float32, float32)) ([]float32, []float32) {
		mx, my := make([]float32, w*h), make([]float32, w*h)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				mx[y*w+x], my[y*w+x] = f(x, y)
			}
		}
		return mx, my
	}
	dst := make([]uint8, w*h*c)
	for _, interp := range []Interp{InterpNN, InterpLinear, InterpCubic} {
		mx, my := maps(func(x, y int) (float32, float32) { return float32(x + 2), float32(y - 1) })
		p := Remap{MapX: mx, MapY: my, Interp: interp, Border: BorderConstant, Fill: []float64{9}}
		if err := RemapImage(&p, dst, w, h, src, w, h, c); err != nil {
			t.Fatal(err)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				for ch := 0; ch < c; ch++ {
					want := uint8(9)
					if x+2 < w && y-1 >= 0 {
						want = at(x+2, y-1, ch)
					}
					if g := dst[(y*w+x)*c+ch]; g != want && !(interp == InterpCubic && (x+2 >= w-1 || y-1 <= 0)) {
						t.Fatalf("interp %v: (%d, %d, %d) = %d, want %d", interp, y, x, ch, g, want)
					}
				}
			}
		}
	}
	mx, my := maps(func(x, y int) (float32, float32) { return float32(x) + 0.5, float32(y) + 0.5 })
	p := Remap{MapX: mx, MapY: my, Interp: InterpLinear, Border: BorderClamp}
	if err := RemapImage(&p, dst, w, h, src, w, h, c); err != nil {
		t.Fatal(err)
	}
	for y := 0; y < h-1; y++ {
		for x := 0; x < w-1; x++ {
			sum := float64(at(x, y, 1)) + float64(at(x+1, y, 1)) + float64(at(x, y+1, 1)) + float64(at(x+1, y+1, 1))
			if g := dst[(y*w+x)*c+1]; math.Abs(float64(g)-sum/4) > 0.5 {
				t.Fatalf("half-pixel (%d, %d) = %d, want %g", y, x, g, sum/4)
			}
		}
	}
	p.Shift = -0.5
	if err := RemapImage(&p, dst, w, h, src, w, h, c); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		if dst[i] != src[i] {
			t.Fatalf("corner identity: element %d = %d, want %d", i, dst[i], src[i])
		}
	}
	p.MapX[0] = float32(math.NaN())
	p.Border, p.Fill = BorderConstant, []float64{200}
	if err := RemapImage(&p, dst, w, h, src, w, h, c); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 200 || dst[1] != 200 {
		t.Fatalf("NaN map: %d %d, want the fill 200", dst[0], dst[1])
	}
}
