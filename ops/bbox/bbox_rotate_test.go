package bbox

import (
	"math"
	"testing"
)

// TestBBoxRotateQuarterTurn: a quarter turn (counter-clockwise on screen) of a square
// image maps (x, y) to (y, 1 - x): box (0.1, 0.2)-(0.3, 0.5) becomes (0.2, 0.7)-(0.5, 0.9),
// in every mode (the box keeps its extents, swapped); xyWH boxes alike; a box pushed half
// off the canvas by a 45-degree turn of a keep_size canvas is clipped, and dropped when
// the threshold asks for more than what remains.
func TestBBoxRotateQuarterTurn(t *testing.T) {
	near := func(got, want [4]float32) bool {
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-5 {
				return false
			}
		}
		return true
	}
	wh := [2]float32{100, 100}
	rad := float32(math.Pi / 2)
	for _, m := range []rotateMode{rotateExpand, rotateHalfway, rotateFixed} {
		o := &bboxRotateOp{mode: m, ltrb: true, normalized: true}
		if got, ok := o.rotateBox([4]float32{0.1, 0.2, 0.3, 0.5}, rad, wh, wh); !ok || !near(got, [4]float32{0.2, 0.7, 0.5, 0.9}) {
			t.Fatalf("mode %d: %v %v, want [0.2 0.7 0.5 0.9]", m, got, ok)
		}
	}
	o := &bboxRotateOp{ltrb: false, normalized: false}
	if got, ok := o.rotateBox([4]float32{10, 20, 20, 30}, rad, wh, wh); !ok || !near(got, [4]float32{20, 70, 30, 20}) {
		t.Fatalf("xyWH pixels: %v %v, want [20 70 30 20]", got, ok)
	}
	// 45 degrees: the corner box (0, 0)-(0.2, 0.2) lands on the left edge, its expanded
	// box 27% inside the canvas.
	o = &bboxRotateOp{ltrb: true, normalized: true, threshold: 0.25}
	got, ok := o.rotateBox([4]float32{0, 0, 0.2, 0.2}, math.Pi/4, wh, wh)
	if !ok || got[0] != 0 {
		t.Fatalf("45 degrees, threshold 0.25: %v %v, want a box clipped at x = 0", got, ok)
	}
	o.threshold = 0.3
	if _, ok := o.rotateBox([4]float32{0, 0, 0.2, 0.2}, math.Pi/4, wh, wh); ok {
		t.Fatal("45 degrees, threshold 0.3: the box with 27% left box was kept")
	}
}
