package engine

import (
	"errors"
	"fmt"
	"github.com/godali/godali/source"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// filesPipeline reads files with readers.file and decodes them: batch_size 1 under
// on_error raise, one batch of all the files under skip (a batch whose every sample
// fails cannot be filled).
func filesPipeline(t *testing.T, onError string, extra string, files ...string) *Pipeline {
	t.Helper()
	batch := 1
	if onError == "skip" {
		batch = len(files)
	}
	return mustPipeline(t, fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "on_error": %q %s, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}], "outputs": ["img"]}`,
		batch, onError, extra, quoteAll(files)))
}

// nextOrHang fails the test instead of hanging when Next blocks.
func nextOrHang(t *testing.T, p *Pipeline) (*Batch, error) {
	t.Helper()
	type res struct {
		b   *Batch
		err error
	}
	ch := make(chan res, 1)
	go func() { b, err := p.Next(); ch <- res{b, err} }()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(60 * time.Second):
		t.Fatal("Next hangs")
		return nil, nil
	}
}

// TestHugeSparseFileRefused (issue 9, case 2): a 100 GiB sparse file named .jpg is
// refused by size, naming the file and max_file_bytes, in raise and skip modes, instead
// of a 100 GiB allocation aborting the process.
func TestHugeSparseFileRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jpg")
	writeJPEG(t, good, 64, 48, 0)
	huge := filepath.Join(dir, "huge.jpg")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()

	p := filesPipeline(t, "raise", "", good, huge, good)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = p.Next()
	if StatusOf(err) != StatusData || !strings.Contains(err.Error(), huge) || !strings.Contains(err.Error(), "max_file_bytes=268435456") {
		t.Fatalf("huge file: %v", err)
	}
	if _, err := p.Next(); err != nil {
		t.Fatalf("after the huge file: %v", err)
	}

	p = filesPipeline(t, "skip", "", good, huge, good)
	var skipped int64
	eachBatch(t, p, func(b *Batch) { skipped += b.Skipped })
	if skipped != 1 {
		t.Errorf("skipped %d, want 1", skipped)
	}

	// The bound is the pipeline's: a real image above it is refused too, and 0 lifts it.
	size := fileSize(t, good)
	p = filesPipeline(t, "raise", fmt.Sprintf(`, "max_file_bytes": %d`, size-1), good)
	if _, err := p.Next(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("file is %d bytes", size)) {
		t.Errorf("max_file_bytes %d: %v", size-1, err)
	}
	p = filesPipeline(t, "raise", fmt.Sprintf(`, "max_file_bytes": %d`, size), good)
	if _, err := p.Next(); err != nil {
		t.Errorf("max_file_bytes = the file's size: %v", err)
	}
	if _, err := NewPipeline([]byte(`{"batch_size": 1, "max_file_bytes": -1, "ops": [], "outputs": []}`)); StatusOf(err) != StatusInvalidPipeline {
		t.Errorf("negative max_file_bytes: %v", err)
	}
}

func fileSize(t *testing.T, p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestNonRegularFilesRefusedWithoutHang (issue 9, case 7): a FIFO (which open would
// block on until a writer comes), a socket and a character device named like images
// give a data error naming them, in raise and skip modes, and Next and Close return.
func TestNonRegularFilesRefusedWithoutHang(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jpg")
	writeJPEG(t, good, 64, 48, 0)
	fifo := filepath.Join(dir, "fifo.jpg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock.jpg")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dev := filepath.Join(dir, "null.jpg")
	if err := os.Symlink("/dev/null", dev); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{fifo: "named pipe", sock: "socket", dev: "character device"}
	for path, kind := range kinds {
		p := filesPipeline(t, "raise", "", good, path)
		if _, err := nextOrHang(t, p); err != nil {
			t.Fatal(err)
		}
		_, err := nextOrHang(t, p)
		if StatusOf(err) != StatusData || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind) {
			t.Errorf("%s: %v", kind, err)
		}
		p.Close()
	}
	p := filesPipeline(t, "skip", "", good, fifo, sock, good, dev)
	var skipped int64
	for {
		b, err := nextOrHang(t, p)
		if errors.Is(err, ErrEndOfEpoch) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		skipped += b.Skipped
	}
	if skipped != 3 {
		t.Errorf("skipped %d, want 3", skipped)
	}
	// The FIFO swapped in after the type check: the non-blocking open returns at once.
	if f, err := (source.Local{}).Open(fifo); err == nil || !errors.Is(err, source.ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Errorf("source.Local.Open(fifo): %v", err)
	}
}
