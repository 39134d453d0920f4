package imaging

import (
	"math"
	"testing"
)

// A pure translation by whole pixels moves the image exactly, for every interpolation
// (the source points fall on pixel centres); points outside read the per-channel fill
// (constant) or the clamped edge (BorderClamp).
func TestPerspectiveTranslation(t *testing.T) {
	const w, h, c = 7, 5, 2
	src := make([]uint8, w*h*c)
	for i := range src {
		src[i] = uint8(i * 3)
	}
	for _, interp := range []Interp{InterpNN, InterpLinear, InterpCubic} {
		for _, b := range []Border{BorderConstant, BorderClamp} {
			p := Perspective{M: [3][3]float64{{1, 0, 2}, {0, 1, -1}, {0, 0, 1}}, Interp: interp, Border: b, Fill: []float64{9, 250}}
			dst := make([]uint8, w*h*c)
			if err := PerspectiveImage(&p, dst, w, h, src, w, h, c); err != nil {
				t.Fatal(err)
			}
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					sx, sy := x+2, y-1
					for ch := 0; ch < c; ch++ {
						var want uint8
						switch {
						case sx >= 0 && sx < w && sy >= 0 && sy < h:
							want = src[(sy*w+sx)*c+ch]
						case b == BorderConstant:
							want = []uint8{9, 250}[ch]
						default:
							want = src[(min(max(sy, 0), h-1)*w+min(max(sx, 0), w-1))*c+ch]
						}
						if got := dst[(y*w+x)*c+ch]; got != want {
							t.Fatalf("interp %v border %d: (%d, %d, %d) = %d, want %d", interp, b, x, y, ch, got, want)
						}
					}
				}
			}
		}
	}
}

// InvertHomography: m * inv(m) is the identity; a singular matrix is refused.
func TestInvertHomography(t *testing.T) {
	m := [3][3]float64{{1.2, 0.3, 5}, {-0.2, 0.9, -3}, {1e-3, 2e-3, 1}}
	inv, ok := InvertHomography(m)
	if !ok {
		t.Fatal("invertible matrix refused")
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			var s float64
			for k := 0; k < 3; k++ {
				s += m[i][k] * inv[k][j]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(s-want) > 1e-12 {
				t.Fatalf("m*inv[%d][%d] = %g", i, j, s)
			}
		}
	}
	if _, ok := InvertHomography([3][3]float64{{1, 2, 3}, {2, 4, 6}, {0, 0, 1}}); ok {
		t.Fatal("a singular matrix was inverted")
	}
}

// Corner (DALI's warp_affine sampling): a shift by half a pixel blends two neighbours
// exactly (no 1/32 grid) into a FLOAT output from UINT8 input; NN takes the pixel that
// contains the point (x+1 for a shift of 0.5 from the centre of x); the clamped border
// repeats the last column.
func TestWarpImageCornerHalfPixel(t *testing.T) {
	const w, h = 5, 3
	src := make([]uint8, w*h)
	for i := range src {
		src[i] = uint8(i*i + 1)
	}
	p := Perspective{M: [3][3]float64{{1, 0, 0.5}, {0, 1, 0}, {0, 0, 1}}, Interp: InterpLinear, Border: BorderClamp, Corner: true}
	dst := make([]float32, w*h)
	if err := WarpImage(&p, dst, w, h, src, w, h, 1); err != nil {
		t.Fatal(err)
	}
	p.Interp = InterpNN
	nn := make([]uint8, w*h)
	if err := WarpImage(&p, nn, w, h, src, w, h, 1); err != nil {
		t.Fatal(err)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r := min(x+1, w-1)
			want := (float32(src[y*w+x]) + float32(src[y*w+r])) / 2
			if got := dst[y*w+x]; got != want {
				t.Fatalf("linear (%d, %d) = %v, want %v", x, y, got, want)
			}
			if got := nn[y*w+x]; got != src[y*w+r] {
				t.Fatalf("nn (%d, %d) = %v, want %v", x, y, got, src[y*w+r])
			}
		}
	}
}
