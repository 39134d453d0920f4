//go:build cuda

package decoders

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/cuda"
	"github.com/godali/godali/nvjpeg"
)

func init() {
	engine.RegisterBackend("decoders.image", "mixed", func(a *engine.Args) (engine.Operator, error) { return newMixedDecoder(a, false) })
}

// mixedDecoder is decoders.image and decoders.image_random_crop on device "mixed". Each
// sample is routed on the worker that reads it (nvjpeg.Route, after nvJPEG's own parser
// agrees): baseline JPEGs to the GPU's hardware decoder, which the GPU stage runs once
// per batch (a hw_decoder_load share of them; the rest, and progressive JPEGs, go to the
// CUDA decoder), other JPEGs to nvJPEG's hybrid decoders, whose host phase runs on the
// worker and whose device phase it queues on its stream, and what neither supports
// (CMYK, arithmetic coding, EXIF rotation, PNG and the other formats) to the CPU decoder
// (libjpeg-turbo), on the worker, into pinned memory that its stream uploads. The random
// crop window is drawn as on the CPU, from the same stream of random numbers, and
// decoded as a region of interest.
type mixedDecoder struct {
	cpu          *cpuDecoder // arguments, output type, crop window
	format       nvjpeg.Format
	hwLoad       float64
	hintW, hintH int
	devPad       int
	hostPad      int

	ctx *engine.GPUContext
	// hy is the nvJPEG handle of every decoder: a hardware-backend handle where the GPU
	// has JPEG engines (as DALI does, the hybrid decoders come from it too, so that the
	// streams they parse are valid for the hardware decoder's checks), else a default
	// one. hw is hy when the hardware decoder is in use, else nil.
	hy, hw *nvjpeg.Handle

	// The batch half, used only by the GPU stage's goroutine. Two hardware decoders
	// take turns: nvjpegDecodeBatchedInitialize, needed whenever the number of images
	// sent to the hardware changes, must not run while the state's previous batch is
	// still decoding, so each decoder's last batch is marked by an event that is waited
	// on (on the host, a batch later, when it is normally long done) before that decoder
	// is initialised again.
	bd       [2]batchSlot
	bdTurn   int
	srcs     [][]byte
	dsts     []nvjpeg.Image
	rois     []nvjpeg.ROI
	idx      []int
	fallback *mixedDecoderState
}

func newMixedDecoder(a *engine.Args, randomCrop bool) (engine.Operator, error) {
	if err := uint8Only(a, "the mixed decoder"); err != nil {
		return nil, err
	}
	op, err := newCPUDecoder(a, randomCrop)
	if err != nil {
		return nil, err
	}
	if c := op.(*cpuDecoder); c.ycc || c.anyData {
		return nil, a.Errorf("output_type", "%s is decoded by the cpu backend only", a.String("output_type"))
	}
	d := &mixedDecoder{cpu: op.(*cpuDecoder), hwLoad: a.Float("hw_decoder_load"),
		hintW: a.Int("preallocate_width_hint"), hintH: a.Int("preallocate_height_hint"),
		devPad: a.Int("device_memory_padding"), hostPad: a.Int("host_memory_padding")}
	if d.hwLoad < 0 || d.hwLoad > 1 || math.IsNaN(d.hwLoad) {
		return nil, a.Errorf("hw_decoder_load", "expected a share in [0, 1], got %v", d.hwLoad)
	}
	if d.hintW < 0 || d.hintH < 0 {
		return nil, a.Errorf("preallocate_width_hint", "hints must be >= 0, got %dx%d", d.hintW, d.hintH)
	}
	if d.devPad < 0 || d.hostPad < 0 {
		return nil, a.Errorf("device_memory_padding", "paddings must be >= 0, got %d and %d", d.devPad, d.hostPad)
	}
	switch d.cpu.out {
	case codec.BGR:
		d.format = nvjpeg.FormatBGRI
	case codec.Gray:
		d.format = nvjpeg.FormatY
	default:
		d.format = nvjpeg.FormatRGBI
	}
	return d, nil
}

func (d *mixedDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return d.cpu.Infer(in)
}

func (d *mixedDecoder) PreallocBytes() int { return d.hintW * d.hintH * d.cpu.out.Channels() }

func (d *mixedDecoder) BindGPU(ctx *engine.GPUContext) error {
	lib, err := nvjpeg.Load()
	if err != nil {
		return err
	}
	d.ctx = ctx
	// Only GPUs with JPEG engines (A100, H100, H200) create a hardware handle.
	if d.hwLoad > 0 {
		if h, err := lib.NewHandle(nvjpeg.BackendHardware); err == nil {
			d.hy, d.hw = h, h
		}
	}
	if d.hy == nil {
		if d.hy, err = lib.NewHandle(nvjpeg.BackendDefault); err != nil {
			return err
		}
	}
	if err := d.hy.SetPadding(d.devPad, d.hostPad); err != nil {
		return err
	}
	if d.hw == nil {
		return nil
	}
	for i := range d.bd {
		b := &d.bd[i]
		if b.dec, err = d.hw.NewBatchDecoder(ctx.BatchSize, 1); err != nil {
			return err
		}
		if b.ev, err = ctx.Device.NewEvent(); err != nil {
			return engine.CUDAError("nvJPEG batch event", err)
		}
	}
	if d.cpu.crop != nil && !d.bd[0].dec.SupportsROI() {
		// This nvJPEG cannot decode regions in a batch (before CUDA 11.6): the crops go
		// to the hybrid decoders, which can.
		d.unbindBatch()
		d.hw = nil
	}
	return nil
}

// unbindBatch closes the hardware batch decoders and their events.
func (d *mixedDecoder) unbindBatch() {
	for i := range d.bd {
		b := &d.bd[i]
		if b.dec != nil {
			if b.pending {
				_ = d.ctx.Device.EventSync(b.ev)
				b.pending = false
			}
			b.dec.Close()
			b.dec = nil
		}
		if b.ev != 0 {
			_ = d.ctx.Device.DestroyEvent(b.ev)
			b.ev = 0
		}
	}
}

// batchSlot is one of the two hardware batch decoders.
type batchSlot struct {
	dec     *nvjpeg.BatchDecoder
	ev      cuda.Event
	pending bool // ev marks the last batch queued on dec
}

func (d *mixedDecoder) UnbindGPU() {
	if d.ctx != nil {
		d.unbindBatch()
	}
	if d.fallback != nil {
		d.fallback.Close()
	}
	if d.hy != nil {
		_ = d.hy.Close()
	}
}

// decodeSlot is one of a worker's two nvJPEG decoders per backend, with the staging for
// the CPU route. The slots alternate, so that a sample's host phase does not overwrite
// the pinned buffer the previous sample's transfer may still read.
type decodeSlot struct {
	dec     [2]*nvjpeg.StreamDecoder // GPU hybrid (baseline), hybrid (progressive)
	staging *cuda.Block
	ev      cuda.Event
	pending bool // ev marks a transfer or upload out of this slot
}

// mixedDecoderState is a worker's decoding state.
type mixedDecoderState struct {
	d     *mixedDecoder
	cpu   *codec.Decoder
	info  codec.Info
	opt   codec.Options
	slots [2]decodeSlot
	cur   int
	use   *nvjpeg.StreamDecoder // the decoder that parsed the current sample (CUDA route)
}

func (d *mixedDecoder) NewWorkerState() any {
	return &mixedDecoderState{d: d, cpu: codec.NewDecoder()}
}

func (st *mixedDecoderState) Close() {
	dev := st.d.ctx.Device
	for i := range st.slots {
		s := &st.slots[i]
		for _, dec := range s.dec {
			if dec != nil {
				dec.Close()
			}
		}
		if s.staging != nil {
			s.staging.Release() // the worker's stream was drained before Close
		}
		if s.ev != 0 {
			_ = dev.DestroyEvent(s.ev)
		}
	}
	st.cpu.Close()
}

// slot switches to the other slot and waits on the host until its last transfer is
// done: the one queued two samples ago, normally long finished.
func (st *mixedDecoderState) slot() (*decodeSlot, error) {
	st.cur ^= 1
	s := &st.slots[st.cur]
	dev := st.d.ctx.Device
	if s.ev == 0 {
		ev, err := dev.NewEvent()
		if err != nil {
			return nil, err
		}
		s.ev = ev
	}
	if s.pending {
		if err := dev.EventSync(s.ev); err != nil {
			return nil, err
		}
		s.pending = false
	}
	return s, nil
}

func (s *decodeSlot) decoder(h *nvjpeg.Handle, progressive bool) (*nvjpeg.StreamDecoder, error) {
	k, backend := 0, nvjpeg.BackendGPUHybrid
	if progressive {
		k, backend = 1, nvjpeg.BackendHybrid
	}
	if s.dec[k] == nil {
		dec, err := h.NewStreamDecoder(backend)
		if err != nil {
			return nil, err
		}
		s.dec[k] = dec
	}
	return s.dec[k], nil
}

// hardwareShare spreads hw_decoder_load over the batch by position: sample i goes to the
// hardware decoder when the running count floor((i+1)*load) steps up at i.
func hardwareShare(i int, load float64) bool {
	return math.Floor(float64(i+1)*load) > math.Floor(float64(i)*load)
}

func (d *mixedDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*mixedDecoderState)
	data := ws.In[0].Data
	info, err := st.cpu.Probe(data)
	if err != nil {
		return err
	}
	if lim := ws.Limits.MaxImagePixels; lim > 0 && int64(info.Width)*int64(info.Height) > lim {
		return engine.Errorf(engine.StatusData, "image is %dx%d = %d pixels, more than max_image_pixels=%d (decompression bomb?)", info.Width, info.Height, int64(info.Width)*int64(info.Height), lim)
	}
	st.info = info
	orient := d.cpu.orients(info)
	st.opt = codec.Options{Out: d.cpu.out, AdjustOrientation: orient, ClipGray16: d.cpu.likePIL, DALIColor: !d.cpu.likePIL, MaxPixels: ws.Limits.MaxImagePixels}
	w, h := info.OrientedSize(orient)
	win := codec.Rect{W: w, H: h}
	if d.cpu.crop != nil {
		win = d.cpu.crop.Window(w, h, ws.RNG)
		st.opt.ROI = win
	}
	route := nvjpeg.RouteCPU
	if info.Format == codec.FormatJPEG {
		if route, err = st.route(data, info, win, d.hw != nil && hardwareShare(ws.Sample, d.hwLoad)); err != nil {
			return err
		}
	}
	*ws.Note = engine.SampleNote{Route: int(route), X: win.X, Y: win.Y, W: win.W, H: win.H}
	c := d.cpu.out.Channels()
	if route == nvjpeg.RouteCPU {
		ow, oh, oc, err := st.cpu.OutputSize(data, info, st.opt)
		if err != nil {
			return err
		}
		ws.Out[0].SetShape(oh, ow, oc)
		return nil
	}
	ws.Out[0].SetShape(win.H, win.W, c)
	return nil
}

// route picks the decoder of a JPEG (the hardware decoder only when hardware is set).
// The headers decide first (nvjpeg.Route); nvJPEG's parser then has the last word, and
// anything it refuses goes to the CPU decoder, which also reports the errors of broken
// streams.
func (st *mixedDecoderState) route(data []byte, info codec.Info, win codec.Rect, hardware bool) (nvjpeg.Route, error) {
	d := st.d
	st.use = nil
	ji, err := nvjpeg.ParseJPEG(data)
	if err != nil {
		return nvjpeg.RouteCPU, nil
	}
	r, _ := ji.Route(d.cpu.orients(info))
	if r == nvjpeg.RouteCPU || ji.Width != info.Width || ji.Height != info.Height {
		return nvjpeg.RouteCPU, nil
	}
	// A stream without an EOI marker after its first scan is truncated. The GPU-side
	// Huffman decoders (GPU_HYBRID, hardware) cannot tell and would write libjpeg's
	// grey recovery without an error, so such a file would pass on device "mixed" while
	// the CPU decoder fails it (on_error would raise or skip only on the CPU). The CPU
	// route reports libjpeg's error. In entropy-coded data 0xFF is followed by 0x00 or
	// a restart marker, so 0xFF 0xD9 there is a real EOI.
	if bytes.LastIndex(data[ji.ScanData:], []byte{0xFF, 0xD9}) < 0 { // from the end: EOI is normally last
		return nvjpeg.RouteCPU, nil
	}
	roi := nvjpeg.ROI{}
	if d.cpu.crop != nil {
		roi = nvjpeg.ROI{X: win.X, Y: win.Y, W: win.W, H: win.H}
	}
	s, err := st.slot()
	if err != nil {
		return 0, engine.CUDAError("nvJPEG decoder slot", err)
	}
	for _, progressive := range []bool{ji.Progressive, !ji.Progressive} {
		dec, err := s.decoder(d.hy, progressive)
		if err != nil {
			return 0, engine.CUDAError("creating an nvJPEG decoder", err)
		}
		si, err := dec.Parse(data)
		if err != nil || si.Width != info.Width || si.Height != info.Height {
			return nvjpeg.RouteCPU, nil
		}
		if err := dec.SetOutput(d.format, roi); err != nil {
			return nvjpeg.RouteCPU, nil
		}
		if r == nvjpeg.RouteHardware && hardware {
			if ok, err := dec.BatchedSupported(d.hw); err == nil && ok {
				return nvjpeg.RouteHardware, nil
			}
		}
		if ok, err := dec.Supported(); err == nil && ok {
			st.use = dec
			return nvjpeg.RouteCUDA, nil
		}
	}
	return nvjpeg.RouteCPU, nil
}

func (d *mixedDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*mixedDecoderState)
	out := ws.Out[0]
	switch nvjpeg.Route(ws.Note.Route) {
	case nvjpeg.RouteHardware:
		return nil // the GPU stage decodes the batch's hardware share
	case nvjpeg.RouteCUDA:
		if err := st.use.DecodeHost(); err != nil {
			if errors.Is(err, nvjpeg.ErrBadJPEG) {
				return st.decodeCPU(ws.GPU(), ws.In[0].Data, out)
			}
			return err
		}
		stream, err := ws.GPU().Begin()
		if err != nil {
			return err
		}
		if err := st.use.Transfer(uintptr(stream)); err != nil {
			return err
		}
		if err := st.use.DecodeDevice(nvjpeg.Image{Ptr: out.Dev, Pitch: out.Shape[1] * out.Shape[2]}, uintptr(stream)); err != nil {
			return err
		}
		s := &st.slots[st.cur]
		if err := d.ctx.Device.Record(s.ev, stream); err != nil {
			return engine.CUDAError("nvJPEG decode", err)
		}
		s.pending = true
		return ws.GPU().End()
	}
	return st.decodeCPU(ws.GPU(), ws.In[0].Data, out)
}

// decodeCPU decodes with libjpeg-turbo (or the Go decoders) into the slot's pinned
// staging and queues its upload on the worker's stream. A truncated or corrupt JPEG
// that nvJPEG refused ends up here too, so the error names what libjpeg says.
func (st *mixedDecoderState) decodeCPU(sg *engine.SampleGPU, data []byte, out *engine.Tensor) error {
	n := out.NumBytes()
	s, err := st.slot()
	if err != nil {
		return engine.CUDAError("decoder staging", err)
	}
	if err := st.stage(s, n); err != nil {
		return err
	}
	w, h, c, err := st.cpu.Decode(data, st.info, st.opt, s.staging.Bytes()[:n:n])
	if err != nil {
		return err
	}
	if w*h*c != n {
		return engine.Errorf(engine.StatusInternal, "decoded %dx%dx%d, declared %v", w, h, c, out.Shape)
	}
	stream, err := sg.Begin()
	if err != nil {
		return err
	}
	dev := st.d.ctx.Device
	if err := dev.CopyHtoDAsync(out.Dev, s.staging.HostPtr(), n, stream); err != nil {
		return engine.CUDAError("uploading a decoded image", err)
	}
	if err := dev.Record(s.ev, stream); err != nil {
		return engine.CUDAError("uploading a decoded image", err)
	}
	s.pending = true
	return sg.End()
}

// stage makes the slot's pinned staging hold n bytes; it only grows, to the largest
// image the CPU route has seen.
func (st *mixedDecoderState) stage(s *decodeSlot, n int) error {
	if s.staging != nil && s.staging.Cap() >= n {
		return nil
	}
	if s.staging != nil {
		s.staging.Release() // its last upload is done: slot() waited for it
		s.staging = nil
	}
	blk, err := st.d.ctx.Pinned.Get(max(n, 1), 0)
	if err != nil {
		return engine.CUDAError(fmt.Sprintf("pinned staging of %d bytes", n), err)
	}
	s.staging = blk
	return nil
}

func (d *mixedDecoder) RunBatch(bw *engine.BatchWorkspace) error {
	d.srcs, d.dsts, d.rois, d.idx = d.srcs[:0], d.dsts[:0], d.rois[:0], d.idx[:0]
	for i := 0; i < bw.Size; i++ {
		n := &bw.Notes[i]
		if nvjpeg.Route(n.Route) != nvjpeg.RouteHardware {
			continue
		}
		out := &bw.Out[0][i]
		d.srcs = append(d.srcs, bw.In[0][i].Data)
		d.dsts = append(d.dsts, nvjpeg.Image{Ptr: out.Dev, Pitch: out.Shape[1] * out.Shape[2]})
		d.rois = append(d.rois, nvjpeg.ROI{X: n.X, Y: n.Y, W: n.W, H: n.H})
		d.idx = append(d.idx, i)
	}
	if len(d.idx) == 0 {
		return nil
	}
	var rois []nvjpeg.ROI
	if d.cpu.crop != nil {
		rois = d.rois
	}
	// nvJPEG's hardware decoder does not honour stream order for its writes (seen with
	// nvJPEG 12.3 to 13.2 on H100: torchvision#9606, torchcodec#1634): it may write the
	// outputs before the stream's earlier waits for their memory's previous users (a
	// consumer still reading an old batch) are over. Wait for those on the host.
	if bw.HostWaitOutputs != nil {
		if err := bw.HostWaitOutputs(); err != nil {
			return err
		}
	}
	b := &d.bd[d.bdTurn]
	d.bdTurn ^= 1
	if b.pending && b.dec.NeedsInit(len(d.srcs), d.format) {
		if err := d.ctx.Device.EventSync(b.ev); err != nil {
			return engine.CUDAError("nvJPEG batch decode", err)
		}
		b.pending = false
	}
	err := b.dec.Decode(d.srcs, d.dsts, rois, d.format, uintptr(bw.GPU.Stream))
	if rerr := d.ctx.Device.Record(b.ev, bw.GPU.Stream); rerr != nil {
		return engine.CUDAError("nvJPEG batch decode", rerr)
	}
	b.pending = true
	if err == nil {
		return nil
	}
	// The hardware decoder fails a batch as a whole (one bad stream is enough): decode
	// its images one by one instead, so that the error names the file at fault.
	for _, i := range d.idx {
		if err := d.decodeOne(bw, i); err != nil {
			return &engine.SampleError{Source: bw.Refs[i].Path, Node: bw.Node, Err: err}
		}
	}
	return nil
}

// decodeOne decodes sample i on the GPU stage's stream with a hybrid decoder, or the CPU
// decoder, waiting on the host after each: the slow path after a failed hardware batch.
func (d *mixedDecoder) decodeOne(bw *engine.BatchWorkspace, i int) error {
	if d.fallback == nil {
		d.fallback = d.NewWorkerState().(*mixedDecoderState)
	}
	st, dev, stream := d.fallback, d.ctx.Device, bw.GPU.Stream
	data, out, n := bw.In[0][i].Data, &bw.Out[0][i], &bw.Notes[i]
	info, err := st.cpu.Probe(data)
	if err != nil {
		return err
	}
	st.info = info
	st.opt = codec.Options{Out: d.cpu.out, AdjustOrientation: d.cpu.orients(info), ClipGray16: d.cpu.likePIL, DALIColor: !d.cpu.likePIL}
	if d.cpu.crop != nil {
		st.opt.ROI = codec.Rect{X: n.X, Y: n.Y, W: n.W, H: n.H}
	}
	win := codec.Rect{X: n.X, Y: n.Y, W: n.W, H: n.H}
	if r, err := st.route(data, info, win, false); err == nil && r == nvjpeg.RouteCUDA {
		if err := st.use.DecodeHost(); err == nil {
			if err := st.use.Transfer(uintptr(stream)); err != nil {
				return err
			}
			if err := st.use.DecodeDevice(nvjpeg.Image{Ptr: out.Dev, Pitch: out.Shape[1] * out.Shape[2]}, uintptr(stream)); err != nil {
				return err
			}
			return engine.CUDAError("nvJPEG decode", dev.Synchronize(stream))
		}
	}
	s, err := st.slot()
	if err != nil {
		return err
	}
	size := out.NumBytes()
	if err := st.stage(s, size); err != nil {
		return err
	}
	if _, _, _, err := st.cpu.Decode(data, st.info, st.opt, s.staging.Bytes()[:size:size]); err != nil {
		return err
	}
	if err := dev.CopyHtoDAsync(out.Dev, s.staging.HostPtr(), size, stream); err != nil {
		return err
	}
	return engine.CUDAError("uploading a decoded image", dev.Synchronize(stream))
}
