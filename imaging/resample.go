package imaging

import (
	"fmt"
	"math"
)

// ResampleAxisF64 resizes a dense float64 array of the given shape along one axis to outN
// positions (DALI's tensor_resize, one axis at a time). Output position d shows the
// input point c(d) = (d + 0.5) / scale - 0.5 + offset in input index coordinates.
//
// InterpNN takes element floor(c + 0.5); InterpLinear (triangle), InterpCubic (Keys,
// a = -0.5) weigh the elements around c, the filter widened by 1 / scale when
// antialias is set and scale < 1, weights normalized; indices past the ends repeat the
// edge element.
func ResampleAxisF64(dst, src []float64, shape []int, axis, outN int, scale, offset float64, interp Interp, antialias bool) error {
	if axis < 0 || axis >= len(shape) || outN < 0 || !(scale > 0) || math.IsInf(scale, 0) {
		return fmt.Errorf("resample: axis %d of shape %v to %d (scale %g)", axis, shape, outN, scale)
	}
	outer, inner := 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	n := shape[axis]
	if n == 0 || len(src) < outer*n*inner || len(dst) < outer*outN*inner {
		return fmt.Errorf("resample: buffers of %d and %d elements for shape %v to %d", len(src), len(dst), shape, outN)
	}
	var kernel func(float64) float64
	support := 0.0
	switch interp {
	case InterpNN:
	case InterpLinear, InterpTriangular:
		kernel, support = func(x float64) float64 { return math.Max(0, 1-math.Abs(x)) }, 1
	case InterpCubic:
		kernel, support = keys, 2
	default:
		return fmt.Errorf("resample: interpolation %v: expected INTERP_NN, INTERP_LINEAR or INTERP_CUBIC", interp)
	}
	widen := 1.0
	if antialias && scale < 1 {
		widen = 1 / scale
	}
	idx := make([]int, 0, 16)
	wts := make([]float64, 0, 16)
	for d := 0; d < outN; d++ {
		c := (float64(d)+0.5)/scale - 0.5 + offset
		idx, wts = idx[:0], wts[:0]
		if kernel == nil {
			idx = append(idx, clampInt(int(math.Floor(c+0.5)), 0, n-1))
			wts = append(wts, 1)
		} else {
			r := support * widen
			lo, hi := int(math.Floor(c-r)), int(math.Ceil(c+r))
			sum := 0.0
			for k := lo; k <= hi; k++ {
				w := kernel((float64(k) - c) / widen)
				if w == 0 {
					continue
				}
				idx = append(idx, clampInt(k, 0, n-1))
				wts = append(wts, w)
				sum += w
			}
			for i := range wts {
				wts[i] /= sum
			}
		}
		for o := 0; o < outer; o++ {
			in := src[o*n*inner : (o+1)*n*inner]
			row := dst[(o*outN+d)*inner : (o*outN+d+1)*inner]
			clear(row)
			for i, k := range idx {
				w := wts[i]
				for t, v := range in[k*inner : (k+1)*inner] {
					row[t] += w * v
				}
			}
		}
	}
	return nil
}

// keys is the Keys cubic kernel with a = -0.5.
func keys(x float64) float64 {
	x = math.Abs(x)
	switch {
	case x < 1:
		return (1.5*x-2.5)*x*x + 1
	case x < 2:
		return ((-0.5*x+2.5)*x-4)*x + 2
	}
	return 0
}
