package readers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/testref"
	"github.com/godali/godali/internal/videotest"
)

func needVideo(t *testing.T) {
	t.Helper()
	if err := video.Load(); err != nil {
		testref.Missing(t, "FFmpeg libraries not loadable: %v", err)
	}
	videotest.FFmpeg(t)
}

func jsonList(paths ...string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = fmt.Sprintf("%q", p)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// The sequences DALI's rule gives (starts 0, step, ... while start+(L-1)*stride < n),
// each compared frame by frame with the ffmpeg command's decoding.
func TestVideoReaderSequences(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	a := videotest.Make(t, dir, "a", videotest.Spec{Frames: 23, BFrames: 2})
	b := videotest.Make(t, dir, "b", videotest.Spec{Frames: 17, Codec: "libvpx-vp9", Ext: "webm", W: 32, H: 24})
	const L, step, stride = 3, 4, 2
	type want struct {
		file  int
		start int
	}
	var wants []want
	for fi, n := range []int{23, 17} {
		for s := 0; s+(L-1)*stride < n; s += step {
			wants = append(wants, want{fi, s})
		}
	}
	refs := [][][]byte{videotest.RGBFrames(t, a, 64, 48), videotest.RGBFrames(t, b, 32, 24)}
	args := fmt.Sprintf(`{"filenames": %s, "labels": [7, 9], "sequence_length": %d, "step": %d, "stride": %d,
		"enable_frame_num": true, "enable_timestamps": true}`, jsonList(a, b), L, step, stride)
	out := readAll(t, "readers.video", args, 4, len(wants))
	for i, w := range wants {
		s := out[i]
		fb := len(refs[w.file][0])
		if got := s[0].shape; len(got) != 4 || got[0] != L || int(got[1]*got[2]*got[3]) != fb {
			t.Fatalf("sample %d: shape %v", i, got)
		}
		for k := 0; k < L; k++ {
			if !bytes.Equal(s[0].data[k*fb:(k+1)*fb], refs[w.file][w.start+k*stride]) {
				t.Fatalf("sample %d (file %d, start %d): frame %d differs from ffmpeg's", i, w.file, w.start, k)
			}
		}
		label := int32(binary.LittleEndian.Uint32(s[1].data))
		if label != []int32{7, 9}[w.file] {
			t.Errorf("sample %d: label %d", i, label)
		}
		if fn := int32(binary.LittleEndian.Uint32(s[2].data)); int(fn) != w.start {
			t.Errorf("sample %d: frame_num %d, want %d", i, fn, w.start)
		}
		for k := 0; k < L; k++ {
			ts := math.Float32frombits(binary.LittleEndian.Uint32(s[3].data[4*k:]))
			if want := float64(w.start+k*stride) / 25; math.Abs(float64(ts)-want) > 1e-5 {
				t.Errorf("sample %d: timestamp %d = %v, want %v", i, k, ts, want)
			}
		}
	}
}

func TestVideoReaderPadFloatAndList(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	a := videotest.Make(t, dir, "a", videotest.Spec{Frames: 10})
	ref := videotest.RGBFrames(t, a, 64, 48)
	fb := len(ref[0])
	// pad_sequences: starts 0, 4, 8; the last has frames 8, 9 and two zero frames.
	out := readAll(t, "readers.video", fmt.Sprintf(`{"filenames": %s, "sequence_length": 4, "pad_sequences": true,
		"dtype": "FLOAT", "normalized": true, "enable_timestamps": true}`, jsonList(a)), 2, 3)
	last := out[2]
	if last[0].dtype != engine.Float32 {
		t.Fatalf("dtype %v", last[0].dtype)
	}
	for k := 0; k < 4; k++ {
		for j := 0; j < fb; j++ {
			got := math.Float32frombits(binary.LittleEndian.Uint32(last[0].data[4*(k*fb+j):]))
			want := float32(0)
			if k < 2 {
				want = float32(ref[8+k][j]) / 255
			}
			if math.Abs(float64(got-want)) > 1e-6 {
				t.Fatalf("padded sequence frame %d byte %d: %v, want %v", k, j, got, want)
			}
		}
		ts := math.Float32frombits(binary.LittleEndian.Uint32(last[1].data[4*k:]))
		if (k < 2 && math.Abs(float64(ts)-float64(8+k)/25) > 1e-5) || (k >= 2 && ts != -1) {
			t.Errorf("padded sequence timestamp %d = %v", k, ts)
		}
	}
	// file_list with frame ranges: frames [2, 8) of a in sequences of 3 -> starts 2, 5.
	list := filepath.Join(dir, "list.txt")
	os.WriteFile(list, []byte(fmt.Sprintf("%s 5 2 8\n%s 6 0 3\n", a, a)), 0o644)
	out = readAll(t, "readers.video", fmt.Sprintf(`{"file_list": %q, "sequence_length": 3, "file_list_frame_num": true,
		"enable_frame_num": true}`, list), 3, 3)
	for i, w := range []struct{ start, label int }{{2, 5}, {5, 5}, {0, 6}} {
		if fn := int(binary.LittleEndian.Uint32(out[i][2].data)); fn != w.start {
			t.Errorf("list sample %d: frame_num %d, want %d", i, fn, w.start)
		}
		if l := int(binary.LittleEndian.Uint32(out[i][1].data)); l != w.label {
			t.Errorf("list sample %d: label %d, want %d", i, l, w.label)
		}
		if !bytes.Equal(out[i][0].data[:fb], ref[w.start]) {
			t.Errorf("list sample %d: first frame differs", i)
		}
	}
	// Times: [0.1 s, 0.3 s) at 25 fps is frames [ceil(2.5), floor(7.5)) = [3, 7): one
	// sequence of 3, at 3; include_preceding_frame widens it to [2, 8): starts 2 and 5.
	os.WriteFile(list, []byte(fmt.Sprintf("%s 1 0.1 0.3\n", a)), 0o644)
	for _, c := range []struct {
		preceding bool
		starts    []int
	}{{false, []int{3}}, {true, []int{2, 5}}} {
		out = readAll(t, "readers.video", fmt.Sprintf(`{"file_list": %q, "sequence_length": 3, "enable_frame_num": true,
			"file_list_include_preceding_frame": %v, "pad_last_batch": true}`, list, c.preceding), 3, len(c.starts))
		for i, s := range c.starts {
			if fn := int(binary.LittleEndian.Uint32(out[i][2].data)); fn != s {
				t.Errorf("times (preceding=%v): sample %d starts at %d, want %d", c.preceding, i, fn, s)
			}
		}
	}
}

func buildErr(t *testing.T, args string) error {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "device_id": null,
	  "ops": [{"op": "readers.video", "name": "R", "outputs": ["v"], "args": %s}], "outputs": ["v"]}`, args)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return err
	}
	defer p.Close()
	return p.Build()
}

func TestVideoReaderErrors(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	vfr := videotest.Make(t, dir, "vfr", videotest.Spec{Frames: 30,
		Extra: []string{"-vf", "select='not(eq(mod(n\\,3)\\,2))'", "-fps_mode", "vfr"}})
	if err := buildErr(t, fmt.Sprintf(`{"filenames": %s, "sequence_length": 2}`, jsonList(vfr))); err == nil ||
		!strings.Contains(err.Error(), "vfr.mp4") || !strings.Contains(err.Error(), "skip_vfr_check") {
		t.Errorf("VFR video: %v", err)
	}
	if err := buildErr(t, fmt.Sprintf(`{"filenames": %s, "sequence_length": 2, "skip_vfr_check": true}`, jsonList(vfr))); err != nil {
		t.Errorf("VFR video with skip_vfr_check: %v", err)
	}
	junk := filepath.Join(dir, "junk.mp4")
	os.WriteFile(junk, []byte("garbage garbage garbage"), 0o644)
	if err := buildErr(t, fmt.Sprintf(`{"filenames": %s, "sequence_length": 2}`, jsonList(junk))); err == nil || !strings.Contains(err.Error(), "junk.mp4") {
		t.Errorf("garbage file: %v", err)
	}
	short := videotest.Make(t, dir, "short", videotest.Spec{Frames: 3})
	if err := buildErr(t, fmt.Sprintf(`{"filenames": %s, "sequence_length": 5}`, jsonList(short))); err == nil || !strings.Contains(err.Error(), "no sequence") {
		t.Errorf("too short: %v", err)
	}
	if err := buildErr(t, fmt.Sprintf(`{"filenames": %s, "sequence_length": 2, "dtype": "INT16"}`, jsonList(short))); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("dtype: %v", err)
	}
}

// file_root: one label per sorted subdirectory, the files sorted, as readers.file.
func TestVideoReaderFileRoot(t *testing.T) {
	needVideo(t)
	root := t.TempDir()
	for _, c := range []string{"cats", "dogs"} {
		if err := os.Mkdir(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	videotest.Make(t, filepath.Join(root, "dogs"), "d1", videotest.Spec{Frames: 4})
	videotest.Make(t, filepath.Join(root, "cats"), "c2", videotest.Spec{Frames: 4})
	videotest.Make(t, filepath.Join(root, "cats"), "c1", videotest.Spec{Frames: 2})
	out := readAll(t, "readers.video", fmt.Sprintf(`{"file_root": %q, "sequence_length": 2, "enable_frame_num": true}`, root), 3, 5)
	want := []struct{ label, start int }{{0, 0}, {0, 0}, {0, 2}, {1, 0}, {1, 2}} // c1, c2 x2, d1 x2
	for i, w := range want {
		if l := int(binary.LittleEndian.Uint32(out[i][1].data)); l != w.label {
			t.Errorf("sample %d: label %d, want %d", i, l, w.label)
		}
		if s := int(binary.LittleEndian.Uint32(out[i][2].data)); s != w.start {
			t.Errorf("sample %d: frame_num %d, want %d", i, s, w.start)
		}
	}
}
