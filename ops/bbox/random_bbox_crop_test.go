package bbox

import (
	"math"
	"reflect"
	"testing"

	"github.com/godali/godali/engine"
)

func randomBoxes(rng *engine.RNG, n int) [][4]float64 {
	out := make([][4]float64, n)
	for i := range out {
		w, h := rng.Uniform(0.05, 0.6), rng.Uniform(0.05, 0.6)
		x, y := rng.Uniform(0, 1-w), rng.Uniform(0, 1-h)
		out[i] = [4]float64{x, y, x + w, y + h}
	}
	return out
}

// iouRef is written out separately from Cropper.overlap, from the definition.
func boxes2(b [][4]float64) []Box {
	out := make([]Box, len(b))
	for i := range b {
		out[i] = Box2(b[i])
	}
	return out
}

func iouRef(a, b [4]float64) float64 {
	ix := math.Max(0, math.Min(a[2], b[2])-math.Max(a[0], b[0]))
	iy := math.Max(0, math.Min(a[3], b[3])-math.Max(a[1], b[1]))
	inter := ix * iy
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

// TestCropperSSDProperties checks every window the SSD settings choose against the
// documented rules: sides within scaling, width/height within aspect_ratio, inside
// the image, every box's IoU at least one of the thresholds, at least one box kept,
// and exactly the boxes whose center lies in the window kept.
func TestCropperSSDProperties(t *testing.T) {
	c := Cropper{Thresholds: []float64{0, 0.1, 0.3, 0.5, 0.7, 0.9}, IoU: true, AspectMin: 0.5, AspectMax: 2,
		ScaleMin: 0.3, ScaleMax: 1, AllowNoCrop: true, Attempts: 50, AllAboveThreshold: true, PruneThreshold: -1}
	var gen, rng engine.RNG
	gen.Seed(1)
	noCrop, cropped := 0, 0
	for trial := 0; trial < 3000; trial++ {
		boxes := randomBoxes(&gen, 1+trial%5)
		rng.Seed(7, uint64(trial))
		win, kept := c.Choose(boxes2(boxes), &rng, nil)
		if win.NoCrop {
			noCrop++
			if win.Anchor != [3]float64{} || win.Shape != [3]float64{1, 1} || len(kept) != len(boxes) {
				t.Fatalf("no-crop window %+v kept %v of %d", win, kept, len(boxes))
			}
			continue
		}
		cropped++
		w, h := win.Shape[0], win.Shape[1]
		if w < 0.3 || w > 1 || h < 0.3 || h > 1 || w/h < 0.5 || w/h > 2 {
			t.Fatalf("window %+v outside scaling/aspect_ratio", win)
		}
		if win.Anchor[0] < 0 || win.Anchor[1] < 0 || win.Anchor[0]+w > 1+1e-12 || win.Anchor[1]+h > 1+1e-12 {
			t.Fatalf("window %+v leaves the image", win)
		}
		wb := [4]float64{win.Anchor[0], win.Anchor[1], win.Anchor[0] + w, win.Anchor[1] + h}
		minIoU := math.Inf(1)
		for _, b := range boxes {
			minIoU = math.Min(minIoU, iouRef(b, wb))
		}
		if minIoU < 0 {
			t.Fatalf("window %+v: IoU %g", win, minIoU)
		}
		var want []int
		for i, b := range boxes {
			cx, cy := (b[0]+b[2])/2, (b[1]+b[3])/2
			if cx >= wb[0] && cx <= wb[2] && cy >= wb[1] && cy <= wb[3] {
				want = append(want, i)
			}
		}
		if len(want) == 0 || !reflect.DeepEqual(kept, want) {
			t.Fatalf("window %+v kept %v, want %v (non-empty)", win, kept, want)
		}
		for _, i := range kept {
			p := win.Project(Box2(boxes[i])).LTRB()
			for k := 0; k < 4; k++ {
				if p[k] < 0 || p[k] > 1 {
					t.Fatalf("projected box %v outside the window", p)
				}
			}
			// Inverse of the projection: inside the window it gives back the box (the
			// projection is float32 arithmetic, as the outputs are).
			if b := boxes[i]; b[0] >= wb[0] && math.Abs(p[0]*w+wb[0]-b[0]) > 1e-6 {
				t.Fatalf("projection of %v: %v", b, p)
			}
		}
	}
	// One option in 7 is the whole image, drawn again whenever a threshold's attempts
	// fail: at least about 1/7 of the samples are not cropped.
	if frac := float64(noCrop) / 3000; frac < 0.12 || frac > 0.9 {
		t.Errorf("no-crop chosen %d of 3000 times, expected 1/7 or more", noCrop)
	}
	if cropped == 0 {
		t.Error("never cropped")
	}
}

// TestCropperMeetsTheThreshold: with one threshold and no whole-image option, every
// window has IoU >= the threshold with every box (all_boxes_above_threshold), or with
// at least one box when one suffices.
func TestCropperMeetsTheThreshold(t *testing.T) {
	var gen, rng engine.RNG
	gen.Seed(5)
	for _, all := range []bool{true, false} {
		for _, thr := range []float64{0.3, 0.5} {
			c := Cropper{Thresholds: []float64{thr}, IoU: true, AspectMin: 0.5, AspectMax: 2, ScaleMin: 0.1, ScaleMax: 1,
				Attempts: 50, AllAboveThreshold: all, PruneThreshold: -1}
			for trial := 0; trial < 300; trial++ {
				// Boxes a window can match: sides of 0.2 to 0.6 (aspect 1/3 to 3).
				n := 1
				if !all {
					n = 3
				}
				boxes := make([][4]float64, n)
				for i := range boxes {
					w, h := gen.Uniform(0.2, 0.6), gen.Uniform(0.2, 0.6)
					x, y := gen.Uniform(0, 1-w), gen.Uniform(0, 1-h)
					boxes[i] = [4]float64{x, y, x + w, y + h}
				}
				rng.Seed(9, uint64(trial))
				win, kept := c.Choose(boxes2(boxes), &rng, nil)
				if win.NoCrop {
					t.Fatalf("whole image chosen without allow_no_crop (boxes %v)", boxes)
				}
				wb := [4]float64{win.Anchor[0], win.Anchor[1], win.Anchor[0] + win.Shape[0], win.Anchor[1] + win.Shape[1]}
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, b := range boxes {
					v := iouRef(b, wb)
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
				got := hi
				if all {
					got = lo
				}
				if got < thr-1e-9 || len(kept) == 0 {
					t.Fatalf("all=%v threshold %g: window %+v has IoU %g, kept %v", all, thr, win, got, kept)
				}
			}
		}
	}
}

func TestCropperDeterministicAndPrune(t *testing.T) {
	c := Cropper{Thresholds: []float64{0.1, 0.5}, IoU: false, AspectMin: 0.5, AspectMax: 2, ScaleMin: 0.3, ScaleMax: 1,
		Attempts: 10, AllAboveThreshold: false, PruneThreshold: 0.5}
	var gen engine.RNG
	gen.Seed(3)
	boxes := randomBoxes(&gen, 6)
	var r1, r2 engine.RNG
	r1.Seed(11, 4)
	r2.Seed(11, 4)
	w1, k1 := c.Choose(boxes2(boxes), &r1, nil)
	w2, k2 := c.Choose(boxes2(boxes), &r2, nil)
	if w1 != w2 || !reflect.DeepEqual(k1, k2) {
		t.Fatalf("same seed, different windows: %+v %v / %+v %v", w1, k1, w2, k2)
	}
	wb := [4]float64{w1.Anchor[0], w1.Anchor[1], w1.Anchor[0] + w1.Shape[0], w1.Anchor[1] + w1.Shape[1]}
	for i, b := range boxes {
		ix := math.Max(0, math.Min(b[2], wb[2])-math.Max(b[0], wb[0]))
		iy := math.Max(0, math.Min(b[3], wb[3])-math.Max(b[1], wb[1]))
		in := ix * iy / ((b[2] - b[0]) * (b[3] - b[1]))
		keptIt := false
		for _, k := range k1 {
			keptIt = keptIt || k == i
		}
		if keptIt != (in >= 0.5) {
			t.Errorf("box %d: %g of its area inside, kept=%v (bbox_prune_threshold 0.5)", i, in, keptIt)
		}
	}
}

// TestCropperImpossibleTerminates: constraints no window meets end after
// total_num_attempts (or the built-in bound) with the best window or the whole image.
func TestCropperImpossibleTerminates(t *testing.T) {
	// Two far-apart boxes: no window of at most 0.4 of the image has IoU >= 0.9 with both.
	boxes := [][4]float64{{0, 0, 0.1, 0.1}, {0.9, 0.9, 1, 1}}
	for _, total := range []int{0, 100} {
		c := Cropper{Thresholds: []float64{0.9}, IoU: true, AspectMin: 0.5, AspectMax: 2, ScaleMin: 0.3, ScaleMax: 0.4,
			Attempts: 5, TotalAttempts: total, AllAboveThreshold: true, PruneThreshold: -1}
		var rng engine.RNG
		rng.Seed(1)
		win, kept := c.Choose(boxes2(boxes), &rng, nil)
		if !win.NoCrop && len(kept) == 0 {
			t.Errorf("total %d: fallback window %+v keeps no box", total, win)
		}
	}
	// No boxes: any window is valid.
	c := Cropper{Thresholds: []float64{0.9}, IoU: true, AspectMin: 1, AspectMax: 1, ScaleMin: 0.5, ScaleMax: 0.5, Attempts: 1, PruneThreshold: -1}
	var rng engine.RNG
	rng.Seed(2)
	if win, kept := c.Choose(nil, &rng, nil); win.NoCrop || win.Shape != [3]float64{0.5, 0.5} || len(kept) != 0 {
		t.Errorf("no boxes: %+v %v", win, kept)
	}
}

// TestCropperByAspect checks random_bbox_crop's window draw (DALI's rule, which its
// test_random_bbox_crop checks): the longer side within scaling, width/height within
// aspect_ratio, and exactly the ratio when the range is one value.
func TestCropperByAspect(t *testing.T) {
	for _, ar := range [][2]float64{{1, 1}, {0.5, 2}, {0.01, 100}} {
		c := Cropper{Thresholds: []float64{0}, IoU: true, AspectMin: ar[0], AspectMax: ar[1], ScaleMin: 0.3,
			ScaleMax: 0.5, Attempts: 1, AllAboveThreshold: true, PruneThreshold: -1, ByAspect: true}
		var rng engine.RNG
		rng.Seed(3)
		for i := 0; i < 2000; i++ {
			win, _ := c.Choose(nil, &rng, nil)
			w, h := win.Shape[0], win.Shape[1]
			if long := math.Max(w, h); long < 0.3-1e-12 || long > 0.5+1e-12 {
				t.Fatalf("aspect %v: window %+v: longer side outside scaling [0.3, 0.5]", ar, win)
			}
			if r := w / h; r < ar[0]*(1-1e-9) || r > ar[1]*(1+1e-9) {
				t.Fatalf("aspect %v: window %+v has ratio %g", ar, win, r)
			}
			if win.Anchor[0] < 0 || win.Anchor[1] < 0 || win.Anchor[0]+w > 1+1e-12 || win.Anchor[1]+h > 1+1e-12 {
				t.Fatalf("window %+v leaves the image", win)
			}
		}
	}
}

// TestCropperFixedShape: with crop_shape over input_shape every window has exactly that
// relative size, its anchor in [0, 1 - size] (or [1 - size, 0] when larger than the image).
func TestCropperFixedShape(t *testing.T) {
	for _, fixed := range [][2]float64{{0.25, 1.0 / 6}, {1, 1}, {1.5, 4.0 / 3}} {
		c := Cropper{Thresholds: []float64{0, 0.1}, IoU: true, AspectMin: 1, AspectMax: 1, ScaleMin: 1, ScaleMax: 1,
			Attempts: 10, AllAboveThreshold: false, PruneThreshold: -1, ByAspect: true, Fixed: [3]float64{fixed[0], fixed[1]}}
		var gen, rng engine.RNG
		gen.Seed(2)
		rng.Seed(5)
		for i := 0; i < 1000; i++ {
			win, kept := c.Choose(boxes2(randomBoxes(&gen, 3)), &rng, nil)
			if win.NoCrop || win.Shape != [3]float64{fixed[0], fixed[1]} || len(kept) == 0 {
				t.Fatalf("fixed %v: window %+v, kept %v", fixed, win, kept)
			}
			for d := 0; d < 2; d++ {
				lo, hi := math.Min(0, 1-fixed[d]), math.Max(0, 1-fixed[d])
				if win.Anchor[d] < lo-1e-12 || win.Anchor[d] > hi+1e-12 {
					t.Fatalf("fixed %v: anchor %v outside [%g, %g]", fixed, win.Anchor, lo, hi)
				}
			}
		}
	}
}
