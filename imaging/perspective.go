package imaging

import (
	"fmt"
	"math"
)

// PerspectivePixel is an element type Perspective warps.
type PerspectivePixel interface {
	~uint8 | ~int16 | ~uint16 | ~float32
}

// Perspective resamples an HWC image through a 3x3 homography the way OpenCV's
// warpPerspective does (DALI's CPU experimental.warp_perspective calls it): output pixel
// (x, y) shows the input at (X/W, Y/W), (X, Y, W) = M (x, y, 1), in coordinates whose
// integers are pixel centres. The source point is quantized to 1/32 of a pixel for
// InterpLinear and InterpCubic (Keys, a = -0.75) and rounded to the nearest pixel (half
// to even) for InterpNN; taps outside the image read through Border (BorderConstant:
// Fill, one value per channel). Integer results are rounded and saturated.
//
// Corner selects DALI's own warp sampling (its CPU warp_affine kernel) instead: M works in
// coordinates whose origin is the top-left corner of the first pixel (pixel (x, y) is
// centred at (x+0.5, y+0.5)), output pixel (x, y) reads the point M (x+0.5, y+0.5, 1)
// exactly, without the 1/32 grid; InterpNN takes the pixel that contains the point,
// InterpLinear and InterpCubic weigh the pixels whose centres surround it.
type Perspective struct {
	M      [3][3]float64 // output -> input
	Interp Interp
	Border Border
	Fill   []float64 // per channel (one value: every channel); default 0
	Corner bool      // DALI's corner-origin, exact sampling (see above)
}

const perspTab = 32 // OpenCV's INTER_TAB_SIZE

// InvertHomography inverts m; ok=false when it is singular.
func InvertHomography(m [3][3]float64) (inv [3][3]float64, ok bool) {
	c00 := m[1][1]*m[2][2] - m[1][2]*m[2][1]
	c01 := m[1][2]*m[2][0] - m[1][0]*m[2][2]
	c02 := m[1][0]*m[2][1] - m[1][1]*m[2][0]
	det := m[0][0]*c00 + m[0][1]*c01 + m[0][2]*c02
	if det == 0 || math.IsNaN(det) || math.IsInf(1/det, 0) {
		return inv, false
	}
	d := 1 / det
	inv[0] = [3]float64{c00 * d, (m[0][2]*m[2][1] - m[0][1]*m[2][2]) * d, (m[0][1]*m[1][2] - m[0][2]*m[1][1]) * d}
	inv[1] = [3]float64{c01 * d, (m[0][0]*m[2][2] - m[0][2]*m[2][0]) * d, (m[0][2]*m[1][0] - m[0][0]*m[1][2]) * d}
	inv[2] = [3]float64{c02 * d, (m[0][1]*m[2][0] - m[0][0]*m[2][1]) * d, (m[0][0]*m[1][1] - m[0][1]*m[1][0]) * d}
	return inv, true
}

func clampShort(v int) int { return min(max(v, math.MinInt16), math.MaxInt16) }

// satInt is OpenCV's saturate_cast<int>(double): round half to even, clamp.
func satInt(v float64) int {
	v = math.Max(math.MinInt32, math.Min(math.MaxInt32, v))
	return int(math.RoundToEven(v))
}

// cubicWeights are OpenCV's bicubic coefficients (a = -0.75) at fraction t.
func cubicWeights(t float64, w *[4]float64) {
	const a = -0.75
	w[0] = ((a*(t+1)-5*a)*(t+1)+8*a)*(t+1) - 4*a
	w[1] = ((a+2)*t-(a+3))*t*t + 1
	w[2] = ((a+2)*(1-t)-(a+3))*(1-t)*(1-t) + 1
	w[3] = 1 - w[0] - w[1] - w[2]
}

// PerspectiveImage fills dst (dh x dw x c) from src (h x w x c).
func PerspectiveImage[T PerspectivePixel](p *Perspective, dst []T, dw, dh int, src []T, w, h, c int) error {
	return WarpImage(p, dst, dw, dh, src, w, h, c)
}

// WarpImage is PerspectiveImage with an output type of its own: the interpolated value
// (float64) is stored in Out, rounded and saturated for integer types; the fill is in
// Out's range.
func WarpImage[In, Out PerspectivePixel](p *Perspective, dst []Out, dw, dh int, src []In, w, h, c int) error {
	if dw < 0 || dh < 0 || len(dst) < dw*dh*c {
		return fmt.Errorf("warp_perspective: output of %d elements is not %dx%dx%d", len(dst), dh, dw, c)
	}
	s, err := newWarpSampler[In, Out](p.Interp, p.Border, p.Fill, src, w, h, c)
	if err != nil {
		return fmt.Errorf("warp_perspective: %w", err)
	}
	if p.Corner {
		m := PerspectiveMapping(p.M)
		s.warp(&m, dst, dw, dh)
		return nil
	}
	m := &p.M
	for y := 0; y < dh; y++ {
		for x := 0; x < dw; x++ {
			fx, fy := float64(x), float64(y)
			den := m[2][0]*fx + m[2][1]*fy + m[2][2]
			out := dst[(y*dw+x)*c : (y*dw+x+1)*c]
			var ix, iy int
			var tx, ty float64
			if p.Interp == InterpNN {
				if den != 0 {
					den = 1 / den
				}
				ix = clampShort(satInt((m[0][0]*fx + m[0][1]*fy + m[0][2]) * den))
				iy = clampShort(satInt((m[1][0]*fx + m[1][1]*fy + m[1][2]) * den))
			} else {
				if den != 0 {
					den = perspTab / den
				}
				ix, iy, tx, ty = quantizeTab((m[0][0]*fx+m[0][1]*fy+m[0][2])*den, (m[1][0]*fx+m[1][1]*fy+m[1][2])*den)
			}
			s.pixel(out, ix, iy, tx, ty)
		}
	}
	return nil
}

// quantizeTab splits a source point given in 1/32 pixels (OpenCV's INTER_TAB_SIZE) into
// its pixel and fraction, as OpenCV's remap tables do.
func quantizeTab(sx, sy float64) (ix, iy int, tx, ty float64) {
	qx, qy := satInt(sx), satInt(sy)
	return clampShort(qx >> 5), clampShort(qy >> 5), float64(qx&(perspTab-1)) / perspTab, float64(qy&(perspTab-1)) / perspTab
}
