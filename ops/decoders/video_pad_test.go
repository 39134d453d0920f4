package decoders

import "testing"

// The frames DALI 2.4's decoders.video shows past the end of a 10-frame video (measured
// with its CPU operator on a VP9 clip whose frames have distinct intensities).
func TestBorderFrameAsDALI(t *testing.T) {
	for _, c := range []struct {
		mode          string
		start, stride int
		want          []int // the frames of output positions 0..5 (n = 10)
	}{
		{"edge", 0, 4, []int{0, 4, 8, 9, 9, 9}},
		{"edge", 7, 1, []int{7, 8, 9, 9, 9, 9}},
		{"reflect_1001", 7, 1, []int{7, 8, 9, 9, 8, 7}},
		{"reflect_101", 7, 1, []int{7, 8, 9, 8, 7, 6}},
		{"reflect_1001", 2, 3, []int{2, 5, 8, 8, 5, 2}},
	} {
		for i, want := range c.want {
			v := c.start + i*c.stride
			got := v
			if v >= 10 {
				got = borderFrame(c.mode, v, 10)
			}
			if got != want {
				t.Errorf("%s from %d step %d, position %d: frame %d, DALI %d", c.mode, c.start, c.stride, i, got, want)
			}
		}
	}
	// one-frame videos and long periods stay in range
	for _, mode := range []string{"edge", "reflect_1001", "reflect_101"} {
		for lim := 1; lim < 5; lim++ {
			for v := lim; v < 40; v++ {
				if f := borderFrame(mode, v, lim); f < 0 || f >= lim {
					t.Fatalf("%s(%d, %d) = %d", mode, v, lim, f)
				}
			}
		}
	}
}
