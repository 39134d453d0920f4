package bbox

import (
	"math"
	"reflect"
	"testing"

	"github.com/godali/godali/engine"
)

// iou3Ref is the IoU of two 3-D boxes, written out from the definition.
func iou3Ref(a, b Box) float64 {
	inter := 1.0
	for d := 0; d < 3; d++ {
		inter *= math.Max(0, math.Min(a.Hi[d], b.Hi[d])-math.Max(a.Lo[d], b.Lo[d]))
	}
	va := (a.Hi[0] - a.Lo[0]) * (a.Hi[1] - a.Lo[1]) * (a.Hi[2] - a.Lo[2])
	vb := (b.Hi[0] - b.Lo[0]) * (b.Hi[1] - b.Lo[1]) * (b.Hi[2] - b.Lo[2])
	return inter / (va + vb - inter)
}

func randomBoxes3(rng *engine.RNG, n int) []Box {
	out := make([]Box, n)
	for i := range out {
		for d := 0; d < 3; d++ {
			s := rng.Uniform(0.1, 0.6)
			out[i].Lo[d] = rng.Uniform(0, 1-s)
			out[i].Hi[d] = out[i].Lo[d] + s
		}
	}
	return out
}

// TestCropper3DProperties checks 3-D windows against DALI's documented rules: longest
// side within scaling, x/y, x/z and y/z within their ranges (exactly the value when a
// range is one value), inside the image, every box's 3-D IoU at least the threshold,
// exactly the boxes whose centre is inside kept, and the box mapping.
func TestCropper3DProperties(t *testing.T) {
	cases := []struct{ xy, xz, yz [2]float64 }{
		{[2]float64{0.5, 2}, [2]float64{0.6, 2.1}, [2]float64{0.4, 1.9}},
		{[2]float64{1, 1}, [2]float64{1, 1}, [2]float64{1, 1}},
		{[2]float64{0.5, 0.5}, [2]float64{0.25, 0.25}, [2]float64{0.5, 0.5}},
	}
	const tol = 1e-6 // the window is float32
	for _, cs := range cases {
		for _, thr := range []float64{0, 0.05, 0.15} {
			c := Cropper{Dims: 3, Thresholds: []float64{thr}, IoU: true, AspectMin: cs.xy[0], AspectMax: cs.xy[1],
				AspectXZ: cs.xz, AspectYZ: cs.yz, ScaleMin: 0.3, ScaleMax: 0.9, Attempts: 100, TotalAttempts: 2000, AllAboveThreshold: true,
				PruneThreshold: -1, ByAspect: true}
			var gen, rng engine.RNG
			gen.Seed(4)
			rng.Seed(8)
			found := 0
			for trial := 0; trial < 400; trial++ {
				boxes := randomBoxes3(&gen, 1+trial%3)
				win, kept := c.Choose(boxes, &rng, nil)
				if win.NoCrop {
					continue // the best-window search gave up: the whole image
				}
				s := win.Shape
				long := math.Max(s[0], math.Max(s[1], s[2]))
				if long < 0.3*(1-tol) || long > 0.9*(1+tol) {
					t.Fatalf("%v: window %+v: longest side outside scaling", cs, win)
				}
				for k, p := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
					r := s[p[0]] / s[p[1]]
					rg := [][2]float64{cs.xy, cs.xz, cs.yz}[k]
					if r < rg[0]*(1-tol) || r > rg[1]*(1+tol) {
						t.Fatalf("%v: window %+v: ratio %d/%d = %g outside %v", cs, win, p[0], p[1], r, rg)
					}
				}
				var wb Box
				for d := 0; d < 3; d++ {
					wb.Lo[d], wb.Hi[d] = win.Anchor[d], win.Anchor[d]+s[d]
					if wb.Lo[d] < 0 || wb.Hi[d] > 1+tol {
						t.Fatalf("window %+v leaves the image", win)
					}
				}
				minIoU := math.Inf(1)
				for _, b := range boxes {
					minIoU = math.Min(minIoU, iou3Ref(b, wb))
				}
				var want []int
				for i, b := range boxes {
					in := true
					for d := 0; d < 3; d++ {
						m := (b.Lo[d] + b.Hi[d]) / 2
						in = in && m >= wb.Lo[d] && m <= wb.Hi[d]
					}
					if in {
						want = append(want, i)
					}
				}
				if minIoU < thr-tol {
					// Only the fallback (best window after the attempts) may miss it.
					continue
				}
				found++
				if len(want) == 0 || !reflect.DeepEqual(kept, want) {
					t.Fatalf("window %+v kept %v, want %v", win, kept, want)
				}
				for _, i := range kept {
					p := win.Project(boxes[i])
					for d := 0; d < 3; d++ {
						lo := (math.Max(boxes[i].Lo[d], wb.Lo[d]) - wb.Lo[d]) / s[d]
						hi := (math.Min(boxes[i].Hi[d], wb.Hi[d]) - wb.Lo[d]) / s[d]
						if math.Abs(p.Lo[d]-lo) > 1e-5 || math.Abs(p.Hi[d]-hi) > 1e-5 {
							t.Fatalf("box %v in window %+v mapped to %v, want lo %g hi %g on axis %d", boxes[i], win, p, lo, hi, d)
						}
					}
				}
			}
			if found < 100 {
				t.Errorf("%v threshold %g: only %d of 400 windows met the threshold", cs, thr, found)
			}
		}
	}
}

func TestCropperFeasible3D(t *testing.T) {
	c := Cropper{Dims: 3, AspectMin: 1, AspectMax: 1, AspectXZ: [2]float64{2, 2}, AspectYZ: [2]float64{1, 1}}
	if c.feasible() {
		t.Error("x/y = 1, y/z = 1 but x/z = 2 reported feasible")
	}
	c.AspectXZ = [2]float64{1, 1}
	if !c.feasible() {
		t.Error("cube ratios reported infeasible")
	}
}

func TestBoxLayouts(t *testing.T) {
	for _, s := range []string{"xyXY", "xyWH", "XYxy", "yxYX", "xyzXYZ", "xyzWHD", "ZYXzyx", "WHDxyz"} {
		l, ok := parseBoxLayout(s)
		if !ok {
			t.Fatalf("%q rejected", s)
		}
		coords := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}[:2*l.Dims]
		b := l.read(coords)
		back := make([]float64, len(coords))
		l.write(b, back)
		for i := range coords {
			if math.Abs(back[i]-coords[i]) > 1e-15 {
				t.Fatalf("%q: %v read as %+v written as %v", s, coords, b, back)
			}
		}
	}
	for _, s := range []string{"", "xy", "xyXH", "xyXX", "xyzXY", "xyzXYD", "abcd", "xyXYZW"} {
		if _, ok := parseBoxLayout(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
	l, _ := parseBoxLayout("xyzWHD")
	if b := l.read([]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}); math.Abs(b.Hi[2]-0.9) > 1e-15 || b.Lo[1] != 0.2 {
		t.Errorf("xyzWHD read as %+v", b)
	}
	l, _ = parseBoxLayout("YXyx")
	if b := l.read([]float64{0.9, 0.8, 0.1, 0.2}); b != Box2([4]float64{0.2, 0.1, 0.8, 0.9}) {
		t.Errorf("YXyx read as %+v", b)
	}
}
