package engine

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
)

// _test.stream is a stream source that cuts each fed item into samples of `chunk`
// bytes (the last shorter), as many per batch as the batch holds: the engine's side of
// inputs.video without a video.
func init() {
	RegisterSchema(&Schema{Name: "_test.stream", Outputs: []string{"out"}, HostOnly: true,
		Args: []ArgSpec{{Name: "chunk", Type: ArgInt, Default: 3}}})
	RegisterBackend("_test.stream", "cpu", func(a *Args) (Operator, error) { return &chunker{chunk: a.Int("chunk")}, nil })
}

type chunker struct {
	chunk  int
	cursor int // planner state: the next byte of the current item
	fresh  []bool
}

type chunkPlan struct{ first int }

func (*chunker) ExternalSource() {}

func (c *chunker) Infer([]TensorMeta) ([]TensorMeta, error) {
	return []TensorMeta{{DType: UInt8, Shape: []int{-1}}}, nil
}

func (c *chunker) PlanBatch(item []byte, fresh bool, max int) (int, any, bool, error) {
	c.fresh = append(c.fresh, fresh)
	if fresh {
		c.cursor = 0
	}
	if bytes.HasPrefix(item, []byte("bad")) {
		return 0, nil, true, Errorf(StatusData, "item %q refused", item)
	}
	n := min(max, (len(item)-c.cursor+c.chunk-1)/c.chunk)
	plan := &chunkPlan{first: c.cursor}
	c.cursor += n * c.chunk
	return n, plan, c.cursor >= len(item), nil
}

func (c *chunker) Setup(ws *Workspace) error {
	sb := ws.Stream()
	first := sb.Plan.(*chunkPlan).first + ws.Sample*c.chunk
	ws.Out[0].SetShape(min(c.chunk, len(sb.Data)-first))
	return nil
}

func (c *chunker) Run(ws *Workspace) error {
	sb := ws.Stream()
	first := sb.Plan.(*chunkPlan).first + ws.Sample*c.chunk
	copy(ws.Out[0].Data, sb.Data[first:])
	return nil
}

func streamFeed(s string, released *atomic.Int32) *Feed {
	return &Feed{DType: UInt8, Samples: []FeedSample{{Data: []byte(s), Shape: []int{len(s)}}},
		Release: func() { released.Add(1) }}
}

// A stream source decides each batch's size; an item is held until its last batch is
// released, then released once; a refused item fails its batch and the next goes on;
// dropping the queue makes the next item fresh.
func TestStreamSourceBatches(t *testing.T) {
	p := mustPipeline(t, `{"batch_size": 2, "num_threads": 2, "prefetch_queue_depth": 2, "device_id": null,
	  "ops": [{"op": "_test.stream", "name": "s", "outputs": ["o"], "args": {"chunk": 3}}], "outputs": ["o"]}`)
	var rel [3]atomic.Int32
	for i, s := range []string{"abcdefghijklm", "bad", "xyz1"} {
		if err := p.FeedInput("s", streamFeed(s, &rel[i])); err != nil {
			t.Fatal(err)
		}
	}
	want := [][]string{{"abc", "def"}, {"ghi", "jkl"}, {"m"}, nil, {"xyz", "1"}}
	for bi, w := range want {
		b, err := p.Next()
		if w == nil {
			if err == nil || !strings.Contains(err.Error(), `"bad" refused`) || StatusOf(err) != StatusData {
				t.Fatalf("batch %d: %v, want the refused item's data error", bi, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Size() != len(w) || b.Valid != len(w) {
			t.Fatalf("batch %d: %d samples (valid %d), want %d", bi, b.Size(), b.Valid, len(w))
		}
		for i, s := range w {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			got := string(v.Lease.Bytes()[:v.Shape[0]])
			v.Lease.Release()
			if got != s {
				t.Fatalf("batch %d sample %d: %q, want %q", bi, i, got, s)
			}
		}
		if bi == 1 && rel[0].Load() != 0 {
			t.Fatalf("the first item was released while batches planned from it are in use")
		}
	}
	if _, err := p.Next(); err == nil || !strings.Contains(err.Error(), "feed") {
		t.Fatalf("nothing fed: %v", err)
	}
	for i := range rel {
		if rel[i].Load() != 1 {
			t.Fatalf("item %d released %d times, want 1", i, rel[i].Load())
		}
	}
	// An item only partly planned, then dropped: the batches already planned from it
	// (prefetch) still come, in order, and the next item starts from its beginning.
	var r2 [2]atomic.Int32
	long := "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if err := p.FeedInput("s", streamFeed(long, &r2[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DropFeeds("s"); err != nil {
		t.Fatal(err)
	}
	if err := p.FeedInput("s", streamFeed("QRS", &r2[1])); err != nil {
		t.Fatal(err)
	}
	next := 6 // the first batch had long[0:6]
	for {
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := b.Output(0).SampleView(0)
		got := string(v.Lease.Bytes()[:v.Shape[0]])
		v.Lease.Release()
		if got == "QRS" {
			break
		}
		if next+3 > len(long) || got != long[next:next+3] {
			t.Fatalf("after DropFeeds: %q, want %q or the new item from its start", got, long[next:min(next+3, len(long))])
		}
		next += 3 * b.Size()
	}
	if r2[0].Load() != 1 {
		t.Fatalf("the dropped item was released %d times, want 1", r2[0].Load())
	}
}
