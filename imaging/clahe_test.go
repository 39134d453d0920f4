package imaging

import (
	"math"
	"math/rand"
	"testing"
)

// TestCLAHEOneTileIsHistogramEqualization: with one tile and no clipping, CLAHE is plain
// histogram equalization, v -> round(cdf(v) * 255 / n).
func TestCLAHEOneTileIsHistogramEqualization(t *testing.T) {
	const h, w = 13, 17
	rng := rand.New(rand.NewSource(1))
	src := make([]uint8, h*w)
	for i := range src {
		src[i] = uint8(rng.Intn(40) * 5)
	}
	var cdf [256]int
	for _, v := range src {
		cdf[v]++
	}
	for i := 1; i < 256; i++ {
		cdf[i] += cdf[i-1]
	}
	dst := make([]uint8, h*w)
	p := CLAHE{TilesX: 1, TilesY: 1}
	p.Apply(dst, src, h, w, w, 1)
	for i, v := range src {
		want := math.RoundToEven(float64(cdf[v]) * 255 / (h * w))
		if math.Abs(float64(dst[i])-want) > 0.5 {
			t.Fatalf("pixel %d (value %d) = %d, want %g", i, v, dst[i], want)
		}
	}
}

// TestCLAHEClipLimitsContrast: a tight clip limit (1: every bin at most its share) leaves
// a flat histogram whose table is the identity's slope, so a high-contrast two-level
// image keeps values near their uniform ranks; a loose one stretches them to the ends.
func TestCLAHEClipLimitsContrast(t *testing.T) {
	const h, w = 16, 16
	src := make([]uint8, h*w)
	for i := range src {
		src[i] = uint8(100 + 20*(i%2))
	}
	dst := make([]uint8, h*w)
	loose := CLAHE{TilesX: 2, TilesY: 2, ClipLimit: 1000}
	loose.Apply(dst, src, h, w, w, 1)
	if dst[0] > 130 || dst[1] != 255 {
		t.Fatalf("no clipping: levels %d, %d; want about 128 and 255", dst[0], dst[1])
	}
	tight := CLAHE{TilesX: 2, TilesY: 2, ClipLimit: 0.01}
	tight.Apply(dst, src, h, w, w, 1)
	if d := int(dst[1]) - int(dst[0]); d < 15 || d > 25 {
		t.Fatalf("clip 1: levels %d, %d; want about the input's spread of 20", dst[0], dst[1])
	}
}

func TestLab8Endpoints(t *testing.T) {
	for _, c := range []struct{ r, g, b, l, a, bb uint8 }{{255, 255, 255, 255, 128, 128}, {0, 0, 0, 0, 128, 128}} {
		l, a, bb := RGBToLab8(c.r, c.g, c.b)
		if l != c.l || a != c.a || bb != c.bb {
			t.Errorf("RGBToLab8(%d, %d, %d) = %d, %d, %d; want %d, %d, %d", c.r, c.g, c.b, l, a, bb, c.l, c.a, c.bb)
		}
	}
	// 8-bit L*a*b* is lossy for saturated colours (OpenCV's round trip of (0, 128, 255)
	// gives (6, 128, 255)); greys come back within a level.
	for v := 0; v < 256; v += 5 {
		for k, rgb := range [][3]uint8{{uint8(v), uint8(v), uint8(v)}, {uint8(v), 128, uint8(255 - v)}} {
			r, g, b := Lab8ToRGB(RGBToLab8(rgb[0], rgb[1], rgb[2]))
			tol := []int{1, 8}[k]
			for i, x := range []uint8{r, g, b} {
				if d := int(x) - int(rgb[i]); d < -tol || d > tol {
					t.Fatalf("round trip of %v: %d, %d, %d", rgb, r, g, b)
				}
			}
		}
	}
}
