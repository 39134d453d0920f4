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

// floorCoord is floor for a source coordinate, saturated far outside any image so that
// the conversion to int is defined (NaN reads as far outside).
func floorCoord(v float64) int {
	const lim = 1 << 30
	if !(v > -lim) {
		return -lim
	}
	if v > lim {
		return lim
	}
	return int(math.Floor(v))
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
	m := &p.M
	for y := 0; y < dh; y++ {
		for x := 0; x < dw; x++ {
			fx, fy := float64(x), float64(y)
			if p.Corner {
				fx, fy = fx+0.5, fy+0.5
			}
			den := m[2][0]*fx + m[2][1]*fy + m[2][2]
			out := dst[(y*dw+x)*c : (y*dw+x+1)*c]
			var ix, iy int
			var tx, ty float64
			switch {
			case p.Corner && p.Interp == InterpNN:
				if den != 1 {
					den = 1 / den
				}
				ix = floorCoord((m[0][0]*fx + m[0][1]*fy + m[0][2]) * den)
				iy = floorCoord((m[1][0]*fx + m[1][1]*fy + m[1][2]) * den)
			case p.Corner:
				if den != 1 {
					den = 1 / den
				}
				sx := (m[0][0]*fx+m[0][1]*fy+m[0][2])*den - 0.5
				sy := (m[1][0]*fx+m[1][1]*fy+m[1][2])*den - 0.5
				ix, iy = floorCoord(sx), floorCoord(sy)
				tx, ty = sx-float64(ix), sy-float64(iy)
				if ix <= -1<<30 || ix >= 1<<30 {
					tx = 0
				}
				if iy <= -1<<30 || iy >= 1<<30 {
					ty = 0
				}
			case p.Interp == InterpNN:
				if den != 0 {
					den = 1 / den
				}
				ix = clampShort(satInt((m[0][0]*fx + m[0][1]*fy + m[0][2]) * den))
				iy = clampShort(satInt((m[1][0]*fx + m[1][1]*fy + m[1][2]) * den))
			default:
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

// warpSampler reads an HWC image at source points for WarpImage and RemapImage: the
// pixel (ix, iy) for InterpNN, or the 2x2 (InterpLinear) or 4x4 (InterpCubic) taps
// around it weighted by the fraction (tx, ty); taps outside read through the border.
type warpSampler[In, Out PerspectivePixel] struct {
	src     []In
	w, h, c int
	border  Border
	interp  Interp
	fill    []float64
	isFloat bool
	lo, hi  float64
	offs    [16]int
	wx, wy  [4]float64
}

func newWarpSampler[In, Out PerspectivePixel](interp Interp, border Border, fillArg []float64, src []In, w, h, c int) (*warpSampler[In, Out], error) {
	if w < 0 || h < 0 || c <= 0 || len(src) < w*h*c {
		return nil, fmt.Errorf("input of %d elements is not %dx%dx%d", len(src), h, w, c)
	}
	if interp != InterpNN && interp != InterpLinear && interp != InterpCubic {
		return nil, fmt.Errorf("interpolation %v: expected INTERP_NN, INTERP_LINEAR or INTERP_CUBIC", interp)
	}
	s := &warpSampler[In, Out]{src: src, w: w, h: h, c: c, border: border, interp: interp}
	var zero Out
	_, s.isFloat = any(zero).(float32)
	switch any(zero).(type) {
	case uint8:
		s.hi = math.MaxUint8
	case int16:
		s.lo, s.hi = math.MinInt16, math.MaxInt16
	case uint16:
		s.hi = math.MaxUint16
	}
	s.fill = make([]float64, c)
	for ch := range s.fill {
		switch {
		case len(fillArg) == 1:
			s.fill[ch] = fillArg[0]
		case ch < len(fillArg):
			s.fill[ch] = fillArg[ch]
		}
		s.fill[ch] = float64(s.store(s.fill[ch])) // the fill in the image's type, as OpenCV's scalar
	}
	return s, nil
}

func (s *warpSampler[In, Out]) store(v float64) Out {
	if s.isFloat {
		return Out(float32(v))
	}
	if math.IsNaN(v) {
		return 0
	}
	return Out(math.Min(s.hi, math.Max(s.lo, math.Round(v))))
}

// tap is the offset of input pixel (i, j) after the border, -1 for the fill.
func (s *warpSampler[In, Out]) tap(i, j int) int {
	if s.w == 0 || s.h == 0 { // nothing to read: every tap is outside
		return -1
	}
	i, j = borderIndex(i, s.w, s.border), borderIndex(j, s.h, s.border)
	if i < 0 || j < 0 {
		return -1
	}
	return (j*s.w + i) * s.c
}

// pixel writes the c channels read at (ix + tx, iy + ty) into out.
func (s *warpSampler[In, Out]) pixel(out []Out, ix, iy int, tx, ty float64) {
	if s.interp == InterpNN {
		o := s.tap(ix, iy)
		for ch := range out {
			if o < 0 {
				out[ch] = Out(s.fill[ch])
			} else {
				out[ch] = s.store(float64(s.src[o+ch]))
			}
		}
		return
	}
	wx, wy := &s.wx, &s.wy
	n, first := 2, 0
	if s.interp == InterpLinear {
		wx[0], wx[1], wy[0], wy[1] = 1-tx, tx, 1-ty, ty
	} else {
		n, first = 4, -1
		cubicWeights(tx, wx)
		cubicWeights(ty, wy)
	}
	offs := &s.offs
	for b := 0; b < n; b++ {
		for a := 0; a < n; a++ {
			offs[b*n+a] = s.tap(ix+first+a, iy+first+b)
		}
	}
	for ch := range out {
		var acc float64
		for b := 0; b < n; b++ {
			var row float64
			for a, o := range offs[b*n : b*n+n] {
				if o < 0 {
					row += wx[a] * s.fill[ch]
				} else {
					row += wx[a] * float64(s.src[o+ch])
				}
			}
			acc += wy[b] * row
		}
		out[ch] = s.store(acc)
	}
}
