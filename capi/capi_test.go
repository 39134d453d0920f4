package main

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/godali/godali/engine"
)

// writeImageFolder writes classes x perClass small JPEGs of known content.
func writeImageFolder(t *testing.T, classes, perClass int) string {
	root := t.TempDir()
	for c := 0; c < classes; c++ {
		dir := filepath.Join(root, fmt.Sprintf("class%d", c))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perClass; i++ {
			img := image.NewRGBA(image.Rect(0, 0, 40+8*i, 32+4*c))
			for y := 0; y < img.Rect.Dy(); y++ {
				for x := 0; x < img.Rect.Dx(); x++ {
					img.Set(x, y, color.RGBA{uint8(5 * x), uint8(7 * y), uint8(40 * (i + c)), 255})
				}
			}
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("img%d.jpg", i)))
			if err != nil {
				t.Fatal(err)
			}
			if err := jpeg.Encode(f, img, nil); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	return root
}

func status(err error) engine.Status { return engine.StatusOf(err) }

// TestThreadsShareOneHandle hammers one handle from several goroutines with the calls the
// exported functions make (next, export of the current batch, reset, run, destroy); run
// it with -race. Before handles had a lock each, a next on one thread released the batch
// another thread was exporting.
func TestThreadsShareOneHandle(t *testing.T) {
	root := writeImageFolder(t, 2, 5)
	desc := fmt.Sprintf(`{"batch_size": 3, "num_threads": 2, "seed": 3, "ops": [
	 {"op": "readers.file", "name": "r", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}},
	 {"op": "decoders.image", "inputs": ["jpegs"], "outputs": ["images"]},
	 {"op": "resize", "inputs": ["images"], "outputs": ["out"], "args": {"resize_x": 16, "resize_y": 16}}],
	 "outputs": ["out", "labels"]}`, root)
	eng, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	h := addPipeline(eng)
	if err := usePipeline(h, func(p *pipeline) error { return p.eng.Build() }); err != nil {
		t.Fatal(err)
	}
	const workers, calls, destroyAt = 4, 300, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			gone := false
			for i := 0; i < calls; i++ {
				var err error
				switch (i + w) % 4 {
				case 0:
					err = usePipeline(h, func(p *pipeline) error { _, err := p.eng.Next(); return err })
				case 1:
					err = usePipeline(h, func(p *pipeline) error {
						v, err := p.view(0, -1)
						if err != nil {
							return err
						}
						b := (*[16 * 16 * 3 * 3]byte)(v.Ptr)
						sum := 0
						for _, x := range b {
							sum += int(x)
						}
						dropView(v)
						if sum == 0 {
							return errors.New("exported batch is all zeros")
						}
						return nil
					})
				case 2:
					err = usePipeline(h, func(p *pipeline) error { return p.eng.Reset() })
				default:
					err = usePipeline(h, func(p *pipeline) error { return p.eng.Run() })
				}
				switch s := status(err); {
				case s == engine.StatusInvalidHandle:
					gone = true
				case gone:
					errs <- fmt.Errorf("worker %d call %d after the handle was destroyed: %v", w, i, err)
				case s == engine.StatusOK, s == engine.StatusEndOfEpoch, s == engine.StatusState:
				default:
					errs <- fmt.Errorf("worker %d call %d: %v", w, i, err)
				}
				if w == 0 && i == destroyAt {
					if err := destroyPipeline(h); err != nil {
						errs <- fmt.Errorf("destroy: %v", err)
					}
					gone = true
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if err := destroyPipeline(h); status(err) != engine.StatusInvalidHandle {
		t.Errorf("second destroy: %v, want an invalid handle", err)
	}
	pipelines.Lock()
	live := len(pipelines.m)
	pipelines.Unlock()
	if live != 0 {
		t.Errorf("%d handles left after destroy", live)
	}
}

// TestCallsFromInsideHostFunctionRefused: while a thread runs a host function of a
// pipeline, that thread's calls into the same pipeline fail at once with a state error
// naming the node, even when another thread holds the handle's lock; other threads and
// other pipelines are not affected.
func TestCallsFromInsideHostFunctionRefused(t *testing.T) {
	root := writeImageFolder(t, 1, 2)
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "ops": [
	 {"op": "readers.file", "name": "r", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}}],
	 "outputs": ["labels"]}`, root)
	mk := func() uint64 {
		eng, err := engine.NewPipeline([]byte(desc))
		if err != nil {
			t.Fatal(err)
		}
		return addPipeline(eng)
	}
	h, other := mk(), mk()
	defer destroyPipeline(h)
	defer destroyPipeline(other)
	pipelines.Lock()
	eng := pipelines.m[h].eng
	pipelines.Unlock()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	enterHostFunction(tid, eng, "fn")
	// Another thread holds the handle's lock (as a consumer waiting in next would).
	locked, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = usePipeline(h, func(*pipeline) error { close(locked); <-release; return nil })
	}()
	<-locked
	err := usePipeline(h, func(*pipeline) error { return nil })
	close(release)
	if status(err) != engine.StatusState || !strings.Contains(err.Error(), `inside the host function of node "fn"`) {
		t.Fatalf("a call from inside the host function: %v, want a state error naming the node", err)
	}
	if err := usePipeline(other, func(*pipeline) error { return nil }); err != nil {
		t.Fatalf("another pipeline from inside the host function: %v", err)
	}
	done := make(chan error)
	go func() { done <- usePipeline(h, func(*pipeline) error { return nil }) }()
	if err := <-done; err != nil {
		t.Fatalf("another thread's call while the host function runs: %v", err)
	}
	leaveHostFunction(tid)
	if err := usePipeline(h, func(*pipeline) error { return nil }); err != nil {
		t.Fatalf("after the host function returned: %v", err)
	}
}
