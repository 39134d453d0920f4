package image

import (
	"strings"

	"github.com/godali/godali/engine"
)

// resolveAxes turns an operator's axes / axis_names arguments into a sorted set of
// dimension indices of an ndim-dimensional input with the given layout. given reports
// whether either argument was set; with neither, def is returned.
func resolveAxes(a *engine.Args, ndim int, layout string, def []int) ([]int, bool, error) {
	hasAxes, hasNames := a.GivenConstant("axes"), a.Given("axis_names") && a.String("axis_names") != ""
	if hasAxes && hasNames {
		return nil, false, a.Errorf("axes", "give axes or axis_names, not both")
	}
	mark := make([]bool, ndim)
	switch {
	case hasAxes:
		for _, x := range a.Ints("axes") {
			d := int(x)
			if d < 0 {
				d += ndim
			}
			if d < 0 || d >= ndim {
				return nil, false, a.Errorf("axes", "axis %d out of range for %d-dimensional input", x, ndim)
			}
			mark[d] = true
		}
	case hasNames:
		names := a.String("axis_names")
		if layout == "" || len(layout) != ndim {
			return nil, false, a.Errorf("axis_names", "the input has no layout (%q) to look up %q in; use axes", layout, names)
		}
		for _, c := range names {
			d := strings.IndexRune(layout, c)
			if d < 0 {
				return nil, false, a.Errorf("axis_names", "axis %q is not in the input layout %q", string(c), layout)
			}
			mark[d] = true
		}
	default:
		return def, false, nil
	}
	var out []int
	for d, m := range mark {
		if m {
			out = append(out, d)
		}
	}
	return out, true, nil
}

// numElements is the product of a shape's extents.
func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// resolveAxesOrdered is resolveAxes keeping the order the user gave (erase's anchors and
// pad's shapes follow it).
func resolveAxesOrdered(a *engine.Args, ndim int, layout string, def []int) ([]int, bool, error) {
	if _, _, err := resolveAxes(a, ndim, layout, def); err != nil {
		return nil, false, err
	}
	var out []int
	switch {
	case a.GivenConstant("axes"):
		for _, x := range a.Ints("axes") {
			d := int(x)
			if d < 0 {
				d += ndim
			}
			out = append(out, d)
		}
	case a.Given("axis_names") && a.String("axis_names") != "":
		for _, c := range a.String("axis_names") {
			out = append(out, strings.IndexRune(layout, c))
		}
	default:
		return def, false, nil
	}
	seen := map[int]bool{}
	for _, d := range out {
		if seen[d] {
			return nil, false, a.Errorf("axes", "axis %d listed twice", d)
		}
		seen[d] = true
	}
	return out, true, nil
}
