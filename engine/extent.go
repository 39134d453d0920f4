package engine

import (
	"fmt"
	"math"
)

// MaxExtent bounds an extent (a size along one axis, in pixels or elements) or an offset
// that an operator computes from a float argument: 2^40, beyond any image yet far enough
// from int's end that sums and small multiples of extents cannot overflow. The products
// of extents are checked on their own (mulSize).
const MaxExtent = 1 << 40

// Extent converts the float x to an int with round (math.Round, math.Floor, math.Ceil,
// math.RoundToEven; nil truncates toward zero as Go's int() does). ok=false when x is NaN,
// infinite, or rounds outside [-MaxExtent, MaxExtent]: Go's int() of such a value is not
// defined (math.MinInt64 on amd64), which turned resize_shorter=1e30 into a 1x1 image
// and paste(ratio=1e18) into its input unchanged. Every float-to-int size conversion of
// the operators goes through it (or Args.Extent, which names the argument).
func Extent(x float64, round func(float64) float64) (int, bool) {
	if round != nil {
		x = round(x)
	} else {
		x = math.Trunc(x)
	}
	if !(x >= -MaxExtent && x <= MaxExtent) { // NaN fails both
		return 0, false
	}
	return int(x), true
}

// ExtentOK reports whether x is a usable float extent: finite and within MaxExtent in
// magnitude (before any rounding).
func ExtentOK(x float64) bool { return x >= -MaxExtent && x <= MaxExtent }

// errExtent is the message for a value that is not a usable extent.
func errExtent(x float64) string {
	return fmt.Sprintf("%g is not a usable size (sizes are finite and at most 2^40 = %d in magnitude)", x, int64(MaxExtent))
}

// Extent is engine.Extent for a value of argument name (the argument's own, or one
// computed from it, e.g. a ratio times an input extent): an error naming the argument
// when it is out of range, for the sample when ws is given (a data error: the value came
// from the pipeline), at build otherwise.
func (a *Args) Extent(ws *Workspace, name string, x float64, round func(float64) float64) (int, error) {
	n, ok := Extent(x, round)
	if !ok {
		return 0, a.ExtentError(ws, name, x)
	}
	return n, nil
}

// CheckExtents checks that every value of xs (an argument's values) is a usable extent
// (ExtentOK), naming the argument as Extent does.
func (a *Args) CheckExtents(ws *Workspace, name string, xs ...float64) error {
	for _, x := range xs {
		if !ExtentOK(x) {
			return a.ExtentError(ws, name, x)
		}
	}
	return nil
}

// ExtentError is the error of Extent and CheckExtents: argument name gave x.
func (a *Args) ExtentError(ws *Workspace, name string, x float64) error {
	if ws != nil {
		return a.ArgDataErrorf(ws, name, "%s", errExtent(x))
	}
	return a.Errorf(name, "%s", errExtent(x))
}

// CheckExtentArgs checks, at build, every constant value of the named arguments (sizes,
// positions in pixels, ratios of sizes) with CheckExtents; values given per sample are
// the operator's to check for each sample.
func (a *Args) CheckExtentArgs(names ...string) error {
	for _, n := range names {
		if !a.GivenConstant(n) || a.AnyPerSample(n) {
			continue
		}
		v, _ := a.FloatsAt(nil, n, nil)
		if err := a.CheckExtents(nil, n, v...); err != nil {
			return err
		}
	}
	return nil
}
