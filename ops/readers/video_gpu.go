//go:build cuda

package readers

import (
	"errors"
	"math"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
	"github.com/godali/godali/nvdec"
	"github.com/godali/godali/ops/internal/gpukernels"
)

// readers.video on the GPU (DALI's device="gpu"; a mixed node here: its per-sample half
// runs on the workers and writes device memory). The reader's planning (files, index,
// sequences, shards, shuffling) is the cpu backend's; a worker decodes its sequence with
// NVDEC (package nvdec) into the sample's device memory on its stream, or, for streams
// NVDEC does not take, on the CPU followed by an upload. Labels, frame numbers and
// timestamps are uploaded from the worker's host memory.
func init() {
	engine.RegisterBackend("readers.video", "mixed", newMixedVideoReader)
}

type mixedVideoReader struct {
	*videoReader
	ctx *engine.GPUContext
	mod *kernels.Module
}

func newMixedVideoReader(a *engine.Args) (engine.Operator, error) {
	op, err := newVideoReader(a)
	if err != nil {
		return nil, err
	}
	r := op.(*videoReader)
	if r.dtype != engine.UInt8 {
		return nil, a.Errorf("dtype", "the GPU video reader gives UINT8 frames only, got %s", r.dtype)
	}
	return &mixedVideoReader{videoReader: r}, nil
}

func (r *mixedVideoReader) BindGPU(ctx *engine.GPUContext) error {
	if err := nvdec.Load(); err != nil {
		return err
	}
	k, err := gpukernels.For(ctx)
	if err != nil {
		return err
	}
	r.ctx, r.mod = ctx, k.Module
	return nil
}

func (r *mixedVideoReader) UnbindGPU() { r.mod = nil }

// RunBatch has nothing left to do: the workers queued every sample's work.
func (r *mixedVideoReader) RunBatch(*engine.BatchWorkspace) error { return nil }

type mixedVideoReaderState struct {
	videoReaderState
	dec   *nvdec.Decoder
	host  []byte // CPU route frames
	small []byte // label, frame number, timestamps
}

func (s *mixedVideoReaderState) Close() {
	s.videoReaderState.Close()
	if s.dec != nil {
		s.dec.Close()
		s.dec = nil
	}
}

func (r *mixedVideoReader) NewWorkerState() any {
	return &mixedVideoReaderState{}
}

func (r *mixedVideoReader) Run(ws *engine.Workspace) error {
	st := ws.State.(*mixedVideoReaderState)
	seq := r.seqs[ws.Ref.Index]
	vf, f, err := st.open(r.videoReader, seq)
	if err != nil {
		return err
	}
	useNVDEC := nvdec.Takes(f.Info)
	if useNVDEC {
		dec, err := nvdec.For(st.dec, r.ctx.Device, r.mod, f.Info.Codec)
		st.dec = dec
		if err != nil {
			return engine.CUDAError("creating an NVDEC decoder", err)
		}
	}
	stream, err := ws.GPU().Begin()
	if err != nil {
		return err
	}
	dev := r.ctx.Device
	out := ws.Out[0]
	fb, n := f.FrameBytes(), int(seq.count)
	if useNVDEC {
		err = st.dec.ReadFrames(f, vf.ix, int(seq.start), n, r.stride, out.Dev, stream)
		if errors.Is(err, nvdec.ErrFormat) {
			useNVDEC, err = false, nil // refused before any frame: the CPU decodes it
		}
	}
	if !useNVDEC && err == nil {
		if cap(st.host) < n*fb {
			st.host = make([]byte, n*fb)
		}
		host := st.host[:n*fb]
		if err = f.ReadFrames(vf.ix, int(seq.start), n, r.stride, host); err == nil && n > 0 {
			// From pageable memory: the copy has read it when the call returns.
			if cerr := dev.CopyHtoDAsync(out.Dev, unsafe.Pointer(&host[0]), len(host), stream); cerr != nil {
				return engine.CUDAError("uploading decoded frames", cerr)
			}
		}
	}
	if err != nil {
		st.drop(0) // reopened for the next sample
		return engine.Errorf(engine.StatusData, "%v", err)
	}
	if pad := (r.seqLen - n) * fb; pad > 0 {
		if err := dev.MemsetAsync(out.Dev+uintptr(n*fb), 0, pad, stream); err != nil {
			return engine.CUDAError("padding a sequence", err)
		}
	}
	// The small outputs: written in host memory, uploaded.
	st.small = st.small[:0]
	k := 1
	put := func(v uint32) { st.small = append(st.small, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }
	var offs [3]int
	if r.labels {
		offs[k-1] = len(st.small)
		put(uint32(int32(ws.Ref.Label)))
		k++
	}
	if r.frameNum {
		offs[k-1] = len(st.small)
		put(uint32(seq.start))
		k++
	}
	if r.times {
		offs[k-1] = len(st.small)
		for i := 0; i < r.seqLen; i++ {
			t := -1.0
			if i < n {
				t = vf.ix.Seconds(int(seq.start)+i*r.stride, vf.info.TimeBase)
			}
			put(math.Float32bits(float32(t)))
		}
		k++
	}
	for j := 1; j < k; j++ {
		o := ws.Out[j]
		b := st.small[offs[j-1]:]
		if err := dev.CopyHtoDAsync(o.Dev, unsafe.Pointer(&b[0]), o.NumBytes(), stream); err != nil {
			return engine.CUDAError("uploading the reader's outputs", err)
		}
	}
	return ws.GPU().End()
}
