//go:build cuda

package nvdec

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/internal/cuda"
	_ "github.com/godali/godali/internal/cuda/cudatest" // skips this binary without a GPU
	"github.com/godali/godali/internal/testref"
	"github.com/godali/godali/internal/videotest"
	"github.com/godali/godali/kernels"
)

// Tolerance of NVDEC + godali_nv12_rgb against FFmpeg's decoder + swscale (the CPU
// path) for the same colour matrix. The decoded Y'CbCr is the same (H.264 and HEVC
// decoding is exact, and neither side interpolates chroma); the conversions differ:
// godali's rounds a float result to nearest, swscale's unscaled 4:2:0 converter works
// in 16-bit fixed point and truncates, so it sits about half a level lower (on the
// emulator: max 3, mean 0.79 to 0.87 on testsrc2 clips, BT.601 limited and BT.709 full).
const (
	maxAbsDiff  = 3
	maxMeanDiff = 1.2
)

type gpuEnv struct {
	dev    *cuda.Device
	mod    *kernels.Module
	stream cuda.Stream
}

func newGPUEnv(t *testing.T) *gpuEnv {
	t.Helper()
	if err := video.Load(); err != nil {
		testref.Missing(t, "FFmpeg libraries not loadable: %v", err)
	}
	videotest.FFmpeg(t)
	if err := Load(); err != nil {
		if os.Getenv("GODALI_REQUIRE_GPU") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	g := &gpuEnv{dev: dev}
	if g.mod, err = kernels.Load(dev); err != nil {
		t.Fatal(err)
	}
	if g.stream, err = dev.NewStream(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dev.DestroyStream(g.stream)
		_ = g.mod.Close()
		_ = dev.Close()
	})
	return g
}

// decode reads frames (first, count, stride) of path on the GPU and returns them.
func (g *gpuEnv) decode(t *testing.T, d *Decoder, f *video.File, ix *video.Index, first, count, stride int) ([]byte, error) {
	t.Helper()
	n := count * f.FrameBytes()
	dst, err := g.dev.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer g.dev.Free(dst)
	if err := d.ReadFrames(f, ix, first, count, stride, dst, g.stream); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if err := g.dev.CopyDtoH(out, dst); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func compare(got, want []byte) (maxd int, mean float64) {
	sum := 0
	for i := range got {
		d := int(got[i]) - int(want[i])
		if d < 0 {
			d = -d
		}
		sum += d
		maxd = max(maxd, d)
	}
	return maxd, float64(sum) / float64(len(got))
}

// The same clips as the CPU path's tests (H.264 with B-frames, HEVC, a size NVDEC crops
// from its coded size, BT.709 full range), sequences read in any order, against
// video.File.ReadFrames (FFmpeg + swscale) within the tolerance above.
func TestNVDECMatchesCPU(t *testing.T) {
	g := newGPUEnv(t)
	dir := t.TempDir()
	clips := []videotest.Spec{
		{Frames: 26, GOP: 8, BFrames: 2},
		{Frames: 20, GOP: 6, Codec: "libx265", Ext: "mkv", W: 64, H: 64},
		{Frames: 12, GOP: 5, W: 72, H: 40},
		{Frames: 12, GOP: 4, Extra: []string{"-vf", "scale=out_color_matrix=bt709:out_range=full", "-color_range", "pc", "-colorspace", "bt709"}},
	}
	var paths []string
	for ci, spec := range clips {
		paths = append(paths, videotest.Make(t, dir, fmt.Sprintf("c%d", ci), spec))
	}
	// Rotation metadata (a display matrix of 90 degrees) on clip 0's stream: not applied,
	// as on the CPU and in DALI; the frames keep their coded size.
	rot := dir + "/rot.mp4"
	videotest.Run(t, videotest.FFmpeg(t), "-i", paths[0], "-c", "copy", "-metadata:s:v:0", "rotate=90", rot)
	paths = append(paths, rot)
	for ci, path := range paths {
		cpu, err := video.Open(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := cpu.Scan()
		if err != nil {
			t.Fatal(err)
		}
		gf, err := video.Open(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDecoder(g.dev, g.mod, gf.Info.Codec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		if ci == 4 && (gf.Info.Rotation == 0 || gf.Info.Width != 64 || gf.Info.Height != 48) {
			t.Fatalf("rotated clip: rotation %v, size %dx%d; want the metadata and the coded 64x48", gf.Info.Rotation, gf.Info.Width, gf.Info.Height)
		}
		n := ix.Len()
		for _, sq := range [][3]int{{0, 4, 1}, {n - 5, 5, 1}, {2, 4, 3}, {1, 1, 1}, {0, n, 1}} {
			want := make([]byte, sq[1]*cpu.FrameBytes())
			if err := cpu.ReadFrames(ix, sq[0], sq[1], sq[2], want); err != nil {
				t.Fatal(err)
			}
			got, err := g.decode(t, d, gf, ix, sq[0], sq[1], sq[2])
			if err != nil {
				t.Fatalf("clip %d (%s), frames %v: %v", ci, gf.Info.Codec, sq, err)
			}
			maxd, mean := compare(got, want)
			t.Logf("clip %d (%s %dx%d, colour space %d, full range %v), frames %v: max diff %d, mean %.3f",
				ci, gf.Info.Codec, gf.Info.Width, gf.Info.Height, gf.Info.ColorSpace, gf.Info.FullRange, sq, maxd, mean)
			if maxd > maxAbsDiff || mean > maxMeanDiff {
				t.Errorf("clip %d, frames %v: differs from the CPU path by up to %d (mean %.3f), tolerance %d (%.1f)",
					ci, sq, maxd, mean, maxAbsDiff, maxMeanDiff)
			}
		}
		gf.Close()
		cpu.Close()
	}
}

// Streams NVDEC cannot output as NV12 (10-bit HEVC), codecs it lacks, and a truncated
// file fail with errors that say so; the decoder still works afterwards.
func TestNVDECRefusals(t *testing.T) {
	g := newGPUEnv(t)
	dir := t.TempDir()
	if _, err := NewDecoder(g.dev, g.mod, "mjpeg"); err == nil || !strings.Contains(err.Error(), "mjpeg") {
		t.Errorf("mjpeg: %v", err)
	}
	ten := videotest.Make(t, dir, "ten", videotest.Spec{Frames: 4, Codec: "libx265", Ext: "mkv", PixFmt: "yuv420p10le"})
	f, err := video.Open(ten, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecoder(g.dev, g.mod, f.Info.Codec)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := g.decode(t, d, f, ix, 0, 2, 1); err == nil || !strings.Contains(err.Error(), "10 bits") {
		t.Errorf("10-bit HEVC: %v, want an error naming the bit depth", err)
	}

	good := videotest.Make(t, dir, "good", videotest.Spec{Frames: 30, GOP: 30, Ext: "mkv"})
	st, err := os.Stat(good)
	if err != nil {
		t.Fatal(err)
	}
	cut := dir + "/cut.mkv"
	videotest.Truncate(t, good, cut, int(st.Size()*2/3))
	tf, err := video.Open(cut, 1)
	if err != nil {
		t.Skipf("the truncated file does not open: %v", err)
	}
	defer tf.Close()
	tix, err := tf.Scan()
	if err != nil {
		t.Skipf("the truncated file does not index: %v", err)
	}
	hd, err := NewDecoder(g.dev, g.mod, "h264")
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	if _, err := g.decode(t, hd, tf, tix, 0, tix.Len(), 1); err == nil {
		t.Log("the truncated file decoded (its packets were whole)")
	} else if !errors.Is(err, video.ErrFrame) && !strings.Contains(err.Error(), "NVDEC") {
		t.Errorf("truncated file: %v", err)
	}
	gf, err := video.Open(good, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	gix, _ := gf.Scan()
	if _, err := g.decode(t, hd, gf, gix, 5, 3, 1); err != nil {
		t.Fatalf("after a failed read: %v", err)
	}
}
