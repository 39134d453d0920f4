package imaging

import (
	"math"
	"testing"
)

// rotation is the warp of a counter-clockwise rotation by deg about the centres of a
// w x h input and an ow x oh output.
func rotation(deg float64, w, h, ow, oh int) Warp {
	r := deg * math.Pi / 180
	c, s := math.Cos(r), math.Sin(r)
	cx, cy, ix, iy := float64(ow)/2, float64(oh)/2, float64(w)/2, float64(h)/2
	return Warp{M: [2][3]float64{{c, -s, ix - c*cx + s*cy}, {s, c, iy - s*cx - c*cy}}}
}

func TestWarpIdentityAndQuarterTurns(t *testing.T) {
	const w, h, c = 31, 20, 3
	src := testImage(w, h, c, 5)
	for _, interp := range []Interp{InterpNN, InterpLinear} {
		p := rotation(0, w, h, w, h)
		p.Interp = interp
		dst := make([]byte, len(src))
		if err := p.Apply(dst, w, h, src, w, h, c); err != nil {
			t.Fatal(err)
		}
		if string(dst) != string(src) {
			t.Errorf("%v: angle 0 changed the image", interp)
		}
		// 90 degrees counter-clockwise: output (x, y) shows input (w-1-y, x).
		p = rotation(90, w, h, h, w)
		p.Interp = interp
		if err := p.Apply(dst, h, w, src, w, h, c); err != nil {
			t.Fatal(err)
		}
		for y := 0; y < w; y++ {
			for x := 0; x < h; x++ {
				o := (y*h + x) * c
				i := (x*w + (w - 1 - y)) * c
				if string(dst[o:o+c]) != string(src[i:i+c]) {
					t.Fatalf("%v: 90 degrees: output (%d, %d) = %v, want input (%d, %d) = %v",
						interp, x, y, dst[o:o+c], w-1-y, x, src[i:i+c])
				}
			}
		}
	}
}

func TestWarpBorders(t *testing.T) {
	src := []byte{10, 20, 30, 40}                                        // 2x2, one channel
	p := Warp{M: [2][3]float64{{1, 0, -1}, {0, 1, 0}}, Interp: InterpNN} // shift right by 1
	dst := make([]byte, 4)
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	if want := []byte{10, 10, 30, 30}; string(dst) != string(want) {
		t.Errorf("clamped border: %v, want %v", dst, want)
	}
	p.UseFill, p.Fill = true, 7
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	if want := []byte{7, 10, 7, 30}; string(dst) != string(want) {
		t.Errorf("filled border: %v, want %v", dst, want)
	}
	// Linear, half a pixel left: the first column blends the fill with the edge.
	p = Warp{M: [2][3]float64{{1, 0, -0.5}, {0, 1, 0}}, Interp: InterpLinear, UseFill: true, Fill: 0}
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	if want := []byte{5, 15, 15, 35}; string(dst) != string(want) {
		t.Errorf("linear with fill: %v, want %v", dst, want)
	}
	p.M[0][2] = math.NaN()
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err == nil {
		t.Error("NaN transform accepted")
	}
}

// PIL's bilinear transform filter (Geometry.c): a point outside [0, w) x [0, h) is the
// fill; inside, the neighbours are clamped to the edge and the blend is truncated.
// Expected values worked by hand from that definition.
func TestWarpPILBilinear(t *testing.T) {
	// 2 x 2 grey image: 10 20 / 30 41.
	src := []byte{10, 20, 30, 41}
	dst := make([]byte, 4)
	// Identity shifted by a quarter pixel right and down: output (0, 0) samples
	// (0.75, 0.75) -> after the half-pixel shift (0.25, 0.25) between all four.
	p := Warp{M: [2][3]float64{{1, 0, 0.25}, {0, 1, 0.25}}, Interp: InterpLinear, UseFill: true,
		Fill: 99, PIL: true}
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	// (0,0): rows 10+10*.25=12.5, 30+11*.25=32.75 -> 12.5+20.25*.25=17.5625 -> 17.
	// (1,0): x 1.25 -> neighbours 1 and 2 clamped to 1: 20, 41; y .25: 20+21*.25=25.25 -> 25.
	// (0,1): y 1.25 -> rows 1 and 1: 30+11*.25=32.75 -> 32.
	// (1,1): point (1.75, 1.75) inside; all neighbours clamp to 41.
	want := []byte{17, 25, 32, 41}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("got %v, want %v", dst, want)
		}
	}
	// Points at x >= w are the fill (output column 1 samples x = 2.5).
	p.M = [2][3]float64{{1, 0, 1}, {0, 1, 0}}
	if err := p.Apply(dst, 2, 2, src, 2, 2, 1); err != nil {
		t.Fatal(err)
	}
	if dst[1] != 99 || dst[3] != 99 || dst[0] != 20 || dst[2] != 41 {
		t.Fatalf("outside points: got %v, want [20 99 41 99]", dst)
	}
}
