package tensor

import "testing"

// sliceRange against Python's range(*slice(lo, hi, step).indices(n)) for the cases
// DataNode subscripts use (the expected values are what Python 3 gives).
func TestSliceRangeMatchesPython(t *testing.T) {
	cases := []struct {
		lo, hi, step        int64
		hasLo, hasHi        bool
		n, wantFirst, wantN int64
	}{
		{1, -1, 1, true, true, 10, 1, 8},    // [1:-1]
		{0, 0, 2, false, false, 10, 0, 5},   // [::2]
		{0, 0, 2, false, false, 9, 0, 5},    // [::2], odd
		{0, 0, -1, false, false, 4, 3, 4},   // [::-1]
		{-3, 0, 1, true, false, 5, 2, 3},    // [-3:]
		{2, 100, 1, true, true, 5, 2, 3},    // stop clamped
		{4, 1, -2, true, true, 6, 4, 2},     // [4:1:-2] -> 4, 2
		{3, 3, 1, true, true, 6, 3, 0},      // empty
		{-100, 0, 1, true, false, 3, 0, 3},  // start clamped
		{0, -100, -1, false, true, 3, 2, 3}, // [:-100:-1] -> 2, 1, 0
	}
	for _, c := range cases {
		f, n := sliceRange(c.lo, c.hi, c.step, c.hasLo, c.hasHi, c.n)
		if n != c.wantN || (n > 0 && f != c.wantFirst) {
			t.Errorf("%+v: got first %d count %d", c, f, n)
		}
	}
}

// Steps far beyond the extent (2**62, 2**63-1, -2**63) select what Python selects: the
// start alone, or nothing (issue 24: the step overflowed the count arithmetic).
func TestHugeSliceStep(t *testing.T) {
	const maxI, minI = int64(1<<63 - 1), int64(-1 << 63)
	for _, step := range []int64{1 << 62, maxI, minI, -(1 << 62), 11, -11} {
		for _, n := range []int64{0, 1, 10} {
			f, cnt := sliceRange(0, 0, clampStep(step, n), false, false, n)
			want, first := int64(0), int64(0)
			if n > 0 {
				want = 1
				if step < 0 {
					first = n - 1
				}
			}
			if cnt != want || (cnt > 0 && f != first) {
				t.Errorf("[::%d] of %d: first %d count %d, want %d %d", step, n, f, cnt, first, want)
			}
		}
	}
}
