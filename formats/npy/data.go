package npy

import (
	"fmt"
	"io"

	"github.com/godali/godali/formats"
)

// ReadData reads the data the header announces into buf (grown when too small),
// as stored: in the file's byte order and element order.
func ReadData(r io.ReaderAt, size int64, h Header, buf []byte) ([]byte, error) {
	return formats.ReadFull(r, size, h.DataOffset, h.DataSize, buf, "npy data")
}

// SwapBytes reverses the bytes of each size-byte element of b in place, turning
// big-endian data little-endian and back.
func SwapBytes(b []byte, size int) {
	if size <= 1 {
		return
	}
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for l, r := 0, size-1; l < r; l, r = l+1, r-1 {
			e[l], e[r] = e[r], e[l]
		}
	}
}

// FortranToC copies src, elements of itemSize bytes in Fortran (column-major) order
// for shape, into dst in C (row-major) order. Both must hold volume(shape) elements.
func FortranToC(dst, src []byte, shape []int64, itemSize int) error {
	vol := int64(1)
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("npy: negative extent in shape %v", shape)
		}
		vol *= d
	}
	if itemSize <= 0 || int64(len(src)) != vol*int64(itemSize) || len(dst) != len(src) {
		return fmt.Errorf("npy: FortranToC of shape %v with %d-byte items needs %d bytes, got src %d and dst %d", shape, itemSize, vol*int64(itemSize), len(src), len(dst))
	}
	n := len(shape)
	if vol == 0 || n <= 1 {
		copy(dst, src)
		return nil
	}
	// stride[k]: distance in src (elements) between neighbours along dimension k.
	stride := make([]int64, n)
	stride[0] = 1
	for k := 1; k < n; k++ {
		stride[k] = stride[k-1] * shape[k-1]
	}
	idx := make([]int64, n)
	var from int64
	for to := int64(0); to < vol; to++ {
		copy(dst[to*int64(itemSize):(to+1)*int64(itemSize)], src[from*int64(itemSize):])
		for k := n - 1; k >= 0; k-- { // advance the C-order counter, last dimension fastest
			idx[k]++
			from += stride[k]
			if idx[k] < shape[k] {
				break
			}
			from -= stride[k] * shape[k]
			idx[k] = 0
		}
	}
	return nil
}

// ToC returns the data of a file with header h as little-endian, C-ordered bytes.
// raw is the data as stored (ReadData); big-endian data is swapped in place, and
// Fortran-ordered data is transposed into a new slice.
func (h Header) ToC(raw []byte) ([]byte, error) {
	if int64(len(raw)) != h.DataSize {
		return nil, fmt.Errorf("npy: %d bytes of data, the header announces %d", len(raw), h.DataSize)
	}
	if h.DType.BigEndian {
		SwapBytes(raw, h.DType.Size)
	}
	if !h.Fortran {
		return raw, nil
	}
	out := make([]byte, len(raw))
	return out, FortranToC(out, raw, h.Shape, h.DType.Size)
}
