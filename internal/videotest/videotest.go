// Package videotest makes the videos the video tests read, with the distribution's
// ffmpeg command (scripts/setup.sh installs it), and decodes them with it as the
// independent reference. Nothing is downloaded.
package videotest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/godali/godali/internal/testref"
)

// Spec describes a synthetic clip: FFmpeg's testsrc2 pattern (moving, coloured, with a
// frame counter), so that every frame differs from its neighbours.
type Spec struct {
	Codec   string   // ffmpeg encoder: libx264 (default), libx265, libvpx-vp9, libaom-av1, mjpeg...
	Ext     string   // container extension: mp4 (default), mkv, webm, avi
	W, H    int      // 64x48 by default
	Frames  int      // 30 by default
	Rate    int      // frames per second, 25 by default
	GOP     int      // key frame interval (-g), 10 by default
	BFrames int      // -bf (H.264/HEVC), 0 by default
	Extra   []string // more output options (e.g. a VFR filter, rotation metadata)
	PixFmt  string   // the encoder's pixel format (default yuv420p; yuvj420p for mjpeg)
}

// FFmpeg returns the ffmpeg command's path, skipping the test when it is absent.
func FFmpeg(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		testref.Missing(t, "ffmpeg command not installed (scripts/setup.sh installs it): the video tests make their clips with it")
	}
	return p
}

// Make encodes the clip into dir/name and returns its path.
func Make(t testing.TB, dir, name string, s Spec) string {
	t.Helper()
	ff := FFmpeg(t)
	if s.Codec == "" {
		s.Codec = "libx264"
	}
	if s.Ext == "" {
		s.Ext = "mp4"
	}
	if s.W == 0 {
		s.W, s.H = 64, 48
	}
	if s.Frames == 0 {
		s.Frames = 30
	}
	if s.Rate == 0 {
		s.Rate = 25
	}
	if s.GOP == 0 {
		s.GOP = 10
	}
	pix := s.PixFmt
	if pix == "" {
		pix = "yuv420p"
		if s.Codec == "mjpeg" {
			pix = "yuvj420p"
		}
	}
	out := filepath.Join(dir, name+"."+s.Ext)
	args := []string{"-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
		"-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=%d", s.W, s.H, s.Rate),
		"-frames:v", strconv.Itoa(s.Frames), "-c:v", s.Codec, "-g", strconv.Itoa(s.GOP)}
	switch s.Codec {
	case "libx264":
		args = append(args, "-pix_fmt", pix, "-bf", strconv.Itoa(s.BFrames), "-preset", "ultrafast", "-threads", "1")
	case "libx265":
		args = append(args, "-pix_fmt", pix, "-x265-params", fmt.Sprintf("log-level=error:bframes=%d:pools=1:frame-threads=1", s.BFrames))
	case "libvpx-vp9":
		args = append(args, "-pix_fmt", pix, "-deadline", "realtime", "-cpu-used", "8", "-threads", "1")
	case "libaom-av1":
		args = append(args, "-pix_fmt", pix, "-cpu-used", "8", "-threads", "1", "-row-mt", "0")
	case "mjpeg":
		args = append(args, "-pix_fmt", pix)
	}
	args = append(args, s.Extra...)
	args = append(args, out)
	cmd := exec.Command(ff, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, msg)
	}
	return out
}

// RGBFrames decodes every frame of path with the ffmpeg command as packed RGB24, in
// presentation order, one frame per timestamp (no frame rate conversion), converting
// with swscale's bilinear setting as godali does; ffmpeg's automatic rotation is off.
func RGBFrames(t testing.TB, path string, w, h int) [][]byte {
	t.Helper()
	ff := FFmpeg(t)
	cmd := exec.Command(ff, "-hide_banner", "-loglevel", "error", "-noautorotate", "-i", path,
		"-fps_mode", "passthrough", "-sws_flags", "bilinear", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg decoding %s: %v\n%s", path, err, stderr.String())
	}
	fb := w * h * 3
	b := out.Bytes()
	if len(b)%fb != 0 {
		t.Fatalf("ffmpeg gave %d bytes for %dx%d frames", len(b), w, h)
	}
	var frames [][]byte
	for i := 0; i+fb <= len(b); i += fb {
		frames = append(frames, b[i:i+fb])
	}
	return frames
}

// Truncate writes the first keep bytes of src to dst.
func Truncate(t testing.TB, src, dst string, keep int) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if keep > len(b) {
		keep = len(b)
	}
	if err := os.WriteFile(dst, b[:keep], 0o644); err != nil {
		t.Fatal(err)
	}
}

// Run runs the ffmpeg command (ff) with args, failing the test on an error.
func Run(t testing.TB, ff string, args ...string) {
	t.Helper()
	args = append([]string{"-hide_banner", "-loglevel", "error", "-y"}, args...)
	if msg, err := exec.Command(ff, args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, msg)
	}
}

// Resize rewrites the frame size an MJPEG AVI (Spec{Codec: "mjpeg", Ext: "avi"})
// declares, without touching its few bytes of picture data: with header, the AVI's main
// and stream headers (avih, strf) say w x h; with frames, every JPEG's SOF0 does. A
// decoder reading such a file learns of frames of w x h before any pixel, which is how
// the tests make a file that declares 16000x16000 frames in a few kilobytes.
func Resize(t testing.TB, path string, w, h int, header, frames bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := func(at, v int) {
		b[at], b[at+1], b[at+2], b[at+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if header {
		i, j := bytes.Index(b, []byte("avih")), bytes.Index(b, []byte("strf"))
		if i < 0 || j < 0 {
			t.Fatalf("%s: no avih or strf chunk: not an AVI", path)
		}
		le(i+8+32, w) // MainAVIHeader dwWidth, dwHeight
		le(i+8+36, h)
		le(j+8+4, w) // BITMAPINFOHEADER biWidth, biHeight
		le(j+8+8, h)
	}
	if frames {
		n := 0
		for i := bytes.Index(b, []byte{0xff, 0xc0}); i >= 0; {
			// FF C0, length (2), precision (1), height (2), width (2), big-endian
			b[i+5], b[i+6], b[i+7], b[i+8] = byte(h>>8), byte(h), byte(w>>8), byte(w)
			n++
			k := bytes.Index(b[i+2:], []byte{0xff, 0xc0})
			if k < 0 {
				break
			}
			i += 2 + k
		}
		if n == 0 {
			t.Fatalf("%s: no JPEG SOF0 marker", path)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
