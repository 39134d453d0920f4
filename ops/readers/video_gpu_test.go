//go:build cuda

package readers

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/cuda"
	_ "github.com/godali/godali/internal/cuda/cudatest" // skips this binary without a GPU
	"github.com/godali/godali/internal/videotest"
	"github.com/godali/godali/nvdec"
)

// readVideoBatch runs readers.video on device over one batch and returns each sample's
// outputs on the host.
func readVideoBatch(t *testing.T, device, args string, batch int) [][]sample {
	t.Helper()
	devID := "null"
	if device != "cpu" {
		devID = "0"
	}
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "device_id": %s, "seed": 3,
	  "ops": [{"op": "readers.video", "name": "R", "device": %q, "outputs": ["v", "l", "n", "t"], "args": %s}],
	  "outputs": ["v", "l", "n", "t"]}`, batch, devID, device, args)
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
	out := make([][]sample, b.Size())
	for i := range out {
		for k := 0; k < b.NumOutputs(); k++ {
			v, err := b.Output(k).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, d := range v.Shape {
				n *= int(d)
			}
			data := make([]byte, n)
			if v.Dev != nil {
				if err := v.Dev.Sync(); err != nil {
					t.Fatal(err)
				}
				dev, err := cuda.Open(v.DeviceID)
				if err != nil {
					t.Fatal(err)
				}
				if err := dev.CopyDtoH(data, v.DevPtr); err != nil {
					t.Fatal(err)
				}
				_ = dev.Close()
				v.Dev.Release()
			} else {
				t.Fatalf("device %s: output %d is not GPU memory", device, k)
			}
			out[i] = append(out[i], sample{v.DType, v.Shape, data})
		}
	}
	return out
}

// readers.video on the GPU gives the cpu reader's sequences: NVDEC's frames (H.264 with
// B-frames) within the conversion's tolerance (3 levels), the CPU route's (VP8) exactly,
// padding, labels, frame numbers and timestamps equal.
func TestGPUVideoReaderMatchesCPU(t *testing.T) {
	if err := nvdec.Load(); err != nil {
		if os.Getenv("GODALI_REQUIRE_GPU") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	needVideo(t)
	dir := t.TempDir()
	a := videotest.Make(t, dir, "a", videotest.Spec{Frames: 17, GOP: 6, BFrames: 2})
	b := videotest.Make(t, dir, "b", videotest.Spec{Frames: 9, Codec: "libvpx", Ext: "webm", W: 32, H: 24})
	args := fmt.Sprintf(`{"filenames": %s, "labels": [4, 9], "sequence_length": 4, "step": 3, "stride": 2,
		"pad_sequences": true, "enable_frame_num": true, "enable_timestamps": true}`, jsonList(a, b))
	const batch = 9 // a: starts 0..15 step 3 (6), b: 0, 3, 6 (3)
	want := readAll(t, "readers.video", args, 4, batch)
	got := readVideoBatch(t, "mixed", args, batch)
	for i := range want {
		for k := range want[i] {
			w, g := want[i][k], got[i][k]
			if fmt.Sprint(w.shape) != fmt.Sprint(g.shape) || w.dtype != g.dtype {
				t.Fatalf("sample %d output %d: %s %v, cpu %s %v", i, k, g.dtype, g.shape, w.dtype, w.shape)
			}
			if k > 0 {
				if !bytes.Equal(w.data, g.data) {
					t.Errorf("sample %d output %d differs from the cpu reader's", i, k)
				}
				continue
			}
			maxd := 0
			for j := range w.data {
				d := int(w.data[j]) - int(g.data[j])
				maxd = max(maxd, d, -d)
			}
			t.Logf("sample %d: max diff %d", i, maxd)
			if maxd > 3 {
				t.Errorf("sample %d: frames differ from the cpu reader's by up to %d", i, maxd)
			}
		}
	}
	if _, err := engine.NewPipeline([]byte(`{"batch_size": 1, "device_id": 0, "ops": [{"op": "readers.video", "name": "R",
		"device": "mixed", "outputs": ["v"], "args": {"filenames": ["` + a + `"], "sequence_length": 2, "dtype": "FLOAT"}}],
		"outputs": ["v"]}`)); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("dtype FLOAT on the GPU: %v", err)
	}
}
