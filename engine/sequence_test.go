package engine

import (
	"fmt"
	"testing"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/internal/testref"
	"github.com/godali/godali/internal/videotest"
)

// Sequences: image operators get the frame-by-frame wrapper, crop_mirror_normalize still
// absorbs resize, and the output keeps its frame dimension and a static shape.
func TestSequenceWrapperAndFusion(t *testing.T) {
	if err := video.Load(); err != nil {
		testref.Missing(t, "FFmpeg libraries not loadable: %v", err)
	}
	clip := videotest.Make(t, t.TempDir(), "a", videotest.Spec{Frames: 12})
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "device_id": null, "seed": 1,
	 "ops": [
	  {"op": "readers.video", "name": "R", "outputs": ["v"], "args": {"filenames": [%q], "sequence_length": 4}},
	  {"op": "resize", "name": "rs", "inputs": ["v"], "outputs": ["r"], "args": {"resize_x": 40, "resize_y": 30}},
	  {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["r"], "outputs": ["o"],
	   "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [24, 24]}}],
	 "outputs": ["o"]}`, clip)
	p, err := NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := len(p.Graph.Nodes); n != 2 {
		t.Fatalf("%d nodes after fusion, want 2 (reader, cmn with resize)", n)
	}
	if _, ok := p.Graph.Nodes[1].Op.(*frameOp); !ok {
		t.Fatalf("cmn on sequences is %T, want the frame wrapper", p.Graph.Nodes[1].Op)
	}
	m := p.Graph.Outputs[0].Meta
	if m.Layout != "FCHW" || !m.Static() || fmt.Sprint(m.Shape) != "[4 3 24 24]" {
		t.Fatalf("output meta %+v, want static FCHW [4 3 24 24]", m)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Output(0).SampleShape(1); fmt.Sprint(s) != "[4 3 24 24]" {
		t.Fatalf("sample shape %v", s)
	}
}
