package math

import "testing"

// DALI's integer power: a negative exponent gives 0 whatever the base (DALI's
// test_arithmetic_ops checks 1 ** -1 == 0 and -1 ** -3 == 0), else exact with wrapping.
func TestIntegerPowAsDALI(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{1, -1, 0}, {-1, -3, 0}, {-1, -2, 0}, {5, -1, 0}, {0, 0, 1}, {-3, 3, -27}, {2, 10, 1024},
	} {
		if got := ipow(c.a, c.b); got != c.want {
			t.Errorf("ipow(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
