package image

import "testing"

// Output sizes of torchvision 0.14's _compute_resized_output_size((h, w), [size], max_size).
func TestTruncatedSizeMatchesTorchvision(t *testing.T) {
	cases := []struct{ h, w, size, maxSize, oh, ow int }{
		{480, 640, 40, 0, 40, 53},
		{640, 480, 40, 0, 53, 40},
		{333, 500, 224, 0, 224, 336},
		{500, 333, 224, 0, 336, 224},
		{100, 100, 7, 0, 7, 7},
		{77, 1000, 50, 0, 50, 649},
		{77, 1000, 50, 300, 23, 300},
		{1000, 77, 50, 300, 300, 23},
		{120, 60, 40, 70, 70, 35},
		{61, 97, 33, 0, 33, 52},
	}
	for _, c := range cases {
		s := &ResizeSpec{Shorter: float64(c.size), Truncate: true, MaxW: float64(c.maxSize), MaxH: float64(c.maxSize)}
		w, h, _ := s.OutputSize(float64(c.w), float64(c.h))
		if w != c.ow || h != c.oh {
			t.Errorf("%dx%d (h x w) to %d, max %d: got %dx%d, want %dx%d", c.h, c.w, c.size, c.maxSize, h, w, c.oh, c.ow)
		}
	}
	// 97 * 40 / 61 = 63.6: the default rounds (DALI), truncate gives torchvision's 63
	s := &ResizeSpec{Shorter: 40}
	if w, h, _ := s.OutputSize(97, 61); w != 64 || h != 40 {
		t.Errorf("rounding: got %dx%d", w, h)
	}
	s.Truncate = true
	if w, h, _ := s.OutputSize(97, 61); w != 63 || h != 40 {
		t.Errorf("truncating: got %dx%d", w, h)
	}
}
