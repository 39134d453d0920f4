package imaging

import (
	"bytes"
	"math/rand"
	"testing"
)

// coords visits every index tuple of shape, last axis fastest.
func coords(shape []int, f func(idx []int)) {
	n := 1
	for _, e := range shape {
		n *= e
	}
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		f(idx)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

func linear(shape, idx []int) int {
	off := 0
	for d := range shape {
		off = off*shape[d] + idx[d]
	}
	return off
}

func copyBytes(dst, src []byte, n int) { copy(dst[:n], src[:n]) }

// TestSliceNDMatchesLoops compares SliceND with an element-by-element window copy, on
// random shapes and windows (inside, overlapping the edges, wholly outside), with one
// fill value and one per channel.
func TestSliceNDMatchesLoops(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		n := 1 + rng.Intn(4)
		in, start, out := make([]int, n), make([]int, n), make([]int, n)
		for d := range in {
			in[d] = rng.Intn(6)
			out[d] = rng.Intn(7)
			start[d] = rng.Intn(9) - 3
		}
		src := make([]byte, numel(in))
		rng.Read(src)
		chanAxis := rng.Intn(n)
		fill := []byte{0xAB}
		if rng.Intn(2) == 0 {
			fill = make([]byte, out[chanAxis])
			rng.Read(fill)
		}
		want := make([]byte, numel(out))
		coords(out, func(idx []int) {
			src0 := make([]int, n)
			inside := true
			for d := range idx {
				src0[d] = start[d] + idx[d]
				if src0[d] < 0 || src0[d] >= in[d] {
					inside = false
				}
			}
			switch {
			case inside:
				want[linear(out, idx)] = src[linear(in, src0)]
			case len(fill) == 1:
				want[linear(out, idx)] = fill[0]
			default:
				want[linear(out, idx)] = fill[idx[chanAxis]]
			}
		})
		got := make([]byte, len(want))
		if err := SliceND(got, 1, src, 1, in, start, out, fill, chanAxis, copyBytes); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("in %v start %v out %v fill %v (axis %d): got %v want %v", in, start, out, fill, chanAxis, got, want)
		}
	}
	if err := SliceND(make([]byte, 3), 1, make([]byte, 8), 1, []int{8}, []int{0}, []int{4}, []byte{0}, 0, copyBytes); err == nil {
		t.Error("short output accepted")
	}
}

// TestFlipNDMatchesLoops compares FlipND with mirrored indexing on random shapes and
// element sizes.
func TestFlipNDMatchesLoops(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.Intn(5)
		shape, flip := make([]int, n), make([]bool, n)
		for d := range shape {
			shape[d] = rng.Intn(5)
			flip[d] = rng.Intn(2) == 0
		}
		sz := []int{1, 2, 4}[rng.Intn(3)]
		src := make([]byte, numel(shape)*sz)
		rng.Read(src)
		want := make([]byte, len(src))
		coords(shape, func(idx []int) {
			s := make([]int, n)
			for d := range idx {
				s[d] = idx[d]
				if flip[d] {
					s[d] = shape[d] - 1 - idx[d]
				}
			}
			o, i := linear(shape, idx)*sz, linear(shape, s)*sz
			copy(want[o:o+sz], src[i:i+sz])
		})
		got := make([]byte, len(src))
		if err := FlipND(got, src, shape, sz, flip); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("shape %v flip %v size %d: wrong output", shape, flip, sz)
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, e := range shape {
		n *= e
	}
	return n
}
