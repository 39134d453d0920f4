package npy

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// countingReader counts ReadAt calls and bytes, to check that ReadBox reads the box
// and not the whole array.
type countingReader struct {
	b            []byte
	calls, bytes int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	c.bytes += len(p)
	return bytes.NewReader(c.b).ReadAt(p, off)
}

// refBox cuts the box out of C-ordered data by visiting every element of the array: a
// straightforward reference for ReadBox.
func refBox(c []byte, dims, start, shape []int64, item int) []byte {
	var out []byte
	n := len(dims)
	idx := make([]int64, n)
	vol := int64(1)
	for _, d := range dims {
		vol *= d
	}
	for e := int64(0); e < vol; e++ {
		in := true
		for d := 0; d < n; d++ {
			if idx[d] < start[d] || idx[d] >= start[d]+shape[d] {
				in = false
			}
		}
		if in {
			out = append(out, c[e*int64(item):(e+1)*int64(item)]...)
		}
		for d := n - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < dims[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// TestReadBox: random boxes of random C and Fortran arrays (1 to 4 dimensions, 1 to 8
// byte items) against refBox applied to the whole array in C order.
func TestReadBox(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for it := 0; it < 400; it++ {
		n := 1 + rng.Intn(4)
		item := []int{1, 2, 4, 8}[rng.Intn(4)]
		dims := make([]int64, n)
		vol := int64(1)
		for d := range dims {
			dims[d] = 1 + int64(rng.Intn(7))
			vol *= dims[d]
		}
		c := make([]byte, vol*int64(item))
		rng.Read(c)
		fortran := rng.Intn(2) == 1
		stored := c
		if fortran { // C to Fortran is the C-to-Fortran transpose of the reversed shape
			rev := make([]int64, n)
			for i, v := range dims {
				rev[n-1-i] = v
			}
			stored = make([]byte, len(c))
			if err := FortranToC(stored, c, rev, item); err != nil {
				t.Fatal(err)
			}
		}
		shapeStr := "("
		for _, d := range dims {
			shapeStr += fmt.Sprintf("%d,", d)
		}
		dict := fmt.Sprintf("{'descr': '<u%d', 'fortran_order': %v, 'shape': %s), }", item, map[bool]string{true: "True", false: "False"}[fortran], shapeStr)
		file := append(header(dict, 1, 0), stored...)
		h, err := ParseHeader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		start, shape := make([]int64, n), make([]int64, n)
		bvol := int64(1)
		for d := range dims {
			start[d] = int64(rng.Intn(int(dims[d]) + 1))
			shape[d] = int64(rng.Intn(int(dims[d]-start[d]) + 1))
			bvol *= shape[d]
		}
		cr := &countingReader{b: file}
		dst := make([]byte, bvol*int64(item))
		if _, err := ReadBox(cr, int64(len(file)), h, start, shape, dst, nil); err != nil {
			t.Fatalf("%v fortran %v box %v+%v: %v", dims, fortran, start, shape, err)
		}
		if want := refBox(c, dims, start, shape, item); !bytes.Equal(dst, want) {
			t.Fatalf("%v fortran %v box %v+%v: got %x want %x", dims, fortran, start, shape, dst, want)
		}
		if cr.bytes > len(stored) {
			t.Fatalf("read %d bytes for a %d-byte array", cr.bytes, len(stored))
		}
	}
}

// TestReadBoxReadsOnlyTheBox: a narrow box of rows far apart reads its rows, not the
// array; one full row block is one read.
func TestReadBoxReadsOnlyTheBox(t *testing.T) {
	const rows, cols = 64, 4096 // 16 KiB rows of u4: a row of 4 columns every 16 KiB is merged...
	data := make([]byte, rows*cols*4)
	rand.New(rand.NewSource(1)).Read(data)
	file := append(header("{'descr': '<u4', 'fortran_order': False, 'shape': (64, 4096), }", 1, 0), data...)
	h, err := ParseHeader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	// Rows 10..19 whole: one contiguous read of 10 rows.
	cr := &countingReader{b: file}
	dst := make([]byte, 10*cols*4)
	if _, err := ReadBox(cr, int64(len(file)), h, []int64{10, 0}, []int64{10, cols}, dst, nil); err != nil {
		t.Fatal(err)
	}
	if cr.calls != 1 || cr.bytes != len(dst) || !bytes.Equal(dst, data[10*cols*4:20*cols*4]) {
		t.Errorf("full rows: %d reads of %d bytes, want 1 of %d (data equal %v)", cr.calls, cr.bytes, len(dst), bytes.Equal(dst, data[10*cols*4:20*cols*4]))
	}
	// Columns 100..103 of rows 0..63: runs 16 KiB apart are merged, but never more than
	// the span from the first to the last run is read.
	cr = &countingReader{b: file}
	dst = make([]byte, rows*4*4)
	if _, err := ReadBox(cr, int64(len(file)), h, []int64{0, 100}, []int64{rows, 4}, dst, nil); err != nil {
		t.Fatal(err)
	}
	if span := (rows-1)*cols*4 + 16; cr.bytes > span {
		t.Errorf("column box read %d bytes, more than its span %d", cr.bytes, span)
	}
	if !bytes.Equal(dst, refBox(data, []int64{rows, cols}, []int64{0, 100}, []int64{rows, 4}, 4)) {
		t.Errorf("column box: wrong data")
	}
}
