package video

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/internal/videotest"
)

// Issue 24: max_image_pixels bounds video frames. A header over the bound is readable
// (indexed) but never decoded; a frame over it is refused by the decoder before it is
// allocated, whatever the header says; a raw stream's probe decodes nothing over it.
func TestMaxPixelsBoundsFrames(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	spec := videotest.Spec{Codec: "mjpeg", Ext: "avi", W: 128, H: 96, Frames: 3}
	avi := videotest.Make(t, dir, "clip", spec)
	f := &File{MaxPixels: 128*96 - 1}
	defer f.Close()
	if err := f.Reopen(avi, 1); err != nil {
		t.Fatal(err)
	}
	err := f.Info.CheckPixels(f.MaxPixels)
	if !errors.Is(err, ErrTooManyPixels) || !strings.Contains(err.Error(), "128x96 = 12288 pixels") ||
		!strings.Contains(err.Error(), "max_image_pixels=12287") {
		t.Fatalf("CheckPixels: %v", err)
	}
	ix, err := f.Scan()
	if err != nil || ix.Len() != 3 {
		t.Fatalf("the index of a stream over the bound: %v, %v", ix, err)
	}
	buf := make([]byte, f.FrameBytes())
	if err := f.ReadFrames(ix, 0, 1, 1, buf); !errors.Is(err, ErrTooManyPixels) {
		t.Fatalf("decoding a frame over the bound: %v", err)
	}
	// at the bound: decoded as before
	f.MaxPixels = 128 * 96
	if err := f.Reopen(avi, 1); err != nil {
		t.Fatal(err)
	}
	if ix, err = f.Scan(); err != nil {
		t.Fatal(err)
	}
	if err := f.ReadFrames(ix, 0, 1, 1, buf); err != nil || f.Info.CheckPixels(f.MaxPixels) != nil {
		t.Fatalf("a frame at the bound: %v", err)
	}

	// A header that says 16x16 over 128x96 JPEGs: the decoder refuses the frame.
	videotest.Resize(t, avi, 16, 16, true, false)
	for _, lim := range []int64{16 * 16, 0} {
		f.MaxPixels = lim
		if err := f.Reopen(avi, 1); err != nil {
			t.Fatal(err)
		}
		if ix, err = f.Scan(); err != nil {
			t.Fatal(err)
		}
		err := f.ReadFrames(ix, 0, 1, 1, make([]byte, f.FrameBytes()))
		switch {
		case lim > 0 && (err == nil || !strings.Contains(err.Error(), "max_image_pixels=256")):
			t.Fatalf("a 128x96 frame behind a 16x16 header, bound 256: %v", err)
		case lim == 0 && (err == nil || !strings.Contains(err.Error(), "differs from the stream's 16x16")):
			t.Fatalf("a 128x96 frame behind a 16x16 header, no bound: %v", err)
		}
	}

	// A raw MJPEG stream has no header size: the probe's decoder is bounded.
	raw := videotest.Make(t, dir, "raw", videotest.Spec{Codec: "mjpeg", Ext: "mjpeg", W: 128, H: 96, Frames: 3})
	f.MaxPixels = 1000
	if err := f.Reopen(raw, 1); !errors.Is(err, ErrTooManyPixels) || !strings.Contains(err.Error(), "max_image_pixels=1000") {
		t.Fatalf("a raw stream over the bound: %v", err)
	}
	f.MaxPixels = 0
	if err := f.Reopen(raw, 1); err != nil || f.Info.Width != 128 || f.Info.Height != 96 {
		t.Fatalf("a raw stream without a bound: %v %+v", err, f.Info)
	}
}

// A file of a few kilobytes whose headers and JPEGs declare 16000x16000 frames: refused
// by the default bound before anything of that size exists.
func TestHugeDeclaredFramesNotDecoded(t *testing.T) {
	needFFmpeg(t)
	avi := videotest.Make(t, t.TempDir(), "huge", videotest.Spec{Codec: "mjpeg", Ext: "avi", W: 16, H: 16, Frames: 2})
	videotest.Resize(t, avi, 16000, 16000, true, true)
	const lim = 178956970 // engine.DefaultMaxImagePixels
	f := &File{MaxPixels: lim}
	defer f.Close()
	if err := f.Reopen(avi, 1); err != nil {
		t.Fatal(err)
	}
	if f.Info.Width != 16000 || f.Info.Height != 16000 {
		t.Fatalf("info %+v", f.Info)
	}
	if err := f.Info.CheckPixels(lim); err == nil || !strings.Contains(err.Error(), "16000x16000") {
		t.Fatalf("CheckPixels: %v", err)
	}
	if ix, err := f.Scan(); err != nil || ix.Len() != 2 {
		t.Fatalf("index: %v %v", ix, err)
	}
	// (decoding refuses it too: TestMaxPixelsBoundsFrames, on a frame small enough to
	// give ReadFrames a buffer for)
}

func TestCheckSequence(t *testing.T) {
	info := Info{Width: 64, Height: 48} // 3072 pixels a frame
	for _, c := range []struct {
		frames, padded int
		max            int64
		bad            bool
	}{
		{1, 0, 0, false}, {math.MaxInt, math.MaxInt, 0, false},
		// all frames: up to SequencePixelsFactor (8) images' worth
		{466033, 0, 178956970, false}, {466034, 0, 178956970, true},
		{1000000, 0, 178956970, true}, {math.MaxInt, 0, 178956970, true},
		// padding: up to one image's worth
		{58254, 58254, 178956970, false}, {58255, 58255, 178956970, true},
		{1000000, 999900, 178956970, true},
		{0, 0, 3072, false}, {1, 0, 3071, true}, {8, 0, 3072, false}, {9, 0, 3072, true},
		{2, 1, 3072, false}, {3, 2, 3072, true}, {2, 0, 6143, false},
		{1, 0, math.MaxInt64, false},
	} {
		err := info.CheckSequence(c.frames, c.padded, c.max)
		if (err != nil) != c.bad || (err != nil && !errors.Is(err, ErrTooManyPixels)) {
			t.Errorf("CheckSequence(%d, %d, %d) = %v", c.frames, c.padded, c.max, err)
		}
	}
	if err := (Info{Width: 1 << 30, Height: 1 << 30}).CheckSequence(1<<40, 0, 1<<62); err == nil || !strings.Contains(err.Error(), "1073741824x1073741824") {
		t.Errorf("huge: %v", err)
	}
}

// Declared sizes fuzzed: every combination of a header size and a JPEG size (the data
// stays 16x16's) under a bound of 10000 pixels either decodes frames within the bound or
// fails with an error; a header over the bound always fails with ErrTooManyPixels.
func TestDeclaredSizesUnderBound(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	sizes := [][2]int{{16, 16}, {100, 100}, {101, 99}, {128, 96}, {16000, 16000}, {65535, 65535}, {1, 65535}, {65535, 1}}
	const lim = 10000
	f := &File{MaxPixels: lim}
	defer f.Close()
	base, err := os.ReadFile(videotest.Make(t, dir, "base", videotest.Spec{Codec: "mjpeg", Ext: "avi", W: 16, H: 16, Frames: 2}))
	if err != nil {
		t.Fatal(err)
	}
	avi := filepath.Join(dir, "c.avi")
	for _, hs := range sizes {
		for _, js := range sizes {
			if err := os.WriteFile(avi, base, 0o644); err != nil {
				t.Fatal(err)
			}
			videotest.Resize(t, avi, hs[0], hs[1], true, false)
			videotest.Resize(t, avi, js[0], js[1], false, true)
			if err := f.Reopen(avi, 1); err != nil {
				continue // refused at open: fine
			}
			ix, err := f.Scan()
			if err != nil {
				continue
			}
			over := f.Info.CheckPixels(lim)
			if over != nil {
				if int64(hs[0])*int64(hs[1]) <= lim {
					t.Errorf("header %v, JPEG %v: CheckPixels refused %dx%d", hs, js, f.Info.Width, f.Info.Height)
				}
				// never decoded (checked where a frame's buffer is small enough to give)
				if fb := f.FrameBytes(); fb <= 1<<20 {
					if err := f.ReadFrames(ix, 0, 1, 1, make([]byte, fb)); !errors.Is(err, ErrTooManyPixels) {
						t.Errorf("header %v, JPEG %v: decoding frames over the bound: %v", hs, js, err)
					}
				}
				continue
			}
			err = f.ReadFrames(ix, 0, 2, 1, make([]byte, 2*f.FrameBytes()))
			if err == nil && (js != hs || f.Info.Width*f.Info.Height > lim) {
				t.Errorf("header %v, JPEG %v: decoded as %dx%d", hs, js, f.Info.Width, f.Info.Height)
			}
		}
	}
}
