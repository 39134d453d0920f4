package imaging

import "fmt"

func checkImage(op string, n, w, h, c int) error {
	if w < 1 || h < 1 || w > maxDim || h > maxDim || c < 1 || c > 64 {
		return fmt.Errorf("%s: shape %dx%dx%d: expected 1..%d per side and 1..64 channels", op, w, h, c, maxDim)
	}
	if n < w*h*c {
		return fmt.Errorf("%s: buffer has %d bytes, expected %d (%dx%dx%d)", op, n, w*h*c, w, h, c)
	}
	return nil
}

// Flip mirrors a w x h x c image horizontally and/or vertically into dst (same size;
// dst must not overlap src).
func Flip(dst, src []byte, w, h, c int, horizontal, vertical bool) error {
	if err := checkImage("flip: input", len(src), w, h, c); err != nil {
		return err
	}
	if err := checkImage("flip: output", len(dst), w, h, c); err != nil {
		return err
	}
	stride := w * c
	for y := 0; y < h; y++ {
		sy := y
		if vertical {
			sy = h - 1 - y
		}
		in := src[sy*stride : (sy+1)*stride]
		out := dst[y*stride : (y+1)*stride]
		if !horizontal {
			copy(out, in)
			continue
		}
		mirrorRow(out, in, c)
	}
	return nil
}

func mirrorRow(out, in []byte, c int) {
	n := len(out) / c
	switch c {
	case 3:
		in = in[:3*n]
		for k := 0; k < n; k++ {
			j := n - 1 - k
			q := in[3*j : 3*j+3 : 3*j+3]
			o := out[3*k : 3*k+3 : 3*k+3]
			o[0], o[1], o[2] = q[0], q[1], q[2]
		}
	case 1:
		in = in[:n]
		for k := range out[:n] {
			out[k] = in[n-1-k]
		}
	default:
		for k := 0; k < n; k++ {
			j := n - 1 - k
			copy(out[k*c:(k+1)*c], in[j*c:(j+1)*c])
		}
	}
}

// Crop copies the cw x ch window at (x, y) of a w x h x c image into dst
// (cw*ch*c bytes). The window may extend past the image; those bytes are set to fill.
func Crop(dst, src []byte, w, h, c int, x, y, cw, ch int, fill byte) error {
	if err := checkImage("crop: input", len(src), w, h, c); err != nil {
		return err
	}
	if err := checkImage("crop: output", len(dst), cw, ch, c); err != nil {
		return err
	}
	if abs(x) > maxDim || abs(y) > maxDim {
		return fmt.Errorf("crop: position (%d, %d): expected within +-%d", x, y, maxDim)
	}
	stride, ostride := w*c, cw*c
	xa, xb := max(x, 0), min(x+cw, w)
	for oy := 0; oy < ch; oy++ {
		out := dst[oy*ostride : (oy+1)*ostride]
		sy := y + oy
		if sy < 0 || sy >= h || xa >= xb {
			fillBytes(out, fill)
			continue
		}
		left := (xa - x) * c
		n := copy(out[left:], src[sy*stride+xa*c:sy*stride+xb*c])
		fillBytes(out[:left], fill)
		fillBytes(out[left+n:], fill)
	}
	return nil
}

func fillBytes(b []byte, v byte) {
	if v == 0 {
		clear(b)
		return
	}
	for i := range b {
		b[i] = v
	}
}

// FlipND mirrors a dense tensor of the given shape (elements of sz bytes) along the axes
// with flip set, into dst (same size; dst must not overlap src). Trailing axes that are
// not flipped move as one block.
func FlipND(dst, src []byte, shape []int, sz int, flip []bool) error {
	n := len(shape)
	if len(flip) != n {
		return fmt.Errorf("flip: %d flags for a %d-d tensor", len(flip), n)
	}
	if n > 16 {
		return fmt.Errorf("flip: %d dimensions, at most 16", n)
	}
	total := sz
	for _, e := range shape {
		if e < 0 {
			return fmt.Errorf("flip: negative extent in %v", shape)
		}
		total *= e
	}
	if len(src) < total || len(dst) < total {
		return fmt.Errorf("flip: buffers of %d and %d bytes for shape %v", len(src), len(dst), shape)
	}
	k, block := n, sz
	for k > 0 && !flip[k-1] {
		k--
		block *= shape[k]
	}
	if total == 0 {
		return nil
	}
	if k == 0 {
		copy(dst[:total], src[:total])
		return nil
	}
	var idx, stride [16]int
	stride[k-1] = 1
	for d := k - 2; d >= 0; d-- {
		stride[d] = stride[d+1] * shape[d+1]
	}
	outer := total / block
	for o := 0; o < outer; o++ {
		si := 0
		for d := 0; d < k; d++ {
			c := idx[d]
			if flip[d] {
				c = shape[d] - 1 - c
			}
			si += c * stride[d]
		}
		copy(dst[o*block:(o+1)*block], src[si*block:(si+1)*block])
		for d := k - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}
