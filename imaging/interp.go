package imaging

import (
	"fmt"
	"math"
	"strings"
)

// Interp selects the resampling filter. The values are DALI's DALIInterpType values so
// that they cross the C and Python boundaries unchanged.
type Interp int

// Interpolation filters.
const (
	InterpNN       Interp = 0 // nearest neighbour, never antialiased
	InterpLinear   Interp = 1 // triangle filter (PIL BILINEAR)
	InterpCubic    Interp = 2 // Keys cubic, a = -0.5 (PIL BICUBIC)
	InterpLanczos3 Interp = 3 // windowed sinc, 3 lobes (PIL LANCZOS)
	// InterpTriangular is DALI's older name for InterpLinear with antialiasing; as in
	// DALI, it is the same filter as InterpLinear, and antialias decides the widening.
	InterpTriangular Interp = 4
)

var interpNames = [...]string{
	InterpNN:         "INTERP_NN",
	InterpLinear:     "INTERP_LINEAR",
	InterpCubic:      "INTERP_CUBIC",
	InterpLanczos3:   "INTERP_LANCZOS3",
	InterpTriangular: "INTERP_TRIANGULAR",
}

// String returns DALI's name for the filter, e.g. "INTERP_TRIANGULAR".
func (i Interp) String() string {
	if i >= 0 && int(i) < len(interpNames) {
		return interpNames[i]
	}
	return fmt.Sprintf("Interp(%d)", int(i))
}

// ParseInterp accepts DALI's names with or without the INTERP_ prefix, in any case
// ("INTERP_TRIANGULAR", "triangular", "LINEAR", "NN", "LANCZOS3").
func ParseInterp(s string) (Interp, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimPrefix(u, "INTERP_")
	for i, n := range interpNames {
		if strings.TrimPrefix(n, "INTERP_") == u {
			return Interp(i), nil
		}
	}
	return 0, fmt.Errorf("interp_type %q: expected one of INTERP_NN, INTERP_LINEAR, INTERP_CUBIC, INTERP_LANCZOS3, INTERP_TRIANGULAR", s)
}

func (i Interp) valid() bool { return i >= InterpNN && i <= InterpTriangular }

// support is the filter's half-width in source pixels at scale 1.
func (i Interp) support() float64 {
	switch i {
	case InterpCubic:
		return 2
	case InterpLanczos3:
		return 3
	default:
		return 1
	}
}

// weight evaluates the continuous filter kernel. The formulas are PIL's, so that the
// fixed-point weights derived from them come out identical.
func (i Interp) weight(x float64) float64 {
	if x < 0 {
		x = -x
	}
	switch i {
	case InterpCubic:
		const a = -0.5
		if x < 1 {
			return ((a+2)*x-(a+3))*x*x + 1
		}
		if x < 2 {
			return (((x-5)*x+8)*x - 4) * a
		}
		return 0
	case InterpLanczos3:
		if x < 3 {
			return sinc(x) * sinc(x/3)
		}
		return 0
	default:
		if x < 1 {
			return 1 - x
		}
		return 0
	}
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	x *= math.Pi
	return math.Sin(x) / x
}
