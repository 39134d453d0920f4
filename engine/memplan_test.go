package engine

import (
	"fmt"
	"image"
	_ "image/jpeg"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// refLargest is the largest image of root by Go's image.DecodeConfig (an independent
// header reader).
func refLargest(t *testing.T, root string) (w, h, n int) {
	t.Helper()
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		c, _, err := image.DecodeConfig(f)
		if err != nil {
			return err
		}
		n++
		if c.Width*c.Height > w*h {
			w, h = c.Width, c.Height
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, h, n
}

func TestImageScanAndPreallocation(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := writeDataset(t, 3, 5)
	rw, rh, files := refLargest(t, root)
	p := mustPipeline(t, resnetJSON(root, 2, 2, 2))
	scans := p.ImageScans(time.Minute)
	if len(scans) != 1 {
		t.Fatalf("scans: %+v", scans)
	}
	s := scans[0]
	if !s.Done || s.Decoder != "decode" || s.Reader != "Reader" || s.Files != files || s.Scanned != files ||
		s.Failed != 0 || s.Sampled || s.MaxWidth != rw || s.MaxHeight != rh || s.MaxOutBytes <= 0 || s.MaxOutBytes > int64(rw*rh*3) ||
		s.MeanOutBytes <= 0 || s.MeanOutBytes > s.MaxOutBytes || s.MaxFileBytes <= 0 {
		t.Fatalf("scan %+v, want %d files, largest %dx%d", s, files, rw, rh)
	}
	// The decoder's buffer is made the largest output's size at once (the random-crop
	// decoder's: its largest window as decoded).
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	id := p.Graph.Data["images"].Producer.ID
	rid := p.Graph.Data["jpegs"].Producer.ID
	used := 0
	for _, w := range p.workers {
		if c := cap(w.bufs[id][0]); c != 0 {
			used++
			if int64(c) != s.MaxOutBytes {
				t.Fatalf("worker %d: decoder buffer %d bytes, want %d (the scan's largest)", w.id, c, s.MaxOutBytes)
			}
			if c := cap(w.bufs[rid][0]); int64(c) != s.MaxFileBytes {
				t.Fatalf("worker %d: reader buffer %d bytes, want %d (the largest file)", w.id, c, s.MaxFileBytes)
			}
		}
	}
	if used == 0 {
		t.Fatal("no worker decoded into its own buffer")
	}
	// preallocate "off": no scan.
	off := mustPipeline(t, strings.Replace(resnetJSON(root, 1, 2, 2), `"seed": 12`, `"seed": 12, "preallocate": "off"`, 1))
	if sc := off.ImageScans(time.Minute); len(sc) != 0 {
		t.Fatalf("scans with preallocate off: %+v", sc)
	}
	if _, err := NewPipeline([]byte(strings.Replace(resnetJSON(root, 1, 2, 2), `"seed": 12`, `"seed": 12, "preallocate": "on"`, 1))); err == nil || !strings.Contains(err.Error(), "preallocate") {
		t.Fatalf("bad preallocate: %v", err)
	}
}

// countingProber is a stand-in decoder: every file is 10x20, 3 channels.
type countingProber struct{ n atomic.Int64 }

func (c *countingProber) ProbeImage(head []byte) (ImageHeader, error) {
	c.n.Add(1)
	if len(head) == 0 {
		return ImageHeader{}, os.ErrInvalid
	}
	return ImageHeader{Width: 10, Height: 20, OutBytes: 600}, nil
}

func TestImageScanSamplesLargeSets(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a")
	empty := filepath.Join(dir, "b")
	os.WriteFile(good, []byte("x"), 0o644)
	os.WriteFile(empty, nil, 0o644)
	paths := make([]string, scanAll+1000)
	for i := range paths {
		paths[i] = good
	}
	paths[7] = empty
	var pr countingProber
	var stop atomic.Bool
	s := scanImages(paths, &pr, 0, &stop)
	if !s.Sampled || s.Scanned != scanSample || s.Files != len(paths) || s.MaxOutBytes != 600 || pr.n.Load() < scanSample-1 {
		t.Fatalf("large set: %+v (%d probes)", s, pr.n.Load())
	}
	// A FIFO named like an image is a failure, not a hang (opened as the readers do).
	fifo := filepath.Join(dir, "fifo.jpg")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	small := scanImages([]string{good, empty, filepath.Join(dir, "missing"), fifo}, &pr, 0, &stop)
	if small.Sampled || small.Scanned != 4 || small.Failed != 3 || small.MaxWidth != 10 || small.MaxHeight != 20 {
		t.Fatalf("small set: %+v", small)
	}
	stop.Store(true)
	if s := scanImages(paths, &pr, 0, &stop); s.Scanned != 0 {
		t.Fatalf("stopped scan read %d", s.Scanned)
	}
}

func TestMemoryPlan(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := writeDataset(t, 3, 5)
	rw, rh, _ := refLargest(t, root)
	const bs, threads, depth = 4, 2, 3
	p := mustPipeline(t, resnetJSON(root, threads, bs, depth))
	mp := p.MemoryPlan(time.Minute)
	if mp.Batches != depth+2 || mp.NumThreads != threads || len(mp.Outputs) != 2 {
		t.Fatalf("plan %+v", mp)
	}
	// The images output: 3x224x224 float32 a sample, one pool-class buffer per batch.
	var out PlanValue
	for _, v := range mp.Outputs {
		if v.Name == "out" {
			out = v
		}
	}
	if out.SampleWorst != 3*224*224*4 || out.Source != "shape" ||
		out.Bytes != int64(classSize(bs*3*224*224*4))*(depth+2) {
		t.Fatalf("output plan %+v", out)
	}
	var dec *PlanValue
	for i, v := range mp.Intermediates {
		if v.Name == "images" {
			dec = &mp.Intermediates[i]
		}
	}
	// The random-crop decoder: its largest window as decoded, at most the whole image
	// (ops/decoders' TestRandomCropBound checks the bound against the windows drawn).
	if dec == nil || dec.Source != "scan" || dec.SampleWorst <= 0 || dec.SampleWorst > int64(rw*rh*3) || dec.Bytes != dec.SampleWorst*threads {
		t.Fatalf("decoder plan %+v", dec)
	}
	if mp.HostBytesWorst != mp.OutputBytes+mp.IntermediateBytes+mp.CrossingBytes+mp.DecoderWorkBytes+mp.RuntimeBytes ||
		mp.HostBytesExpected > mp.HostBytesWorst || mp.Available.MemAvailable <= 0 || len(mp.Unknown) != 0 {
		t.Fatalf("totals %+v", mp)
	}
	// A budget below the plan fails Build early, naming what to lower.
	small := strings.Replace(resnetJSON(root, threads, bs, depth), `"seed": 12`, `"seed": 12, "max_host_bytes": 1000000`, 1)
	q, err := NewPipeline([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	err = q.Build()
	if err == nil || !strings.Contains(err.Error(), "max_host_bytes 976.6 KiB is below") ||
		!strings.Contains(err.Error(), "lower") || !strings.Contains(err.Error(), "largest image of decode") {
		t.Fatalf("budget error: %v", err)
	}
	// A budget above it builds.
	big := strings.Replace(resnetJSON(root, threads, bs, depth), `"seed": 12`, `"seed": 12, "max_host_bytes": 1000000000`, 1)
	mustPipeline(t, big)
}

// A decoder's output as a pipeline output: a buffer per sample, the batches in flight
// at most the largest batch x (prefetch_queue_depth+2) images of the data set.
func TestMemoryPlanDecodedOutput(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := writeDataset(t, 2, 6) // 12 images of 6 sizes, each twice
	var sizes []int
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			f, _ := os.Open(path)
			defer f.Close()
			c, _, err := image.DecodeConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, c.Width*c.Height*3)
		}
		return nil
	})
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	const bs, depth = 2, 2
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": %d, "num_threads": 1, "prefetch_queue_depth": %d, "ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}},
	 {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"]}],
	"outputs": ["images"]}`, bs, depth, root))
	mp := p.MemoryPlan(time.Minute)
	var want int64
	for _, s := range sizes[:bs*(depth+2)] {
		want += int64(classSize(s))
	}
	if len(mp.Outputs) != 1 || mp.Outputs[0].Source != "scan" || mp.Outputs[0].Bytes != want ||
		mp.SlotBytes != int64(classSize(sizes[0])+classSize(sizes[1])) {
		t.Fatalf("plan %+v, want outputs of %d bytes", mp, want)
	}
}

// The plan against what the pools and the workers actually allocated over an epoch, on
// a validation pipeline (decode, resize + crop_mirror_normalize fused, float outputs)
// whose images all have one size, so that the worst case is what every batch meets:
// the output buffers the host pool had to map (the consumer holding its previous batch
// while it asks for the next, as Python's `out = pipe.run()` does) and the workers'
// intermediate buffers must be covered by the plan, and by no more than 10% above.
func TestMemoryPlanCoversAllocations(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := t.TempDir()
	for i := 0; i < 16; i++ {
		os.MkdirAll(filepath.Join(root, "c"), 0o755)
		writeJPEG(t, filepath.Join(root, "c", fmt.Sprintf("img%02d.jpg", i)), 640, 480, i)
	}
	const bs, threads, depth = 2, 2, 2
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": %d, "num_threads": %d, "prefetch_queue_depth": %d, "seed": 3, "ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}},
	 {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"]},
	 {"op": "resize", "name": "resize", "inputs": ["images"], "outputs": ["resized"], "args": {"resize_shorter": 256}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["resized"], "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [224, 224], "mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}}],
	"outputs": ["out", "labels"]}`, bs, threads, depth, root))
	mp := p.MemoryPlan(time.Minute)
	var held []View
	start := time.Now()
	for {
		b, err := p.Next()
		if err == ErrEndOfEpoch {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var views []View
		for k := 0; k < b.NumOutputs(); k++ {
			v, err := b.Output(k).DenseView()
			if err != nil {
				t.Fatal(err)
			}
			views = append(views, v)
		}
		// The trainer's step: the producer fills its slots meanwhile (at most until the
		// plan's outputs are mapped, or 5 s over the epoch on a slow machine).
		for wait := time.Now(); p.pool.Stats().ReservedBytes < mp.OutputBytes && time.Since(start) < 5*time.Second && time.Since(wait) < 100*time.Millisecond; {
			time.Sleep(2 * time.Millisecond)
		}
		for _, v := range held { // the previous batch, dropped once the next is out
			v.Lease.Release()
		}
		held = views
	}
	outputs := p.pool.Stats().ReservedBytes // the most output buffers alive at once
	p.mu.Lock()
	var inter int64
	for _, w := range p.workers {
		for _, outs := range w.bufs {
			for _, b := range outs {
				inter += int64(cap(b))
			}
		}
		for _, ls := range w.big {
			for _, l := range ls {
				if l != nil {
					inter += int64(len(l.mem))
				}
			}
		}
	}
	p.mu.Unlock()
	for _, v := range held {
		v.Lease.Release()
	}
	if outputs > mp.OutputBytes || float64(mp.OutputBytes) > 1.1*float64(outputs) {
		t.Errorf("outputs: the pool mapped %d bytes, the plan counts %d (%d batches)", outputs, mp.OutputBytes, mp.Batches)
	}
	if inter > mp.IntermediateBytes || float64(mp.IntermediateBytes) > 1.1*float64(inter) {
		t.Errorf("intermediates: the workers hold %d bytes, the plan counts %d: %+v", inter, mp.IntermediateBytes, mp.Intermediates)
	}
	t.Logf("outputs %d of %d planned, intermediates %d of %d planned", outputs, mp.OutputBytes, inter, mp.IntermediateBytes)
}
