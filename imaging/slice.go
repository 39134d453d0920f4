package imaging

import "fmt"

// SliceND copies the window [start, start+outShape) of a dense N-dimensional tensor
// (inShape, elements of ssz bytes) into dst (outShape, elements of dsz bytes), with
// run converting n elements from the source type to the destination type. The parts of
// the window outside the input are filled with fill: one element of dst's type, or one
// per index of axis chanAxis (len(fill) = dsz * outShape[chanAxis]).
func SliceND(dst []byte, dsz int, src []byte, ssz int, inShape, start, outShape []int, fill []byte, chanAxis int, run func(dst, src []byte, n int)) error {
	n := len(inShape)
	if len(start) != n || len(outShape) != n {
		return fmt.Errorf("slice: %d-d input, window of %d/%d dims", n, len(start), len(outShape))
	}
	inN, outN := 1, 1
	for d := 0; d < n; d++ {
		if inShape[d] < 0 || outShape[d] < 0 {
			return fmt.Errorf("slice: negative extent in %v or %v", inShape, outShape)
		}
		inN *= inShape[d]
		outN *= outShape[d]
	}
	if len(src) < inN*ssz || len(dst) < outN*dsz {
		return fmt.Errorf("slice: buffers of %d and %d bytes for %v -> %v", len(src), len(dst), inShape, outShape)
	}
	if outN == 0 {
		return nil
	}
	var lo, hi, idx, inStride, outStride [16]int
	if n > len(lo) {
		return fmt.Errorf("slice: %d dimensions, at most %d", n, len(lo))
	}
	inside := true
	empty := false
	for d := n - 1; d >= 0; d-- {
		lo[d] = max(0, -start[d])
		hi[d] = min(outShape[d], inShape[d]-start[d])
		if lo[d] != 0 || hi[d] != outShape[d] {
			inside = false
		}
		if hi[d] <= lo[d] {
			empty = true
		}
		inStride[d], outStride[d] = 1, 1
		if d < n-1 {
			inStride[d] = inStride[d+1] * inShape[d+1]
			outStride[d] = outStride[d+1] * outShape[d+1]
		}
	}
	if !inside {
		fillAll(dst[:outN*dsz], dsz, fill, chanAxis, outShape, outStride[:n])
	}
	if empty {
		return nil
	}
	if n == 0 {
		run(dst, src, 1)
		return nil
	}
	runLen := hi[n-1] - lo[n-1]
	copy(idx[:n], lo[:n])
	for {
		si, di := 0, 0
		for d := 0; d < n; d++ {
			si += (idx[d] + start[d]) * inStride[d]
			di += idx[d] * outStride[d]
		}
		run(dst[di*dsz:], src[si*ssz:], runLen)
		d := n - 2
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < hi[d] {
				break
			}
			idx[d] = lo[d]
		}
		if d < 0 {
			return nil
		}
	}
}

// fillAll writes fill over dst: one element everywhere, or the element of each index of
// axis chanAxis.
func fillAll(dst []byte, sz int, fill []byte, chanAxis int, shape, stride []int) {
	if len(fill) == sz || chanAxis < 0 || chanAxis >= len(shape) {
		for i := 0; i+sz <= len(dst); i += sz {
			copy(dst[i:i+sz], fill[:sz])
		}
		return
	}
	st, ext := stride[chanAxis], shape[chanAxis]
	for i, k := 0, 0; i+sz <= len(dst); i, k = i+sz, k+1 {
		c := (k / st) % ext
		copy(dst[i:i+sz], fill[c*sz:(c+1)*sz])
	}
}
