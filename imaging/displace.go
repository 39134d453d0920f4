package imaging

import (
	"fmt"
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
	sm, err := newBlendSampler[T, T](p.Interp, BorderConstant, blendLerp64, []float64{p.Fill}, src, w, h, c)
	if err != nil {
		return fmt.Errorf("displace: %w", err)
	}
	sm.warp(PointMapping(p.Map), dst, dw, dh)
	return nil
}
