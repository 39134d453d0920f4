package imaging

import (
	"fmt"
	"math"
	"unsafe"
)

// Pixel is an element type the displacement kernels sample: uint8 or float32.
type Pixel interface{ ~uint8 | ~float32 }

// Displacement resamples an HWC image along a point map (DALI's displacement filters:
// water, sphere, warp_perspective): for output pixel (x, y), Map gives the point of the
// input it shows, in coordinates where input pixel (i, j) covers [i, i+1) x [j, j+1).
//
// InterpNN takes the input pixel that contains the point; InterpLinear blends the four
// pixel centres around it. Input pixels outside the image are Fill. uint8 results are
// rounded half away from zero and saturated; float32 results are exact blends.
type Displacement struct {
	Interp Interp
	Fill   float64
	// Map gives the input point shown by output pixel (x, y) (integer indices).
	Map func(x, y int) (sx, sy float64)
}

// Elems views b as a slice of T; b must be aligned for T (pipeline buffers are).
func Elems[T Pixel | int16 | uint16 | int32 | int64 | float64](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// DisplaceImage fills dst (dh x dw x c) from src (h x w x c).
func DisplaceImage[T Pixel](p *Displacement, dst []T, dw, dh int, src []T, w, h, c int) error {
	if w < 0 || h < 0 || c <= 0 || len(src) < w*h*c {
		return fmt.Errorf("displace: input of %d elements is not %dx%dx%d", len(src), h, w, c)
	}
	if dw < 0 || dh < 0 || len(dst) < dw*dh*c {
		return fmt.Errorf("displace: output of %d elements is not %dx%dx%d", len(dst), dh, dw, c)
	}
	if p.Interp != InterpNN && p.Interp != InterpLinear {
		return fmt.Errorf("displace: interpolation %v: expected INTERP_NN or INTERP_LINEAR", p.Interp)
	}
	var zero T
	_, isU8 := any(zero).(uint8)
	store := func(v float64) T {
		if isU8 {
			return T(SatU8(float32(v)))
		}
		return T(v)
	}
	fill := store(p.Fill)
	at := func(i, j, ch int) float64 {
		if i < 0 || j < 0 || i >= w || j >= h {
			return p.Fill
		}
		return float64(src[(j*w+i)*c+ch])
	}
	for y := 0; y < dh; y++ {
		row := dst[y*dw*c : (y+1)*dw*c]
		for x := 0; x < dw; x++ {
			sx, sy := p.Map(x, y)
			o := row[x*c : (x+1)*c]
			if math.IsNaN(sx) || math.IsNaN(sy) {
				for ch := range o {
					o[ch] = fill
				}
				continue
			}
			if p.Interp == InterpNN {
				i, j := floorInt(sx), floorInt(sy)
				if i < 0 || j < 0 || i >= w || j >= h {
					for ch := range o {
						o[ch] = fill
					}
					continue
				}
				copy(o, src[(j*w+i)*c:(j*w+i+1)*c])
				continue
			}
			fx, fy := sx-0.5, sy-0.5
			i0, j0 := floorInt(fx), floorInt(fy)
			ax, ay := fx-float64(i0), fy-float64(j0)
			inside := i0 >= 0 && j0 >= 0 && i0+1 < w && j0+1 < h
			for ch := range o {
				var a, b, d, e float64
				if inside {
					k := (j0*w+i0)*c + ch
					a, b = float64(src[k]), float64(src[k+c])
					d, e = float64(src[k+w*c]), float64(src[k+w*c+c])
				} else {
					a, b = at(i0, j0, ch), at(i0+1, j0, ch)
					d, e = at(i0, j0+1, ch), at(i0+1, j0+1, ch)
				}
				top := a + (b-a)*ax
				bot := d + (e-d)*ax
				o[ch] = store(top + (bot-top)*ay)
			}
		}
	}
	return nil
}
