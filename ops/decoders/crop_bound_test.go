package decoders

import (
	"bytes"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/godali/godali/engine"
)

// TestRandomCropBound: the memory plan's bound of the random-crop decoder's output
// (ProbeImage, from the header only) is at least every output Setup makes over many
// draws of the window, and far below the whole image when the consumer lets the decoder
// scale down in the DCT domain (the training pipeline's resize to 224x224).
func TestRandomCropBound(t *testing.T) {
	for _, dct := range []bool{true, false} {
		js := resnetJSON("/nonexistent", 1, 8, 1)
		if !dct {
			js = strings.Replace(js, `"num_attempts": 100`, `"num_attempts": 100, "dct_downscale": false`, 1)
		}
		p, err := engine.NewPipeline([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		var d *cpuDecoder
		for _, n := range p.Graph.Nodes {
			if op, ok := n.Op.(*cpuDecoder); ok {
				d = op
			}
		}
		if d == nil || (d.consumer != nil) != dct {
			t.Fatalf("dct %v: decoder %v", dct, d)
		}
		for _, size := range [][2]int{{1500, 1100}, {700, 1300}, {460, 470}, {2000, 300}} {
			var enc bytes.Buffer
			if err := jpeg.Encode(&enc, image.NewRGBA(image.Rect(0, 0, size[0], size[1])), nil); err != nil {
				t.Fatal(err)
			}
			h, err := d.ProbeImage(enc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			whole := int64(size[0]) * int64(size[1]) * 3
			st := d.NewWorkerState().(*decoderState)
			in := &engine.Tensor{DType: engine.UInt8, Data: enc.Bytes()}
			in.SetShape(enc.Len())
			out := &engine.Tensor{}
			ws := &engine.Workspace{In: []*engine.Tensor{in}, Out: []*engine.Tensor{out}, State: st,
				RNG: &engine.RNG{}, Limits: &engine.Limits{}}
			var most int64
			for i := uint64(0); i < 20000; i++ {
				ws.RNG.Seed(i)
				if err := d.Setup(ws); err != nil {
					t.Fatal(err)
				}
				most = max(most, int64(out.Shape[0]*out.Shape[1]*out.Shape[2]))
			}
			st.Close()
			if most > h.OutBytes || h.OutBytes > whole {
				t.Errorf("dct %v, %dx%d: largest output of 20000 draws %d bytes, bound %d, whole image %d",
					dct, size[0], size[1], most, h.OutBytes, whole)
			}
			if dct && size[0] >= 1500 && h.OutBytes > whole*2/3 {
				t.Errorf("%dx%d: bound %d bytes is not below two thirds of the whole image (%d): the DCT scaling is not counted",
					size[0], size[1], h.OutBytes, whole)
			}
			t.Logf("dct %v, %dx%d: largest of 20000 draws %d, bound %d (%.2f), whole %d", dct, size[0], size[1], most, h.OutBytes, float64(h.OutBytes)/float64(most), whole)
		}
	}
}
