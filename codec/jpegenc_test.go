package codec

import (
	"math/rand"
	"testing"
)

func testRGB(w, h int, noise bool) []byte {
	r := rand.New(rand.NewSource(int64(w*h + 1)))
	b := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := (y*w + x) * 3
			b[i], b[i+1], b[i+2] = byte(x*255/w), byte(y*255/h), byte((x+y)*127/(w+h))
			if noise {
				b[i], b[i+1], b[i+2] = byte(r.Intn(256)), byte(r.Intn(256)), byte(r.Intn(256))
			}
		}
	}
	return b
}

func meanAbsDiff(a, b []byte) float64 {
	s := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		s += d
	}
	return float64(s) / float64(len(a))
}

func TestJPEGDistorterQualityOrdersTheError(t *testing.T) {
	d, err := NewJPEGDistorter()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := testRGB(97, 61, false)
	dst := make([]byte, len(src))
	prev, prevSize := -1.0, 0
	for _, q := range []int{100, 90, 50, 10, 1} {
		if err := d.RoundTrip(dst, src, 97, 61, q); err != nil {
			t.Fatal(err)
		}
		e := meanAbsDiff(src, dst)
		if e < prev || (q == 100 && e > 2) || (q == 1 && e < 3) {
			t.Errorf("quality %d: mean error %.3f (previous, better quality: %.3f)", q, e, prev)
		}
		if s := d.EncodedSize(); s < 100 || (prevSize > 0 && s > prevSize) {
			t.Errorf("quality %d: %d bytes encoded (previous %d)", q, s, prevSize)
		}
		prev, prevSize = e, d.EncodedSize()
	}
	// in place: the same result as into another buffer
	if err := d.RoundTrip(dst, src, 97, 61, 30); err != nil {
		t.Fatal(err)
	}
	in := append([]byte(nil), src...)
	if err := d.RoundTrip(in, in, 97, 61, 30); err != nil {
		t.Fatal(err)
	}
	if meanAbsDiff(in, dst) != 0 {
		t.Error("in-place round trip differs")
	}
}

func TestJPEGDistorterGrowsAndThenDoesNotAllocate(t *testing.T) {
	d, err := NewJPEGDistorter()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src := testRGB(600, 400, true) // noise at quality 100: far more than the initial 64 KiB
	dst := make([]byte, len(src))
	if err := d.RoundTrip(dst, src, 600, 400, 100); err != nil {
		t.Fatal(err)
	}
	if d.EncodedSize() <= 1<<16 {
		t.Fatalf("encoded %d bytes: the buffer did not need to grow", d.EncodedSize())
	}
	if e := meanAbsDiff(src, dst); e == 0 || e > 64 { // 4:2:0 averages the noise's chroma away
		t.Errorf("quality 100 on noise: mean error %.2f", e)
	}
	if n := testing.AllocsPerRun(5, func() { _ = d.RoundTrip(dst, src, 600, 400, 75) }); n != 0 {
		t.Errorf("%v Go allocations per round trip", n)
	}
}

func TestJPEGDistorterRejectsBadArguments(t *testing.T) {
	d, err := NewJPEGDistorter()
	if err != nil {
		t.Fatal(err)
	}
	src := testRGB(8, 8, false)
	for _, c := range []struct{ w, h, q, n int }{{8, 8, 0, 192}, {8, 8, 101, 192}, {0, 8, 50, 192}, {8, 8, 50, 100}, {70000, 1, 50, 210000}} {
		buf := make([]byte, c.n)
		copy(buf, src)
		if err := d.RoundTrip(buf, buf, c.w, c.h, c.q); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	d.Close()
	if err := d.RoundTrip(src, src, 8, 8, 50); err == nil {
		t.Error("no error after Close")
	}
	d.Close() // twice is fine
}
