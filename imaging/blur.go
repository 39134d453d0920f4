package imaging

import (
	"encoding/binary"
	"fmt"
	"math"
)

// GaussianWindow fills w (odd length) with a Gaussian of the given sigma centred on the
// middle tap, normalised to sum to 1. sigma 0 gives the identity (1 in the middle).
func GaussianWindow(w []float32, sigma float64) {
	r := len(w) / 2
	if sigma <= 0 {
		clear(w)
		w[r] = 1
		return
	}
	sum := 0.0
	for i := range w {
		x := float64(i - r)
		v := math.Exp(-x * x / (2 * sigma * sigma))
		w[i] = float32(v)
		sum += v
	}
	for i := range w {
		w[i] = float32(float64(w[i]) / sum)
	}
}

// Reflect101 maps an index outside [0, n) into it by mirroring about the edge pixels
// without repeating them (dcb|abcd|cba), repeatedly for windows wider than the image.
func Reflect101(i, n int) int {
	if n == 1 {
		return 0
	}
	p := 2*n - 2
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}

// GaussianBlur convolves a w x h x c uint8 image with the separable window wy (along
// the height) and then wx (along the width), both of odd length, borders reflected
// (101), as DALI's gaussian_blur does. The intermediate stays in float32; the result is
// written as UInt8 (rounded, saturated) or Float32.
func GaussianBlur(dst, src []byte, w, h, c int, wx, wy []float32, out DType, s *Scratch) error {
	if err := checkImage("gaussian_blur: input", len(src), w, h, c); err != nil {
		return err
	}
	if out != UInt8 && out != Float32 {
		return fmt.Errorf("gaussian_blur: output type %v: expected UINT8 or FLOAT", out)
	}
	if len(dst) < w*h*c*out.Size() {
		return fmt.Errorf("gaussian_blur: output has %d bytes, expected %d", len(dst), w*h*c*out.Size())
	}
	if len(wx)%2 != 1 || len(wy)%2 != 1 {
		return fmt.Errorf("gaussian_blur: windows of %d and %d taps: expected odd lengths", len(wy), len(wx))
	}
	stride := w * c
	s.flt = grow(s.flt, h*stride)
	tmp := s.flt
	ry := len(wy) / 2
	for y := 0; y < h; y++ {
		row := tmp[y*stride : (y+1)*stride]
		clear(row)
		for k, wk := range wy {
			sy := y + k - ry
			if sy < 0 || sy >= h {
				sy = Reflect101(sy, h)
			}
			in := src[sy*stride : (sy+1)*stride]
			for i, v := range in {
				row[i] += wk * float32(v)
			}
		}
	}
	rx := len(wx) / 2
	for y := 0; y < h; y++ {
		row := tmp[y*stride : (y+1)*stride]
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				var acc float32
				for k, wk := range wx {
					sx := x + k - rx
					if sx < 0 || sx >= w {
						sx = Reflect101(sx, w)
					}
					acc += wk * row[sx*c+ch]
				}
				i := y*stride + x*c + ch
				if out == UInt8 {
					dst[i] = SatU8(acc)
				} else {
					binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(acc))
				}
			}
		}
	}
	return nil
}

// ConvolveAxis convolves src, seen as outer x n x inner values, along its middle axis
// (extent n) with the odd-length window w, borders reflected (101; an extent of 1
// repeats its value), into dst (same size). It is one pass of an N-D separable blur.
func ConvolveAxis(dst, src []float32, outer, n, inner int, w []float32) {
	r := len(w) / 2
	for o := 0; o < outer; o++ {
		base := o * n * inner
		for i := 0; i < n; i++ {
			row := dst[base+i*inner : base+(i+1)*inner]
			clear(row)
			for k, wk := range w {
				si := i + k - r
				if si < 0 || si >= n {
					si = Reflect101(si, n)
				}
				in := src[base+si*inner : base+(si+1)*inner]
				for j, v := range in {
					row[j] += wk * v
				}
			}
		}
	}
}
