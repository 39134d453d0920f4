package engine

import (
	"math"
	"math/big"
	"testing"
)

// extremes are the values issue 24's bound checks are fuzzed with.
var extremes = []float64{0, 1, -1, 0.5, -0.5, 1e4, 1e9, 1e18, 1e20, 1e30, 1e308, -1e308,
	math.NaN(), math.Inf(1), math.Inf(-1), 1 << 62, 1 << 63, -(1 << 63), math.MaxInt64, math.MinInt64,
	MaxExtent, MaxExtent + 0.4, MaxExtent + 0.5, MaxExtent + 1, -MaxExtent, -MaxExtent - 1,
	math.SmallestNonzeroFloat64, math.Nextafter(MaxExtent, 0)}

// extentRef is Extent computed with big floats: the rounded value when it lies in
// [-MaxExtent, MaxExtent].
func extentRef(x float64, round func(float64) float64) (int64, bool) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	r := round(x)
	b := new(big.Float).SetFloat64(r)
	if b.Cmp(big.NewFloat(MaxExtent)) > 0 || b.Cmp(big.NewFloat(-MaxExtent)) < 0 {
		return 0, false
	}
	i, _ := b.Int64()
	return i, true
}

func checkExtent(t *testing.T, x float64) {
	t.Helper()
	for name, r := range map[string]func(float64) float64{"trunc": nil, "round": math.Round, "floor": math.Floor, "ceil": math.Ceil, "even": math.RoundToEven} {
		ref := r
		if ref == nil {
			ref = math.Trunc
		}
		want, wantOK := extentRef(x, ref)
		got, ok := Extent(x, r)
		if ok != wantOK || (ok && int64(got) != want) {
			t.Errorf("Extent(%g, %s) = %d, %v; want %d, %v", x, name, got, ok, want, wantOK)
		}
	}
	if ExtentOK(x) != (x >= -MaxExtent && x <= MaxExtent) {
		t.Errorf("ExtentOK(%g) = %v", x, ExtentOK(x))
	}
}

func TestExtentExtremes(t *testing.T) {
	for _, x := range extremes {
		checkExtent(t, x)
	}
}

func FuzzExtent(f *testing.F) {
	for _, x := range extremes {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) { checkExtent(t, x) })
}
