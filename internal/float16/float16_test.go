package float16

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestFloat16RoundTrip: every non-NaN half converts to float32 and back unchanged, and
// ToFloat32 agrees with the binary16 definition.
func TestFloat16RoundTrip(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := ToFloat32(uint16(h))
		exp, man := (h>>10)&0x1f, h&0x3ff
		var want float64
		switch {
		case exp == 0x1f && man != 0:
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%#04x: got %v, want NaN", h, f)
			}
			if g := FromFloat32(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x converted back to %#04x", h, g)
			}
			continue
		case exp == 0x1f:
			want = math.Inf(1)
		case exp == 0:
			want = math.Ldexp(float64(man), -24)
		default:
			want = math.Ldexp(float64(man|0x400), exp-25)
		}
		if h&0x8000 != 0 {
			want = -want
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("ToFloat32(%#04x) = %v, want %v", h, f, want)
		}
		if g := FromFloat32(f); g != uint16(h) {
			t.Fatalf("round trip of %#04x gave %#04x", h, g)
		}
	}
}

// TestFloat16RoundsToNearestEven compares with a brute-force search over all finite
// halves: the nearest one, ties to the even mantissa, overflow to infinity past the
// largest half plus half an ulp.
func TestFloat16RoundsToNearestEven(t *testing.T) {
	var pos []float64 // all finite non-negative halves, ascending
	for h := 0; h < 0x7c00; h++ {
		pos = append(pos, float64(ToFloat32(uint16(h))))
	}
	nearest := func(v float64) uint16 {
		a := math.Abs(v)
		var bits uint16
		if a >= 65520 { // 65504 + half an ulp (16): rounds to infinity
			bits = 0x7c00
		} else {
			i := sort.SearchFloat64s(pos, a)
			switch {
			case i == len(pos):
				bits = uint16(i - 1)
			case pos[i] == a || i == 0:
				bits = uint16(i)
			default:
				lo, hi := a-pos[i-1], pos[i]-a
				bits = uint16(i)
				if lo < hi || (lo == hi && (i-1)%2 == 0) {
					bits = uint16(i - 1)
				}
			}
		}
		if math.Signbit(v) {
			bits |= 0x8000
		}
		return bits
	}
	r := rand.New(rand.NewPCG(1, 2))
	check := func(f float32) {
		if got, want := FromFloat32(f), nearest(float64(f)); got != want {
			t.Fatalf("FromFloat32(%g [%#08x]) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		// Exponents spanning zero, subnormal halves, normal halves and overflow.
		check(float32(math.Ldexp(r.Float64()*2-1, r.IntN(46)-28)))
	}
	for h := 0; h < 0x7c00; h++ {
		// Exact midpoints between neighbouring halves, and values just around them.
		a, b := float64(ToFloat32(uint16(h))), float64(ToFloat32(uint16(h+1)))
		m := float32((a + b) / 2)
		check(m)
		check(-m)
		check(math.Nextafter32(m, 0))
		check(math.Nextafter32(m, 1e9))
	}
	check(float32(math.Inf(-1)))
	check(65519.99)
	check(65520)
}
