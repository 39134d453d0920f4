package imaging

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestResizeCropMirrorNormalizeEqualsUnfused: the fused kernel rounds the resampled
// values to uint8 before normalising, exactly like Resize followed by
// CropMirrorNormalize, so the tolerance is zero: the output bytes must be identical.
func TestResizeCropMirrorNormalizeEqualsUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var s Scratch
	for _, c := range []int{1, 3, 4} {
		const w, h = 143, 101
		src := testImage(w, h, c, uint64(20+c))
		for _, interp := range []Interp{InterpNN, InterpTriangular, InterpLinear, InterpCubic, InterpLanczos3} {
			for _, size := range [][2]int{{64, 64}, {224, 170}, {143, 40}, {143, 101}} {
				roi := [4]float64{r.Float64() * 20, r.Float64() * 20, w - r.Float64()*20, h - r.Float64()*20}
				if size == [2]int{143, 101} {
					roi = FullROI(w, h) // both passes skipped
				}
				dw, dh := size[0], size[1]
				resized := make([]byte, dw*dh*c)
				if err := NewResizePlan(w, h, roi, dw, dh, interp, true, nil).Resize(resized, src, c, nil); err != nil {
					t.Fatal(err)
				}
				// A deterministic sample of the option space (every 13th case, a stride
				// coprime with the 8 layout/mirror/pad combinations), so that each
				// combination of interp and size meets every kind of window and flag.
				cases := cmnCases(dw, dh, c, r)
				for i := int(r.IntN(13)); i < len(cases); i += 13 {
					tc := cases[i]
					name := fmt.Sprintf("%v/%dx%d/%s", interp, dw, dh, tc.name)
					want := make([]byte, tc.np.OutBytes(c))
					if err := CropMirrorNormalize(want, resized, dw, dh, c, &tc.np); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					got := make([]byte, len(want))
					for i := range got {
						got[i] = 0x5a
					}
					p := NewResizePlan(w, h, roi, dw, dh, interp, true, &s)
					if err := ResizeCropMirrorNormalize(got, src, w, h, c, p, &tc.np, &s); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%s: fused output differs from Resize + CropMirrorNormalize", name)
					}
				}
			}
		}
	}
}

func TestResizeCropMirrorNormalizeRejectsMismatch(t *testing.T) {
	src := make([]byte, 20*10*3)
	p := NewResizePlan(20, 10, FullROI(20, 10), 8, 8, InterpLinear, true, nil)
	np := NormalizeParams{Scale: 1, CropW: 8, CropH: 8, CHW: true}
	dst := make([]byte, np.OutBytes(3))
	if err := ResizeCropMirrorNormalize(dst, src, 20, 10, 3, p, &np, nil); err != nil {
		t.Fatalf("valid call rejected: %v", err)
	}
	if err := ResizeCropMirrorNormalize(dst, src, 10, 20, 3, p, &np, nil); err == nil {
		t.Error("input size different from the plan's accepted")
	}
	if err := ResizeCropMirrorNormalize(dst[:10], src, 20, 10, 3, p, &np, nil); err == nil {
		t.Error("short output accepted")
	}
}

// TestNoAllocationsInSteadyState: once a Scratch has grown, planning, resizing and
// normalising allocate nothing.
func TestNoAllocationsInSteadyState(t *testing.T) {
	const w, h = 500, 375
	src := testImage(w, h, 3, 1)
	var s Scratch
	roi := [4]float64{12.5, 7, 480, 360}
	np := NormalizeParams{Mean: []float32{123.675, 116.28, 103.53}, Std: []float32{58.395, 57.12, 57.375},
		Scale: 1, CHW: true, Mirror: true, CropW: 224, CropH: 224}
	resized := make([]byte, 224*224*3)
	out := make([]byte, np.OutBytes(3))
	for _, interp := range []Interp{InterpTriangular, InterpNN, InterpLanczos3} {
		for _, typ := range []DType{Float32, Float16, UInt8} {
			np.Out = typ
			run := func() {
				p := NewResizePlan(w, h, roi, 224, 224, interp, true, &s)
				if err := p.Resize(resized, src, 3, &s); err != nil {
					t.Fatal(err)
				}
				if err := CropMirrorNormalize(out, resized, 224, 224, 3, &np); err != nil {
					t.Fatal(err)
				}
				if err := ResizeCropMirrorNormalize(out, src, w, h, 3, p, &np, &s); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if n := testing.AllocsPerRun(20, run); n != 0 {
				t.Errorf("%v/%v: %v allocations per run, want 0", interp, typ, n)
			}
		}
	}
}

// TestResizeCropSourceIsAllThatIsRead: ResizeCropMirrorNormalize's output does not
// change when every source pixel outside ResizeCropSource's window is overwritten, for
// every filter, with and without antialiasing, flipped and cropped ROIs, up- and
// downscaling, crops inside and partly outside the resized image, mirrored or not.
func TestResizeCropSourceIsAllThatIsRead(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 5))
	var s Scratch
	interps := []Interp{InterpNN, InterpTriangular, InterpLinear, InterpCubic, InterpLanczos3}
	for i := range 400 {
		c := []int{1, 3, 4}[i%3]
		w, h := 1+r.IntN(180), 1+r.IntN(180)
		src := testImage(w, h, c, uint64(i))
		roi := FullROI(w, h)
		switch r.IntN(4) {
		case 0: // a sub-window
			roi = [4]float64{r.Float64() * float64(w) / 3, r.Float64() * float64(h) / 3, float64(w) - r.Float64()*float64(w)/3, float64(h) - r.Float64()*float64(h)/3}
		case 1: // flipped horizontally
			roi[0], roi[2] = roi[2], roi[0]
		}
		dw, dh := 1+r.IntN(2*w+8), 1+r.IntN(2*h+8)
		if r.IntN(2) == 0 { // the validation shape: downscale, then a centre crop
			dw, dh = max(1, w*(40+r.IntN(60))/100), max(1, h*(40+r.IntN(60))/100)
		}
		interp, aa := interps[r.IntN(len(interps))], r.IntN(4) != 0
		p := NewResizePlan(w, h, roi, dw, dh, interp, aa, &s)
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		cw, ch := 1+r.IntN(dw), 1+r.IntN(dh)
		np := NormalizeParams{Mean: []float32{120}, Std: []float32{58}, Scale: 1, Out: Float32, CHW: r.IntN(2) == 0, Mirror: r.IntN(2) == 0,
			CropX: r.IntN(dw - cw + 1), CropY: r.IntN(dh - ch + 1), CropW: cw, CropH: ch}
		if r.IntN(5) == 0 { // partly outside (out_of_bounds_policy pad)
			np.CropX, np.CropY = np.CropX-r.IntN(cw+1), np.CropY+r.IntN(ch+1)
		}
		name := fmt.Sprintf("case %d: %dx%dx%d roi %v -> %dx%d %v aa=%v crop %dx%d at (%d,%d)", i, w, h, c, roi, dw, dh, interp, aa, cw, ch, np.CropX, np.CropY)
		want := make([]byte, np.OutBytes(c))
		if err := ResizeCropMirrorNormalize(want, src, w, h, c, p, &np, &s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		x0, y0, x1, y1, ok := ResizeCropSource(p, &np)
		if !ok {
			if np.CropX < dw && np.CropY < dh && np.CropX+cw > 0 && np.CropY+ch > 0 {
				t.Fatalf("%s: no window for a crop that overlaps the image", name)
			}
			continue
		}
		if x0 < 0 || y0 < 0 || x1 > w || y1 > h {
			t.Fatalf("%s: window [%d,%d)x[%d,%d) leaves the image", name, x0, x1, y0, y1)
		}
		poisoned := append([]byte(nil), src...)
		for y := range h {
			for x := range w {
				if x < x0 || x >= x1 || y < y0 || y >= y1 {
					for k := range c {
						poisoned[(y*w+x)*c+k] = byte(r.IntN(256))
					}
				}
			}
		}
		got := make([]byte, len(want))
		p = NewResizePlan(w, h, roi, dw, dh, interp, aa, &s)
		if err := ResizeCropMirrorNormalize(got, poisoned, w, h, c, p, &np, &s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the output depends on pixels outside the window [%d,%d)x[%d,%d)", name, x0, x1, y0, y1)
		}
	}
}
