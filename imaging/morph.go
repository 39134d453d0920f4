package imaging

import (
	"fmt"
	"slices"
)

// Window filters over an image plane of h x w positions with c interleaved channels
// (each channel apart), dense float64: the rectangular morphology (DALI's
// experimental.dilate / erode, OpenCV's dilate/erode with a MORPH_RECT element) and the
// median (experimental.median_blur, OpenCV's medianBlur).

// MorphRect sets dst[y, x] to the maximum (dilate) or minimum (erode) of src over the
// kh x kw window whose (ay, ax) element sits on (y, x): rows y-ay .. y-ay+kh-1, columns
// x-ax .. x-ax+kw-1. Positions outside the plane read through border; BorderConstant
// leaves them out (OpenCV's default border value for morphology). tmp is scratch of
// h*w*c values (grown when short; returned).
func MorphRect(dst, src []float64, h, w, c, kh, kw, ay, ax int, border Border, dilate bool, tmp []float64) ([]float64, error) {
	n := h * w * c
	if kh < 1 || kw < 1 || ay < 0 || ay >= kh || ax < 0 || ax >= kw {
		return tmp, fmt.Errorf("morphology: window %dx%d with anchor (%d, %d)", kh, kw, ay, ax)
	}
	if len(src) < n || len(dst) < n {
		return tmp, fmt.Errorf("morphology: buffers of %d and %d values for %dx%dx%d", len(src), len(dst), h, w, c)
	}
	if n == 0 {
		return tmp, nil
	}
	if cap(tmp) < n {
		tmp = make([]float64, n)
	}
	tmp = tmp[:n]
	better := func(a, b float64) bool { return a < b } // erode keeps the smaller
	if dilate {
		better = func(a, b float64) bool { return a > b }
	}
	// rows: along x
	for y := 0; y < h; y++ {
		row := src[y*w*c : (y+1)*w*c]
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				v, have := 0.0, false
				for t := 0; t < kw; t++ {
					j := borderIndex(x-ax+t, w, border)
					if j < 0 {
						continue
					}
					if s := row[j*c+ch]; !have || better(s, v) {
						v, have = s, true
					}
				}
				tmp[(y*w+x)*c+ch] = v
			}
		}
	}
	// columns: along y
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				v, have := 0.0, false
				for t := 0; t < kh; t++ {
					i := borderIndex(y-ay+t, h, border)
					if i < 0 {
						continue
					}
					if s := tmp[(i*w+x)*c+ch]; !have || better(s, v) {
						v, have = s, true
					}
				}
				dst[(y*w+x)*c+ch] = v
			}
		}
	}
	return tmp, nil
}

// MedianRect sets dst[y, x] to the median of src over the kh x kw window centred on
// (y, x) (kh and kw odd), edge pixels repeated past the borders (OpenCV's medianBlur).
// buf is scratch (grown when short; returned).
func MedianRect(dst, src []float64, h, w, c, kh, kw int, buf []float64) ([]float64, error) {
	n := h * w * c
	if kh < 1 || kw < 1 || kh%2 == 0 || kw%2 == 0 {
		return buf, fmt.Errorf("median: window %dx%d: the sizes must be odd", kh, kw)
	}
	if len(src) < n || len(dst) < n {
		return buf, fmt.Errorf("median: buffers of %d and %d values for %dx%dx%d", len(src), len(dst), h, w, c)
	}
	k := kh * kw
	if cap(buf) < k {
		buf = make([]float64, k)
	}
	win := buf[:k]
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				m := 0
				for dy := 0; dy < kh; dy++ {
					i := borderIndex(y-kh/2+dy, h, BorderClamp)
					for dx := 0; dx < kw; dx++ {
						j := borderIndex(x-kw/2+dx, w, BorderClamp)
						win[m] = src[(i*w+j)*c+ch]
						m++
					}
				}
				slices.Sort(win)
				dst[(y*w+x)*c+ch] = win[k/2]
			}
		}
	}
	return buf, nil
}
