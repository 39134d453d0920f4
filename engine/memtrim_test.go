package engine

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkersGiveBackLargeBuffers (issue 9, case 4): after a sample that needed buffers
// above TrimBytes (a 5000x5000 image: 75 MB decoded, the same again as the PNG
// decoder's staging), no worker keeps them; smaller ones stay for reuse. Intermediates
// from the host pool (bigBuffer and up) are unmapped, not kept in the pool: a pool that
// kept one per size class met grew a run over 2000 bad images to 3 GB.
func TestWorkersGiveBackLargeBuffers(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.png")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, image.NewRGBA(image.Rect(0, 0, 5000, 5000))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	small := filepath.Join(dir, "small.jpg")
	writeJPEG(t, small, 64, 48, 0)
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q, %q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "resize", "name": "rs", "inputs": ["img"], "outputs": ["out"], "args": {"resize_x": 8, "resize_y": 8}}],
		"outputs": ["out"]}`, big, small))
	eachBatch(t, p, func(*Batch) {})
	if st := p.Pool().Stats(); st.ReservedBytes > TrimBytes || st.Allocations == 0 {
		t.Errorf("host pool after the run: %+v; the 75 MB decode buffer should be unmapped", st)
	}
	kept := 0
	for _, w := range p.workers {
		for _, ls := range w.big {
			for _, l := range ls {
				if l != nil {
					t.Errorf("a worker keeps a %d-byte pooled buffer", len(l.mem))
				}
			}
		}
		for _, outs := range w.bufs {
			for _, b := range outs {
				if cap(b) > TrimBytes {
					t.Errorf("a worker keeps a %d-byte buffer", cap(b))
				}
				kept += cap(b)
			}
		}
		for _, ws := range w.ws {
			for _, o := range ws.Out {
				if cap(o.Data) > TrimBytes {
					t.Errorf("node %s's tensor still views a %d-byte buffer", ws.Node, cap(o.Data))
				}
			}
		}
		for _, s := range w.states {
			if d, ok := s.(interface{ ScratchBytes() int }); ok && d.ScratchBytes() > TrimBytes {
				t.Errorf("a decoder keeps %d bytes of scratch", d.ScratchBytes())
			}
		}
	}
	if kept == 0 {
		t.Error("the small sample's buffers should stay for reuse")
	}
}
