package imaging

import "fmt"

// Border is how ConvAxis reads past the ends of an axis (DALI's filter border modes).
type Border int

// Border modes; for an axis of extent 1 the reflecting modes repeat the element.
const (
	BorderReflect101  Border = iota // dcb|abcd|cba (OpenCV's BORDER_REFLECT_101, the default)
	BorderReflect1001               // cba|abcd|dcb (BORDER_REFLECT)
	BorderWrap                      // bcd|abcd|abc
	BorderClamp                     // aaa|abcd|ddd
	BorderConstant                  // the fill value
)

// borderIndex maps index j of an axis of extent n to the one a border mode reads, or -1
// for the fill value.
// BorderIndex is the index that position j of an axis of n elements reads through border
// b: j itself inside, its mirror, wrap or clamp outside; -1 for BorderConstant outside.
func BorderIndex(j, n int, b Border) int { return borderIndex(j, n, b) }

func borderIndex(j, n int, b Border) int {
	if j >= 0 && j < n {
		return j
	}
	switch b {
	case BorderConstant:
		return -1
	case BorderClamp:
		return clampInt(j, 0, n-1)
	case BorderWrap:
		j %= n
		if j < 0 {
			j += n
		}
		return j
	case BorderReflect1001:
		p := 2 * n
		j %= p
		if j < 0 {
			j += p
		}
		if j >= n {
			j = p - 1 - j
		}
		return j
	default:
		if n == 1 {
			return 0
		}
		p := 2 * (n - 1)
		j %= p
		if j < 0 {
			j += p
		}
		if j >= n {
			j = p - j
		}
		return j
	}
}

// ConvAxis correlates src (a dense array of the given shape) along one axis with win:
// dst[..., i, ...] = sum_k win[k] * src[..., i + k - anchor, ...], reading past the
// ends as border says (fill for BorderConstant). The output has outN positions along
// the axis (outN = shape[axis] for "same", fewer for "valid", whose first output is at
// input position first). dst must not overlap src. A symmetric window makes this a
// convolution.
func ConvAxis(dst, src []float64, shape []int, axis int, win []float64, anchor int, border Border, fill float64, first, outN int) error {
	if axis < 0 || axis >= len(shape) {
		return fmt.Errorf("conv: axis %d of a %d-dimensional array", axis, len(shape))
	}
	outer, inner := 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	n := shape[axis]
	if len(src) < outer*n*inner || len(dst) < outer*outN*inner {
		return fmt.Errorf("conv: buffers of %d and %d elements for shape %v", len(src), len(dst), shape)
	}
	for o := 0; o < outer; o++ {
		in := src[o*n*inner : (o+1)*n*inner]
		out := dst[o*outN*inner : (o+1)*outN*inner]
		for i := 0; i < outN; i++ {
			row := out[i*inner : (i+1)*inner]
			clear(row)
			for k, wk := range win {
				if wk == 0 {
					continue
				}
				j := borderIndex(first+i+k-anchor, n, border)
				if j < 0 {
					for t := range row {
						row[t] += wk * fill
					}
					continue
				}
				s := in[j*inner : (j+1)*inner]
				for t, v := range s {
					row[t] += wk * v
				}
			}
		}
	}
	return nil
}

// SmoothingWindow fills w with binomial coefficients (1 2 1, 1 4 6 4 1, ...), OpenCV's
// getDerivKernels smoothing window; len(w) 1 gives 1.
func SmoothingWindow(w []float64) {
	for i := range w {
		w[i] = 0
	}
	if len(w) == 0 {
		return
	}
	w[0] = 1
	for n := 1; n < len(w); n++ {
		for i := n; i > 0; i-- {
			w[i] += w[i-1]
		}
	}
}

// SecondDerivWindow fills w (odd length >= 3) with the second-derivative window of that
// size: 1 -2 1 convolved with the binomial window of len(w) - 2 (OpenCV's getDerivKernels
// with dx = 2).
func SecondDerivWindow(w []float64) {
	n := len(w)
	b := make([]float64, n-2)
	SmoothingWindow(b)
	for i := range w {
		w[i] = 0
	}
	for i, v := range b {
		w[i] += v
		w[i+1] -= 2 * v
		w[i+2] += v
	}
}
