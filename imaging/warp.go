package imaging

import (
	"fmt"
	"math"
)

// Warp is an affine resampling of an HWC uint8 image, DALI's warp_affine convention:
// M maps a point of the output to the point of the input it shows, in coordinates where
// pixel (x, y) covers [x, x+1) x [y, y+1), so its centre is (x+0.5, y+0.5).
//
// InterpNN takes the input pixel that contains the point; InterpLinear blends the four
// pixels around it. Input pixels outside the image are the fill value when UseFill is
// set, else the nearest edge pixel (the coordinates are clamped, DALI's default when no
// fill_value is given). Results round half away from zero and saturate.
type Warp struct {
	M       [2][3]float64 // src = M * (x, y, 1)
	Interp  Interp        // InterpNN or InterpLinear
	UseFill bool
	Fill    byte
	// PIL selects, for InterpLinear, PIL's bilinear transform filter (Image.transform
	// with BILINEAR) instead of DALI's: a point outside [0, w) x [0, h) is the fill
	// value (0 without UseFill), one inside blends its four neighbours clamped to the
	// edge, in float64, and the result is truncated.
	PIL bool
}

// Apply fills dst (dw x dh x c) from src (w x h x c).
func (p *Warp) Apply(dst []byte, dw, dh int, src []byte, w, h, c int) error {
	if err := checkImage("warp: input", len(src), w, h, c); err != nil {
		return err
	}
	if err := checkImage("warp: output", len(dst), dw, dh, c); err != nil {
		return err
	}
	for _, row := range p.M {
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("warp: transform %v is not finite", p.M)
			}
		}
	}
	switch p.Interp {
	case InterpNN:
		p.nearest(dst, dw, dh, src, w, h, c)
	case InterpLinear, InterpTriangular:
		if p.PIL {
			p.pilLinear(dst, dw, dh, src, w, h, c)
			return nil
		}
		p.linear(dst, dw, dh, src, w, h, c)
	default:
		return fmt.Errorf("warp: interpolation %v: expected INTERP_NN or INTERP_LINEAR", p.Interp)
	}
	return nil
}

// pixel returns the offset of input pixel (x, y), or -1 for the fill value.
func (p *Warp) pixel(x, y, w, h, c int) int {
	if x < 0 || y < 0 || x >= w || y >= h {
		if p.UseFill {
			return -1
		}
		x, y = clampInt(x, 0, w-1), clampInt(y, 0, h-1)
	}
	return (y*w + x) * c
}

// floorInt is floor for the coordinates of a warp, saturated far outside any image
// so that the conversion to int is defined.
func floorInt(v float64) int {
	const lim = 1 << 30
	if v < -lim {
		return -lim
	}
	if v > lim {
		return lim
	}
	return int(math.Floor(v))
}

func (p *Warp) nearest(dst []byte, dw, dh int, src []byte, w, h, c int) {
	m := &p.M
	for y := 0; y < dh; y++ {
		fy := float64(y) + 0.5
		out := dst[y*dw*c : (y+1)*dw*c]
		for x := 0; x < dw; x++ {
			fx := float64(x) + 0.5
			sx := m[0][0]*fx + m[0][1]*fy + m[0][2]
			sy := m[1][0]*fx + m[1][1]*fy + m[1][2]
			o := out[x*c : (x+1)*c]
			if k := p.pixel(floorInt(sx), floorInt(sy), w, h, c); k >= 0 {
				copy(o, src[k:k+c])
			} else {
				fillBytes(o, p.Fill)
			}
		}
	}
}

func (p *Warp) linear(dst []byte, dw, dh int, src []byte, w, h, c int) {
	m := &p.M
	fill := float32(p.Fill)
	for y := 0; y < dh; y++ {
		fy := float64(y) + 0.5
		out := dst[y*dw*c : (y+1)*dw*c]
		for x := 0; x < dw; x++ {
			fx := float64(x) + 0.5
			// The sample grid is at pixel centres: shift by half a pixel to blend.
			sx := m[0][0]*fx + m[0][1]*fy + m[0][2] - 0.5
			sy := m[1][0]*fx + m[1][1]*fy + m[1][2] - 0.5
			x0, y0 := floorInt(sx), floorInt(sy)
			ax, ay := float32(sx-float64(x0)), float32(sy-float64(y0))
			o := out[x*c : (x+1)*c]
			if x0 >= 0 && y0 >= 0 && x0+1 < w && y0+1 < h {
				k00 := (y0*w + x0) * c
				k10 := k00 + w*c
				for ch := range o {
					a, b := float32(src[k00+ch]), float32(src[k00+c+ch])
					d, e := float32(src[k10+ch]), float32(src[k10+c+ch])
					top := a + (b-a)*ax
					bot := d + (e-d)*ax
					o[ch] = SatU8(top + (bot-top)*ay)
				}
				continue
			}
			k00 := p.pixel(x0, y0, w, h, c)
			k01 := p.pixel(x0+1, y0, w, h, c)
			k10 := p.pixel(x0, y0+1, w, h, c)
			k11 := p.pixel(x0+1, y0+1, w, h, c)
			at := func(k, ch int) float32 {
				if k < 0 {
					return fill
				}
				return float32(src[k+ch])
			}
			for ch := range o {
				a, b := at(k00, ch), at(k01, ch)
				d, e := at(k10, ch), at(k11, ch)
				top := a + (b-a)*ax
				bot := d + (e-d)*ax
				o[ch] = SatU8(top + (bot-top)*ay)
			}
		}
	}
}

// pilLinear is PIL's bilinear_filter32RGB under ImagingGenericTransform with the affine
// map: the point is M * (x + 0.5, y + 0.5) (products summed left to right, unfused, as
// PIL's C does), tested against the image before the half-pixel shift.
func (p *Warp) pilLinear(dst []byte, dw, dh int, src []byte, w, h, c int) {
	m := &p.M
	fill := byte(0)
	if p.UseFill {
		fill = p.Fill
	}
	fw, fh := float64(w), float64(h)
	for y := 0; y < dh; y++ {
		fy := float64(y) + 0.5
		out := dst[y*dw*c : (y+1)*dw*c]
		for x := 0; x < dw; x++ {
			fx := float64(x) + 0.5
			// float64(...) around each product keeps the compiler from fusing them.
			sx := float64(m[0][0]*fx) + float64(m[0][1]*fy) + m[0][2]
			sy := float64(m[1][0]*fx) + float64(m[1][1]*fy) + m[1][2]
			o := out[x*c : (x+1)*c]
			if !(sx >= 0 && sx < fw && sy >= 0 && sy < fh) {
				fillBytes(o, fill)
				continue
			}
			sx -= 0.5
			sy -= 0.5
			x0, y0 := floorInt(sx), floorInt(sy)
			dx, dy := sx-float64(x0), sy-float64(y0)
			xa, xb := clampInt(x0, 0, w-1)*c, clampInt(x0+1, 0, w-1)*c
			ra, rb := clampInt(y0, 0, h-1)*w*c, clampInt(y0+1, 0, h-1)*w*c
			for ch := range o {
				a, b := float64(src[ra+xa+ch]), float64(src[ra+xb+ch])
				v1 := a + float64((b-a)*dx)
				d, e := float64(src[rb+xa+ch]), float64(src[rb+xb+ch])
				v2 := d + float64((e-d)*dx)
				o[ch] = byte(v1 + float64((v2-v1)*dy))
			}
		}
	}
}
