package decoders

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/testref"
	"github.com/godali/godali/internal/videotest"
)

func needVideoInput(t *testing.T) {
	t.Helper()
	if err := video.Load(); err != nil {
		testref.Missing(t, "FFmpeg libraries not loadable: %v", err)
	}
	videotest.FFmpeg(t)
}

func videoInputPipeline(t *testing.T, batch, seqLen int, policy string) *engine.Pipeline {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": 2, "device_id": null,
	  "ops": [{"op": "experimental.inputs.video", "name": "vid", "outputs": ["v"],
	    "args": {"sequence_length": %d, "last_sequence_policy": %q}}], "outputs": ["v"]}`, batch, seqLen, policy)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	return p
}

// feedVideo feeds a file's bytes read in place; released counts Release's calls.
func feedVideo(t *testing.T, p *engine.Pipeline, path string, released *atomic.Int32) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &engine.Feed{DType: engine.UInt8, Samples: []engine.FeedSample{{Data: data, Shape: []int{len(data)}}},
		Release: func() { released.Add(1) }}
	if err := p.FeedInput("vid", f); err != nil {
		t.Fatal(err)
	}
}

// nextSamples returns the next batch's samples (shape, bytes).
func nextSamples(t *testing.T, p *engine.Pipeline) (shapes [][]int64, data [][]byte) {
	t.Helper()
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < b.Size(); i++ {
		v, err := b.Output(0).SampleView(i)
		if err != nil {
			t.Fatal(err)
		}
		n := 1
		for _, d := range v.Shape {
			n *= int(d)
		}
		shapes = append(shapes, append([]int64(nil), v.Shape...))
		data = append(data, append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...))
		v.Lease.Release()
	}
	return shapes, data
}

// Two fed videos (H.264 with B-frames, then VP9 of another size) come out as consecutive
// sequences, frame for frame the ffmpeg command's decoding; a video's last batch is
// smaller and its last sequence partial; each feed is released once, after its last batch.
func TestVideoInputStreams(t *testing.T) {
	needVideoInput(t)
	dir := t.TempDir()
	a := videotest.Make(t, dir, "a", videotest.Spec{Frames: 23, BFrames: 2, GOP: 7})
	b := videotest.Make(t, dir, "b", videotest.Spec{Frames: 11, Codec: "libvpx-vp9", Ext: "webm", W: 32, H: 24})
	refs := [][][]byte{videotest.RGBFrames(t, a, 64, 48), videotest.RGBFrames(t, b, 32, 24)}
	for _, policy := range []string{"partial", "pad"} {
		t.Run(policy, func(t *testing.T) {
			const batch, L = 3, 4
			p := videoInputPipeline(t, batch, L, policy)
			var rel [2]atomic.Int32
			feedVideo(t, p, a, &rel[0])
			feedVideo(t, p, b, &rel[1])
			if err := p.Run(); err != nil {
				t.Fatal(err)
			}
			for v, ref := range refs {
				n := len(ref)
				for first := 0; first < n; first += batch * L {
					shapes, data := nextSamples(t, p)
					want := min(batch, (n-first+L-1)/L)
					if len(shapes) != want {
						t.Fatalf("video %d, frame %d: batch of %d samples, want %d", v, first, len(shapes), want)
					}
					for s := range shapes {
						start := first + s*L
						frames := min(L, n-start)
						wantF := frames
						if policy == "pad" {
							wantF = L
						}
						fb := len(ref[0])
						if shapes[s][0] != int64(wantF) || int(shapes[s][1]*shapes[s][2]*shapes[s][3]) != fb {
							t.Fatalf("video %d, sequence at %d: shape %v", v, start, shapes[s])
						}
						for k := 0; k < wantF; k++ {
							got := data[s][k*fb : (k+1)*fb]
							if k >= frames {
								if bytes.Count(got, []byte{0}) != fb {
									t.Fatalf("video %d, sequence at %d: padding frame %d is not black", v, start, k)
								}
								continue
							}
							if !bytes.Equal(got, ref[start+k]) {
								t.Fatalf("video %d: frame %d differs from ffmpeg's", v, start+k)
							}
						}
					}
				}
			}
			// Everything decoded: the next run has nothing fed.
			if _, err := p.Next(); err == nil || !strings.Contains(err.Error(), "feed") {
				t.Fatalf("run with nothing fed: %v, want an error asking for a feed", err)
			}
			if rel[0].Load() != 1 || rel[1].Load() != 1 {
				t.Fatalf("feeds released %d and %d times, want once each", rel[0].Load(), rel[1].Load())
			}
		})
	}
}

// A feed that is not a video fails its batch, names the node, and the next feed goes on.
func TestVideoInputBadItem(t *testing.T) {
	needVideoInput(t)
	dir := t.TempDir()
	a := videotest.Make(t, dir, "a", videotest.Spec{Frames: 5})
	bad := dir + "/bad.mp4"
	if err := os.WriteFile(bad, []byte("not a video at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := videoInputPipeline(t, 2, 4, "partial")
	var rel [2]atomic.Int32
	feedVideo(t, p, bad, &rel[0])
	feedVideo(t, p, a, &rel[1])
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	_, err := p.Next()
	if err == nil || !strings.Contains(err.Error(), `"vid"`) || engine.StatusOf(err) != engine.StatusData {
		t.Fatalf("bad item: %v (status %v), want a data error naming node \"vid\"", err, engine.StatusOf(err))
	}
	shapes, _ := nextSamples(t, p)
	if len(shapes) != 2 || shapes[0][0] != 4 || shapes[1][0] != 1 {
		t.Fatalf("after the bad item: shapes %v, want sequences of 4 and 1 frames", shapes)
	}
	if rel[0].Load() != 1 {
		t.Fatalf("bad item released %d times", rel[0].Load())
	}
}

func TestVideoInputRefused(t *testing.T) {
	needVideoInput(t)
	for _, c := range []struct{ ops, want string }{
		{`{"op": "experimental.inputs.video", "name": "vid", "outputs": ["v"], "args": {"sequence_length": 0}}`, "sequence_length"},
		{`{"op": "experimental.inputs.video", "name": "vid", "outputs": ["v"], "args": {"sequence_length": 2, "last_sequence_policy": "drop"}}`, "last_sequence_policy"},
		{`{"op": "experimental.inputs.video", "name": "vid", "outputs": ["v"], "args": {"sequence_length": 2}},
		  {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "UINT8", "ndim": 1}}`, "other external sources"},
	} {
		desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "device_id": null, "ops": [%s], "outputs": ["v"]}`, c.ops)
		if _, err := engine.NewPipeline([]byte(desc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.ops, err, c.want)
		}
	}
	p := videoInputPipeline(t, 2, 2, "partial")
	f := &engine.Feed{DType: engine.UInt8, Samples: []engine.FeedSample{{Data: []byte{1}, Shape: []int{1}}, {Data: []byte{2}, Shape: []int{1}}}}
	if err := p.FeedInput("vid", f); err == nil || !strings.Contains(err.Error(), "1 sample") {
		t.Errorf("two samples fed: %v", err)
	}
}

// Issue 24: inputs.video's frames and padded sequences are bounded by max_image_pixels
// before anything is allocated; the errors name the option and sequence_length.
func TestVideoInputBoundedByMaxImagePixels(t *testing.T) {
	needVideoInput(t)
	dir := t.TempDir()
	clip := videotest.Make(t, dir, "clip", videotest.Spec{Frames: 5})
	huge := videotest.Make(t, dir, "huge", videotest.Spec{Codec: "mjpeg", Ext: "avi", W: 16, H: 16, Frames: 3})
	videotest.Resize(t, huge, 16000, 16000, true, true)
	for _, c := range []struct {
		path, policy string
		seqLen       int
		want         []string
	}{
		{clip, "pad", 1000000, []string{`argument "sequence_length"`, "padding frames of 64x48", "max_image_pixels=178956970"}},
		{huge, "partial", 2, []string{"16000x16000", "max_image_pixels=178956970"}},
	} {
		p := videoInputPipeline(t, 1, c.seqLen, c.policy)
		var released atomic.Int32
		feedVideo(t, p, c.path, &released)
		_, err := p.Next()
		if err == nil {
			t.Errorf("%s: no error", c.path)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error does not say %q: %v", c.path, w, err)
			}
		}
	}
}
