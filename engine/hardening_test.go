package engine

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMulSizeMatchesBigIntegers(t *testing.T) {
	cases := [][]int{{}, {0}, {1, 2, 3}, {3, 1 << 31, 1 << 31}, {4, 3000000000, 3000000000, 3},
		{1 << 62, 2}, {1 << 62, 1}, {math.MaxInt, 1}, {math.MaxInt, 2}, {5, -1}, {-1}, {7, 0, math.MaxInt}}
	for _, c := range cases {
		n, dims := 1, c
		if len(c) > 0 {
			n, dims = c[0], c[1:]
		}
		want := big.NewInt(int64(n))
		neg := n < 0
		for _, d := range dims {
			want.Mul(want, big.NewInt(int64(d)))
			neg = neg || d < 0
		}
		got, ok := mulSize(n, dims...)
		wantOK := !neg && want.IsInt64()
		if ok != wantOK || (ok && int64(got) != want.Int64()) {
			t.Errorf("mulSize(%d, %v) = %d, %v; want %s, %v", n, dims, got, ok, want, wantOK)
		}
	}
}

// Sizes and counts that the build used to accept and that then killed the process at
// run time: each is refused when the pipeline is created, naming the node and argument.
func TestOversizedArgumentsRefusedAtCreate(t *testing.T) {
	root := writeDataset(t, 1, 1)
	reader := fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"file_root": %q}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}`, root)
	one := func(top, op string) string {
		return fmt.Sprintf(`{"batch_size": 2%s, "ops": [%s, %s], "outputs": ["out"]}`, top, reader, op)
	}
	cases := []struct {
		name, desc string
		want       []string
	}{
		{"resize", one("", `{"op": "resize", "name": "big", "inputs": ["img"], "outputs": ["out"], "args": {"resize_x": 100000, "resize_y": 100000}}`),
			[]string{`"big"`, "max_image_pixels", `"resize_x"`, `"resize_y"`}},
		{"crop pad", one("", `{"op": "crop", "name": "big", "inputs": ["img"], "outputs": ["out"], "args": {"crop": [100000, 100000], "out_of_bounds_policy": "pad"}}`),
			[]string{`"big"`, "max_image_pixels", `"crop"`}},
		{"random_resized_crop", one("", `{"op": "random_resized_crop", "name": "big", "inputs": ["img"], "outputs": ["out"], "args": {"size": 100000}}`),
			[]string{`"big"`, "max_image_pixels", `"size"`}},
		{"crop overflow", one(`, "max_image_pixels": 0`, `{"op": "crop", "name": "big", "inputs": ["img"], "outputs": ["out"], "args": {"crop_h": 3e9, "crop_w": 3e9, "out_of_bounds_policy": "pad"}}`),
			[]string{`"big"`, "does not fit", `"crop_h"`}},
		{"cmn overflow", one(`, "max_image_pixels": 0`, `{"op": "crop_mirror_normalize", "name": "big", "inputs": ["img"], "outputs": ["out"], "args": {"crop": [3e9, 3e9], "dtype": "FLOAT", "out_of_bounds_policy": "pad"}}`),
			[]string{`"big"`, "does not fit", `"crop"`}},
		{"num_threads", one(`, "num_threads": 100000`, `{"op": "resize", "inputs": ["img"], "outputs": ["out"], "args": {"resize_x": 8, "resize_y": 8}}`),
			[]string{`"num_threads"`, fmt.Sprint(MaxNumThreads)}},
		{"batch_size", strings.Replace(one("", `{"op": "resize", "inputs": ["img"], "outputs": ["out"], "args": {"resize_x": 8, "resize_y": 8}}`), `"batch_size": 2`, `"batch_size": 2147483648`, 1),
			[]string{`"batch_size"`, fmt.Sprint(MaxBatchSize)}},
		{"prefetch_queue_depth", one(`, "prefetch_queue_depth": 100000000`, `{"op": "resize", "inputs": ["img"], "outputs": ["out"], "args": {"resize_x": 8, "resize_y": 8}}`),
			[]string{`"prefetch_queue_depth"`, fmt.Sprint(MaxPrefetchQueueDepth)}},
	}
	for _, c := range cases {
		p, err := NewPipeline([]byte(c.desc))
		if err == nil {
			p.Close()
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if StatusOf(err) != StatusInvalidPipeline {
			t.Errorf("%s: status %d, want invalid pipeline: %v", c.name, StatusOf(err), err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: message does not name %s: %v", c.name, w, err)
			}
		}
	}
}

// An output size known only at run time is checked before memory is given to it: the
// sample fails with a data error naming its file, and on_error="skip" replaces it.
func TestRunTimeOutputSizeIsADataError(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.jpg")
	long := filepath.Join(dir, "long.jpg")
	writeJPEG(t, small, 64, 48, 0)
	writeJPEG(t, long, 2000, 20, 1)
	desc := func(onError string, shorter int) string {
		return fmt.Sprintf(`{"batch_size": 2, "num_threads": 2, "max_image_pixels": 1000000, "on_error": %q, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q, %q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "resize", "name": "rs", "inputs": ["img"], "outputs": ["out"], "args": {"resize_shorter": %d}}], "outputs": ["out"]}`,
			onError, small, long, shorter)
	}
	// 2000x20 to a shorter side of 200 is 20000x200 = 4M pixels; 64x48 is 267x200.
	p := mustPipeline(t, desc("raise", 200))
	_, err := p.Next()
	if err == nil || StatusOf(err) != StatusData || !strings.Contains(err.Error(), "long.jpg") ||
		!strings.Contains(err.Error(), `"rs"`) || !strings.Contains(err.Error(), "max_image_pixels") {
		t.Fatalf("want a data error naming long.jpg and node rs, got %d %v", StatusOf(err), err)
	}
	p = mustPipeline(t, desc("skip", 200))
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if b.Skipped != 1 || len(b.Skips) != 1 || b.Skips[0].File != long || b.Skips[0].Sample != 1 || b.Skips[0].Node != "rs" {
		t.Errorf("skipped %d: %+v", b.Skipped, b.Skips)
	}
	if s := b.Output(0).SampleShape(1); !sameShape(s, []int{200, 267, 3}) {
		t.Errorf("replacement shape %v, want [200 267 3]", s)
	}
	// resize_shorter 60000: 80000x60000 pixels, refused before any allocation.
	p = mustPipeline(t, desc("raise", 60000))
	before := p.Pool().Stats()
	_, err = p.Next()
	if err == nil || StatusOf(err) != StatusData || !strings.Contains(err.Error(), "small.jpg") {
		t.Fatalf("resize_shorter 60000: %d %v", StatusOf(err), err)
	}
	if after := p.Pool().Stats(); after.ReservedBytes > before.ReservedBytes {
		t.Errorf("refused sample still mapped %d bytes", after.ReservedBytes-before.ReservedBytes)
	}
}

// A replacement sample that fails as well keeps the batch's error a data error (it was
// an unclassified, internal one).
func TestSkipWhenReplacementsFailIsADataError(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := 0; i < 8; i++ {
		f := filepath.Join(dir, fmt.Sprintf("img%d.jpg", i))
		writeJPEG(t, f, 64, 48, i)
		files = append(files, fmt.Sprintf("%q", f))
	}
	// crop_pos_x outside [0, 1] makes the crop leave the image; it is drawn from the
	// sample's position, so a replacement at the same position fails as well.
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 8, "num_threads": 2, "seed": 7, "on_error": "skip", "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "random.uniform", "name": "u", "outputs": ["px"], "args": {"range": [-1.5, 2.5]}},
		{"op": "crop", "name": "c", "inputs": ["img"], "arg_inputs": {"crop_pos_x": "px"}, "outputs": ["out"], "args": {"crop": [32, 32]}}],
		"outputs": ["out"]}`, strings.Join(files, ", ")))
	mixed := 0
	for epoch := 0; epoch < 20; epoch++ {
		for {
			b, err := p.Next()
			if errors.Is(err, ErrEndOfEpoch) {
				break
			}
			if err != nil {
				if StatusOf(err) != StatusData || !strings.Contains(err.Error(), "leaves the") {
					t.Fatalf("epoch %d: status %d: %v", epoch, StatusOf(err), err)
				}
				if strings.Contains(err.Error(), "replacement") {
					mixed++
				}
				continue
			}
			if b.Skipped != 0 {
				t.Errorf("a replacement at the same position cannot succeed, yet %d were skipped", b.Skipped)
			}
		}
		p.Reset()
	}
	if mixed == 0 {
		t.Fatal("no batch had both good and failed samples: the test does not test replacements")
	}
}

// failOddOp copies its input and fails the odd samples of a batch with an unclassified
// error: a replacement, which keeps the sample's index, fails as well.
type failOddOp struct{}

func (failOddOp) Infer(in []TensorMeta) ([]TensorMeta, error) { return in[:1], nil }
func (failOddOp) Setup(ws *Workspace) error {
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}
func (failOddOp) Run(ws *Workspace) error {
	if ws.Sample%2 == 1 {
		return fmt.Errorf("odd sample %d", ws.Sample)
	}
	copy(ws.Out[0].Data, ws.In[0].Data)
	return nil
}

func init() {
	RegisterSchema(&Schema{Name: "_test.fail_odd", Doc: "test only: fails odd samples",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"out"}})
	RegisterBackend("_test.fail_odd", "cpu", func(*Args) (Operator, error) { return failOddOp{}, nil })
}

// Replacements that fail with an unclassified error: still a data error (it was an
// internal one, "a bug in godali").
func TestSkipWhenReplacementsFailUnclassified(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.jpg")
	writeJPEG(t, f, 32, 24, 0)
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "on_error": "skip", "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q, %q, %q, %q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "_test.fail_odd", "name": "odd", "inputs": ["img"], "outputs": ["out"]}], "outputs": ["out"]}`, f, f, f, f))
	_, err := p.Next()
	if StatusOf(err) != StatusData || !strings.Contains(err.Error(), "a.jpg") || !strings.Contains(err.Error(), "odd sample 1") {
		t.Fatalf("status %d: %v", StatusOf(err), err)
	}
}

func TestSkippedFilesAreNamed(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jpg")
	writeJPEG(t, good, 64, 48, 0)
	bad := filepath.Join(dir, "broken.jpg")
	os.WriteFile(bad, []byte("definitely not an image"), 0o644)
	p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "on_error": "skip", "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%q, %q, %q, %q]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}], "outputs": ["img"]}`, good, bad, good, bad))
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Skips) != 2 || b.Skipped != 2 {
		t.Fatalf("skips %+v", b.Skips)
	}
	for k, i := range []int{1, 3} {
		s := b.Skips[k]
		if s.Sample != i || s.File != bad || s.Node != "dec" || s.Error == "" {
			t.Errorf("skip %d: %+v", k, s)
		}
	}
}

func TestHostPoolOutOfMemoryHasItsOwnStatus(t *testing.T) {
	pool := NewHostPool()
	defer pool.Close()
	for _, n := range []int{1 << 50, math.MaxInt - 5} {
		_, err := pool.Get(n)
		if StatusOf(err) != StatusOutOfMemory || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("Get(%d): %d %v", n, StatusOf(err), err)
		}
		if err := pool.Reserve(n, 1); StatusOf(err) != StatusOutOfMemory {
			t.Errorf("Reserve(%d): %d %v", n, StatusOf(err), err)
		}
	}
}

func threadCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc/self/task")
	}
	return len(ents)
}

// settle waits for exiting goroutines to be gone (they end asynchronously).
func settle(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > limit; i++ {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// A build that fails on memory leaves no worker, no thread and no mapped buffer behind.
func TestFailedBuildsLeaveNothingRunning(t *testing.T) {
	root := writeDataset(t, 1, 1)
	// One batch of the float output is 65536 x 3 x 16384 x 16384 x 4 bytes, 211 TB: more
	// than an address space holds, so mapping it fails on any machine.
	desc := fmt.Sprintf(`{"batch_size": 65536, "num_threads": 4, "max_image_pixels": 0, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"file_root": %q}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "crop_mirror_normalize", "name": "cmn", "inputs": ["img"], "outputs": ["out"],
		 "args": {"crop": [16384, 16384], "dtype": "FLOAT", "out_of_bounds_policy": "pad"}}], "outputs": ["out"]}`, root)
	runtime.GC()
	g0, th0, mem0 := settle(0), threadCount(t), GlobalHostStats().ReservedBytes
	for i := 0; i < 100; i++ {
		p, err := NewPipeline([]byte(desc))
		if err != nil {
			t.Fatal(err)
		}
		err = p.Build()
		if err == nil {
			t.Fatalf("build %d succeeded", i)
		}
		if i == 0 && (StatusOf(err) != StatusOutOfMemory || !strings.Contains(err.Error(), "out of memory") || strings.Contains(err.Error(), "goroutine")) {
			t.Errorf("build: status %d: %v", StatusOf(err), err)
		}
		if i%2 == 0 {
			p.Close()
		} // the others are dropped without Close, as a C caller may
	}
	g1 := settle(g0 + 2)
	th1 := threadCount(t)
	if g1 > g0+2 {
		t.Errorf("goroutines %d -> %d after 100 failed builds", g0, g1)
	}
	if th1 > th0+8 {
		t.Errorf("threads %d -> %d after 100 failed builds", th0, th1)
	}
	if mem1 := GlobalHostStats().ReservedBytes; mem1 > mem0 {
		t.Errorf("host memory mapped %d -> %d after 100 failed builds", mem0, mem1)
	}
}

// A build that failed may be retried once its cause is gone.
func TestMissingFileRootFailsBuildAndBuildRetries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-yet")
	p, err := NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 1, "num_threads": 2, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"file_root": %q}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]}], "outputs": ["img"]}`, root)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	g0 := settle(0)
	err = p.Build()
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), `"file_root"`) || !strings.Contains(err.Error(), root) {
		t.Fatalf("missing file_root: status %d: %v", StatusOf(err), err)
	}
	if g := settle(g0); g > g0 {
		t.Errorf("goroutines %d -> %d after a failed build", g0, g)
	}
	os.MkdirAll(filepath.Join(root, "a"), 0o755)
	writeJPEG(t, filepath.Join(root, "a", "x.jpg"), 32, 24, 0)
	if err := p.Build(); err != nil {
		t.Fatalf("retried build: %v", err)
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
}

func TestResetTwiceDoesNotSkipAnEpoch(t *testing.T) {
	root := writeDataset(t, 1, 2)
	p := mustPipeline(t, resnetJSON(root, 2, 2, 2))
	// A reset before the first batch starts nothing new.
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	var epochs []int64
	for e := 0; e < 3; e++ {
		eachBatch(t, p, func(b *Batch) { epochs = append(epochs, b.Epoch) })
		p.Reset()
		p.Reset()
	}
	if fmt.Sprint(epochs) != "[0 1 2]" {
		t.Errorf("epochs %v, want [0 1 2]", epochs)
	}
	// Mid-epoch, a reset moves to the next epoch; a second one does not skip another.
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if b.Epoch != 3 {
		t.Fatalf("epoch %d, want 3", b.Epoch)
	}
	p.Reset()
	p.Reset()
	if b, err = p.Next(); err != nil || b.Epoch != 4 {
		t.Fatalf("after a mid-epoch reset: epoch %v, %v; want 4", b, err)
	}
}

func TestTrailingDataAfterTheDescriptionIsRejected(t *testing.T) {
	root := writeDataset(t, 1, 1)
	good := resnetJSON(root, 1, 1, 1)
	if _, err := ParseSpec([]byte(good + " \n\t")); err != nil {
		t.Fatalf("trailing white space: %v", err)
	}
	for _, tail := range []string{"x", "{}", `{"batch_size": 3}`, "]", "null"} {
		_, err := ParseSpec([]byte(good + "\n" + tail))
		want := fmt.Sprintf("offset %d", len(good))
		if StatusOf(err) != StatusInvalidPipeline || !strings.Contains(err.Error(), want) {
			t.Errorf("tail %q: %v (want %q)", tail, err, want)
		}
	}
	if _, err := ParseSpec([]byte("null")); err == nil {
		t.Error("null accepted")
	}
}

// Python's json.dumps writes NaN and -Infinity for non-finite floats, which JSON does
// not have: the error names the argument and the node (it said only "not a JSON
// object").
func TestNonFiniteArgumentNamed(t *testing.T) {
	for _, c := range []struct{ value, word string }{{"NaN", "NaN"}, {"-Infinity", "-Infinity"}, {"Infinity", "Infinity"}} {
		desc := fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "readers.numpy", "name": "N", "device": "cpu", "outputs": ["x"], "args": {"file_root": "/tmp", "roi_start": [%s, 0.0]}}], "outputs": ["x"]}`, c.value)
		_, err := NewPipeline([]byte(desc))
		if err == nil || !strings.Contains(err.Error(), `argument "roi_start" of node "N" is `+c.word) {
			t.Errorf("%s: %v", c.value, err)
		}
	}
	if _, err := NewPipeline([]byte(`{"batch_size": 1, "ops": [}`)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("other syntax errors keep their message: %v", err)
	}
}
