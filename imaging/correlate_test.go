package imaging

import (
	"math"
	"math/rand"
	"testing"
)

// A separable filter (the outer product of a column and a row window) correlated in one
// pass must equal ConvAxis along each axis in turn, for every border (the constant border
// with fill 0, where the two agree), anchor, channel count and "valid".
func TestCorrelationMatchesSeparablePasses(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, b := range []Border{BorderReflect101, BorderReflect1001, BorderWrap, BorderClamp, BorderConstant} {
		for _, valid := range []bool{false, true} {
			h, w, ch := 7, 9, 2
			col, row := []float64{0.5, -1, 2}, []float64{1, 0.25, -0.5, 3}
			anchor := []int{2, 1}
			src := make([]float64, h*w*ch)
			for i := range src {
				src[i] = r.Float64()*10 - 5
			}
			win := make([]float64, len(col)*len(row))
			for i, a := range col {
				for j, c := range row {
					win[i*len(row)+j] = a * c
				}
			}
			c := Correlation{Shape: []int{h, w}, Inner: ch, Win: win, FShape: []int{3, 4}, Anchor: anchor, Border: b, Valid: valid}
			out, err := c.OutShape(nil)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, out[0]*out[1]*ch)
			if err := c.Run(got, src); err != nil {
				t.Fatal(err)
			}
			a0, a1, first0, first1 := anchor[0], anchor[1], 0, 0
			if valid {
				a0, a1 = 0, 0
			}
			mid := make([]float64, out[0]*w*ch)
			if err := ConvAxis(mid, src, []int{h, w, ch}, 0, col, a0, b, 0, first0, out[0]); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, out[0]*out[1]*ch)
			if err := ConvAxis(want, mid, []int{out[0], w, ch}, 1, row, a1, b, 0, first1, out[1]); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-9 {
					t.Fatalf("border %d valid %v: element %d = %g, want %g", b, valid, i, got[i], want[i])
				}
			}
		}
	}
}

// A 1x1x1 filter of weight 2 on a 3-D volume doubles it; a constant border with fill
// reads fill outside: a 3-tap sum at the first position of an axis gives 2*fill + v[0]+v[1].
func TestCorrelation3DAndFill(t *testing.T) {
	src := make([]float64, 2*3*4)
	for i := range src {
		src[i] = float64(i)
	}
	c := Correlation{Shape: []int{2, 3, 4}, Inner: 1, Win: []float64{2}, FShape: []int{1, 1, 1}, Anchor: []int{0, 0, 0}}
	dst := make([]float64, len(src))
	if err := c.Run(dst, src); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if v != 2*src[i] {
			t.Fatalf("element %d = %g, want %g", i, v, 2*src[i])
		}
	}
	c = Correlation{Shape: []int{2, 3, 4}, Inner: 1, Win: []float64{1, 1, 1}, FShape: []int{3, 1, 1}, Anchor: []int{1, 0, 0}, Border: BorderConstant, Fill: 100}
	if err := c.Run(dst, src); err != nil {
		t.Fatal(err)
	}
	// depth 2: position (0, y, x) sums fill + v(0) + v(1); (1, y, x) sums v(0) + v(1) + fill.
	for i := 0; i < 12; i++ {
		if want := 100 + src[i] + src[12+i]; dst[i] != want || dst[12+i] != want {
			t.Fatalf("element %d: %g and %g, want %g", i, dst[i], dst[12+i], want)
		}
	}
	c.Valid = true
	if out, err := c.OutShape(nil); err != nil || out[0] != 0 {
		t.Fatalf("a filter of depth 3 on a volume of depth 2 in valid mode: got %v, %v; want an empty output", out, err)
	}
	c.FShape, c.Win = []int{4, 1, 1}, []float64{1, 1, 1, 1}
	if _, err := c.OutShape(nil); err == nil {
		t.Fatal("a filter of depth 4 on a volume of depth 2 in valid mode: want an error")
	}
}
