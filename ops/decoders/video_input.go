package decoders

import (
	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
)

// experimental.inputs.video: one fed video, streamed out as batches of sequences. The
// producer plans (PlanBatch: the video is indexed once, when it reaches the head of the
// queue, and a cursor walks its frames); the workers decode their sequences with the
// shared index, each keeping the item open from one sequence to the next.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "experimental.inputs.video",
		Doc: "Streams encoded videos fed with feed_input (one video per feed: a batch of 1 sample, " +
			"1-D uint8) as consecutive FHWC uint8 RGB sequences of sequence_length frames, " +
			"batch_size sequences a batch (DALI's fn.experimental.inputs.video). A batch never mixes " +
			"two videos: a video's last batch has fewer samples when its frames run out, and its last " +
			"sequence is shorter (last_sequence_policy partial) or padded with black frames (pad). " +
			"The next feed's video follows; running with nothing fed is an error. The node's name is " +
			"the feed's name. A pipeline with this input has no reader and no other external source.",
		MinInputs: 0, MaxInputs: 0, Outputs: []string{"video"}, HostOnly: true,
		Args: []engine.ArgSpec{
			{Name: "sequence_length", Type: engine.ArgInt, Required: true, Doc: "frames per sequence"},
			{Name: "last_sequence_policy", Type: engine.ArgString, Default: "partial", Doc: "a video's last sequence when its frames run out: partial (shorter) or pad (black frames up to sequence_length)"},
			{Name: "blocking", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; running with no video fed is an error either way"},
			{Name: "no_copy", Type: engine.ArgBool, Default: false, Doc: "accepted for DALI compatibility; the feeder decides whether its memory is copied"},
			{Name: "affine", Type: engine.ArgBool, Default: true, Doc: "accepted for DALI compatibility (mixed backend); no effect"},
		},
	})
	engine.RegisterBackend("experimental.inputs.video", "cpu", newVideoInput)
}

type videoInput struct {
	args   *engine.Args
	seqLen int
	pad    bool

	// The planner's state: used only by the producer (PlanBatch), in batch order.
	scan   video.File // its MaxPixels: the pipeline's max_image_pixels (TakeLimits)
	cur    *videoStream
	cursor int // the next frame of cur to plan
}

// videoStream is one fed video as the planner indexed it: shared, read-only, by the
// batches planned from it and the workers that decode them.
type videoStream struct {
	ix   *video.Index
	info video.Info
}

// videoInputPlan is one batch's plan: its sequences start at frame first, seqLen apart.
type videoInputPlan struct {
	s     *videoStream
	first int
}

func newVideoInput(a *engine.Args) (engine.Operator, error) {
	d := &videoInput{args: a, seqLen: a.Int("sequence_length")}
	if d.seqLen < 1 {
		return nil, a.Errorf("sequence_length", "must be >= 1, got %d", d.seqLen)
	}
	if err := a.CheckFrameArgs("sequence_length"); err != nil {
		return nil, err
	}
	switch p := a.String("last_sequence_policy"); p {
	case "partial":
	case "pad":
		d.pad = true
	default:
		return nil, a.Errorf("last_sequence_policy", "expected partial or pad, got %q", p)
	}
	if err := video.Load(); err != nil {
		return nil, a.Invalidf("%v", err)
	}
	return d, nil
}

// TakeLimits bounds the frames the planner's probe may decode (engine.LimitsTaker): a
// raw stream's frame size is known only from its first frame.
func (d *videoInput) TakeLimits(l engine.Limits) { d.scan.MaxPixels = l.MaxImagePixels }

// ExternalSource marks the node for the executor's feed queues.
func (*videoInput) ExternalSource() {}

func (d *videoInput) Infer([]engine.TensorMeta) ([]engine.TensorMeta, error) {
	f := -1
	if d.pad {
		f = d.seqLen
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "FHWC", Shape: []int{f, -1, -1, 3}}}, nil
}

// PlanBatch indexes a new video (fresh) and plans up to max sequences of it.
func (d *videoInput) PlanBatch(item []byte, fresh bool, max int) (int, any, bool, error) {
	if fresh {
		d.cur, d.cursor = nil, 0
		if err := d.scan.ReopenBytes(item, 1); err != nil {
			return 0, nil, true, err
		}
		// A new index each video: the previous one may still be read by batches in flight.
		s := &videoStream{ix: &video.Index{}, info: d.scan.Info}
		if err := d.scan.ScanInto(s.ix); err != nil {
			return 0, nil, true, err
		}
		d.cur = s
	}
	left := d.cur.ix.Len() - d.cursor
	n := min(max, (left+d.seqLen-1)/d.seqLen)
	plan := &videoInputPlan{s: d.cur, first: d.cursor}
	d.cursor += n * d.seqLen
	done := d.cursor >= d.cur.ix.Len()
	if done {
		d.cur = nil // the batches in flight keep it
	}
	return n, plan, done, nil
}

// Close frees the planner's copy of the last video.
func (d *videoInput) Close() { d.scan.Close() }

// videoInputState is a worker's open video: the stream it last decoded, kept open so
// that its next sequence of the same video goes on without reopening.
type videoInputState struct {
	f      video.File
	open   *videoStream
	first  int
	frames int // decoded frames of the sample (the rest is padding)
}

func (s *videoInputState) Close() {
	s.f.Close()
	s.open = nil
}

func (d *videoInput) NewWorkerState() any { return &videoInputState{} }

func (d *videoInput) Setup(ws *engine.Workspace) error {
	sb := ws.Stream()
	if sb == nil {
		return d.args.Invalidf("no planned video for sample %d", ws.Sample)
	}
	p := sb.Plan.(*videoInputPlan)
	st := ws.State.(*videoInputState)
	maxPixels := ws.MaxImagePixels()
	if err := p.s.info.CheckPixels(maxPixels); err != nil {
		return d.args.DataErrorf(ws, "%v", err)
	}
	if st.open != p.s {
		st.open = nil
		st.f.MaxPixels = maxPixels
		if err := st.f.ReopenBytes(sb.Data, 1); err != nil {
			return d.args.DataErrorf(ws, "%v", err)
		}
		st.open = p.s
	}
	st.first = p.first + ws.Sample*d.seqLen
	st.frames = min(d.seqLen, p.s.ix.Len()-st.first)
	f := st.frames
	if d.pad {
		f = d.seqLen
	}
	if err := p.s.info.CheckSequence(f, f-st.frames, maxPixels); err != nil {
		return d.args.ArgDataErrorf(ws, "sequence_length", "%v; lower sequence_length or raise max_image_pixels", err)
	}
	ws.Out[0].SetShape(f, p.s.info.Height, p.s.info.Width, 3)
	return nil
}

func (d *videoInput) Run(ws *engine.Workspace) error {
	st := ws.State.(*videoInputState)
	out := ws.Out[0].Data
	fb := st.f.FrameBytes()
	if err := st.f.ReadFrames(st.open.ix, st.first, st.frames, 1, out[:st.frames*fb]); err != nil {
		st.open = nil // reopened for the next sample
		return d.args.DataErrorf(ws, "%v", err)
	}
	clear(out[st.frames*fb:])
	return nil
}
