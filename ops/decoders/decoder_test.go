package decoders

import (
	"fmt"
	"strings"
	"testing"

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
