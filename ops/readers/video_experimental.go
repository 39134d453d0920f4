package readers

import (
	"math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
)

// experimentalVideoReader is DALI's newer video reader: readers.video's decoding and
// file lists, with its own sequence padding, frame numbers and uniform sampling.
const experimentalVideoReader = "experimental.readers.video"

func registerExperimentalVideoReader() {
	engine.RegisterSchema(&engine.Schema{
		Name: experimentalVideoReader,
		Doc: "Reads sequences of sequence_length frames from video files, as DALI's experimental.readers.video " +
			"(readers.video's decoding: FFmpeg's libavformat and libavcodec, opened at run time). Every video " +
			"gives the sequences starting at frames 0, step, 2*step, ... whose sequence_length * stride frames " +
			"fit in it; with a pad_mode other than \"none\" one more, from the next start if it lies in the " +
			"video, its frames past the end replaced as pad_mode says " +
			"(constant: fill_value; edge: the video's last frame; reflect_101 / reflect_1001: the frame " +
			"mirrored at the video's end). uniform_sample reads one sequence per video instead, frames " +
			"round(linspace(start, end - 1, sequence_length)). Outputs the frames (FHWC uint8 RGB), then the " +
			"label (int32 [1]; with labels, file_root or file_list), the frame numbers (int32 [1], the first, " +
			"with enable_frame_num scalar or True; [F] with sequence, -1 for constant padding) and each " +
			"frame's time in seconds (float64 [F]; enable_timestamps; -1 for constant padding).",
		MinInputs: 0, MaxInputs: 0, IsReader: true,
		Outputs: []string{"video", "labels", "frame_num", "timestamps"},
		OutputIf: map[string]engine.OutputCond{"labels": engine.IfAnyGiven("labels", "file_root", "file_list"),
			"frame_num": engine.IfArgNot("enable_frame_num", "none", "false"), "timestamps": engine.IfArg("enable_timestamps")},
		Args: append([]engine.ArgSpec{
			{Name: "sequence_length", Type: engine.ArgInt, Required: true, Doc: "frames per sequence (1 to 65536)"},
			{Name: "step", Type: engine.ArgInt, Default: -1, Doc: "frames between the starts of consecutive sequences (less than 0: sequence_length)"},
			{Name: "stride", Type: engine.ArgInt, Default: 1, Doc: "distance between consecutive frames of a sequence"},
			{Name: "filenames", Type: engine.ArgStringList, Default: []string{}, Doc: "video files"},
			{Name: "labels", Type: engine.ArgIntList, Doc: "labels of filenames; without it there is no label output"},
			{Name: "file_root", Type: engine.ArgString, Default: "", Doc: "directory: each sorted subdirectory is a class, all its files are videos"},
			{Name: "file_list", Type: engine.ArgString, Default: "", Doc: "text file of \"path label [start [end]]\" lines (see file_list_format)"},
			{Name: "file_list_format", Type: engine.ArgString, Default: "timestamps", Doc: "file_list's start and end: timestamps (seconds) or frames (frame numbers, a negative end counts from the end)"},
			{Name: "file_list_rounding", Type: engine.ArgString, Default: "start_down_end_up", Doc: "fractional frame numbers in file_list: start_down_end_up, start_up_end_down, all_up or all_down (times map to the frame shown at that time, as in DALI 2.4)"},
			{Name: "file_list_include_end", Type: engine.ArgBool, Default: true, Doc: "accepted for DALI compatibility: the end frame is excluded either way, as DALI 2.4's CPU reader does"},
			{Name: "enable_frame_num", Type: engine.ArgString, Default: "none", BoolString: true, Doc: "frame number output: none (or False), scalar (or True: the first frame's) or sequence (every frame's)"},
			{Name: "enable_timestamps", Type: engine.ArgBool, Default: false, Doc: "add the timestamps output"},
			{Name: "pad_mode", Type: engine.ArgString, Default: "none", Doc: "sequences running past the end of a video: none (not read), constant, edge (or repeat), reflect_1001 (or symmetric), reflect_101 (or reflect)"},
			{Name: "fill_value", Type: engine.ArgIntList, Default: []int64{0}, Doc: "with pad_mode=\"constant\": one value 0..255, or one per channel"},
			{Name: "uniform_sample", Type: engine.ArgBool, Default: false, Doc: "one sequence per video, frames spread evenly over it (step, stride and pad_mode ignored)"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "RGB (the only colour space godali produces)"},
			{Name: "skip_vfr_check", Type: engine.ArgBool, Default: false, Doc: "accept variable frame rate videos (godali's own; refused by default)"},
			{Name: "tensor_init_bytes", Type: engine.ArgInt, Default: 1048576, Doc: "accepted for DALI compatibility"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend(experimentalVideoReader, "cpu", newVideoReader)
}

// videoMaxSequence bounds sequence_length: every sample holds that many frames (the
// reader also bounds the sample's pixels, max_image_pixels).
const videoMaxSequence = 1 << 16

type videoPad int

const (
	padNone videoPad = iota
	padConstant
	padEdge
	padReflect101
	padReflect1001
)

type videoFrameNum int

const (
	frameNumNone videoFrameNum = iota
	frameNumScalar
	frameNumSequence
)

// videoReaderOptions are experimental.readers.video's arguments beyond readers.video's.
type videoReaderOptions struct {
	on                   bool
	pad                  videoPad
	fill                 [3]byte
	frameNum             videoFrameNum
	uniform              bool
	listFrames           bool
	startUp, endUp       bool
	filenamesGiven, list bool
}

func (x *videoReaderOptions) parse(a *engine.Args) error {
	x.on = true
	if n := a.Int("sequence_length"); n > videoMaxSequence {
		return a.Errorf("sequence_length", "expected at most %d frames, got %d", videoMaxSequence, n)
	}
	switch m := a.String("pad_mode"); m {
	case "none":
	case "constant":
		x.pad = padConstant
	case "edge", "repeat":
		x.pad = padEdge
	case "reflect_101", "reflect":
		x.pad = padReflect101
	case "reflect_1001", "symmetric":
		x.pad = padReflect1001
	default:
		return a.Errorf("pad_mode", "unknown pad_mode %q: expected none, constant, edge, repeat, reflect_1001, symmetric, reflect_101 or reflect", m)
	}
	fill := a.Ints("fill_value")
	if len(fill) != 1 && len(fill) != 3 {
		return a.Errorf("fill_value", "expected one value or one per channel (3), got %v", fill)
	}
	for c := range x.fill {
		v := fill[min(c, len(fill)-1)]
		if v < 0 || v > 255 {
			return a.Errorf("fill_value", "each value must be in range [0, 255], got %v", fill)
		}
		x.fill[c] = byte(v)
	}
	switch f := a.String("enable_frame_num"); f {
	case "none", "false":
	case "scalar", "true":
		x.frameNum = frameNumScalar
	case "sequence":
		x.frameNum = frameNumSequence
	default:
		return a.Errorf("enable_frame_num", "expected none, scalar, sequence, False or True, got %q", f)
	}
	x.uniform = a.Bool("uniform_sample")
	switch f := a.String("file_list_format"); f {
	case "timestamps":
	case "frames":
		x.listFrames = true
	default:
		return a.Errorf("file_list_format", "expected timestamps or frames, got %q", f)
	}
	switch r := a.String("file_list_rounding"); r {
	case "start_down_end_up":
		x.endUp = true
	case "start_up_end_down":
		x.startUp = true
	case "all_up":
		x.startUp, x.endUp = true, true
	case "all_down":
	default:
		return a.Errorf("file_list_rounding", "expected start_down_end_up, start_up_end_down, all_up or all_down, got %q", r)
	}
	return nil
}

// sequenceStarts appends a video's sequences over frames [lo, hi), as DALI's loader:
// every start lo, lo + step, ... whose seqLen * stride frames fit (seqLen * stride, not
// the span (seqLen-1) * stride + 1), then, with padding, one more from the first start
// that did not fit, if it lies inside the range; uniform sampling gives one.
func (x *videoReaderOptions) sequenceStarts(dst []videoSeq, file, lo, hi, seqLen, step, stride int) []videoSeq {
	if x.uniform {
		return append(dst, videoSeq{int32(file), int32(lo), int32(hi - lo)})
	}
	need := seqLen * stride
	s := lo
	for ; s+need <= hi; s += step {
		dst = append(dst, videoSeq{int32(file), int32(s), int32(seqLen)})
	}
	if x.pad != padNone && s < hi {
		dst = append(dst, videoSeq{int32(file), int32(s), int32(min(1+(hi-1-s)/stride, seqLen))})
	}
	return dst
}

// frameIndices fills idx with the video frame each output frame shows (-1: the fill)
// for a sequence of a video of n frames.
func (r *videoReader) frameIndices(idx []int, seq videoSeq, n int) {
	if r.x.uniform {
		lo, cnt := float64(seq.start), float64(seq.count)
		for i := range idx {
			t := lo
			if len(idx) > 1 {
				t = lo + (cnt-1)*float64(i)/float64(len(idx)-1)
			}
			idx[i] = int(math.Floor(t + 0.5))
		}
		return
	}
	for i := range idx {
		j := int(seq.start) + i*r.stride
		switch {
		case i < int(seq.count):
			idx[i] = j
		case r.x.pad == padEdge:
			idx[i] = n - 1
		case r.x.pad == padReflect101:
			idx[i] = imaging.BorderIndex(j, n, imaging.BorderReflect101)
		case r.x.pad == padReflect1001:
			idx[i] = imaging.BorderIndex(j, n, imaging.BorderReflect1001)
		default:
			idx[i] = -1
		}
	}
}

// frameRange is the part [lo, hi) of a file_list entry's video (n frames at fps) that
// its sequences come from, as DALI 2.4's loader reads "start end": frame numbers
// (negative ones count from the end) rounded as file_list_rounding says, or times, each
// the frame shown at that time (DALI 2.4 maps times so whatever the rounding); end is
// exclusive (DALI 2.4 reads file_list_include_end and, in every case tried, excludes the
// end frame all the same). As DALI's, an entry with a start and no end (end 0) has no
// frames: the file is skipped.
func (x *videoReaderOptions) frameRange(f *videoFile, n int, fps float64) (lo, hi int, err error) {
	const eps = 1e-6
	s, e := f.start, f.end
	down := func(v float64) int { // Extent: a NaN or huge time reads as outside the video
		i, ok := engine.Extent(v+eps, math.Floor)
		if !ok {
			return n
		}
		return i
	}
	up := func(v float64) int {
		i, ok := engine.Extent(v-eps, math.Ceil)
		if !ok {
			return n
		}
		return i
	}
	if x.listFrames {
		if s < 0 {
			s += float64(n)
		}
		if e < 0 {
			e += float64(n)
		}
		lo, hi = down(s), down(e)
		if x.startUp {
			lo = up(s)
		}
		if x.endUp {
			hi = up(e)
		}
	} else {
		lo, hi = down(s*fps), down(e*fps)
	}
	lo, hi = max(lo, 0), min(hi, n)
	if lo > hi {
		hi = lo // no frames: the file is skipped, as DALI does
	}
	return lo, hi, nil
}
