package imaging

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestSatU8RoundsLikeConvertSat(t *testing.T) {
	cases := []struct {
		in   float32
		want byte
	}{
		{-3, 0}, {0, 0}, {0.49999997, 0}, {0.5, 1}, {1.5, 2}, {2.5, 3}, {127.4, 127},
		{254.49998, 254}, {254.5, 255}, {300, 255}, {float32(math.NaN()), 0},
		{float32(math.Inf(1)), 255}, {float32(math.Inf(-1)), 0},
	}
	for _, c := range cases {
		if got := SatU8(c.in); got != c.want {
			t.Errorf("SatU8(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestAffineTable(t *testing.T) {
	var tab AffineTable
	if err := tab.Init(-1, 255, UInt8); err != nil { // the negative image
		t.Fatal(err)
	}
	src := []byte{0, 1, 128, 255}
	dst := make([]byte, 4)
	if err := tab.Apply(dst, src); err != nil {
		t.Fatal(err)
	}
	for i, v := range src {
		if dst[i] != 255-v {
			t.Errorf("negative of %d: %d", v, dst[i])
		}
	}
	if err := tab.Init(0.5, 0.25, Float32); err != nil {
		t.Fatal(err)
	}
	f := make([]byte, 16)
	if err := tab.Apply(f, src); err != nil {
		t.Fatal(err)
	}
	for i, v := range src {
		got := math.Float32frombits(binary.LittleEndian.Uint32(f[4*i:]))
		if got != float32(v)*0.5+0.25 {
			t.Errorf("float of %d: %v", v, got)
		}
	}
	if err := tab.Apply(f[:3], src); err == nil {
		t.Error("short output accepted")
	}
}

// hsv with neutral arguments is DALI's rounded YIQ round trip: within one level of the
// input; saturation 0 gives grey (three equal channels, since every row of the inverse
// starts with 1).
func TestColorMatrixHSV(t *testing.T) {
	const w, h = 64, 48
	src := testImage(w, h, 3, 3)
	dst := make([]byte, len(src))
	var m ColorMatrix
	m.SetHSV(0, 1, 1, 1, 1, 128)
	if err := m.Apply(dst, src, w*h, UInt8); err != nil {
		t.Fatal(err)
	}
	if mean, maxd := diffStats(dst, src, w, h, 3, 0); maxd > 1 || mean > 0.3 {
		t.Errorf("neutral hsv: mean %.3f max %d, want within 1", mean, maxd)
	}
	m.SetHSV(77, 0, 1, 1, 1, 128)
	if err := m.Apply(dst, src, w*h, UInt8); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(dst); i += 3 {
		if dst[i] != dst[i+1] || dst[i] != dst[i+2] {
			t.Fatalf("saturation 0: pixel %d is %v", i/3, dst[i:i+3])
		}
	}
	// color_twist's contrast 0 is uniform grey at brightness * 128.
	m.SetHSV(0, 1, 1, 0.5, 0, 128)
	if err := m.Apply(dst, src, w*h, UInt8); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if v != 64 {
			t.Fatalf("contrast 0, brightness 0.5: byte %d is %d, want 64", i, v)
		}
	}
}
