package imaging

import (
	"bytes"
	"testing"
)

func TestFlipMatchesLoops(t *testing.T) {
	for _, c := range []int{1, 2, 3, 4} {
		const w, h = 13, 7
		src := testImage(w, h, c, 1)
		for _, hz := range []bool{false, true} {
			for _, vt := range []bool{false, true} {
				want := make([]byte, len(src))
				for y := 0; y < h; y++ {
					for x := 0; x < w; x++ {
						sx, sy := x, y
						if hz {
							sx = w - 1 - x
						}
						if vt {
							sy = h - 1 - y
						}
						for ch := 0; ch < c; ch++ {
							want[(y*w+x)*c+ch] = src[(sy*w+sx)*c+ch]
						}
					}
				}
				got := make([]byte, len(src))
				if err := Flip(got, src, w, h, c, hz, vt); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("c=%d horizontal=%v vertical=%v: wrong output", c, hz, vt)
				}
			}
		}
	}
	if err := Flip(make([]byte, 10), make([]byte, 300), 10, 10, 3, true, false); err == nil {
		t.Error("short output accepted")
	}
}

func refCrop(src []byte, w, h, c, x, y, cw, ch int, fill byte) []byte {
	out := make([]byte, cw*ch*c)
	for oy := 0; oy < ch; oy++ {
		for ox := 0; ox < cw; ox++ {
			for k := 0; k < c; k++ {
				v := fill
				if sx, sy := x+ox, y+oy; sx >= 0 && sy >= 0 && sx < w && sy < h {
					v = src[(sy*w+sx)*c+k]
				}
				out[(oy*cw+ox)*c+k] = v
			}
		}
	}
	return out
}

func TestCropMatchesLoops(t *testing.T) {
	const w, h, c = 17, 11, 3
	src := testImage(w, h, c, 2)
	for _, win := range [][4]int{{0, 0, w, h}, {3, 2, 5, 4}, {-3, -2, 8, 6}, {12, 8, 10, 10}, {-5, -5, w + 10, h + 10}, {w, h, 3, 3}} {
		for _, fill := range []byte{0, 77} {
			want := refCrop(src, w, h, c, win[0], win[1], win[2], win[3], fill)
			got := make([]byte, len(want))
			for i := range got {
				got[i] = 0xee
			}
			if err := Crop(got, src, w, h, c, win[0], win[1], win[2], win[3], fill); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("window %v fill %d: wrong output", win, fill)
			}
		}
	}
	for _, bad := range [][4]int{{0, 0, 0, 5}, {0, 0, 5, -1}, {1 << 30, 0, 2, 2}} {
		if err := Crop(make([]byte, 100), src, w, h, c, bad[0], bad[1], bad[2], bad[3], 0); err == nil {
			t.Errorf("window %v accepted", bad)
		}
	}
}
