package image

import (
	"math"
	"testing"

	"github.com/godali/godali/imaging"
)

func TestRotatedSizeFollowsDALI(t *testing.T) {
	cases := []struct {
		w, h int
		deg  float64
		ow   int
		oh   int
	}{
		{640, 480, 0, 640, 480},
		{640, 480, 90, 480, 640},
		{641, 480, 90, 480, 641},
		{640, 480, 180, 640, 480},
		{100, 50, 45, 0, 0}, // 0: only the formula below is checked
		{101, 51, 30, 0, 0},
		{64, 64, -10, 0, 0},
		{33, 70, 120, 0, 0},
	}
	for _, c := range cases {
		rad := c.deg * math.Pi / 180
		cs, sn := math.Abs(math.Cos(rad)), math.Abs(math.Sin(rad))
		// The formula, written out independently of RotatedSize.
		ow := int(math.Ceil(cs*float64(c.w) + sn*float64(c.h) - 0.01))
		oh := int(math.Ceil(cs*float64(c.h) + sn*float64(c.w) - 0.01))
		srcW, srcH := c.w, c.h
		if sn > cs {
			srcW, srcH = c.h, c.w
		}
		ow += (ow - srcW) & 1
		oh += (oh - srcH) & 1
		gw, gh := imaging.RotatedSize(c.w, c.h, rad)
		if gw != ow || gh != oh {
			t.Errorf("%dx%d by %v: got %dx%d, want %dx%d", c.w, c.h, c.deg, gw, gh, ow, oh)
		}
		if c.ow > 0 {
			if gw != c.ow || gh != c.oh {
				t.Errorf("%dx%d by %v: got %dx%d, want %dx%d", c.w, c.h, c.deg, gw, gh, c.ow, c.oh)
			}
		}
	}
}

// At 45 degrees (and 135, ...) the bounding box is square in exact arithmetic and the
// parity choice depends on which of sine and cosine is larger: DALI 2.4 decides it on the
// angle in float32. Sizes measured with DALI 2.4's CPU rotate, side by side.
func TestRotatedSizeAtDiagonalsAsDALI(t *testing.T) {
	for _, c := range []struct {
		w, h   int
		deg    float64
		ow, oh int
	}{
		{29, 30, 45, 42, 43}, {29, 30, -45, 42, 43}, {29, 30, 135, 43, 42}, {29, 30, -135, 43, 42},
		{30, 29, 45, 43, 42}, {30, 29, 135, 42, 43}, {41, 40, 45, 58, 59}, {33, 12, 45, 32, 33},
	} {
		ow, oh := imaging.RotatedSize(c.w, c.h, c.deg*math.Pi/180)
		if ow != c.ow || oh != c.oh {
			t.Errorf("%dx%d rotated %g: %dx%d, DALI %dx%d", c.w, c.h, c.deg, ow, oh, c.ow, c.oh)
		}
	}
}
