package readers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/videotest"
)

// openUnder counts the process's file descriptors open on files under dir (-1 without
// /proc).
func openUnder(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(p, dir+"/") {
			n++
		}
	}
	return n
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Shuffled clips of more files than a worker keeps open (B-frames, several groups of
// pictures each), so that clips come from open files (going on from the decoder's
// position or seeking back), from files opened again after being closed, and from
// reused Files: every frame equals ffmpeg's, and the descriptors stay bounded while the
// pipeline runs and are all closed after.
func TestVideoReaderOpenFilesExact(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	const nfiles, frames, L, threads = videoOpenFiles + 3, 24, 3, 2
	// Three encodings (groups of 6, 7 and 8 frames), each copied to several files.
	var paths []string
	var refs [][][]byte
	for i := 0; i < nfiles; i++ {
		p := filepath.Join(dir, fmt.Sprintf("v%02d.mp4", i))
		if i < 3 {
			videotest.Make(t, dir, fmt.Sprintf("v%02d", i), videotest.Spec{Frames: frames, GOP: 6 + i, BFrames: 2,
				Extra: []string{"-vf", fmt.Sprintf("hue=h=%d", 90*i)}})
			refs = append(refs, videotest.RGBFrames(t, p, 64, 48))
		} else {
			copyFile(t, paths[i%3], p)
			refs = append(refs, refs[i%3])
		}
		paths = append(paths, p)
	}
	base := openUnder(t, dir)
	const batch = 16
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": %d, "device_id": null, "seed": 5,
	  "ops": [{"op": "readers.video", "name": "R", "outputs": ["v", "l", "n"], "args": {"filenames": %s, "labels": [],
	    "sequence_length": %d, "step": 1, "stride": 2, "random_shuffle": true, "initial_fill": 64, "enable_frame_num": true}}],
	  "outputs": ["v", "l", "n"]}`, batch, threads, jsonList(paths...), L)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	perFile := frames - (L-1)*2
	fb := 64 * 48 * 3
	seen := map[[2]int]bool{}
	maxOpen := 0
	for b := 0; b < nfiles*perFile/batch; b++ {
		out, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if n := openUnder(t, dir); n > maxOpen {
			maxOpen = n
		}
		for i := 0; i < out.Size(); i++ {
			var s [3][]byte
			for k := range s {
				v, err := out.Output(k).SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				n := v.DType.Size()
				for _, d := range v.Shape {
					n *= int(d)
				}
				s[k] = append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...)
				v.Lease.Release()
			}
			file := int(binary.LittleEndian.Uint32(s[1]))
			start := int(binary.LittleEndian.Uint32(s[2]))
			seen[[2]int{file, start}] = true
			for k := 0; k < L; k++ {
				if !bytes.Equal(s[0][k*fb:(k+1)*fb], refs[file][start+2*k]) {
					t.Fatalf("batch %d sample %d (file %d, start %d): frame %d differs from ffmpeg's", b, i, file, start, k)
				}
			}
		}
	}
	if len(seen) < nfiles*perFile/2 {
		t.Errorf("only %d distinct clips read", len(seen))
	}
	if base >= 0 {
		// Each worker keeps at most videoOpenFiles files (indexing at Build closed its own).
		if maxOpen > threads*videoOpenFiles || maxOpen <= threads {
			t.Errorf("%d descriptors open on the videos while running; want more than %d, at most %d", maxOpen, threads, threads*videoOpenFiles)
		}
		p.Close()
		if n := openUnder(t, dir); n != base {
			t.Errorf("%d descriptors open on the videos after Close, %d before Build", n, base)
		}
	}
}

// The worker's open files: most recently used first, at most videoOpenFiles, fewer when
// their frames pass videoOpenPixels; a file that fails to open leaves nothing open and
// the others as they were; Close closes all.
func TestVideoReaderOpenFilesBounds(t *testing.T) {
	needVideo(t)
	dir := t.TempDir()
	r := &videoReader{}
	src := videotest.Make(t, t.TempDir(), "s", videotest.Spec{Frames: 2})
	for i := 0; i < videoOpenFiles+2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("s%02d.mp4", i))
		copyFile(t, src, p)
		r.files = append(r.files, videoFile{path: p, info: video.Info{Width: 64, Height: 48}})
	}
	st := r.NewWorkerState().(*videoReaderState)
	defer st.Close()
	order := func() []int {
		var o []int
		for _, f := range st.files {
			o = append(o, f.file)
		}
		return o
	}
	for i := range r.files {
		if _, _, err := st.open(r, videoSeq{file: int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(order()), "[9 8 7 6 5 4 3 2]"; got != want {
		t.Errorf("after opening 10 files: %s, want %s", got, want)
	}
	if n := openUnder(t, dir); n >= 0 && n != videoOpenFiles {
		t.Errorf("%d descriptors open, want %d", n, videoOpenFiles)
	}
	f5 := st.files[4].f
	if _, f, _ := st.open(r, videoSeq{file: 5}); f != f5 {
		t.Error("an open file was opened again")
	}
	if got, want := fmt.Sprint(order()), "[5 9 8 7 6 4 3 2]"; got != want {
		t.Errorf("after using file 5: %s, want %s", got, want)
	}
	// A file that cannot be opened: an error naming it; the others stay open.
	os.WriteFile(r.files[0].path, []byte("not a video"), 0o644)
	if _, _, err := st.open(r, videoSeq{file: 0}); err == nil || !strings.Contains(err.Error(), "container") {
		t.Errorf("opening a broken file: %v", err)
	}
	if got, want := fmt.Sprint(order()), "[5 9 8 7 6 4 3]"; got != want {
		t.Errorf("after the failed open: %s, want %s", got, want)
	}
	// Large frames: the most recent file, and others while the pixels stay within bounds.
	for i := range r.files {
		r.files[i].info = video.Info{Width: 1920, Height: 1088}
	}
	if _, _, err := st.open(r, videoSeq{file: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(order()), "[1 5 9 8]"; got != want {
		t.Errorf("with 1080p frames: %s, want %s", got, want)
	}
	r.files[2].info = video.Info{Width: 8000, Height: 8000}
	if _, _, err := st.open(r, videoSeq{file: 2}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(order()), "[2]"; got != want {
		t.Errorf("with one huge file: %s, want %s", got, want)
	}
	st.Close()
	if n := openUnder(t, dir); n > 0 {
		t.Errorf("%d descriptors open after Close", n)
	}
}
