package imaging

import (
	"fmt"
	"math"
)

// The warp mechanism (DALI's one warp kernel with its mappings): an output pixel shows
// the input at the point a Mapping gives, read by one sampler (warpSampler) with an
// interpolation (nearest, linear, cubic), a border (constant fill, clamp, wrap,
// reflections) and an arithmetic (blend) chosen to match each operator's reference bit
// for bit. Warp (rotate, warp_affine on HWC uint8, the auto-augmentations),
// DisplaceImage (water, sphere) and WarpImage's corner convention (warp_affine,
// warp_perspective) map points this way; WarpImage's OpenCV convention and RemapImage
// hand the sampler OpenCV's quantized pixel and fraction directly.

// Mapping is a warp's geometry: for output pixel (x, y), the input point it shows, in
// coordinates where input pixel (i, j) covers [i, i+1) x [j, j+1) (its centre is
// (i+1/2, j+1/2)); an affine or perspective warp's point is M (x+1/2, y+1/2). A NaN
// point shows the fill.
type Mapping interface {
	Point(x, y int) (sx, sy float64)
}

// AffineMapping maps output pixel centres through M: src = M (x+1/2, y+1/2, 1).
type AffineMapping [2][3]float64

// Point implements Mapping.
func (m *AffineMapping) Point(x, y int) (float64, float64) {
	fx, fy := float64(x)+0.5, float64(y)+0.5
	return m[0][0]*fx + m[0][1]*fy + m[0][2], m[1][0]*fx + m[1][1]*fy + m[1][2]
}

// PerspectiveMapping maps output pixel centres through the homography M:
// (X, Y, W) = M (x+1/2, y+1/2, 1), src = (X/W, Y/W). A point the homography leaves
// undefined (0/0) reads as far outside the image: the border decides, as for OpenCV.
type PerspectiveMapping [3][3]float64

// Point implements Mapping.
func (m *PerspectiveMapping) Point(x, y int) (float64, float64) {
	fx, fy := float64(x)+0.5, float64(y)+0.5
	den := m[2][0]*fx + m[2][1]*fy + m[2][2]
	if den != 1 {
		den = 1 / den
	}
	sx, sy := (m[0][0]*fx+m[0][1]*fy+m[0][2])*den, (m[1][0]*fx+m[1][1]*fy+m[1][2])*den
	if math.IsNaN(sx) {
		sx = math.Inf(-1)
	}
	if math.IsNaN(sy) {
		sy = math.Inf(-1)
	}
	return sx, sy
}

// PointMapping is a Mapping given as a function (the displacement filters' maps).
type PointMapping func(x, y int) (sx, sy float64)

// Point implements Mapping.
func (f PointMapping) Point(x, y int) (float64, float64) { return f(x, y) }

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

// blend is the arithmetic of a linear interpolation, each that of the reference an
// operator matches.
type blend int

const (
	// blendWeights: OpenCV's sum of weighted taps in float64 (warp_perspective,
	// warp_affine, remap), the fill in the output's type, results rounded half away from
	// zero and saturated.
	blendWeights blend = iota
	// blendLerp32: a + (b-a)t across, then down, in float32 (DALI's warp_affine on HWC
	// uint8: rotate), the fill as given, results through SatU8.
	blendLerp32
	// blendLerp64: the same in float64 (DALI's displacement filters: water, sphere),
	// uint8 results through SatU8, float32 ones converted.
	blendLerp64
)

// warpSampler reads an HWC image at source points: the pixel (ix, iy) for InterpNN,
// or the 2x2 (InterpLinear) or 4x4 (InterpCubic) taps around it weighted by the
// fraction (tx, ty); taps outside read through the border.
type warpSampler[In, Out PerspectivePixel] struct {
	src     []In
	w, h, c int
	border  Border
	interp  Interp
	blend   blend
	fill    []float64 // per channel, in Out's values (what a pixel all outside shows)
	rawFill []float64 // per channel, as given (what an outside tap weighs in the lerps)
	isFloat bool
	isU8    bool
	lo, hi  float64
	offs    [16]int
	wx, wy  [4]float64
}

func newWarpSampler[In, Out PerspectivePixel](interp Interp, border Border, fillArg []float64, src []In, w, h, c int) (*warpSampler[In, Out], error) {
	return newBlendSampler[In, Out](interp, border, blendWeights, fillArg, src, w, h, c)
}

func newBlendSampler[In, Out PerspectivePixel](interp Interp, border Border, bl blend, fillArg []float64, src []In, w, h, c int) (*warpSampler[In, Out], error) {
	if w < 0 || h < 0 || c <= 0 || len(src) < w*h*c {
		return nil, fmt.Errorf("input of %d elements is not %dx%dx%d", len(src), h, w, c)
	}
	if interp != InterpNN && interp != InterpLinear && interp != InterpCubic {
		return nil, fmt.Errorf("interpolation %v: expected INTERP_NN, INTERP_LINEAR or INTERP_CUBIC", interp)
	}
	s := &warpSampler[In, Out]{src: src, w: w, h: h, c: c, border: border, interp: interp, blend: bl}
	var zero Out
	_, s.isFloat = any(zero).(float32)
	_, s.isU8 = any(zero).(uint8)
	switch any(zero).(type) {
	case uint8:
		s.hi = math.MaxUint8
	case int16:
		s.lo, s.hi = math.MinInt16, math.MaxInt16
	case uint16:
		s.hi = math.MaxUint16
	}
	s.fill, s.rawFill = make([]float64, c), make([]float64, c)
	for ch := range s.fill {
		switch {
		case len(fillArg) == 1:
			s.rawFill[ch] = fillArg[0]
		case ch < len(fillArg):
			s.rawFill[ch] = fillArg[ch]
		}
		s.fill[ch] = float64(s.store(s.rawFill[ch])) // the fill in the image's type, as OpenCV's scalar
	}
	return s, nil
}

func (s *warpSampler[In, Out]) store(v float64) Out {
	if s.isFloat {
		return Out(float32(v))
	}
	if s.blend != blendWeights && s.isU8 {
		return Out(SatU8(float32(v)))
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

// warp fills dst (dh x dw x c) with the input read at m's points.
func (s *warpSampler[In, Out]) warp(m Mapping, dst []Out, dw, dh int) {
	c := s.c
	for y := 0; y < dh; y++ {
		row := dst[y*dw*c : (y+1)*dw*c]
		for x := 0; x < dw; x++ {
			sx, sy := m.Point(x, y)
			s.point(row[x*c:(x+1)*c], sx, sy)
		}
	}
}

// point writes the c channels read at the input point (sx, sy) (Mapping's coordinates)
// into out: InterpNN takes the pixel that contains it, the others weigh the pixels
// whose centres surround it.
func (s *warpSampler[In, Out]) point(out []Out, sx, sy float64) {
	if math.IsNaN(sx) || math.IsNaN(sy) {
		for ch := range out {
			out[ch] = Out(s.fill[ch])
		}
		return
	}
	if s.interp == InterpNN {
		s.pixel(out, floorCoord(sx), floorCoord(sy), 0, 0)
		return
	}
	sx, sy = sx-0.5, sy-0.5
	ix, iy := floorCoord(sx), floorCoord(sy)
	tx, ty := sx-float64(ix), sy-float64(iy)
	if ix <= -1<<30 || ix >= 1<<30 {
		tx = 0
	}
	if iy <= -1<<30 || iy >= 1<<30 {
		ty = 0
	}
	s.pixel(out, ix, iy, tx, ty)
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
	if s.blend != blendWeights {
		s.lerp(out, ix, iy, tx, ty)
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

// lerp is InterpLinear with the lerp blends: a + (b-a)tx across the rows, then down.
func (s *warpSampler[In, Out]) lerp(out []Out, ix, iy int, tx, ty float64) {
	var k00, k01, k10, k11 int
	if ix >= 0 && iy >= 0 && ix+1 < s.w && iy+1 < s.h {
		k00 = (iy*s.w + ix) * s.c
		k01, k10 = k00+s.c, k00+s.w*s.c
		k11 = k10 + s.c
	} else {
		k00, k01 = s.tap(ix, iy), s.tap(ix+1, iy)
		k10, k11 = s.tap(ix, iy+1), s.tap(ix+1, iy+1)
	}
	at := func(k, ch int) float64 {
		if k < 0 {
			return s.rawFill[ch]
		}
		return float64(s.src[k+ch])
	}
	for ch := range out {
		a, b, d, e := at(k00, ch), at(k01, ch), at(k10, ch), at(k11, ch)
		if s.blend == blendLerp32 {
			ax, ay := float32(tx), float32(ty)
			a32, b32, d32, e32 := float32(a), float32(b), float32(d), float32(e)
			top := a32 + (b32-a32)*ax
			bot := d32 + (e32-d32)*ax
			out[ch] = s.store(float64(top + (bot-top)*ay))
			continue
		}
		top := a + (b-a)*tx
		bot := d + (e-d)*tx
		out[ch] = s.store(top + (bot-top)*ty)
	}
}
