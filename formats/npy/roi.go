package npy

import (
	"fmt"
	"io"

	"github.com/godali/godali/formats"
)

// mergeGap is the largest hole between two runs of a box that ReadBox reads through
// rather than issuing a second read; maxSpan bounds one such merged read.
const (
	mergeGap = 64 << 10
	maxSpan  = 16 << 20
)

// ReadBox reads the elements of the box [start, start+shape) (in the array's own, logical
// index space: shape as in Header.Shape) of the .npy file r of size bytes with header h
// into dst, C-ordered and in the file's byte order (swap big-endian data with SwapBytes).
// dst must hold volume(shape) elements. Only the box's bytes are read, in contiguous runs
// (runs closer than 64 KiB are read together); a Fortran-ordered box is read in the
// file's order into scratch (grown when too small, returned) and transposed.
func ReadBox(r io.ReaderAt, size int64, h Header, start, shape []int64, dst, scratch []byte) ([]byte, error) {
	n := len(h.Shape)
	if len(start) != n || len(shape) != n {
		return scratch, fmt.Errorf("npy: box of %d/%d dimensions for an array of %d", len(start), len(shape), n)
	}
	item := int64(h.DType.Size)
	vol := int64(1)
	for d := 0; d < n; d++ {
		if start[d] < 0 || shape[d] < 0 || start[d] > h.Shape[d] || shape[d] > h.Shape[d]-start[d] {
			return scratch, fmt.Errorf("npy: box start %v shape %v leaves the array of shape %v", start, shape, h.Shape)
		}
		vol *= shape[d]
	}
	if int64(len(dst)) != vol*item {
		return scratch, fmt.Errorf("npy: box of shape %v with %d-byte items needs %d bytes, got %d", shape, item, vol*item, len(dst))
	}
	if vol == 0 {
		return scratch, nil
	}
	if !h.Fortran || n <= 1 {
		return scratch, readBoxMem(r, size, h.DataOffset, h.Shape, start, shape, item, dst)
	}
	// Fortran order: the file holds the array with its dimensions reversed, in C order.
	rev := func(s []int64) []int64 {
		o := make([]int64, n)
		for i, v := range s {
			o[n-1-i] = v
		}
		return o
	}
	if int64(cap(scratch)) < vol*item {
		scratch = make([]byte, vol*item)
	}
	tmp := scratch[:vol*item]
	if err := readBoxMem(r, size, h.DataOffset, rev(h.Shape), rev(start), rev(shape), item, tmp); err != nil {
		return scratch, err
	}
	return scratch, FortranToC(dst, tmp, shape, int(item))
}

// readBoxMem reads a box of a C-ordered array of dims stored at base into dst (C order).
func readBoxMem(r io.ReaderAt, size, base int64, dims, start, shape []int64, item int64, dst []byte) error {
	n := len(dims)
	if n == 0 {
		_, err := formats.ReadFull(r, size, base, item, dst, "npy data")
		return err
	}
	stride := make([]int64, n) // in bytes
	stride[n-1] = item
	for d := n - 2; d >= 0; d-- {
		stride[d] = stride[d+1] * dims[d+1]
	}
	// The trailing dimensions the box covers fully join the innermost run.
	j := n - 1
	run := shape[j] * item
	for j > 0 && shape[j] == dims[j] {
		j--
		run *= shape[j]
	}
	first := base
	for d := 0; d < n; d++ {
		first += start[d] * stride[d]
	}
	// Runs are indexed by the box's dimensions 0..j-1.
	idx := make([]int64, j)
	var pieces []int64 // file offsets of the runs of the pending read
	var out int64      // where the pending read's first run goes in dst
	var buf []byte
	flush := func() error {
		if len(pieces) == 0 {
			return nil
		}
		lo, hi := pieces[0], pieces[len(pieces)-1]+run
		if hi-lo == run*int64(len(pieces)) { // contiguous: straight into dst
			_, err := formats.ReadFull(r, size, lo, hi-lo, dst[out:out+hi-lo], "npy data")
			out += hi - lo
			pieces = pieces[:0]
			return err
		}
		b, err := formats.ReadFull(r, size, lo, hi-lo, buf, "npy data")
		if err != nil {
			return err
		}
		buf = b
		for _, p := range pieces {
			out += int64(copy(dst[out:out+run], b[p-lo:p-lo+run]))
		}
		pieces = pieces[:0]
		return nil
	}
	off := first
	for {
		if len(pieces) > 0 {
			lo, last := pieces[0], pieces[len(pieces)-1]+run
			if off-last > mergeGap || off+run-lo > maxSpan {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		pieces = append(pieces, off)
		// Next run: advance the counter over dimensions j-1..0.
		d := j - 1
		for ; d >= 0; d-- {
			idx[d]++
			off += stride[d]
			if idx[d] < shape[d] {
				break
			}
			off -= stride[d] * shape[d]
			idx[d] = 0
		}
		if d < 0 {
			break
		}
	}
	return flush()
}
