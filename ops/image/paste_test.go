package image_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
)

// TestPastePlacesImageOnCanvas: a 3x5x3 image pasted with ratio 2 at (0.25, 1) lies at
// row int(1 * (6 - 3)) = 3, column int(0.25 * (10 - 5)) = 1 of a 6x10 canvas of
// fill_value; min_canvas_size 12 makes a 12x12 canvas with the image centered.
func TestPastePlacesImageOnCanvas(t *testing.T) {
	const h, w, c = 3, 5, 3
	img := make([]int, h*w*c)
	for i := range img {
		img[i] = 1 + i
	}
	d, _ := json.Marshal(img)
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "prefetch_queue_depth": 1, "ops": [
		{"op": "constant", "name": "im", "outputs": ["im"], "args": {"idata": %s, "shape": [3, 5, 3], "dtype": "UINT8", "layout": "HWC"}},
		{"op": "paste", "name": "a", "inputs": ["im"], "outputs": ["a"], "args": {"ratio": 2, "paste_x": 0.25, "paste_y": 1, "fill_value": [200, 201, 202]}},
		{"op": "paste", "name": "b", "inputs": ["im"], "outputs": ["b"], "args": {"ratio": 1, "fill_value": [9], "min_canvas_size": 12}}
	], "outputs": ["a", "b"]}`, d)
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
	for k, want := range []struct {
		ch, cw, y, x int
		fill         [3]byte
	}{{6, 10, 3, 1, [3]byte{200, 201, 202}}, {12, 12, 4, 3, [3]byte{9, 9, 9}}} {
		v, err := b.Output(k).SampleView(0)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(v.Shape) != fmt.Sprint([]int64{int64(want.ch), int64(want.cw), c}) {
			t.Fatalf("paste %d: shape %v", k, v.Shape)
		}
		got := unsafe.Slice((*byte)(v.Ptr), want.ch*want.cw*c)
		for y := 0; y < want.ch; y++ {
			for x := 0; x < want.cw; x++ {
				for ch := 0; ch < c; ch++ {
					e := want.fill[ch]
					if iy, ix := y-want.y, x-want.x; iy >= 0 && iy < h && ix >= 0 && ix < w {
						e = byte(img[(iy*w+ix)*c+ch])
					}
					if g := got[(y*want.cw+x)*c+ch]; g != e {
						t.Fatalf("paste %d: pixel (%d, %d, %d) = %d, want %d", k, y, x, ch, g, e)
					}
				}
			}
		}
		v.Lease.Release()
	}
}
