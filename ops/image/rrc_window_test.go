package image_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// TestRandomResizedCropReadsOnlyTheWindow: random_resized_crop resamples its window as an
// image of its own, as torchvision crops before it resizes: the output equals imaging's
// resize of the window copied out, even though the rows just outside the window are
// white (a resampler reading past the window's edges would blend them in). The window is
// made deterministic: area 1 with an unreachable aspect ratio fails every attempt and
// falls back to the centred 60x20 crop at row 10. The generic (float) path agrees
// within its rounding.
func TestRandomResizedCropReadsOnlyTheWindow(t *testing.T) {
	const h, w, c = 40, 60, 3
	const oh, ow = 7, 9
	img := make([]int, h*w*c)
	for i := range img {
		y := i / (w * c)
		img[i] = 255
		if y >= 10 && y < 30 {
			img[i] = (i * 37) % 200
		}
	}
	d, _ := json.Marshal(img)
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "prefetch_queue_depth": 1, "ops": [
		{"op": "constant", "name": "im", "outputs": ["im"], "args": {"idata": %s, "shape": [%d, %d, %d], "dtype": "UINT8", "layout": "HWC"}},
		{"op": "random_resized_crop", "name": "a", "inputs": ["im"], "outputs": ["a"], "args": {"size": [%d, %d], "random_area": [1, 1], "random_aspect_ratio": [3, 3], "interp_type": "INTERP_LINEAR"}},
		{"op": "random_resized_crop", "name": "b", "inputs": ["im"], "outputs": ["b"], "args": {"size": [%d, %d], "random_area": [1, 1], "random_aspect_ratio": [3, 3], "interp_type": "INTERP_LINEAR", "dtype": "FLOAT"}}
	], "outputs": ["a", "b"]}`, d, h, w, c, oh, ow, oh, ow)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	win := make([]byte, 0, w*20*c)
	for y := 10; y < 30; y++ {
		for x := 0; x < w*c; x++ {
			win = append(win, byte(img[y*w*c+x]))
		}
	}
	want := make([]byte, oh*ow*c)
	if err := imaging.NewResizePlan(w, 20, imaging.FullROI(w, 20), ow, oh, imaging.InterpLinear, true, nil).Resize(want, win, c, nil); err != nil {
		t.Fatal(err)
	}
	va, err := b.Output(0).SampleView(0)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := b.Output(1).SampleView(0)
	if err != nil {
		t.Fatal(err)
	}
	got := unsafe.Slice((*byte)(va.Ptr), len(want))
	gotF := unsafe.Slice((*float32)(vb.Ptr), len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("uint8: element %d (row %d) = %d, want %d", i, i/(ow*c), got[i], want[i])
		}
		if math.Abs(float64(gotF[i])-float64(want[i])) > 1 {
			t.Fatalf("float: element %d (row %d) = %g, want %d within 1", i, i/(ow*c), gotF[i], want[i])
		}
	}
}
