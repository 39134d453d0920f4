package image

import (
	"math/rand"
	"testing"

	"github.com/godali/godali/imaging"
)

// sharpnessPlain is the sharpness filter as a plain 3x3 loop (reflect-101 borders,
// float32 sums over rows top to bottom, columns left to right).
func sharpnessPlain(pix []byte, w, h, c int, m float32) []byte {
	k := sharpnessKernel(m)
	refl := func(i, n int) int {
		if n == 1 {
			return 0
		}
		if i < 0 {
			return -i
		}
		if i >= n {
			return 2*n - 2 - i
		}
		return i
	}
	out := make([]byte, len(pix))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				var acc float32
				for dy := -1; dy <= 1; dy++ {
					yy := refl(y+dy, h)
					for dx := -1; dx <= 1; dx++ {
						xx := refl(x+dx, w)
						acc += k[dy+1][dx+1] * float32(pix[(yy*w+xx)*c+ch])
					}
				}
				out[(y*w+x)*c+ch] = imaging.SatU8(acc)
			}
		}
	}
	return out
}

// TestSharpnessRowsMatchPlainLoop: the row-wise sharpness gives the plain loop's bytes,
// borders and 1-pixel-wide or -high images included.
func TestSharpnessRowsMatchPlainLoop(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, sz := range [][3]int{{1, 1, 1}, {1, 7, 3}, {6, 1, 3}, {2, 2, 1}, {13, 9, 3}, {5, 17, 4}} {
		w, h, c := sz[0], sz[1], sz[2]
		pix := make([]byte, w*h*c)
		rng.Read(pix)
		for _, m := range []float32{-0.9, -0.3, 0, 0.45, 0.9} {
			want := sharpnessPlain(pix, w, h, c, m)
			im := augImage{pix: append([]byte(nil), pix...), w: w, h: h, c: c}
			im.sharpness(m)
			for i := range want {
				if im.pix[i] != want[i] {
					t.Fatalf("%dx%dx%d, m %g: byte %d = %d, plain loop %d", w, h, c, m, i, im.pix[i], want[i])
				}
			}
		}
	}
}
