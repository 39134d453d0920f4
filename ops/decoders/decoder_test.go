package decoders

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// resnetJSON is the ResNet-50 training pipeline of the engine's tests.
func resnetJSON(root string, threads, batch, depth int) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": %d, "device_id": null, "seed": 12, "prefetch_queue_depth": %d,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "random_shuffle": true, "pad_last_batch": true}},
	 {"op": "decoders.image_random_crop", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"],
	  "args": {"output_type": "RGB", "random_aspect_ratio": [0.8, 1.25], "random_area": [0.1, 1.0], "num_attempts": 100}},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_x": 224, "resize_y": 224, "interp_type": "INTERP_TRIANGULAR"}},
	 {"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"], "args": {"probability": 0.5}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "arg_inputs": {"mirror": "mirror"}, "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [224, 224], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": ["out", "labels"]}`, batch, threads, depth, root)
}

func TestFusionAndHints(t *testing.T) {
	p, err := engine.NewPipeline([]byte(resnetJSON("/nonexistent", 2, 8, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range p.Graph.Nodes {
		ops = append(ops, n.OpName)
	}
	if strings.Contains(strings.Join(ops, ","), "resize") {
		t.Errorf("resize was not fused into crop_mirror_normalize: %v", ops)
	}
	for _, n := range p.Graph.Nodes {
		if d, ok := n.Op.(*cpuDecoder); ok && d.consumer == nil {
			t.Errorf("decoder was not told its consumer's size")
		}
	}
	if m := p.Graph.Outputs[0].Meta; !m.Static() || m.Shape[0] != 3 || m.Shape[1] != 224 || m.DType != engine.Float32 {
		t.Errorf("output meta %+v, want static [3 224 224] float", m)
	}
}

// TestDCTDownscaleOff: dct_downscale=false leaves the random-crop decoder without its
// consumer's size, so it decodes every window at full size (PIL's pixels).
func TestDCTDownscaleOff(t *testing.T) {
	js := strings.Replace(resnetJSON("/nonexistent", 2, 8, 1), `"num_attempts": 100`, `"num_attempts": 100, "dct_downscale": false`, 1)
	p, err := engine.NewPipeline([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range p.Graph.Nodes {
		if d, ok := n.Op.(*cpuDecoder); ok {
			found = true
			if d.consumer != nil || d.dctScale {
				t.Errorf("dct_downscale=false: the decoder still downscales (consumer %v)", d.consumer)
			}
		}
	}
	if !found {
		t.Fatal("no cpu decoder in the pipeline")
	}
}

// TestLikePILOrientation: like_pil applies the EXIF orientation only where PIL's
// Image.open does (TIFF), whatever adjust_orientation says; without it,
// adjust_orientation decides for every format.
func TestLikePILOrientation(t *testing.T) {
	formats := []codec.Format{codec.FormatJPEG, codec.FormatPNG, codec.FormatWebP, codec.FormatTIFF}
	for _, c := range []struct {
		likePIL, adjust bool
		want            []bool
	}{
		{false, true, []bool{true, true, true, true}},
		{false, false, []bool{false, false, false, false}},
		{true, true, []bool{false, false, false, true}},
		{true, false, []bool{false, false, false, true}},
	} {
		d := &cpuDecoder{likePIL: c.likePIL, orient: c.adjust}
		for i, f := range formats {
			if got := d.orients(codec.Info{Format: f, Orientation: 6}); got != c.want[i] {
				t.Errorf("like_pil=%v adjust_orientation=%v %s: orients %v, want %v", c.likePIL, c.adjust, f, got, c.want[i])
			}
		}
	}
}

// valJSON is the validation pipeline: decode, shorter side to 256, centre crop 224;
// extra adds operators and outputs lists the pipeline's outputs.
func valJSON(cmnArgs, extra, outputs string) string {
	return fmt.Sprintf(`{"batch_size": 4, "num_threads": 1, "device_id": null, "seed": 12,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": "/nonexistent"}},
	 {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"], "args": {"output_type": "RGB"}},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_shorter": 256, "interp_type": "INTERP_TRIANGULAR"}},
	 %s
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "outputs": ["out"], %s
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [224, 224], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": [%s]}`, extra, cmnArgs, outputs)
}

// valDecoder builds the pipeline and returns its decoder.
func valDecoder(t *testing.T, js string) *cpuDecoder {
	t.Helper()
	p, err := engine.NewPipeline([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, n := range p.Graph.Nodes {
		if d, ok := n.Op.(*cpuDecoder); ok {
			return d
		}
	}
	t.Fatal("no cpu decoder in the pipeline")
	return nil
}

// TestValWindow: in the validation pipeline decoders.image decodes only the window the
// fused resize + centre crop reads (python/tests/test_val_window.py checks the outputs
// bit for bit); not when its image is also a pipeline output, nor when the crop's place
// is drawn per sample.
func TestValWindow(t *testing.T) {
	d := valDecoder(t, valJSON("", "", `"out", "labels"`))
	if d.reader == nil {
		t.Fatal("the decoder was not told that its consumer reads a window")
	}
	st := &decoderState{}
	d.readWindow(st, 500, 375) // resized to 341x256, crop x in [59, 283), y in [16, 240)
	roi := st.opt.ROI
	if !st.opt.Embed || roi.X < 80 || roi.X > 88 || roi.X+roi.W < 415 || roi.X+roi.W > 422 || roi.Y < 18 || roi.Y > 25 || roi.Y+roi.H < 351 || roi.Y+roi.H > 357 {
		t.Errorf("500x375 image: window %+v (embed %v), want about x [86, 415), y [22, 352) plus the filter's reach", roi, st.opt.Embed)
	}
	if d := valDecoder(t, valJSON("", "", `"out", "images"`)); d.reader != nil {
		t.Error("the decoder's image is a pipeline output, yet it decodes a window")
	}
	rnd := `{"op": "random.uniform", "name": "pos", "outputs": ["px"], "args": {"range": [0, 1]}},`
	d = valDecoder(t, valJSON(`"arg_inputs": {"crop_pos_x": "px"},`, rnd, `"out"`))
	st = &decoderState{}
	if d.reader != nil {
		d.readWindow(st, 500, 375)
	}
	if st.opt.Embed {
		t.Errorf("crop_pos_x drawn per sample, yet the decoder decodes the window %+v", st.opt.ROI)
	}
}
