package imaging

import (
	"cmp"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// naiveMorph visits every window position through borderIndex (the definition).
func naiveMorph(src []float64, h, w, c, kh, kw, ay, ax int, border Border, dilate bool) []float64 {
	out := make([]float64, h*w*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				v, have := 0.0, false
				for dy := 0; dy < kh; dy++ {
					i := borderIndex(y-ay+dy, h, border)
					if i < 0 {
						continue
					}
					for dx := 0; dx < kw; dx++ {
						j := borderIndex(x-ax+dx, w, border)
						if j < 0 {
							continue
						}
						s := src[(i*w+j)*c+ch]
						if !have || (dilate && s > v) || (!dilate && s < v) {
							v, have = s, true
						}
					}
				}
				out[(y*w+x)*c+ch] = v
			}
		}
	}
	return out
}

// naiveMedian sorts every window (the definition: edge pixels repeated).
func naiveMedian(src []float64, h, w, c, kh, kw int) []float64 {
	out := make([]float64, h*w*c)
	win := make([]float64, kh*kw)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				m := 0
				for dy := 0; dy < kh; dy++ {
					i := min(max(y-kh/2+dy, 0), h-1)
					for dx := 0; dx < kw; dx++ {
						j := min(max(x-kw/2+dx, 0), w-1)
						win[m] = src[(i*w+j)*c+ch]
						m++
					}
				}
				slices.Sort(win)
				out[(y*w+x)*c+ch] = win[len(win)/2]
			}
		}
	}
	return out
}

func randPlane(rng *rand.Rand, n, levels int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(rng.Intn(levels)) // few levels: many ties
	}
	return v
}

// TestMorphRectMatchesDefinition: the running extreme equals the window visited position
// by position, for every border and windows from 1 to several times the plane.
func TestMorphRectMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s WindowScratch
	borders := []Border{BorderConstant, BorderClamp, BorderReflect1001, BorderReflect101, BorderWrap}
	for trial := 0; trial < 400; trial++ {
		h, w, c := 1+rng.Intn(9), 1+rng.Intn(9), 1+rng.Intn(3)
		kh, kw := 1+rng.Intn(3*h+2), 1+rng.Intn(3*w+2)
		ay, ax := rng.Intn(kh), rng.Intn(kw)
		b := borders[trial%len(borders)]
		dilate := trial%2 == 0
		src := randPlane(rng, h*w*c, 1+rng.Intn(40))
		got := make([]float64, len(src))
		if err := MorphRect(got, src, h, w, c, kh, kw, ay, ax, b, dilate, &s); err != nil {
			t.Fatal(err)
		}
		want := naiveMorph(src, h, w, c, kh, kw, ay, ax, b, dilate)
		if !slices.Equal(got, want) {
			t.Fatalf("%dx%dx%d window %dx%d anchor (%d, %d) border %d dilate %v:\ngot  %v\nwant %v", h, w, c, kh, kw, ay, ax, b, dilate, got, want)
		}
	}
}

// TestMedianRectMatchesDefinition: the counted median (windows over 64 positions) and the
// sorted one equal the sorted window, for windows up to several times the plane.
func TestMedianRectMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var s WindowScratch
	for trial := 0; trial < 300; trial++ {
		h, w, c := 1+rng.Intn(12), 1+rng.Intn(12), 1+rng.Intn(3)
		kh, kw := 1+2*rng.Intn(2*h+2), 1+2*rng.Intn(2*w+2)
		if trial%3 == 0 {
			kh, kw = 1+2*rng.Intn(3), 1+2*rng.Intn(3) // the sorted path
		}
		src := randPlane(rng, h*w*c, 1+rng.Intn(300))
		got := make([]float64, len(src))
		if err := MedianRect(got, src, h, w, c, kh, kw, &s); err != nil {
			t.Fatal(err)
		}
		if want := naiveMedian(src, h, w, c, kh, kw); !slices.Equal(got, want) {
			t.Fatalf("%dx%dx%d window %dx%d:\ngot  %v\nwant %v", h, w, c, kh, kw, got, want)
		}
	}
}

// TestWindowFiltersHugeWindow (issue 24): a window of thousands of positions on a small
// plane costs what the plane's size does (it took minutes when every position was read).
func TestWindowFiltersHugeWindow(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	h, w, c := 16, 16, 3
	src := randPlane(rng, h*w*c, 256)
	var s WindowScratch
	got := make([]float64, len(src))
	start := time.Now()
	if err := MedianRect(got, src, h, w, c, 6001, 4001, &s); err != nil {
		t.Fatal(err)
	}
	// the definition with counts: each plane position weighs the window positions that
	// read it (counted by visiting every window position of a row and of a column)
	counts := func(n, r int) [][]int64 {
		out := make([][]int64, n)
		for y := range out {
			out[y] = make([]int64, n)
			for t := y - r; t <= y+r; t++ {
				out[y][min(max(t, 0), n-1)]++
			}
		}
		return out
	}
	rows, cols := counts(h, 3000), counts(w, 2000)
	type vw struct {
		v float64
		n int64
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				var all []vw
				for i := 0; i < h; i++ {
					for j := 0; j < w; j++ {
						all = append(all, vw{src[(i*w+j)*c+ch], rows[y][i] * cols[x][j]})
					}
				}
				slices.SortFunc(all, func(a, b vw) int { return cmp.Compare(a.v, b.v) })
				half, acc := int64(6001*4001/2), int64(0)
				for _, e := range all {
					if acc += e.n; acc > half {
						if g := got[(y*w+x)*c+ch]; g != e.v {
							t.Fatalf("median at (%d, %d, %d): %g, want %g", y, x, ch, g, e.v)
						}
						break
					}
				}
			}
		}
	}
	for _, b := range []Border{BorderConstant, BorderClamp, BorderReflect1001, BorderReflect101, BorderWrap} {
		for _, dilate := range []bool{false, true} {
			if err := MorphRect(got, src, h, w, c, 6001, 6001, 3000, 17, b, dilate, &s); err != nil {
				t.Fatal(err)
			}
			// every window of this size holds every position of the plane: the plane's extreme
			for ch := 0; ch < c; ch++ {
				e := src[ch]
				for p := ch; p < len(src); p += c {
					if (dilate && src[p] > e) || (!dilate && src[p] < e) {
						e = src[p]
					}
				}
				for p := ch; p < len(got); p += c {
					if got[p] != e {
						t.Fatalf("border %d dilate %v: %g at %d, want the plane's extreme %g", b, dilate, got[p], p, e)
					}
				}
			}
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("6001-wide windows on a 16x16 plane took %v", d)
	}
}

// FuzzWindowFilters: any plane, window, anchor and border give what the definitions
// give (make fuzz runs it; its seeds run with the tests).
func FuzzWindowFilters(f *testing.F) {
	f.Add(uint8(5), uint8(7), uint8(1), uint16(3), uint16(3), uint16(1), uint16(1), uint8(0), []byte("some plane values"))
	f.Add(uint8(1), uint8(1), uint8(3), uint16(6001), uint16(1), uint16(3000), uint16(0), uint8(3), []byte{9, 1, 5})
	f.Add(uint8(12), uint8(2), uint8(2), uint16(25), uint16(40), uint16(24), uint16(0), uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, h8, w8, c8 uint8, kh16, kw16, ay16, ax16 uint16, b8 uint8, data []byte) {
		h, w, c := 1+int(h8)%12, 1+int(w8)%12, 1+int(c8)%3
		kh, kw := 1+int(kh16)%6001, 1+int(kw16)%6001
		ay, ax := int(ay16)%kh, int(ax16)%kw
		border := Border(int(b8) % 5)
		src := make([]float64, h*w*c)
		for i := range src {
			if len(data) > 0 {
				src[i] = float64(data[i%len(data)] ^ byte(i*37))
			}
		}
		var s WindowScratch
		got := make([]float64, len(src))
		// the naive references visit every window position: keep their windows small
		if kh*kw <= 1<<12 {
			for _, dilate := range []bool{false, true} {
				if err := MorphRect(got, src, h, w, c, kh, kw, ay, ax, border, dilate, &s); err != nil {
					t.Fatal(err)
				}
				if want := naiveMorph(src, h, w, c, kh, kw, ay, ax, border, dilate); !slices.Equal(got, want) {
					t.Fatalf("morph %dx%dx%d window %dx%d anchor (%d, %d) border %d dilate %v", h, w, c, kh, kw, ay, ax, border, dilate)
				}
			}
			mh, mw := kh|1, kw|1
			if err := MedianRect(got, src, h, w, c, mh, mw, &s); err != nil {
				t.Fatal(err)
			}
			if want := naiveMedian(src, h, w, c, mh, mw); !slices.Equal(got, want) {
				t.Fatalf("median %dx%dx%d window %dx%d", h, w, c, mh, mw)
			}
			return
		}
		// larger windows: no error, no panic, and every value one of the plane's
		if err := MorphRect(got, src, h, w, c, kh, kw, ay, ax, border, true, &s); err != nil {
			t.Fatal(err)
		}
		if err := MedianRect(got, src, h, w, c, kh|1, kw|1, &s); err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			if !slices.Contains(src, v) {
				t.Fatalf("median %g is not a plane value", v)
			}
		}
	})
}
