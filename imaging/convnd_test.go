package imaging

import (
	"math"
	"testing"
)

// The windows are OpenCV's getDerivKernels(2, 0, n) (values printed by cv2 4.6).
func TestDerivWindows(t *testing.T) {
	for n, want := range map[int][2][]float64{
		3: {{1, -2, 1}, {1, 2, 1}},
		5: {{1, 0, -2, 0, 1}, {1, 4, 6, 4, 1}},
		7: {{1, 2, -1, -4, -1, 2, 1}, {1, 6, 15, 20, 15, 6, 1}},
	} {
		d, s := make([]float64, n), make([]float64, n)
		SecondDerivWindow(d)
		SmoothingWindow(s)
		for i := range d {
			if d[i] != want[0][i] || s[i] != want[1][i] {
				t.Fatalf("n=%d: deriv %v smooth %v, want %v", n, d, s, want)
			}
		}
	}
}

// borderIndex against the modes' definitions written out for a 4-element axis abcd.
func TestBorderIndex(t *testing.T) {
	// positions -3..6
	want := map[Border][]int{
		BorderReflect101:  {3, 2, 1, 0, 1, 2, 3, 2, 1, 0},
		BorderReflect1001: {2, 1, 0, 0, 1, 2, 3, 3, 2, 1},
		BorderWrap:        {1, 2, 3, 0, 1, 2, 3, 0, 1, 2},
		BorderClamp:       {0, 0, 0, 0, 1, 2, 3, 3, 3, 3},
		BorderConstant:    {-1, -1, -1, 0, 1, 2, 3, -1, -1, -1},
	}
	for b, w := range want {
		for k, j := range w {
			if got := borderIndex(k-3, 4, b); got != j {
				t.Errorf("border %d index %d: got %d, want %d", b, k-3, got, j)
			}
		}
	}
	if borderIndex(-2, 1, BorderReflect101) != 0 || borderIndex(5, 1, BorderReflect101) != 0 {
		t.Error("an axis of one element must repeat it")
	}
}

// ConvAxis along the middle axis of a 2x5x3 array, against the sum written out.
func TestConvAxisMiddle(t *testing.T) {
	shape := []int{2, 5, 3}
	src := make([]float64, 30)
	for i := range src {
		src[i] = math.Sin(float64(i)*1.7) * 10
	}
	win := []float64{0.5, -1, 2}
	dst := make([]float64, 30)
	if err := ConvAxis(dst, src, shape, 1, win, 1, BorderReflect101, 0, 0, 5); err != nil {
		t.Fatal(err)
	}
	for o := 0; o < 2; o++ {
		for i := 0; i < 5; i++ {
			for c := 0; c < 3; c++ {
				var want float64
				for k, w := range win {
					j := i + k - 1
					if j < 0 {
						j = -j
					}
					if j > 4 {
						j = 8 - j
					}
					want += w * src[o*15+j*3+c]
				}
				if got := dst[o*15+i*3+c]; math.Abs(got-want) > 1e-12 {
					t.Fatalf("(%d,%d,%d): got %g, want %g", o, i, c, got, want)
				}
			}
		}
	}
	if err := ConvAxis(dst, src, shape, 3, win, 1, BorderReflect101, 0, 0, 5); err == nil {
		t.Fatal("axis 3 of a 3-d array: want an error")
	}
}
