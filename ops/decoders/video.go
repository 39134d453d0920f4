package decoders

import (
	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "decoders.video",
		Doc: "Decodes encoded videos held in memory (1-D uint8 samples: from external_source, " +
			"readers.file or io.file.read) to FHWC uint8 RGB sequences, with FFmpeg's libraries " +
			"opened at run time (docs/pipeline.md#video). Frames start_frame, start_frame+stride, ... " +
			"before end_frame (default: the end), or the frames listed in frames; with sequence_length, " +
			"that many, the missing ones padded as pad_mode says. Frames are numbered by presentation time.",
		Backends:  map[string]engine.BackendFacts{"mixed": {Doc: "NVDEC for 8-bit 4:2:0 streams it decodes; others on the CPU, uploaded"}},
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"video"},
		Args: []engine.ArgSpec{
			{Name: "start_frame", Type: engine.ArgInt, Default: 0, Doc: "first frame"},
			{Name: "end_frame", Type: engine.ArgInt, Default: -1, Doc: "frame the selection stops before (-1: the end of the video)"},
			{Name: "stride", Type: engine.ArgInt, Default: 1, Doc: "distance between the frames taken"},
			{Name: "sequence_length", Type: engine.ArgInt, Default: -1, Doc: "frames per output (-1: every selected frame)"},
			{Name: "frames", Type: engine.ArgIntList, Doc: "explicit frame numbers (instead of start_frame, end_frame and stride)"},
			{Name: "pad_mode", Type: engine.ArgString, Default: "constant", Doc: "when the video has fewer frames than sequence_length: constant (fill_value), edge or repeat (the video's last frame), reflect_1001 or symmetric (ABC -> ABCCBA), reflect_101 or reflect (ABC -> ABCBA), or none (a shorter output); the reflections mirror the frame numbers start_frame + i * stride would have"},
			{Name: "fill_value", Type: engine.ArgIntList, Default: []int64{0}, Doc: "pad value, one per channel or one for all"},
			{Name: "affine", Type: engine.ArgBool, Default: true, Doc: "accepted for DALI compatibility (mixed backend); no effect"},
			{Name: "build_index", Type: engine.ArgBool, Default: true, Doc: "accepted for DALI compatibility: godali always indexes the packets"},
		},
	})
	engine.RegisterBackend("decoders.video", "cpu", newVideoDecoder)
}

type videoDecoder struct {
	args                       *engine.Args
	start, end, stride, seqLen int
	frames                     []int
	padMode                    string
	fill                       [3]byte
}

func newVideoDecoder(a *engine.Args) (engine.Operator, error) {
	d := &videoDecoder{args: a, start: a.Int("start_frame"), end: a.Int("end_frame"), stride: a.Int("stride"),
		seqLen: a.Int("sequence_length"), padMode: a.String("pad_mode")}
	for _, f := range a.Ints("frames") {
		if f < 0 {
			return nil, a.Errorf("frames", "frame numbers must be >= 0, got %d", f)
		}
		d.frames = append(d.frames, int(f))
	}
	if d.start < 0 {
		return nil, a.Errorf("start_frame", "must be >= 0, got %d", d.start)
	}
	if d.stride < 1 {
		return nil, a.Errorf("stride", "must be >= 1, got %d", d.stride)
	}
	if d.seqLen == 0 || d.seqLen < -1 {
		return nil, a.Errorf("sequence_length", "must be >= 1 (or -1), got %d", d.seqLen)
	}
	if err := a.CheckFrameArgs("start_frame", "stride", "sequence_length"); err != nil {
		return nil, err
	}
	if d.seqLen > 0 && d.frames == nil {
		if err := a.CheckFrameSpan(d.start, d.seqLen, d.stride, "start_frame", "sequence_length", "stride"); err != nil {
			return nil, err
		}
	}
	// DALI's names: repeat is edge, symmetric is reflect_1001, reflect is reflect_101.
	switch d.padMode {
	case "repeat":
		d.padMode = "edge"
	case "symmetric":
		d.padMode = "reflect_1001"
	case "reflect":
		d.padMode = "reflect_101"
	}
	switch d.padMode {
	case "constant", "edge", "none", "reflect_1001", "reflect_101":
	default:
		return nil, a.Errorf("pad_mode", "expected constant, edge (repeat), reflect_1001 (symmetric), reflect_101 (reflect) or none, got %q", d.padMode)
	}
	fill := a.Ints("fill_value")
	switch len(fill) {
	case 1:
		d.fill = [3]byte{byte(fill[0]), byte(fill[0]), byte(fill[0])}
	case 3:
		d.fill = [3]byte{byte(fill[0]), byte(fill[1]), byte(fill[2])}
	default:
		return nil, a.Errorf("fill_value", "expected 1 or 3 values, got %d", len(fill))
	}
	if err := video.Load(); err != nil {
		return nil, a.Invalidf("%v", err)
	}
	return d, nil
}

func (d *videoDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if in[0].DType != engine.UInt8 {
		return nil, d.args.Errorf("input", "expected encoded video bytes (uint8), got %s", in[0].DType)
	}
	f := -1
	if d.seqLen > 0 && d.padMode != "none" {
		f = d.seqLen
	}
	return []engine.TensorMeta{{DType: engine.UInt8, Layout: "FHWC", Shape: []int{f, -1, -1, 3}}}, nil
}

// videoDecoderState holds the sample's open video from Setup to Run.
type videoDecoderState struct {
	f     *video.File
	ix    *video.Index
	avail []int // the selected frames the video has
	total int   // output frames
}

func (s *videoDecoderState) Close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

func (d *videoDecoder) NewWorkerState() any { return &videoDecoderState{} }

func (d *videoDecoder) Setup(ws *engine.Workspace) error {
	return d.setup(ws, ws.State.(*videoDecoderState))
}

// setup opens and indexes the sample's video, selects its frames and sets the output
// shape (the mixed backend's too).
func (d *videoDecoder) setup(ws *engine.Workspace, st *videoDecoderState) error {
	if st.f == nil {
		st.f = &video.File{}
	}
	maxPixels := ws.MaxImagePixels()
	st.f.MaxPixels = maxPixels
	if err := st.f.ReopenBytes(ws.In[0].Data, 1); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	// The frame size from the header, before the index is read or a frame decoded.
	if err := st.f.Info.CheckPixels(maxPixels); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if st.ix == nil {
		st.ix = &video.Index{}
	}
	if err := st.f.ScanInto(st.ix); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	ix := st.ix
	n := ix.Len()
	st.avail = st.avail[:0]
	if d.frames != nil {
		for _, f := range d.frames {
			if f >= n {
				return engine.Errorf(engine.StatusData, "frame %d requested (argument \"frames\"), the video has %d", f, n)
			}
			st.avail = append(st.avail, f)
		}
	} else {
		end := d.end
		if end < 0 || end > n {
			end = n
		}
		for f := d.start; f < end; f += d.stride {
			st.avail = append(st.avail, f)
		}
	}
	st.total = len(st.avail)
	if d.seqLen > 0 {
		st.avail = st.avail[:min(len(st.avail), d.seqLen)]
		switch d.padMode {
		case "none":
			st.total = len(st.avail)
		case "constant":
			st.total = d.seqLen
		default:
			// DALI: the frames past the video's end are the frames start + i * stride
			// would be, read through the border mode (edge: the video's last frame;
			// the reflections mirror the video's frame numbers).
			lim := n
			if d.end >= 0 && d.end < n {
				lim = d.end
			}
			if lim == 0 && len(st.avail) < d.seqLen {
				return engine.Errorf(engine.StatusData, "no frame to pad with (pad_mode %s): the video has %d frames", d.padMode, n)
			}
			for i := len(st.avail); i < d.seqLen; i++ {
				st.avail = append(st.avail, borderFrame(d.padMode, d.start+i*d.stride, lim))
			}
			st.total = d.seqLen
		}
	}
	// The output (padding included) is bounded before it is allocated.
	if err := st.f.Info.CheckSequence(st.total, st.total-len(st.avail), maxPixels); err != nil {
		if d.seqLen > 0 {
			return d.args.ArgDataErrorf(ws, "sequence_length", "%v; lower sequence_length or raise max_image_pixels", err)
		}
		return d.args.DataErrorf(ws, "%v; select fewer frames (start_frame, end_frame, stride, frames or sequence_length) or raise max_image_pixels", err)
	}
	ws.Out[0].SetShape(st.total, st.f.Info.Height, st.f.Info.Width, 3)
	return nil
}

func (d *videoDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*videoDecoderState)
	out := ws.Out[0].Data
	fb := st.f.FrameBytes()
	err := st.runs(func(i, n, first, step int) error {
		return st.f.ReadFrames(st.ix, first, n, step, out[i*fb:(i+n)*fb])
	})
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	d.pad(st, out)
	return nil
}

// runs calls read for each run of equally spaced selected frames: n frames from first,
// step apart, going to output frames i, i+1, ...
func (st *videoDecoderState) runs(read func(i, n, first, step int) error) error {
	for i := 0; i < len(st.avail); {
		j, step := i+1, 1
		if j < len(st.avail) {
			step = st.avail[j] - st.avail[i]
		}
		for step > 0 && j < len(st.avail) && st.avail[j]-st.avail[j-1] == step {
			j++
		}
		if step <= 0 {
			j, step = i+1, 1
		}
		if err := read(i, j-i, st.avail[i], step); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// borderFrame is the frame a padding position v (at or past the end lim) shows, for the
// border modes: edge repeats frame lim-1; reflect_1001 mirrors including the edge frame
// (ABC -> ABCCBA), reflect_101 without it (ABC -> ABCBA), both periodic beyond.
func borderFrame(mode string, v, lim int) int {
	switch {
	case lim <= 1 || mode == "edge":
		return lim - 1
	case mode == "reflect_1001":
		p := 2 * lim
		v %= p
		if v >= lim {
			v = p - 1 - v
		}
		return v
	default: // reflect_101
		p := 2 * (lim - 1)
		v %= p
		if v >= lim {
			v = p - v
		}
		return v
	}
}

// pad fills the output frames after the decoded ones (pad_mode constant).
func (d *videoDecoder) pad(st *videoDecoderState, out []byte) {
	fb := st.f.FrameBytes()
	for k := len(st.avail); k < st.total; k++ {
		dst := out[k*fb : (k+1)*fb]
		for p := 0; p < len(dst); p += 3 {
			dst[p], dst[p+1], dst[p+2] = d.fill[0], d.fill[1], d.fill[2]
		}
	}
}
