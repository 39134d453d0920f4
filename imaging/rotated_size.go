package imaging

import "math"

// RotatedBox is the bounding box of a w x h image rotated by rad radians, rounded up
// less a 0.01 tolerance.
func RotatedBox(w, h int, rad float64) (int, int) {
	c, s := math.Abs(math.Cos(rad)), math.Abs(math.Sin(rad))
	return int(math.Ceil(c*float64(w) + s*float64(h) - 0.01)), int(math.Ceil(c*float64(h) + s*float64(w) - 0.01))
}

// RotatedSize is DALI's output size for a w x h image rotated by rad radians: the
// bounding box rounded up (less a 0.01 tolerance), then made one larger where needed
// for each side to keep the parity of the input side it mostly comes from, so that
// the centres of input and output pixels line up at small angles.
func RotatedSize(w, h int, rad float64) (int, int) {
	// Which input side an output side mostly comes from is decided on the angle as DALI
	// holds it, in float32: at exactly 45 degrees (and the like) the float64 sine and
	// cosine tie the other way.
	r32 := float64(float32(rad))
	c, s := math.Abs(math.Cos(r32)), math.Abs(math.Sin(r32))
	ow, oh := RotatedBox(w, h, rad)
	px, py := w%2, h%2
	if s > c {
		px, py = h%2, w%2
	}
	if ow%2 != px {
		ow++
	}
	if oh%2 != py {
		oh++
	}
	return max(ow, 1), max(oh, 1)
}
