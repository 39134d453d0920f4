package readers

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/godali/godali/codec/video"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
	"github.com/godali/godali/source/remote"
)

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "readers.video",
		Doc: "Reads sequences of sequence_length frames from video files (FFmpeg's libavformat and " +
			"libavcodec, opened at run time: H.264, HEVC, VP8, VP9, AV1, MJPEG, MPEG-4, as the installed " +
			"FFmpeg decodes them). Every video gives the sequences starting at frames 0, step, 2*step, ... " +
			"that fit in it (pad_sequences: also the incomplete ones at its end, padded with zero frames); " +
			"the reader's samples are those sequences. Outputs the frames (FHWC, RGB), then the label " +
			"(int32 [1]; with labels, file_root or file_list), the first frame's number (int32 [1]; " +
			"enable_frame_num) and each frame's time in seconds (float32 [F]; enable_timestamps; -1 for " +
			"padding frames). Frames are numbered by presentation time, so B-frames and (with " +
			"skip_vfr_check) variable frame rates are exact. Rotation metadata is not applied. " +
			"On device gpu (the CUDA flavour; mixed in godali's terms) the frames are decoded by NVDEC " +
			"(H.264, HEVC, VP9, AV1 in 8-bit 4:2:0; other streams on the CPU) and every output is GPU " +
			"memory; dtype UINT8 only. " +
			"With random_shuffle the list of sequences is first permuted once with a fixed seed (the same " +
			"on every shard, as DALI does), then shuffled in a buffer of initial_fill.",
		Backends:  map[string]engine.BackendFacts{"mixed": {Doc: "NVDEC for 8-bit 4:2:0 streams it decodes; others on the CPU, uploaded"}},
		MinInputs: 0, MaxInputs: 0, IsReader: true,
		Outputs: []string{"video", "labels", "frame_num", "timestamps"},
		OutputIf: map[string]engine.OutputCond{"labels": engine.IfAnyGiven("labels", "file_root", "file_list"),
			"frame_num": engine.IfArg("enable_frame_num"), "timestamps": engine.IfArg("enable_timestamps")},
		Args: append([]engine.ArgSpec{
			{Name: "sequence_length", Type: engine.ArgInt, Required: true, Doc: "frames per sequence"},
			{Name: "step", Type: engine.ArgInt, Default: -1, Doc: "frames between the starts of consecutive sequences (-1: sequence_length)"},
			{Name: "stride", Type: engine.ArgInt, Default: 1, Doc: "distance between consecutive frames of a sequence"},
			{Name: "filenames", Type: engine.ArgStringList, Doc: "video files"},
			{Name: "labels", Type: engine.ArgIntList, Doc: "labels of filenames (an empty list: the files' indices); without it there is no label output"},
			{Name: "file_root", Type: engine.ArgString, Doc: "directory: each sorted subdirectory is a class, all its files are videos"},
			{Name: "file_list", Type: engine.ArgString, Doc: "text file of \"path label [start end]\" lines: start and end in seconds (frame numbers with file_list_frame_num) bound the part of the video read; a negative end counts from the end"},
			{Name: "file_list_frame_num", Type: engine.ArgBool, Default: false, Doc: "file_list's start and end are frame numbers"},
			{Name: "file_list_include_preceding_frame", Type: engine.ArgBool, Default: false, Doc: "with times in file_list, round start down and end up (include the frames that overlap the range) instead of start up and end down"},
			{Name: "enable_frame_num", Type: engine.ArgBool, Default: false, Doc: "add the frame_num output"},
			{Name: "enable_timestamps", Type: engine.ArgBool, Default: false, Doc: "add the timestamps output"},
			{Name: "pad_sequences", Type: engine.ArgBool, Default: false, Doc: "also read the incomplete sequences at the end of a video; missing frames are zero, their timestamps -1"},
			{Name: "skip_vfr_check", Type: engine.ArgBool, Default: false, Doc: "accept variable frame rate videos (refused by default, as DALI does)"},
			{Name: "dtype", Type: engine.ArgDType, Default: "UINT8", Doc: "UINT8 or FLOAT (0..255, or 0..1 with normalized)"},
			{Name: "normalized", Type: engine.ArgBool, Default: false, Doc: "with dtype FLOAT, divide by 255"},
			{Name: "image_type", Type: engine.ArgImageType, Default: "RGB", Doc: "RGB (the only colour space godali produces)"},
			{Name: "channels", Type: engine.ArgInt, Default: 3, Doc: "3"},
			{Name: "additional_decode_surfaces", Type: engine.ArgInt, Default: 2, Doc: "accepted for DALI compatibility (NVDEC); no effect on the CPU"},
			{Name: "tensor_init_bytes", Type: engine.ArgInt, Default: 1048576, Doc: "accepted for DALI compatibility"},
		}, CommonArgs()...),
	})
	engine.RegisterBackend("readers.video", "cpu", newVideoReader)
	registerExperimentalVideoReader()
}

// videoListSeed permutes the sequence list of a shuffling video reader.
const videoListSeed = 524287

type videoFile struct {
	path       string
	label      int32
	start, end float64 // file_list range (hasRange)
	hasRange   bool
	ix         *video.Index
	info       video.Info
}

// videoSeq is one sample: frames start, start+stride, ... of a file; count of them
// exist (fewer than sequence_length at a padded end).
type videoSeq struct {
	file, start, count int32
}

type videoReader struct {
	Base
	args                    *engine.Args
	seqLen, step, stride    int
	pad                     bool
	dtype                   engine.DType
	normalized              bool
	labels, frameNum, times bool
	files                   []videoFile
	seqs                    []videoSeq
	x                       videoReaderOptions // experimental.readers.video's
}

func newVideoReader(a *engine.Args) (engine.Operator, error) {
	r := &videoReader{args: a, seqLen: a.Int("sequence_length"), step: a.Int("step"), stride: a.Int("stride"),
		pad: a.Bool("pad_sequences"), dtype: a.DType("dtype"), normalized: a.Bool("normalized"),
		frameNum: a.Bool("enable_frame_num"), times: a.Bool("enable_timestamps")}
	if err := r.Init(a); err != nil {
		return nil, err
	}
	if r.seqLen < 1 {
		return nil, a.Errorf("sequence_length", "must be >= 1, got %d", r.seqLen)
	}
	if r.step == -1 {
		r.step = r.seqLen
	}
	if r.step < 1 {
		return nil, a.Errorf("step", "must be >= 1 (or -1: sequence_length), got %d", r.step)
	}
	if r.stride < 1 {
		return nil, a.Errorf("stride", "must be >= 1, got %d", r.stride)
	}
	if err := a.CheckFrameArgs("sequence_length", "step", "stride"); err != nil {
		return nil, err
	}
	if err := a.CheckFrameSpan(0, r.seqLen, r.stride, "sequence_length", "stride"); err != nil {
		return nil, err
	}
	if a.Schema.Name == experimentalVideoReader {
		if err := r.x.parse(a); err != nil {
			return nil, err
		}
		r.dtype, r.frameNum, r.pad = engine.UInt8, r.x.frameNum != frameNumNone, r.x.pad != padNone
	} else if r.dtype != engine.UInt8 && r.dtype != engine.Float32 {
		return nil, a.Errorf("dtype", "expected UINT8 or FLOAT, got %s", r.dtype)
	} else if c := a.Int("channels"); c != 3 {
		return nil, a.Errorf("channels", "godali reads 3-channel RGB video, got %d", c)
	}
	if t := a.String("image_type"); t != "RGB" {
		return nil, a.Errorf("image_type", "godali reads video as RGB, got %s", t)
	}
	sources := 0
	for _, k := range []string{"filenames", "file_root", "file_list"} {
		if a.Given(k) {
			sources++
		}
	}
	if sources != 1 {
		return nil, a.Errorf("filenames", "give exactly one of filenames, file_root or file_list")
	}
	if a.Given("labels") && !a.Given("filenames") {
		return nil, a.Errorf("labels", "labels go with filenames")
	}
	if n := len(a.Ints("labels")); n > 0 && n != len(a.Strings("filenames")) {
		return nil, a.Errorf("labels", "has %d entries but filenames has %d", n, len(a.Strings("filenames")))
	}
	r.labels = a.Given("labels") || a.Given("file_root") || a.Given("file_list")
	// The libraries are needed from the build on: say now what is missing.
	if err := video.Load(); err != nil {
		return nil, a.Invalidf("%v", err)
	}
	if root := a.String("file_root"); root != "" {
		r.DigestPath = relToRoot(root)
	}
	return r, nil
}

func (r *videoReader) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	out := []engine.TensorMeta{{DType: r.dtype, Layout: "FHWC", Shape: []int{r.seqLen, -1, -1, 3}}}
	if r.labels {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{1}})
	}
	if r.frameNum {
		out = append(out, engine.TensorMeta{DType: engine.Int32, Shape: []int{r.frameNumLen()}})
	}
	if r.times {
		out = append(out, engine.TensorMeta{DType: r.timesType(), Shape: []int{r.seqLen}})
	}
	return out, nil
}

// timesType is the timestamps' type: FLOAT64 in DALI's experimental reader, FLOAT in
// readers.video.
func (r *videoReader) timesType() engine.DType {
	if r.x.on {
		return engine.Float64
	}
	return engine.Float32
}

// frameNumLen is the length of the frame_num output: 1, or every frame's number.
func (r *videoReader) frameNumLen() int {
	if r.x.frameNum == frameNumSequence {
		return r.seqLen
	}
	return 1
}

func (r *videoReader) Open() error {
	if r.Opened() {
		return nil
	}
	a := r.args
	files, err := r.listFiles()
	if err != nil {
		return err
	}
	for i := range files {
		if remote.IsRemote(files[i].path) {
			return engine.Errorf(engine.StatusInvalidArgument, "%s: %s: readers.video reads local files only", a.Where(), files[i].path)
		}
	}
	// Indexing reads every packet of every file: in parallel, one file per goroutine.
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = r.indexFile(&files[i])
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return listErrorf(a, "%s: %v", files[i].path, err)
		}
	}
	r.files = files
	var refs []engine.SampleRef
	total := 1 + (r.seqLen-1)*r.stride
	for fi := range files {
		f := &files[fi]
		lo, hi, err := r.frameRange(f)
		if err != nil {
			return listErrorf(a, "%s: %v", f.path, err)
		}
		if r.x.on {
			if lo >= hi {
				continue // DALI skips an empty range
			}
			before := len(r.seqs)
			r.seqs = r.x.sequenceStarts(r.seqs, fi, lo, hi, r.seqLen, r.step, r.stride)
			for range r.seqs[before:] {
				refs = append(refs, engine.SampleRef{Path: f.path, Label: f.label})
			}
			continue
		}
		s := lo
		for ; s < hi && s+total <= hi; s += r.step {
			r.seqs = append(r.seqs, videoSeq{int32(fi), int32(s), int32(r.seqLen)})
			refs = append(refs, engine.SampleRef{Path: f.path, Label: f.label})
		}
		for ; r.pad && s < hi; s += r.step {
			r.seqs = append(r.seqs, videoSeq{int32(fi), int32(s), int32(1 + (hi-1-s)/r.stride)})
			refs = append(refs, engine.SampleRef{Path: f.path, Label: f.label})
		}
	}
	if a.Bool("random_shuffle") {
		// As DALI's video loader: the sequence list is permuted once, identically on every
		// shard, before sharding and the shuffling buffer, so that a buffer of
		// initial_fill sequences does not hold the neighbouring clips of a few videos.
		var rng engine.RNG
		rng.Seed(videoListSeed)
		for i := len(refs) - 1; i > 0; i-- {
			j := rng.Intn(i + 1)
			refs[i], refs[j] = refs[j], refs[i]
			r.seqs[i], r.seqs[j] = r.seqs[j], r.seqs[i]
		}
	}
	if len(refs) == 0 {
		return listErrorf(a, "no sequence of %d frames (stride %d) fits in the %d videos; check sequence_length and the videos' lengths (or set pad_sequences)", r.seqLen, r.stride, len(files))
	}
	return r.SetSamples(refs, "sequences")
}

// indexFile reads a file's packets to number its frames.
func (r *videoReader) indexFile(f *videoFile) error {
	// Indexing decodes nothing, but a raw stream's probe decodes its first frame: bounded
	// by max_image_pixels. Frames over it are refused per sample (Setup).
	vf := &video.File{MaxPixels: r.limits.MaxImagePixels}
	defer vf.Close()
	if err := vf.Reopen(f.path, 1); err != nil {
		return err
	}
	f.info = vf.Info
	ix, err := vf.Scan()
	if err != nil {
		return err
	}
	f.ix = ix
	if f.ix.VariableRate() && !r.args.Bool("skip_vfr_check") {
		return errors.New("variable frame rate video (the intervals between frames differ); set skip_vfr_check=True to read it (frames are numbered by their timestamps)")
	}
	return nil
}

// frameRange is the part [lo, hi) of a file the sequences come from.
func (r *videoReader) frameRange(f *videoFile) (lo, hi int, err error) {
	n := f.ix.Len()
	if !f.hasRange {
		return 0, n, nil
	}
	start, end := f.start, f.end
	if r.x.on {
		return r.x.frameRange(f, n, frameRate(f))
	}
	okLo, okHi := true, true
	if r.args.Bool("file_list_frame_num") {
		lo, okLo = engine.Extent(start, nil)
		hi, okHi = engine.Extent(end, nil)
		if end <= 0 {
			hi += n
		}
	} else {
		fps := frameRate(f)
		if end <= 0 {
			end += float64(n) / fps
		}
		if r.args.Bool("file_list_include_preceding_frame") {
			lo, okLo = engine.Extent(start*fps+1e-6, math.Floor)
			hi, okHi = engine.Extent(end*fps-1e-6, math.Ceil)
		} else {
			lo, okLo = engine.Extent(start*fps-1e-6, math.Ceil)
			hi, okHi = engine.Extent(end*fps+1e-6, math.Floor)
		}
	}
	if !okLo || !okHi {
		return 0, 0, fmt.Errorf("file_list range [%g, %g) is outside the video's %d frames", f.start, f.end, n)
	}
	if lo < 0 || lo > hi || hi > n {
		return 0, 0, fmt.Errorf("file_list range [%g, %g) gives frames [%d, %d), outside the video's %d frames", f.start, f.end, lo, hi, n)
	}
	return lo, hi, nil
}

// frameRate is the container's average rate, or the index's when it has none.
func frameRate(f *videoFile) float64 {
	if fr := f.info.FrameRate; fr[0] > 0 && fr[1] > 0 {
		return float64(fr[0]) / float64(fr[1])
	}
	if n := f.ix.Len(); n > 1 {
		if d := f.ix.Seconds(n-1, f.info.TimeBase); d > 0 {
			return float64(n-1) / d
		}
	}
	return 1
}

func (r *videoReader) listFiles() ([]videoFile, error) {
	a := r.args
	var out []videoFile
	switch {
	case a.Given("filenames"):
		labels := a.Ints("labels")
		for i, p := range a.Strings("filenames") {
			l := int32(i)
			if len(labels) > 0 {
				l = int32(labels[i])
			}
			out = append(out, videoFile{path: p, label: l})
		}
	case a.Given("file_root"):
		root := a.String("file_root")
		if err := checkDir(a, "file_root", root); err != nil {
			return nil, err
		}
		refs, err := scanImageFolder(source.Local{}, root, []string{"*"}, nil, true)
		if err != nil {
			return nil, listErrorf(a, "%v", err)
		}
		for _, ref := range refs {
			out = append(out, videoFile{path: ref.Path, label: ref.Label})
		}
	default:
		list := a.String("file_list")
		var err error
		if out, err = readVideoList(list); err != nil {
			return nil, engine.Errorf(engine.StatusInvalidArgument, "%s: argument \"file_list\": %v", a.Where(), err)
		}
	}
	if len(out) == 0 {
		return nil, listErrorf(a, "no video files found")
	}
	return out, nil
}

// readVideoList parses DALI's video file_list: "path label [start [end]]" per line;
// paths as written (relative to the working directory, as DALI reads them). A line whose
// start equals its end is skipped, as DALI does.
func readVideoList(list string) ([]videoFile, error) {
	fh, err := os.Open(list)
	if err != nil {
		return nil, fmt.Errorf("%q cannot be read: %v", list, err)
	}
	defer fh.Close()
	var out []videoFile
	sc := bufio.NewScanner(fh)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 2 || len(fields) > 4 {
			return nil, fmt.Errorf("%s:%d: expected \"path label [start [end]]\", got %q", list, line, sc.Text())
		}
		label, err := strconv.ParseInt(fields[1], 10, 32)
		if err != nil || label < 0 {
			return nil, fmt.Errorf("%s:%d: label %q is not an integer >= 0", list, line, fields[1])
		}
		f := videoFile{path: fields[0], label: int32(label)}
		if len(fields) > 2 {
			f.hasRange = true
			if f.start, err = strconv.ParseFloat(fields[2], 64); err != nil {
				return nil, fmt.Errorf("%s:%d: start %q is not a number", list, line, fields[2])
			}
			if len(fields) > 3 {
				if f.end, err = strconv.ParseFloat(fields[3], 64); err != nil {
					return nil, fmt.Errorf("%s:%d: end %q is not a number", list, line, fields[3])
				}
				if f.end == f.start {
					continue
				}
			}
		}
		out = append(out, f)
	}
	return out, sc.Err()
}

// videoReaderState is a worker's open files: the demuxer and decoder of the files its
// recent samples came from, most recently used first, so that the next clip of one of
// them neither reopens the file nor, when it starts after where the decoder stopped in
// the same group of pictures, seeks (video.File.ReadFrames goes on decoding).
type videoReaderState struct {
	files []openVideo
	idx   []int // the frames of the sample being read
}

// openVideo is one open file of a worker and its index in the reader's files.
type openVideo struct {
	f    *video.File
	file int
}

// Open files a worker keeps: at most videoOpenFiles, and, beyond the most recent one,
// only while their frames add up to videoOpenPixels (a decoder holds a few frames of its
// stream's size: at 1080p about 4 files).
const (
	videoOpenFiles  = 8
	videoOpenPixels = 4 * 1920 * 1088
)

func (s *videoReaderState) Close() {
	for _, o := range s.files {
		o.f.Close()
	}
	s.files = s.files[:0]
}

// drop closes the open file at position i.
func (s *videoReaderState) drop(i int) {
	s.files[i].f.Close()
	s.files = append(s.files[:i], s.files[i+1:]...)
}

func (r *videoReader) NewWorkerState() any { return &videoReaderState{} }

func (r *videoReader) Setup(ws *engine.Workspace) error {
	seq := r.seqs[ws.Ref.Index]
	info := &r.files[seq.file].info
	// The frame size from the header and the sequence, bounded before anything is
	// allocated or decoded.
	maxPixels := ws.MaxImagePixels()
	if err := info.CheckPixels(maxPixels); err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if err := info.CheckSequence(r.seqLen, 0, maxPixels); err != nil {
		return r.args.ArgDataErrorf(ws, "sequence_length", "%v; lower sequence_length or raise max_image_pixels", err)
	}
	ws.Out[0].SetShape(r.seqLen, info.Height, info.Width, 3)
	for k := 1; k < len(ws.Out); k++ {
		ws.Out[k].SetShape(1)
	}
	if r.frameNum {
		k := 1
		if r.labels {
			k++
		}
		ws.Out[k].SetShape(r.frameNumLen())
	}
	if r.times && len(ws.Out) > r.timesOut() {
		ws.Out[r.timesOut()].SetShape(r.seqLen)
	}
	return nil
}

// timesOut is the index of the timestamps output.
func (r *videoReader) timesOut() int {
	k := 1
	if r.labels {
		k++
	}
	if r.frameNum {
		k++
	}
	return k
}

// open returns the sequence's file, opened: one of the worker's open files (moved to
// the front), or opened in place of the least recently used one, and the least
// recently used beyond the bounds closed.
func (st *videoReaderState) open(r *videoReader, seq videoSeq) (*videoFile, *video.File, error) {
	vf := &r.files[seq.file]
	for i, o := range st.files {
		if o.file == int(seq.file) {
			copy(st.files[1:i+1], st.files[:i])
			st.files[0] = o
			return vf, o.f, nil
		}
	}
	var f *video.File
	if n := len(st.files); n >= videoOpenFiles {
		f = st.files[n-1].f // reused: Reopen closes its stream
		st.files = st.files[:n-1]
	} else {
		f = &video.File{}
	}
	f.MaxPixels = r.limits.MaxImagePixels
	if err := f.Reopen(vf.path, 1); err != nil {
		f.Close()
		return nil, nil, engine.Errorf(engine.StatusData, "%v", err)
	}
	st.files = append(st.files, openVideo{})
	copy(st.files[1:], st.files)
	st.files[0] = openVideo{f: f, file: int(seq.file)}
	px := 0
	for i, o := range st.files {
		info := &r.files[o.file].info
		if px += info.Width * info.Height; i > 0 && px > videoOpenPixels {
			for len(st.files) > i {
				st.drop(len(st.files) - 1)
			}
			break
		}
	}
	return vf, f, nil
}

func (r *videoReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*videoReaderState)
	seq := r.seqs[ws.Ref.Index]
	vf, f, err := st.open(r, seq)
	if err != nil {
		return err
	}
	out := ws.Out[0].Data
	fb := f.FrameBytes()
	if cap(st.idx) < r.seqLen {
		st.idx = make([]int, r.seqLen)
	}
	idx := st.idx[:r.seqLen]
	r.frameIndices(idx, seq, vf.ix.Len())
	if err := r.readFrames(f, vf, idx, out[:r.seqLen*fb], fb); err != nil {
		st.drop(0) // reopened for the next sample
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if r.dtype == engine.Float32 {
		widenFrames(out, r.seqLen*fb, r.seqLen*fb, r.normalized)
	}
	k := 1
	if r.labels {
		engine.WriteScalar(ws.Out[k].Data, engine.Int32, float64(ws.Ref.Label))
		k++
	}
	if r.frameNum {
		d := ws.Out[k].Data
		if r.frameNumLen() == 1 {
			engine.WriteScalar(d, engine.Int32, float64(idx[0]))
		} else {
			for i, j := range idx {
				engine.WriteScalar(d[4*i:], engine.Int32, float64(j))
			}
		}
		k++
	}
	if r.times {
		d := ws.Out[k].Data
		for i, j := range idx {
			t := -1.0
			if j >= 0 {
				t = vf.ix.Seconds(j, vf.info.TimeBase)
			}
			engine.WriteScalar(d[i*r.timesType().Size():], r.timesType(), t)
		}
	}
	return nil
}

// readFrames decodes the frames idx names into out (fb bytes each): runs of frames
// stride apart are read together, a frame already read is copied, -1 is the fill.
func (r *videoReader) readFrames(f *video.File, vf *videoFile, idx []int, out []byte, fb int) error {
	for i := 0; i < len(idx); {
		dst := out[i*fb : (i+1)*fb]
		j := idx[i]
		if j < 0 {
			for p := 0; p < fb; p += 3 {
				copy(dst[p:p+3], r.x.fill[:])
			}
			i++
			continue
		}
		if p := slicesIndex(idx[:i], j); p >= 0 {
			copy(dst, out[p*fb:(p+1)*fb])
			i++
			continue
		}
		n := 1
		for i+n < len(idx) && idx[i+n] == j+n*r.stride && slicesIndex(idx[:i], idx[i+n]) < 0 {
			n++
		}
		if err := f.ReadFrames(vf.ix, j, n, r.stride, out[i*fb:(i+n)*fb]); err != nil {
			return err
		}
		i += n
	}
	return nil
}

func slicesIndex(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// widenFrames turns the first n bytes of buf (uint8 pixels) into float32 values in place
// (from the end, so that no byte is overwritten before it is read) and zeroes the
// float32 values from n up to total.
func widenFrames(buf []byte, n, total int, normalized bool) {
	scale := float32(1)
	if normalized {
		scale = 1.0 / 255
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(buf))), total) // output buffers are aligned
	clear(f[n:total])
	for i := n - 1; i >= 0; i-- {
		f[i] = float32(buf[i]) * scale
	}
}
