//go:build cuda

package decoders

import (
	"errors"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/cuda"
	"github.com/godali/godali/kernels"
	"github.com/godali/godali/nvdec"
	"github.com/godali/godali/ops/internal/gpukernels"
)

// decoders.video on device "mixed": the worker that has the sample demuxes it (FFmpeg)
// and feeds NVDEC (package nvdec), whose frames godali_nv12_rgb converts into the
// sample's device memory on the worker's stream. Streams NVDEC cannot give as 8-bit
// 4:2:0 (other codecs, 10-bit, 4:2:2, 4:4:4) are decoded on the CPU and uploaded, so
// the operator takes what the cpu backend takes.
func init() {
	engine.RegisterBackend("decoders.video", "mixed", newMixedVideoDecoder)
}

type mixedVideoDecoder struct {
	cpu *videoDecoder
	ctx *engine.GPUContext
	mod *kernels.Module
}

func newMixedVideoDecoder(a *engine.Args) (engine.Operator, error) {
	op, err := newVideoDecoder(a)
	if err != nil {
		return nil, err
	}
	return &mixedVideoDecoder{cpu: op.(*videoDecoder)}, nil
}

func (d *mixedVideoDecoder) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return d.cpu.Infer(in)
}

func (d *mixedVideoDecoder) BindGPU(ctx *engine.GPUContext) error {
	if err := nvdec.Load(); err != nil {
		return err
	}
	k, err := gpukernels.For(ctx)
	if err != nil {
		return err
	}
	d.ctx, d.mod = ctx, k.Module
	return nil
}

func (d *mixedVideoDecoder) UnbindGPU() { d.mod = nil }

// mixedVideoState is a worker's: the CPU backend's open file and selection, the NVDEC
// decoder of the last codec, and host memory for the CPU route and constant padding.
type mixedVideoState struct {
	cpu   videoDecoderState
	dec   *nvdec.Decoder
	host  []byte
	fill  []byte
	nvdec bool // the current sample goes to NVDEC
}

func (s *mixedVideoState) Close() {
	s.cpu.Close()
	if s.dec != nil {
		s.dec.Close()
		s.dec = nil
	}
}

func (d *mixedVideoDecoder) NewWorkerState() any { return &mixedVideoState{} }

func (d *mixedVideoDecoder) Setup(ws *engine.Workspace) error {
	st := ws.State.(*mixedVideoState)
	if err := d.cpu.setup(ws, &st.cpu); err != nil {
		return err
	}
	st.nvdec = nvdec.Takes(st.cpu.f.Info)
	return nil
}

func (d *mixedVideoDecoder) Run(ws *engine.Workspace) error {
	st := ws.State.(*mixedVideoState)
	out := ws.Out[0]
	f := st.cpu.f
	fb := f.FrameBytes()
	if st.nvdec {
		dec, err := nvdec.For(st.dec, d.ctx.Device, d.mod, f.Info.Codec)
		st.dec = dec
		if err != nil {
			return engine.CUDAError("creating an NVDEC decoder", err)
		}
	}
	stream, err := ws.GPU().Begin()
	if err != nil {
		return err
	}
	dev := d.ctx.Device
	if st.nvdec {
		err = st.cpu.runs(func(i, n, first, step int) error {
			return st.dec.ReadFrames(f, st.cpu.ix, first, n, step, out.Dev+uintptr(i*fb), stream)
		})
		if errors.Is(err, nvdec.ErrFormat) {
			st.nvdec, err = false, nil // refused before any frame: the CPU decodes it
		}
	}
	if !st.nvdec {
		n := len(st.cpu.avail) * fb
		if cap(st.host) < n {
			st.host = make([]byte, n)
		}
		host := st.host[:n]
		err = st.cpu.runs(func(i, n, first, step int) error {
			return f.ReadFrames(st.cpu.ix, first, n, step, host[i*fb:(i+n)*fb])
		})
		if err == nil && n > 0 {
			// From pageable memory: the copy has read it when the call returns.
			if cerr := dev.CopyHtoDAsync(out.Dev, unsafe.Pointer(&host[0]), n, stream); cerr != nil {
				return engine.CUDAError("uploading decoded frames", cerr)
			}
		}
	}
	if err != nil {
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if err := d.pad(st, out.Dev, fb, stream, dev); err != nil {
		return engine.CUDAError("padding a sequence", err)
	}
	return ws.GPU().End()
}

// pad fills the frames after the decoded ones on the device with fill_value (pad_mode
// constant), as the cpu backend does.
func (d *mixedVideoDecoder) pad(st *mixedVideoState, dst uintptr, fb int, stream cuda.Stream, dev *cuda.Device) error {
	got, total := len(st.cpu.avail), st.cpu.total
	if got >= total {
		return nil
	}
	// (the border modes decode the frames they repeat: only constant padding is left)
	c := d.cpu.fill
	if c[0] == c[1] && c[1] == c[2] {
		return dev.MemsetAsync(dst+uintptr(got*fb), c[0], (total-got)*fb, stream)
	}
	if len(st.fill) != fb {
		st.fill = make([]byte, fb)
		for p := 0; p < fb; p += 3 {
			st.fill[p], st.fill[p+1], st.fill[p+2] = c[0], c[1], c[2]
		}
	}
	for k := got; k < total; k++ {
		if err := dev.CopyHtoDAsync(dst+uintptr(k*fb), unsafe.Pointer(&st.fill[0]), fb, stream); err != nil {
			return err
		}
	}
	return nil
}

// RunBatch has nothing left to do: the workers queued every sample's work.
func (d *mixedVideoDecoder) RunBatch(*engine.BatchWorkspace) error { return nil }
