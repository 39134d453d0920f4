package imaging

import "testing"

func TestReflect101(t *testing.T) {
	// n = 4: ... 2 1 | 0 1 2 3 | 2 1 0 1 2 3 ...
	want := map[int]int{-3: 3, -2: 2, -1: 1, 0: 0, 3: 3, 4: 2, 5: 1, 6: 0, 7: 1, 9: 3}
	for i, w := range want {
		if got := Reflect101(i, 4); got != w {
			t.Errorf("Reflect101(%d, 4) = %d, want %d", i, got, w)
		}
	}
	if Reflect101(-5, 1) != 0 || Reflect101(3, 1) != 0 {
		t.Error("a one-pixel axis reflects onto itself")
	}
}

// A flat image stays flat (the window sums to 1), and a window of one tap copies.
func TestGaussianBlurFlatAndIdentity(t *testing.T) {
	const w, h, c = 9, 5, 3
	flat := make([]byte, w*h*c)
	for i := range flat {
		flat[i] = 200
	}
	dst := make([]byte, len(flat))
	win := make([]float32, 13) // wider than the image: several reflections
	GaussianWindow(win, 2)
	var s Scratch
	if err := GaussianBlur(dst, flat, w, h, c, win, win, UInt8, &s); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if v != 200 {
			t.Fatalf("flat image: byte %d is %d", i, v)
		}
	}
	src := testImage(w, h, c, 9)
	one := []float32{1}
	if err := GaussianBlur(dst, src, w, h, c, one, one, UInt8, &s); err != nil {
		t.Fatal(err)
	}
	if string(dst) != string(src) {
		t.Error("one-tap window changed the image")
	}
	if err := GaussianBlur(dst, src, w, h, c, make([]float32, 2), one, UInt8, &s); err == nil {
		t.Error("even window accepted")
	}
}
