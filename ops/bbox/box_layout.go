package bbox

import (
	"math"
	"strings"

	"github.com/godali/godali/engine"
)

// Box is an axis-aligned box in relative coordinates: its start (Lo) and end (Hi) on
// the axes x, y and z; 2-D boxes use the first two.
type Box struct{ Lo, Hi [3]float64 }

// Box2 is a 2-D box from [left, top, right, bottom].
func Box2(b [4]float64) Box { return Box{Lo: [3]float64{b[0], b[1]}, Hi: [3]float64{b[2], b[3]}} }

// LTRB is a 2-D box as [left, top, right, bottom].
func (b Box) LTRB() [4]float64 { return [4]float64{b.Lo[0], b.Lo[1], b.Hi[0], b.Hi[1]} }

// boxLayout is a parsed bbox_layout: what each of a box's 2*Dims coordinates holds.
// DALI's letters: x y z are the starts, X Y Z the ends, W H D the extents; a layout is
// a permutation of xyXY / xyWH (2-D) or xyzXYZ / xyzWHD (3-D).
type boxLayout struct {
	Dims  int
	kind  [6]byte // 's' start, 'e' end, 'w' extent
	axis  [6]int
	Label string
}

const (
	startLetters  = "xyz"
	endLetters    = "XYZ"
	extentLetters = "WHD"
)

// parseBoxLayout reads a bbox_layout string; ok=false when it is not a permutation of
// the start/end or start/extent letters of 2 or 3 axes.
func parseBoxLayout(s string) (boxLayout, bool) {
	l := boxLayout{Dims: len(s) / 2, Label: s}
	if len(s) != 4 && len(s) != 6 {
		return l, false
	}
	var seen [3]int // per axis: bit 1 start, 2 end, 4 extent
	for i := 0; i < len(s); i++ {
		c := s[i]
		var bit int
		switch {
		case strings.IndexByte(startLetters, c) >= 0:
			l.kind[i], l.axis[i], bit = 's', strings.IndexByte(startLetters, c), 1
		case strings.IndexByte(endLetters, c) >= 0:
			l.kind[i], l.axis[i], bit = 'e', strings.IndexByte(endLetters, c), 2
		case strings.IndexByte(extentLetters, c) >= 0:
			l.kind[i], l.axis[i], bit = 'w', strings.IndexByte(extentLetters, c), 4
		default:
			return l, false
		}
		if l.axis[i] >= l.Dims || seen[l.axis[i]]&bit != 0 {
			return l, false
		}
		seen[l.axis[i]] |= bit
	}
	// Every axis has its start and either its end or its extent, and all axes agree.
	for d := 0; d < l.Dims; d++ {
		if seen[d] != seen[0] || (seen[d] != 3 && seen[d] != 5) {
			return l, false
		}
	}
	return l, true
}

// defaultBoxLayout is xyXY / xyzXYZ (ltrb) or xyWH / xyzWHD.
func defaultBoxLayout(dims int, ltrb bool) boxLayout {
	s := startLetters[:dims]
	if ltrb {
		s += endLetters[:dims]
	} else {
		s += extentLetters[:dims]
	}
	l, _ := parseBoxLayout(s)
	return l
}

// read decodes one box from its coordinates.
func (l boxLayout) read(c []float64) Box {
	var b Box
	var ext [3]float64
	hasExt := false
	for i := 0; i < 2*l.Dims; i++ {
		switch l.kind[i] {
		case 's':
			b.Lo[l.axis[i]] = c[i]
		case 'e':
			b.Hi[l.axis[i]] = c[i]
		case 'w':
			ext[l.axis[i]], hasExt = c[i], true
		}
	}
	if hasExt {
		for d := 0; d < l.Dims; d++ {
			b.Hi[d] = b.Lo[d] + ext[d]
		}
	}
	return b
}

// write encodes a box into 2*Dims coordinates.
func (l boxLayout) write(b Box, c []float64) {
	for i := 0; i < 2*l.Dims; i++ {
		d := l.axis[i]
		switch l.kind[i] {
		case 's':
			c[i] = b.Lo[d]
		case 'e':
			c[i] = b.Hi[d]
		case 'w':
			c[i] = b.Hi[d] - b.Lo[d]
		}
	}
}

// boxLayoutArg is the operator's bbox_layout (ok=false when not given: the layout then
// follows ltrb and the boxes' number of coordinates).
func boxLayoutArg(a *engine.Args) (boxLayout, bool, error) {
	if !a.Given("bbox_layout") || a.String("bbox_layout") == "" {
		return boxLayout{}, false, nil
	}
	l, ok := parseBoxLayout(a.String("bbox_layout"))
	if !ok {
		return l, false, a.Errorf("bbox_layout", "expected a permutation of \"xyXY\", \"xyWH\" (2-D) or \"xyzXYZ\", \"xyzWHD\" (3-D): "+
			"x y z starts, X Y Z ends, W H D extents; got %q", a.String("bbox_layout"))
	}
	return l, true, nil
}

// volume is the box's area (2-D) or volume (3-D); <= 0 when degenerate.
func (b Box) volume(dims int) float64 {
	v := 1.0
	for d := 0; d < dims; d++ {
		v *= b.Hi[d] - b.Lo[d]
	}
	return v
}

// intersection is the volume b and w share and whether every side of it is >= 0 (the
// boxes touch or overlap) and > 0 (they overlap).
func intersection(b, w Box, dims int) (v float64, touch, overlap bool) {
	v, touch, overlap = 1, true, true
	for d := 0; d < dims; d++ {
		s := math.Min(b.Hi[d], w.Hi[d]) - math.Max(b.Lo[d], w.Lo[d])
		touch = touch && s >= 0
		overlap = overlap && s > 0
		v *= s
	}
	if !overlap {
		v = 0
	}
	return v, touch, overlap
}
