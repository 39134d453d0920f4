package codec

import (
	"os"
	"testing"

	"github.com/godali/godali/internal/testref"
)

// TestFastIDCT: use_fast_idct changes the decode (the flag reaches libjpeg) and stays
// within a few levels of the accurate IDCT on a real photograph.
func TestFastIDCT(t *testing.T) {
	data, err := os.ReadFile("../tests/data/corpus/pillow/flower.jpg")
	if err != nil {
		testref.Missing(t, "image corpus: %v", err)
	}
	d := NewDecoder()
	defer d.Close()
	info, err := d.Probe(data)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(fast bool) []byte {
		opt := Options{Out: RGB, FastIDCT: fast}
		w, h, c, err := d.OutputSize(data, info, opt)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, w*h*c)
		if _, _, _, err := d.Decode(data, info, opt, dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	acc, fast := decode(false), decode(true)
	diff, sum, maxd := 0, 0, 0
	for i := range acc {
		v := int(acc[i]) - int(fast[i])
		if v < 0 {
			v = -v
		}
		if v != 0 {
			diff++
		}
		sum += v
		maxd = max(maxd, v)
	}
	if diff == 0 {
		t.Fatal("fast IDCT decoded bit-identically: the flag has no effect")
	}
	if mean := float64(sum) / float64(len(acc)); mean > 1.5 || maxd > 8 {
		t.Errorf("fast IDCT vs accurate: mean %.3f max %d; want mean <= 1.5, max <= 8", mean, maxd)
	}
	t.Logf("fast vs accurate IDCT: %d of %d values differ, mean %.3f, max %d", diff, len(acc), float64(sum)/float64(len(acc)), maxd)
}
