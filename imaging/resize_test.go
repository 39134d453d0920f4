package imaging

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

type refTap struct {
	idx int
	w   float64
}

// refWeights is a direct float64 transcription of the sampling rules in the package
// documentation: output i is centred on source coordinate x0 + (i+0.5)*scale - 0.5,
// the filter is widened by the scale factor when downscaling with antialiasing, taps
// outside the image are dropped and the rest renormalised, and an output with no tap
// inside the image repeats the nearest edge pixel.
func refWeights(in int, x0, x1 float64, out int, interp Interp, antialias bool) [][]refTap {
	scale := (x1 - x0) / float64(out)
	fs := math.Abs(scale)
	if fs < 1 || !antialias {
		fs = 1
	}
	support := interp.support() * fs
	taps := make([][]refTap, out)
	for i := range taps {
		center := x0 + (float64(i)+0.5)*scale - 0.5
		var ts []refTap
		sum := 0.0
		for j := int(math.Floor(center - support)); j <= int(math.Ceil(center+support)); j++ {
			if j < 0 || j >= in {
				continue
			}
			w := interp.weight((float64(j) - center) / fs)
			if w != 0 {
				ts = append(ts, refTap{j, w})
				sum += w
			}
		}
		if sum == 0 {
			ts = []refTap{{min(max(int(math.Floor(center+0.5)), 0), in-1), 1}}
			sum = 1
		}
		for k := range ts {
			ts[k].w /= sum
		}
		taps[i] = ts
	}
	return taps
}

func round8(v float64) byte { return byte(math.Min(math.Max(math.Floor(v+0.5), 0), 255)) }

// refResize is a float64 reference of the separable resampling (horizontal pass first,
// intermediate rounded to uint8); nearest neighbour is PIL's: the source position starts
// at x0 + scale/2 and advances by adding scale (not (i+0.5)*scale, which differs at ties).
func refResize(src []byte, w, h, c int, roi [4]float64, dw, dh int, interp Interp, antialias bool) []byte {
	out := make([]byte, dw*dh*c)
	if interp == InterpNN {
		nearest := func(n int, a, b float64, m int) []int {
			a, b = float64(float32(a)), float64(float32(b))
			scale := float64(float32(b)-float32(a)) / float64(m)
			idx, pos := make([]int, m), a+scale*0.5
			for i := range idx {
				idx[i] = min(max(int(math.Floor(pos)), 0), n-1)
				pos += scale
			}
			return idx
		}
		ys, xs := nearest(h, roi[1], roi[3], dh), nearest(w, roi[0], roi[2], dw)
		for y := 0; y < dh; y++ {
			sy := ys[y]
			for x := 0; x < dw; x++ {
				sx := xs[x]
				copy(out[(y*dw+x)*c:(y*dw+x+1)*c], src[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
		return out
	}
	hw := refWeights(w, roi[0], roi[2], dw, interp, antialias)
	vw := refWeights(h, roi[1], roi[3], dh, interp, antialias)
	tmp := make([]byte, dw*h*c)
	for y := 0; y < h; y++ {
		for x := 0; x < dw; x++ {
			for ch := 0; ch < c; ch++ {
				s := 0.0
				for _, t := range hw[x] {
					s += t.w * float64(src[(y*w+t.idx)*c+ch])
				}
				tmp[(y*dw+x)*c+ch] = round8(s)
			}
		}
	}
	for y := 0; y < dh; y++ {
		for x := 0; x < dw; x++ {
			for ch := 0; ch < c; ch++ {
				s := 0.0
				for _, t := range vw[y] {
					s += t.w * float64(tmp[(t.idx*dw+x)*c+ch])
				}
				out[(y*dw+x)*c+ch] = round8(s)
			}
		}
	}
	return out
}

// TestResizeMatchesReference covers what PIL cannot check: ROIs beyond the image,
// flipped ROIs, antialiasing switched off, nearest neighbour and channel counts other
// than 1 and 3. The float64 reference rounds the intermediate exactly where the
// fixed-point kernels do, so results may differ only through the 22-bit weights: at
// most 1 level for the triangle filter and 2 for cubic and Lanczos (negative lobes
// amplify an intermediate rounding difference), with a mean below 0.05 (exact .5 ties, common at rational scales, break either
// way under fixed point). NN must match
// exactly.
func TestResizeMatchesReference(t *testing.T) {
	const w, h = 97, 83
	fw, fh := float64(w), float64(h)
	rois := []refCase{
		{"full_down", FullROI(w, h), 40, 31},
		{"full_up", FullROI(w, h), 150, 170},
		{"partly_outside", [4]float64{-20.5, -10, fw + 15, fh + 7.25}, 50, 45},
		{"fully_outside", [4]float64{fw + 5, -30, fw + 50, -2}, 20, 10},
		{"flip_x", [4]float64{fw, 0, 0, fh}, 41, 83},
		{"flip_y_window", [4]float64{10, 70.5, 60, 5}, 30, 20},
		{"flip_both_up", [4]float64{fw, fh, 0, 0}, 120, 100},
		{"degenerate_roi", [4]float64{30.25, 10, 30.25, 60}, 12, 25},
		{"down_3x", FullROI(w, h), 32, 27},
	}
	var s Scratch
	defer func(v bool) { pairedVertical = v }(pairedVertical)
	for _, paired := range []bool{true, false} {
		// false: the byte-wise vertical pass used on big-endian machines.
		pairedVertical = paired
		testResizeMatchesReference(t, &s, rois)
	}
}

type refCase struct {
	name   string
	roi    [4]float64
	dw, dh int
}

func testResizeMatchesReference(t *testing.T, s *Scratch, rois []refCase) {
	const w, h = 97, 83
	for _, c := range []int{1, 2, 3, 4, 5} {
		src := testImage(w, h, c, uint64(10+c))
		for _, r := range rois {
			for _, interp := range []Interp{InterpNN, InterpLinear, InterpTriangular, InterpCubic, InterpLanczos3} {
				for _, aa := range []bool{false, true} {
					name := fmt.Sprintf("paired=%v/c%d/%s/%v/aa=%v", pairedVertical, c, r.name, interp, aa)
					want := refResize(src, w, h, c, r.roi, r.dw, r.dh, interp, aa)
					got := make([]byte, len(want))
					p := NewResizePlan(w, h, r.roi, r.dw, r.dh, interp, aa, s)
					if err := p.Resize(got, src, c, s); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					mean, maxd := diffStats(got, want, r.dw, r.dh, c, 0)
					limit := 1
					switch interp {
					case InterpNN:
						limit = 0
					case InterpCubic, InterpLanczos3:
						limit = 2
					}
					if maxd > limit || mean > 0.05 {
						t.Errorf("%s: mean abs diff %.4f (<= 0.05), max %d (<= %d)", name, mean, maxd, limit)
					}
				}
			}
		}
	}
}

// TestResizeFlippedROI: resampling a flipped ROI equals flipping the resampled image,
// up to 1 level (the mirrored sample positions are computed with different rounding).
func TestResizeFlippedROI(t *testing.T) {
	const w, h = 120, 90
	src := testImage(w, h, 3, 5)
	roi := [4]float64{7.5, 3, 101, 80.25}
	flipped := [4]float64{roi[2], roi[3], roi[0], roi[1]}
	for _, interp := range []Interp{InterpTriangular, InterpCubic, InterpLanczos3} {
		a := make([]byte, 50*40*3)
		b := make([]byte, len(a))
		fb := make([]byte, len(a))
		if err := NewResizePlan(w, h, roi, 50, 40, interp, true, nil).Resize(a, src, 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := NewResizePlan(w, h, flipped, 50, 40, interp, true, nil).Resize(b, src, 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := Flip(fb, b, 50, 40, 3, true, true); err != nil {
			t.Fatal(err)
		}
		if mean, maxd := diffStats(a, fb, 50, 40, 3, 0); maxd > 1 || mean > 0.01 {
			t.Errorf("%v: flipped ROI vs flipped output: mean %.4f (<= 0.01), max %d (<= 1)", interp, mean, maxd)
		}
	}
}

func TestResizeRejectsBadArguments(t *testing.T) {
	src := make([]byte, 10*10*3)
	dst := make([]byte, 5*5*3)
	bad := []struct {
		name string
		p    *ResizePlan
		c    int
		dst  []byte
		src  []byte
	}{
		{"zero source", NewResizePlan(0, 10, FullROI(10, 10), 5, 5, InterpLinear, true, nil), 3, dst, src},
		{"zero output", NewResizePlan(10, 10, FullROI(10, 10), 0, 5, InterpLinear, true, nil), 3, dst, src},
		{"NaN roi", NewResizePlan(10, 10, [4]float64{0, math.NaN(), 10, 10}, 5, 5, InterpLinear, true, nil), 3, dst, src},
		{"huge roi", NewResizePlan(10, 10, [4]float64{0, 0, 1e300, 10}, 5, 5, InterpLinear, true, nil), 3, dst, src},
		{"bad interp", NewResizePlan(10, 10, FullROI(10, 10), 5, 5, Interp(99), true, nil), 3, dst, src},
		{"short src", NewResizePlan(10, 10, FullROI(10, 10), 5, 5, InterpLinear, true, nil), 3, dst, src[:299]},
		{"short dst", NewResizePlan(10, 10, FullROI(10, 10), 5, 5, InterpLinear, true, nil), 3, dst[:74], src},
		{"zero channels", NewResizePlan(10, 10, FullROI(10, 10), 5, 5, InterpLinear, true, nil), 0, dst, src},
	}
	for _, b := range bad {
		if err := b.p.Resize(b.dst, b.src, b.c, nil); err == nil {
			t.Errorf("%s: Resize accepted it", b.name)
		}
	}
}

func TestParseInterp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Interp
	}{
		{"INTERP_TRIANGULAR", InterpTriangular}, {"TRIANGULAR", InterpTriangular}, {"linear", InterpLinear},
		{"INTERP_NN", InterpNN}, {"cubic", InterpCubic}, {"Lanczos3", InterpLanczos3},
	} {
		got, err := ParseInterp(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseInterp(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParseInterp(got.String()); err != nil || back != got {
			t.Errorf("ParseInterp(%q.String()) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "GAUSSIAN", "bilinear"} {
		if _, err := ParseInterp(bad); err == nil {
			t.Errorf("ParseInterp(%q) accepted it", bad)
		}
	}
}

// TestResizeStrided: a window of a larger image resized through its stride equals the
// window copied out and resized as an image of its own (PIL's crop then resize), also
// for a window in the bottom-right corner, whose last row ends the buffer.
func TestResizeStrided(t *testing.T) {
	const w, h, c = 97, 61, 3
	src := make([]byte, w*h*c)
	for i := range src {
		src[i] = byte(i*7 + i/5)
	}
	for _, r := range [][4]int{{0, 0, 40, 30}, {13, 7, 50, 41}, {w - 33, h - 20, 33, 20}, {5, 3, 1, 1}} {
		x, y, ww, wh := r[0], r[1], r[2], r[3]
		win := make([]byte, 0, ww*wh*c)
		for j := y; j < y+wh; j++ {
			win = append(win, src[(j*w+x)*c:(j*w+x+ww)*c]...)
		}
		for _, interp := range []Interp{InterpNN, InterpLinear, InterpCubic, InterpLanczos3} {
			for _, out := range [][2]int{{17, 11}, {64, 45}, {ww, wh}} {
				p := NewResizePlan(ww, wh, FullROI(ww, wh), out[0], out[1], interp, true, nil)
				want := make([]byte, out[0]*out[1]*c)
				got := make([]byte, len(want))
				if err := p.Resize(want, win, c, nil); err != nil {
					t.Fatal(err)
				}
				if err := p.ResizeStrided(got, src[(y*w+x)*c:], c, w*c, nil); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("window %v to %v, %v: strided resize differs", r, out, interp)
				}
			}
		}
	}
	p := NewResizePlan(10, 10, FullROI(10, 10), 5, 5, InterpLinear, true, nil)
	if err := p.ResizeStrided(make([]byte, 75), make([]byte, 300), 3, 20, nil); err == nil {
		t.Error("a stride shorter than a row was accepted")
	}
	if err := p.ResizeStrided(make([]byte, 75), make([]byte, 9*40+29), 3, 40, nil); err == nil {
		t.Error("a source shorter than its last row was accepted")
	}
}
