//go:build cuda

package decoders

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/cuda"
	"github.com/godali/godali/internal/videotest"
	"github.com/godali/godali/nvdec"
)

// decodeVideos runs external_source -> decoders.video on device with args over the
// files (one batch) and returns each sample's frames and shape, on the host.
func decodeVideos(t *testing.T, device, args string, files []string) ([][]byte, [][]int64) {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "device_id": %s, "ops": [
	  {"op": "external_source", "name": "src", "outputs": ["enc"], "args": {"dtype": "UINT8", "ndim": 1}},
	  {"op": "decoders.video", "name": "dec", "device": %q, "inputs": ["enc"], "outputs": ["v"], "args": %s}],
	  "outputs": ["v"]}`, len(files), map[bool]string{true: "0", false: "null"}[device != "cpu"], device, args)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	f := &engine.Feed{DType: engine.UInt8, Copy: true}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Samples = append(f.Samples, engine.FeedSample{Data: b, Shape: []int{len(b)}})
	}
	if err := p.FeedInput("src", f); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var shapes [][]int64
	for i := 0; i < b.Size(); i++ {
		v, err := b.Output(0).SampleView(i)
		if err != nil {
			t.Fatal(err)
		}
		n := 1
		for _, d := range v.Shape {
			n *= int(d)
		}
		shapes = append(shapes, v.Shape)
		buf := make([]byte, n)
		if v.Dev != nil {
			if err := v.Dev.Sync(); err != nil {
				t.Fatal(err)
			}
			dev, err := cuda.Open(v.DeviceID)
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.CopyDtoH(buf, v.DevPtr); err != nil {
				t.Fatal(err)
			}
			_ = dev.Close()
			v.Dev.Release()
		} else {
			copy(buf, unsafe.Slice((*byte)(v.Ptr), n))
			v.Lease.Release()
		}
		out = append(out, buf)
	}
	return out, shapes
}

// decoders.video on "mixed" gives the cpu backend's frames: NVDEC's (H.264 with
// B-frames, HEVC) within the conversion's tolerance (nvdec's tests: 3 levels), the
// CPU route's (MPEG-4 Part 2, 10-bit HEVC: no NV12 from NVDEC) exactly; padding as the
// cpu backend (edge, constant with one value per channel). 10-bit H.264 in MP4, whose
// format only NVDEC's parser finds out, is refused by it and decoded on the CPU.
func TestMixedVideoDecoderMatchesCPU(t *testing.T) {
	if err := nvdec.Load(); err != nil {
		if os.Getenv("GODALI_REQUIRE_GPU") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	needVideoInput(t)
	dir := t.TempDir()
	files := []string{
		videotest.Make(t, dir, "h264", videotest.Spec{Frames: 14, GOP: 5, BFrames: 2}),
		videotest.Make(t, dir, "hevc", videotest.Spec{Frames: 9, GOP: 4, Codec: "libx265", Ext: "mkv"}),
		videotest.Make(t, dir, "mpeg4", videotest.Spec{Frames: 9, GOP: 4, Codec: "mpeg4", Ext: "avi"}),
		videotest.Make(t, dir, "ten", videotest.Spec{Frames: 9, GOP: 4, Codec: "libx265", Ext: "mkv", PixFmt: "yuv420p10le"}),
		// The container does not say the format: NVDEC's parser refuses it, the CPU decodes.
		videotest.Make(t, dir, "ten264", videotest.Spec{Frames: 9, GOP: 4, PixFmt: "yuv420p10le"}),
	}
	exact := []bool{false, false, true, true, true}
	for _, args := range []string{
		`{"start_frame": 2, "stride": 2, "sequence_length": 6, "pad_mode": "edge"}`,
		`{"sequence_length": 12, "fill_value": [10, 200, 30]}`,
		`{"frames": [8, 1, 3, 4]}`,
	} {
		want, wshapes := decodeVideos(t, "cpu", args, files)
		got, gshapes := decodeVideos(t, "mixed", args, files)
		for i := range files {
			if fmt.Sprint(gshapes[i]) != fmt.Sprint(wshapes[i]) {
				t.Fatalf("%s, file %d: shape %v, cpu %v", args, i, gshapes[i], wshapes[i])
			}
			maxd, sum := 0, 0
			for k := range got[i] {
				d := int(got[i][k]) - int(want[i][k])
				if d < 0 {
					d = -d
				}
				maxd, sum = max(maxd, d), sum+d
			}
			mean := float64(sum) / float64(max(len(got[i]), 1))
			t.Logf("%s, file %d: max diff %d, mean %.3f", args, i, maxd, mean)
			if (exact[i] && maxd != 0) || maxd > 3 || mean > 1.2 {
				t.Errorf("%s, file %d: differs from the cpu backend by up to %d (mean %.3f)", args, i, maxd, mean)
			}
		}
	}
}
