package engine

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/godali/godali/codec/video"
)

// BenchmarkVideoFloor is BenchmarkVideoPipeline against its decode floor. It runs the
// pipeline for b.N batches (the process's CPU per delivered frame, godali-ms/frame),
// noting each clip's file and first frame; then decodes exactly those clips again with
// FFmpeg's decoder alone, single-threaded, each from the key frame at or before its first
// frame through its last, converting nothing (video.File.DecodeSpan: demuxing and
// decoding; files opened beforehand, the seek counted), in thread CPU time per delivered
// frame (floor-ms/frame). ratio is godali's over the floor's; decoded/frame is how many
// frames the floor decodes per frame it delivers.
func BenchmarkVideoFloor(b *testing.B) {
	files := benchVideos(b)
	p := mustPipeline(b, videoBenchJSON(b, files, true))
	type clip struct{ file, first int }
	var clips []clip
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := nextBatch(b, p)
		for s := 0; s < out.Size(); s++ {
			var c [2]int
			for k := range c {
				v, err := out.Output(1 + k).SampleView(s)
				if err != nil {
					b.Fatal(err)
				}
				c[k] = int(int32(binary.LittleEndian.Uint32(unsafe.Slice((*byte)(v.Ptr), 4))))
				v.Lease.Release()
			}
			clips = append(clips, clip{c[0], c[1]})
		}
	}
	godali := float64(processCPU(b)-cpu0) / 1e6 / float64(len(clips)*16)
	b.StopTimer()
	p.Close()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	vfs := make([]*video.File, len(files))
	ixs := make([]*video.Index, len(files))
	for i, path := range files {
		f, err := video.Open(path, 1)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if ixs[i], err = f.Scan(); err != nil {
			b.Fatal(err)
		}
		vfs[i] = f
	}
	decoded := 0
	t0 := threadCPU()
	for _, c := range clips {
		n, err := vfs[c.file].DecodeSpan(ixs[c.file], c.first, c.first+15)
		if err != nil {
			b.Fatalf("%s, frames %d..%d: %v", files[c.file], c.first, c.first+15, err)
		}
		decoded += n
	}
	floor := float64(threadCPU()-t0) / 1e6 / float64(len(clips)*16)
	b.ReportMetric(floor, "floor-ms/frame")
	b.ReportMetric(godali, "godali-ms/frame")
	b.ReportMetric(godali/floor, "ratio")
	b.ReportMetric(float64(decoded)/float64(len(clips)*16), "decoded/frame")
}
