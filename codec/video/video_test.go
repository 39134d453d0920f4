package video

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/internal/testref"
	"github.com/godali/godali/internal/videotest"
)

func needFFmpeg(t *testing.T) {
	t.Helper()
	if err := Load(); err != nil {
		testref.Missing(t, "FFmpeg libraries not loadable: %v", err)
	}
}

// maxDiff is the largest absolute difference between two byte slices.
func maxDiff(a, b []byte) int {
	m := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		m = max(m, d)
	}
	return m
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// checkSequences reads random sequences of path and compares every frame with the ffmpeg
// command's decoding of the whole file: the same libraries' decoder and converter, so
// the frames must be equal.
func checkSequences(t *testing.T, path string, nseq int) {
	t.Helper()
	f, err := Open(path, 1)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ref := videotest.RGBFrames(t, path, f.Info.Width, f.Info.Height)
	if ix.Len() != len(ref) {
		t.Fatalf("%s: index has %d frames, ffmpeg decodes %d", path, ix.Len(), len(ref))
	}
	fb := f.FrameBytes()
	rng := rand.New(rand.NewSource(1))
	// The whole file in order first (the continuing path), then random sequences (seeks
	// back and forth).
	all := make([]byte, ix.Len()*fb)
	if err := f.ReadFrames(ix, 0, ix.Len(), 1, all); err != nil {
		t.Fatalf("%s: all frames: %v", path, err)
	}
	for i := range ref {
		if !bytes.Equal(all[i*fb:(i+1)*fb], ref[i]) {
			t.Fatalf("%s: frame %d differs from ffmpeg's (max diff %d, first at byte %d of %d)", path, i, maxDiff(all[i*fb:(i+1)*fb], ref[i]), firstDiff(all[i*fb:(i+1)*fb], ref[i]), fb)
		}
	}
	for s := 0; s < nseq; s++ {
		count := 1 + rng.Intn(min(6, ix.Len()))
		stride := 1 + rng.Intn(3)
		for (count-1)*stride >= ix.Len() {
			stride--
		}
		first := rng.Intn(ix.Len() - (count-1)*stride)
		dst := make([]byte, count*fb)
		if err := f.ReadFrames(ix, first, count, stride, dst); err != nil {
			t.Fatalf("%s: frames %d+%d*%d: %v", path, first, count, stride, err)
		}
		for k := 0; k < count; k++ {
			if !bytes.Equal(dst[k*fb:(k+1)*fb], ref[first+k*stride]) {
				t.Fatalf("%s: sequence at %d (count %d stride %d): frame %d differs from ffmpeg's (max diff %d)",
					path, first, count, stride, first+k*stride, maxDiff(dst[k*fb:(k+1)*fb], ref[first+k*stride]))
			}
		}
	}
}

func TestCodecsMatchFFmpegCommand(t *testing.T) {
	testref.Long(t, "encodes a clip per codec")
	needFFmpeg(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		spec videotest.Spec
	}{
		{"h264", videotest.Spec{}},
		{"h264_bframes", videotest.Spec{BFrames: 3, GOP: 12, Frames: 40}},
		{"h264_odd_size_mkv", videotest.Spec{W: 50, H: 38, Ext: "mkv", BFrames: 2}},
		{"hevc", videotest.Spec{Codec: "libx265", BFrames: 2}},
		{"vp9", videotest.Spec{Codec: "libvpx-vp9", Ext: "webm"}},
		{"av1", videotest.Spec{Codec: "libaom-av1", Ext: "mkv", W: 64, H: 64, Frames: 12, GOP: 6}},
		{"mjpeg", videotest.Spec{Codec: "mjpeg", Ext: "avi", Frames: 12}},
		{"hevc_10bit", videotest.Spec{Codec: "libx265", PixFmt: "yuv420p10le", Frames: 12}},
		{"h264_444", videotest.Spec{PixFmt: "yuv444p", Frames: 12}},
		{"h264_bt709_full", videotest.Spec{Frames: 12, Extra: []string{"-colorspace", "bt709", "-color_range", "pc"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := videotest.Make(t, dir, c.name, c.spec)
			checkSequences(t, p, 25)
		})
	}
}

// Variable frame rate: frames are indexed by their timestamps, so sequences are exact.
func TestVariableFrameRate(t *testing.T) {
	needFFmpeg(t)
	// Drop every third frame of a 25 fps source and keep the timestamps: intervals
	// alternate between 1 and 2 frame durations.
	p := videotest.Make(t, t.TempDir(), "vfr", videotest.Spec{Frames: 45, BFrames: 2,
		Extra: []string{"-vf", "select='not(eq(mod(n\\,3)\\,2))'", "-fps_mode", "vfr"}})
	f, err := Open(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := f.Scan()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !ix.VariableRate() {
		t.Fatalf("VariableRate() = false for intervals %v", ix.PTS[:6])
	}
	checkSequences(t, p, 20)
}

// Rotation metadata is reported, not applied (as PyAV and DALI): the frames are the
// coded ones.
func TestRotationReportedNotApplied(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	src := videotest.Make(t, dir, "plain", videotest.Spec{})
	rot := filepath.Join(dir, "rot.mp4")
	ff := videotest.FFmpeg(t)
	videotest.Run(t, ff, "-i", src, "-c", "copy", "-metadata:s:v:0", "rotate=90", rot)
	f, err := Open(rot, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Info.Rotation != 90 && f.Info.Rotation != -90 {
		t.Fatalf("rotation %v, want ±90", f.Info.Rotation)
	}
	if f.Info.Width != 64 || f.Info.Height != 48 {
		t.Fatalf("size %dx%d, want the coded 64x48", f.Info.Width, f.Info.Height)
	}
	checkSequences(t, rot, 5)
}

func TestShortFile(t *testing.T) {
	needFFmpeg(t)
	p := videotest.Make(t, t.TempDir(), "one", videotest.Spec{Frames: 1})
	checkSequences(t, p, 3)
}

func TestTruncatedAndCorrupt(t *testing.T) {
	testref.Long(t, "decodes many damaged clips")
	needFFmpeg(t)
	dir := t.TempDir()
	src := videotest.Make(t, dir, "mkvsrc", videotest.Spec{Ext: "mkv", Frames: 40})
	// A Matroska file cut in the middle: the index lists what is left, reading past it
	// fails or ends early, never crashes.
	cut := filepath.Join(dir, "cut.mkv")
	st, _ := os.Stat(src)
	videotest.Truncate(t, src, cut, int(st.Size()/2))
	if f, err := Open(cut, 1); err == nil {
		ix, err := f.Scan()
		if err == nil {
			if ix.Len() >= 40 {
				t.Errorf("truncated file indexes %d frames", ix.Len())
			}
			dst := make([]byte, ix.Len()*f.FrameBytes())
			_ = f.ReadFrames(ix, 0, ix.Len(), 1, dst) // the last frame may be partial: an error or concealment
		}
		f.Close()
	}
	// An MP4 cut before its index (moov at the end with the default muxer): refused.
	mp4 := videotest.Make(t, dir, "mp4src", videotest.Spec{})
	st, _ = os.Stat(mp4)
	cut4 := filepath.Join(dir, "cut.mp4")
	videotest.Truncate(t, mp4, cut4, int(st.Size()*3/4))
	if f, err := Open(cut4, 1); err == nil {
		_, err = f.Scan()
		f.Close()
		if err == nil {
			t.Log("truncated mp4 opened and scanned (its index survived)")
		}
	} else if !strings.Contains(err.Error(), "not a video container") {
		t.Errorf("truncated mp4: %v", err)
	}
	// Garbage and an empty input.
	junk := filepath.Join(dir, "junk.mp4")
	os.WriteFile(junk, bytes.Repeat([]byte("not a video "), 100), 0o644)
	if _, err := Open(junk, 1); err == nil {
		t.Error("garbage opened as a video")
	}
	if _, err := OpenBytes(nil, 1); err == nil {
		t.Error("empty bytes opened as a video")
	}
	// Damaged packets in the middle: decoding may conceal, error out, or miss frames, but
	// returns.
	b, _ := os.ReadFile(src)
	rng := rand.New(rand.NewSource(3))
	for i := len(b) / 3; i < len(b)*2/3; i += 97 {
		b[i] = byte(rng.Intn(256))
	}
	f, err := OpenBytes(b, 1)
	if err != nil {
		return
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		return
	}
	dst := make([]byte, ix.Len()*f.FrameBytes())
	if err := f.ReadFrames(ix, 0, ix.Len(), 1, dst); err != nil && !errors.Is(err, ErrFrame) && !strings.Contains(err.Error(), "decoding") {
		t.Errorf("corrupt file: unexpected error %v", err)
	}
}

func TestOpenBytesMatchesPath(t *testing.T) {
	testref.Long(t, "encodes a clip per container")
	needFFmpeg(t)
	p := videotest.Make(t, t.TempDir(), "mem", videotest.Spec{BFrames: 2})
	b, _ := os.ReadFile(p)
	f, err := OpenBytes(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatal(err)
	}
	ref := videotest.RGBFrames(t, p, 64, 48)
	dst := make([]byte, 3*f.FrameBytes())
	if err := f.ReadFrames(ix, 17, 3, 2, dst); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 3; k++ {
		if !bytes.Equal(dst[k*f.FrameBytes():(k+1)*f.FrameBytes()], ref[17+2*k]) {
			t.Fatalf("frame %d differs", 17+2*k)
		}
	}
	// Reopening reuses the copy buffer.
	if err := f.ReopenBytes(b, 1); err != nil {
		t.Fatal(err)
	}
}

// Steady-state reading allocates nothing on the Go heap.
func TestReadFramesAllocs(t *testing.T) {
	needFFmpeg(t)
	p := videotest.Make(t, t.TempDir(), "alloc", videotest.Spec{Frames: 40})
	f, err := Open(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 4*f.FrameBytes())
	starts := []int{3, 21, 12, 30}
	n := 0
	allocs := testing.AllocsPerRun(20, func() {
		if err := f.ReadFrames(ix, starts[n%len(starts)], 4, 2, dst); err != nil {
			t.Fatal(err)
		}
		n++
	})
	if allocs != 0 {
		t.Fatalf("ReadFrames allocates %.1f times per call", allocs)
	}
}

func TestLoadErrorNamesLibraries(t *testing.T) {
	if !strings.Contains(Hint(), "libavcodec.so.") || !strings.Contains(Hint(), LibDirEnv) {
		t.Fatalf("hint %q", Hint())
	}
	if _, err := findLib(t.TempDir(), "libavcodec", "libavcodec.so.59"); err == nil || !strings.Contains(err.Error(), "libavcodec.so.59") {
		t.Fatalf("findLib in an empty dir: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "libavcodec-1a2b3c.so.59.37.100"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "libavcodec-1a2b3c.so.60.1.100"), nil, 0o644)
	if p, err := findLib(dir, "libavcodec", "libavcodec.so.59"); err != nil || !strings.HasSuffix(p, ".so.59.37.100") {
		t.Fatalf("findLib PyAV-style: %q %v", p, err)
	}
}

// A reused File switching between files allocates nothing on the Go heap either.
func TestReopenAllocs(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	paths := []string{videotest.Make(t, dir, "a", videotest.Spec{Frames: 20}), videotest.Make(t, dir, "b", videotest.Spec{Frames: 20})}
	f := &File{}
	defer f.Close()
	var ixs []*Index
	for _, p := range paths {
		if err := f.Reopen(p, 1); err != nil {
			t.Fatal(err)
		}
		ix, err := f.Scan()
		if err != nil {
			t.Fatal(err)
		}
		ixs = append(ixs, ix)
	}
	dst := make([]byte, 4*64*48*3)
	n := 0
	allocs := testing.AllocsPerRun(10, func() {
		k := n % 2
		if err := f.Reopen(paths[k], 1); err != nil {
			t.Fatal(err)
		}
		if err := f.ReadFrames(ixs[k], 5+n%7, 4, 2, dst); err != nil {
			t.Fatal(err)
		}
		n++
	})
	if allocs != 0 {
		t.Fatalf("Reopen + ReadFrames allocates %.1f times per call", allocs)
	}
}

// Annex B packets (what NVDEC's parser reads): one per frame, each starting with a start
// code, the key frames carrying their parameter sets (H.264 SPS, NAL type 7; HEVC VPS,
// type 32), with the index's timestamps; after SeekKey the packets resume at that key frame.
func TestAnnexBPackets(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	for _, c := range []struct {
		spec    videotest.Spec
		nalType func(b byte) int
	}{
		{videotest.Spec{Frames: 12, GOP: 5, BFrames: 2}, func(b byte) int { return int(b & 0x1f) }},
		{videotest.Spec{Frames: 12, GOP: 5, Codec: "libx265", Ext: "mkv"}, func(b byte) int { return int(b>>1) & 0x3f }},
	} {
		path := videotest.Make(t, dir, c.spec.Codec, c.spec)
		f, err := Open(path, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ix, err := f.Scan()
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AnnexB(); err != nil {
			t.Fatal(err)
		}
		want := 7 // SPS
		if f.Info.Codec == "hevc" {
			want = 32 // VPS
		}
		var p Packet
		var pts []int64
		for {
			ok, err := f.NextPacket(&p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			b := unsafe.Slice((*byte)(p.Data), p.Size)
			if p.Size < 5 || !(bytes.HasPrefix(b, []byte{0, 0, 0, 1}) || bytes.HasPrefix(b, []byte{0, 0, 1})) {
				t.Fatalf("%s: packet %d does not start with a start code: % x", f.Info.Codec, len(pts), b[:min(8, len(b))])
			}
			if p.Key {
				var types []int
				for i := 0; i+3 < len(b); i++ {
					if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
						types = append(types, c.nalType(b[i+3]))
					}
				}
				if !slices.Contains(types, want) {
					t.Fatalf("%s: key packet %d has NAL types %v, no %d (parameter sets)", f.Info.Codec, len(pts), types, want)
				}
			}
			pts = append(pts, p.PTS)
		}
		if len(pts) != ix.Len() {
			t.Fatalf("%s: %d packets, the index has %d frames", f.Info.Codec, len(pts), ix.Len())
		}
		slices.Sort(pts)
		if !slices.Equal(pts, ix.PTS) {
			t.Fatalf("%s: packet timestamps %v, index %v", f.Info.Codec, pts, ix.PTS)
		}
		k, err := f.SeekKey(ix, 7)
		if err != nil || k != 5 {
			t.Fatalf("%s: SeekKey(7) = %d, %v; want key frame 5", f.Info.Codec, k, err)
		}
		if ok, err := f.NextPacket(&p); !ok || err != nil || !p.Key || ix.FrameOf(p.PTS) != 5 {
			t.Fatalf("%s: after SeekKey: ok %v err %v key %v frame %d", f.Info.Codec, ok, err, p.Key, ix.FrameOf(p.PTS))
		}
	}
}

// DecodeSpan decodes from the key frame before first through last: with key frames every
// 10 frames, frames 12..15 take the decoder's 10..15 (B-frames reordered), 20..20 one.
func TestDecodeSpan(t *testing.T) {
	needFFmpeg(t)
	videotest.FFmpeg(t)
	f, err := Open(videotest.Make(t, t.TempDir(), "span", videotest.Spec{Frames: 30, BFrames: 2}), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ first, last, want int }{{12, 15, 6}, {20, 20, 1}, {3, 29, 30}, {9, 9, 10}} {
		if n, err := f.DecodeSpan(ix, c.first, c.last); err != nil || n != c.want {
			t.Errorf("DecodeSpan(%d, %d) = %d, %v; want %d frames", c.first, c.last, n, err, c.want)
		}
	}
	if _, err := f.DecodeSpan(ix, 5, 30); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("past the end: %v", err)
	}
}

// Frames before a sequence, and between its frames, that no other frame refers to
// (H.264's non-reference B-frames) are not decoded; the delivered frames are ffmpeg's,
// whether the reader seeks or goes on decoding.
func TestSkipNonReference(t *testing.T) {
	needFFmpeg(t)
	p := videotest.Make(t, t.TempDir(), "nonref", videotest.Spec{Frames: 36, GOP: 12, BFrames: 3})
	f, err := Open(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := f.Scan()
	if err != nil {
		t.Fatal(err)
	}
	ref := videotest.RGBFrames(t, p, f.Info.Width, f.Info.Height)
	fb := f.FrameBytes()
	dst := make([]byte, 12*fb)
	// Seeking to frame 12 for 22 and 23, going on for 26 and 28, seeking for 10 and 11,
	// then for every third frame from 0: without skipping the decoder returns 12, 5, 12
	// and 34 frames for them, here 8, 4, 8 and 28.
	for _, c := range []struct{ first, count, stride, most int }{{22, 2, 1, 10}, {26, 2, 2, 4}, {10, 2, 1, 10}, {0, 12, 3, 30}} {
		f.decoded = 0
		if err := f.ReadFrames(ix, c.first, c.count, c.stride, dst); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < c.count; k++ {
			if !bytes.Equal(dst[k*fb:(k+1)*fb], ref[c.first+k*c.stride]) {
				t.Fatalf("frames from %d: frame %d differs from ffmpeg's", c.first, c.first+k*c.stride)
			}
		}
		if f.decoded > c.most {
			t.Errorf("frames from %d (stride %d): the decoder returned %d frames; with the non-reference frames not delivered skipped, at most %d", c.first, c.stride, f.decoded, c.most)
		}
	}
	checkSequences(t, p, 20)
}
