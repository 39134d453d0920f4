package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

// _test.data_ptr outputs the address of its input's bytes (int64): the tests see where
// an external source's consumer reads from.
func init() {
	RegisterSchema(&Schema{Name: "_test.data_ptr", MinInputs: 1, MaxInputs: 1, Outputs: []string{"ptr"}, HostOnly: true})
	RegisterBackend("_test.data_ptr", "cpu", func(*Args) (Operator, error) { return dataPtrOp{}, nil })
}

type dataPtrOp struct{}

func (dataPtrOp) Infer([]TensorMeta) ([]TensorMeta, error) {
	return []TensorMeta{{DType: Int64, Shape: []int{1}}}, nil
}
func (dataPtrOp) Setup(ws *Workspace) error { ws.Out[0].SetShape(1); return nil }
func (dataPtrOp) Run(ws *Workspace) error {
	var p uintptr
	if len(ws.In[0].Data) > 0 {
		p = uintptr(unsafe.Pointer(unsafe.SliceData(ws.In[0].Data)))
	}
	binary.LittleEndian.PutUint64(ws.Out[0].Data, uint64(p))
	return nil
}

func extDesc(batch, depth int, extra string, outputs string) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": %d, "device_id": null, "ops": [
	 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 2, "layout": "HW"}}%s],
	 "outputs": [%s]}`, batch, depth, extra, outputs)
}

// counted is a feed whose Release counts its calls.
func counted(samples [][]int32, shapes [][]int, calls *atomic.Int32) *Feed {
	f := &Feed{DType: Int32, Release: func() { calls.Add(1) }}
	for i, s := range samples {
		var b []byte
		if len(s) > 0 {
			b = unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
		}
		f.Samples = append(f.Samples, FeedSample{Data: b, Shape: shapes[i]})
	}
	return f
}

func int32s(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func TestFeedDenseAndReleasedOnce(t *testing.T) {
	p := mustPipeline(t, extDesc(2, 2, "", `"x"`))
	var calls [3]atomic.Int32
	for k := 0; k < 3; k++ {
		s := [][]int32{{int32(10 * k), 1, 2, 3, 4, 5}, {int32(10*k + 1), 7, 8, 9, 10, 11}}
		if err := p.FeedInput("src", counted(s, [][]int{{2, 3}, {2, 3}}, &calls[k])); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 3; k++ {
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		if k > 0 && calls[k-1].Load() != 1 {
			t.Fatalf("feed %d: release called %d times once its batch was released, want 1", k-1, calls[k-1].Load())
		}
		for i := 0; i < 2; i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			got := int32s(unsafe.Slice((*byte)(v.Ptr), 24))
			want := []int32{int32(10*k + i)}
			if got[0] != want[0] || fmt.Sprint(v.Shape) != "[2 3]" {
				t.Fatalf("batch %d sample %d: got %v shape %v, want first %d shape [2 3]", k, i, got, v.Shape, want[0])
			}
			v.Lease.Release()
		}
	}
	// Nothing more fed: Next fails at once instead of waiting forever.
	if _, err := p.Next(); StatusOf(err) != StatusState || !strings.Contains(err.Error(), `"src"`) {
		t.Fatalf("Next without a feed: %v, want a state error naming the source", err)
	}
	p.Close()
	for k := range calls {
		if n := calls[k].Load(); n != 1 {
			t.Fatalf("feed %d released %d times, want exactly once", k, n)
		}
	}
}

func TestFeedZeroCopyRagged(t *testing.T) {
	p := mustPipeline(t, extDesc(3, 1, `,
	 {"op": "_test.data_ptr", "name": "ptr", "inputs": ["x"], "outputs": ["p"]}`, `"p"`))
	var calls atomic.Int32
	s := [][]int32{{1, 2}, {3, 4, 5, 6, 7, 8}, {}}
	f := counted(s, [][]int{{1, 2}, {3, 2}, {0, 4}}, &calls)
	if err := p.FeedInput("src", f); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Output(0).DenseView()
	if err != nil {
		t.Fatal(err)
	}
	ptrs := unsafe.Slice((*uint64)(v.Ptr), 3)
	for i := 0; i < 2; i++ {
		if want := uint64(uintptr(unsafe.Pointer(&s[i][0]))); ptrs[i] != want {
			t.Fatalf("sample %d read at %#x, want the fed memory %#x (no copy)", i, ptrs[i], want)
		}
	}
	v.Lease.Release()
	if calls.Load() != 0 {
		t.Fatal("fed memory released while its batch is current")
	}
	if err := p.FeedInput("src", counted([][]int32{{1}, {2}, {3}}, [][]int{{1, 1}, {1, 1}, {1, 1}}, new(atomic.Int32))); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("release called %d times after the batch was released, want 1", calls.Load())
	}
}

func TestFeedCopy(t *testing.T) {
	p := mustPipeline(t, extDesc(1, 1, "", `"x"`))
	var calls atomic.Int32
	s := [][]int32{{5, 6}}
	f := counted(s, [][]int{{1, 2}}, &calls)
	f.Copy = true
	if err := p.FeedInput("src", f); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("Copy: release called %d times on return, want 1", calls.Load())
	}
	s[0][0] = 99 // the caller's memory is its own again
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.Output(0).SampleView(0)
	defer v.Lease.Release()
	if got := int32s(unsafe.Slice((*byte)(v.Ptr), 8)); got[0] != 5 || got[1] != 6 {
		t.Fatalf("got %v, want the values at feed time [5 6]", got)
	}
}

func TestFeedErrors(t *testing.T) {
	p := mustPipeline(t, extDesc(2, 1, "", `"x"`))
	ok := [][]int{{1, 1}, {1, 1}}
	cases := []struct {
		name, want string
		f          func(*atomic.Int32) *Feed
		feedName   string
	}{
		{"unknown name", `no external source named "nope"; external sources: "src"`, func(c *atomic.Int32) *Feed {
			return counted([][]int32{{1}, {2}}, ok, c)
		}, "nope"},
		{"dtype", "type FLOAT, the node declares dtype INT32", func(c *atomic.Int32) *Feed {
			f := counted([][]int32{{1}, {2}}, ok, c)
			f.DType = Float32
			return f
		}, "src"},
		{"ndim", "sample 1 has 1 dimensions", func(c *atomic.Int32) *Feed {
			return counted([][]int32{{1}, {2}}, [][]int{{1, 1}, {1}}, c)
		}, "src"},
		{"layout", `got layout "WH", the node declares layout "HW"`, func(c *atomic.Int32) *Feed {
			f := counted([][]int32{{1}, {2}}, ok, c)
			f.Layout = "WH"
			return f
		}, "src"},
		{"batch size", "got a batch of 3 samples, more than the pipeline's max_batch_size (batch_size) 2", func(c *atomic.Int32) *Feed {
			return counted([][]int32{{1}, {2}, {3}}, [][]int{{1, 1}, {1, 1}, {1, 1}}, c)
		}, "src"},
		{"bytes", "needs 8 bytes, got 4", func(c *atomic.Int32) *Feed {
			return counted([][]int32{{1}, {2}}, [][]int{{1, 1}, {1, 2}}, c)
		}, "src"},
		{"negative", "negative", func(c *atomic.Int32) *Feed {
			return counted([][]int32{{1}, {2}}, [][]int{{1, 1}, {-1, 1}}, c)
		}, "src"},
	}
	for _, c := range cases {
		var calls atomic.Int32
		err := p.FeedInput(c.feedName, c.f(&calls))
		if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an invalid-argument error containing %q", c.name, err, c.want)
		}
		if calls.Load() != 1 {
			t.Errorf("%s: release called %d times on a refused feed, want 1", c.name, calls.Load())
		}
	}
	if n, _ := p.QueuedFeeds("src"); n != 0 {
		t.Fatalf("%d refused feeds queued", n)
	}
}

func TestFeedEndOfEpochAndReset(t *testing.T) {
	p := mustPipeline(t, extDesc(1, 2, "", `"x"`))
	feed := func(v int32) {
		if err := p.FeedInput("src", counted([][]int32{{v}}, [][]int{{1, 1}}, new(atomic.Int32))); err != nil {
			t.Fatal(err)
		}
	}
	feed(1)
	feed(2)
	if err := p.FeedEndOfEpoch("src"); err != nil {
		t.Fatal(err)
	}
	feed(3) // the next epoch's
	var got []int32
	eachBatch(t, p, func(b *Batch) {
		v, _ := b.Output(0).SampleView(0)
		got = append(got, int32s(unsafe.Slice((*byte)(v.Ptr), 4))[0])
		v.Lease.Release()
	})
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("epoch 0: %v, want [1 2]", got)
	}
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := b.Output(0).SampleView(0)
	defer v.Lease.Release()
	if x := int32s(unsafe.Slice((*byte)(v.Ptr), 4))[0]; x != 3 || b.Epoch != 1 {
		t.Fatalf("after reset: %d in epoch %d, want 3 in epoch 1", x, b.Epoch)
	}
}

func TestFeedQueuedReleasedOnClose(t *testing.T) {
	p, err := NewPipeline([]byte(extDesc(1, 1, "", `"x"`)))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	if err := p.FeedInput("src", counted([][]int32{{1}}, [][]int{{1, 1}}, &calls)); err != nil {
		t.Fatal(err)
	}
	p.Close() // never built
	if calls.Load() != 1 {
		t.Fatalf("queued feed released %d times on close, want 1", calls.Load())
	}
	var late atomic.Int32
	if err := p.FeedInput("src", counted([][]int32{{1}}, [][]int{{1, 1}}, &late)); StatusOf(err) != StatusInvalidHandle || late.Load() != 1 {
		t.Fatalf("feed after close: %v, released %d times", err, late.Load())
	}
}

func TestFeedWithReaderAndFileRead(t *testing.T) {
	root := writeDataset(t, 2, 3)
	// external_source gives the paths, io.file.read reads them; readers.file reads the same
	// files in the same (sorted) order: the bytes must be equal.
	var files []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	desc := fmt.Sprintf(`{"batch_size": 3, "num_threads": 2, "device_id": null, "ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q}},
	 {"op": "external_source", "name": "paths", "outputs": ["p"], "args": {"dtype": "UINT8", "ndim": 1}},
	 {"op": "io.file.read", "name": "read", "inputs": ["p"], "outputs": ["bytes"]}],
	 "outputs": ["jpegs", "bytes"]}`, root)
	p := mustPipeline(t, desc)
	for k := 0; k < 2; k++ {
		f := &Feed{DType: UInt8}
		for _, name := range files[3*k : 3*k+3] {
			f.Samples = append(f.Samples, FeedSample{Data: []byte(name), Shape: []int{len(name)}})
		}
		if err := p.FeedInput("paths", f); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	eachBatch(t, p, func(b *Batch) {
		for i := 0; i < 3; i++ {
			a, _ := b.Output(0).SampleView(i)
			c, _ := b.Output(1).SampleView(i)
			x := unsafe.Slice((*byte)(a.Ptr), a.Shape[0])
			y := unsafe.Slice((*byte)(c.Ptr), c.Shape[0])
			if !bytes.Equal(x, y) {
				t.Fatalf("batch %d sample %d: io.file.read's bytes differ from readers.file's", n, i)
			}
			a.Lease.Release()
			c.Lease.Release()
		}
		n++
	})
	if n != 2 {
		t.Fatalf("%d batches, want 2 (the reader ends the epoch)", n)
	}
}

func TestFileReadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, make([]byte, 2000), 0o644)
	desc := `{"batch_size": 1, "num_threads": 1, "device_id": null, "max_file_bytes": 1000, "ops": [
	 {"op": "external_source", "name": "paths", "outputs": ["p"], "args": {"dtype": "UINT8", "ndim": 1}},
	 {"op": "io.file.read", "name": "read", "inputs": ["p"], "outputs": ["bytes"]}],
	 "outputs": ["bytes"]}`
	p := mustPipeline(t, desc)
	for _, c := range []struct{ path, want string }{
		{big, "more than max_file_bytes=1000"},
		{dir, "not a regular file"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		if err := p.FeedInput("paths", &Feed{DType: UInt8, Samples: []FeedSample{{Data: []byte(c.path), Shape: []int{len(c.path)}}}}); err != nil {
			t.Fatal(err)
		}
		_, err := p.Next()
		if StatusOf(err) != StatusData || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a data error naming the file and %q", c.path, err, c.want)
		}
		var se *SampleError
		if !errors.As(err, &se) || se.Node != "read" {
			t.Errorf("%s: error %v does not name node \"read\"", c.path, err)
		}
	}
}

// TestFeedConcurrentFeeder: one goroutine feeds while another consumes; every batch
// arrives once, in order, and every feed is released exactly once.
func TestFeedConcurrentFeeder(t *testing.T) {
	p := mustPipeline(t, extDesc(2, 3, "", `"x"`))
	const n = 40
	calls := make([]atomic.Int32, n)
	go func() {
		for k := 0; k < n; k++ {
			s := [][]int32{{int32(k)}, {int32(-k)}}
			if err := p.FeedInput("src", counted(s, [][]int{{1, 1}, {1, 1}}, &calls[k])); err != nil {
				t.Error(err)
				return
			}
		}
		if err := p.FeedEndOfEpoch("src"); err != nil {
			t.Error(err)
		}
	}()
	next := 0
	for {
		b, err := p.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			break
		}
		if StatusOf(err) == StatusState {
			continue // nothing fed yet: the rule is to feed before next
		}
		if err != nil {
			t.Fatal(err)
		}
		v, _ := b.Output(0).SampleView(1)
		if got := int32s(unsafe.Slice((*byte)(v.Ptr), 4))[0]; got != int32(-next) {
			t.Fatalf("batch %d: sample 1 is %d", next, got)
		}
		v.Lease.Release()
		next++
	}
	if next != n {
		t.Fatalf("%d batches, want %d", next, n)
	}
	p.Close()
	for k := range calls {
		if c := calls[k].Load(); c != 1 {
			t.Fatalf("feed %d released %d times", k, c)
		}
	}
}

func TestFeedDeclaredShape(t *testing.T) {
	desc := `{"batch_size": 2, "num_threads": 1, "device_id": null, "ops": [
	 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 2, "shape": [1, 2]}}],
	 "outputs": ["x"]}`
	p := mustPipeline(t, desc)
	var bad atomic.Int32
	err := p.FeedInput("src", counted([][]int32{{1, 2}, {3, 4}}, [][]int{{1, 2}, {2, 1}}, &bad))
	if StatusOf(err) != StatusInvalidArgument || !strings.Contains(err.Error(), "declares [1 2]") || bad.Load() != 1 {
		t.Fatalf("a shape other than declared: %v (released %d times)", err, bad.Load())
	}
	if err := p.FeedInput("src", counted([][]int32{{1, 2}, {3, 4}}, [][]int{{1, 2}, {1, 2}}, new(atomic.Int32))); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	o := b.Output(0)
	if !o.Dense {
		t.Fatal("a fully declared shape should give a dense output")
	}
	v, _ := o.DenseView()
	defer v.Lease.Release()
	if got := int32s(unsafe.Slice((*byte)(v.Ptr), 16)); fmt.Sprint(got) != "[1 2 3 4]" || fmt.Sprint(v.Shape) != "[2 1 2]" {
		t.Fatalf("got %v shape %v", got, v.Shape)
	}
}
