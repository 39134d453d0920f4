//go:build cuda

package kernels

/*
#cgo CFLAGS: -I${SRCDIR}
#include <stddef.h>
#include "godali_kernels.h"

// Sizes and offsets of the descriptors, as the C compiler (and so nvcc) lays them out.
enum {
	gk_resize_size = sizeof(godali_resize_desc),
	gk_resize_tmp = offsetof(godali_resize_desc, tmp),
	gk_resize_channels = offsetof(godali_resize_desc, channels),
	gk_resize_vtaps = offsetof(godali_resize_desc, vtaps),
	gk_cmn_size = sizeof(godali_cmn_desc),
	gk_cmn_lut = offsetof(godali_cmn_desc, lut),
	gk_cmn_out_channels = offsetof(godali_cmn_desc, out_channels),
	gk_cmn_mirror = offsetof(godali_cmn_desc, mirror),
	gk_crop_size = sizeof(godali_crop_desc),
	gk_crop_x = offsetof(godali_crop_desc, x),
	gk_crop_flip_v = offsetof(godali_crop_desc, flip_v),
	gk_color_size = sizeof(godali_color_desc),
	gk_color_w = offsetof(godali_color_desc, w),
	gk_color_matrix = offsetof(godali_color_desc, matrix),
	gk_color_m = offsetof(godali_color_desc, m),
	gk_color_off = offsetof(godali_color_desc, off),
	gk_precision = GODALI_PRECISION_BITS,
};
*/
import "C"

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"unsafe"

	"github.com/godali/godali/internal/cuda"
)

// The Go descriptors must be the C ones byte for byte: each line below stops the build
// when a size or offset differs (a constant index out of range, or a negative constant
// converted to uintptr).
var (
	_ = [1]struct{}{}[unsafe.Sizeof(resizeDesc{})-C.gk_resize_size]
	_ = [1]struct{}{}[C.gk_resize_size-unsafe.Sizeof(resizeDesc{})]
	_ = [1]struct{}{}[unsafe.Offsetof(resizeDesc{}.Tmp)-C.gk_resize_tmp]
	_ = [1]struct{}{}[unsafe.Offsetof(resizeDesc{}.Channels)-C.gk_resize_channels]
	_ = [1]struct{}{}[unsafe.Offsetof(resizeDesc{}.VTaps)-C.gk_resize_vtaps]
	_ = [1]struct{}{}[unsafe.Sizeof(cmnDesc{})-C.gk_cmn_size]
	_ = [1]struct{}{}[C.gk_cmn_size-unsafe.Sizeof(cmnDesc{})]
	_ = [1]struct{}{}[unsafe.Offsetof(cmnDesc{}.LUT)-C.gk_cmn_lut]
	_ = [1]struct{}{}[unsafe.Offsetof(cmnDesc{}.OutChannels)-C.gk_cmn_out_channels]
	_ = [1]struct{}{}[unsafe.Offsetof(cmnDesc{}.Mirror)-C.gk_cmn_mirror]
	_ = [1]struct{}{}[unsafe.Sizeof(cropDesc{})-C.gk_crop_size]
	_ = [1]struct{}{}[C.gk_crop_size-unsafe.Sizeof(cropDesc{})]
	_ = [1]struct{}{}[unsafe.Offsetof(cropDesc{}.X)-C.gk_crop_x]
	_ = [1]struct{}{}[unsafe.Offsetof(cropDesc{}.FlipV)-C.gk_crop_flip_v]
	_ = [1]struct{}{}[unsafe.Sizeof(colorDesc{})-C.gk_color_size]
	_ = [1]struct{}{}[C.gk_color_size-unsafe.Sizeof(colorDesc{})]
	_ = [1]struct{}{}[unsafe.Offsetof(colorDesc{}.W)-C.gk_color_w]
	_ = [1]struct{}{}[unsafe.Offsetof(colorDesc{}.Matrix)-C.gk_color_matrix]
	_ = [1]struct{}{}[unsafe.Offsetof(colorDesc{}.M)-C.gk_color_m]
	_ = [1]struct{}{}[unsafe.Offsetof(colorDesc{}.Off)-C.gk_color_off]
	_ = [1]struct{}{}[precisionBits-C.gk_precision]
)

// The fatbin directory is embedded whole: it always holds README (committed), and
// kernels.fatbin once `make -C kernels` has run, so the cuda build compiles either way.
//
//go:embed fatbin
var fatbin embed.FS

// ErrNotBuilt: the library was built without compiling kernels.cu.
var ErrNotBuilt = errors.New("the CUDA kernels were not compiled into this library (kernels/fatbin/kernels.fatbin was missing at build time): build with `make cuda`")

// Image is the embedded fatbin.
func Image() ([]byte, error) {
	b, err := fatbin.ReadFile("fatbin/kernels.fatbin")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotBuilt
	}
	return b, err
}

// Module is the kernels loaded into a device's primary context.
type Module struct {
	dev                                *cuda.Device
	mod                                *cuda.Module
	resizeH, resizeV, cmn, crop, color cuda.Function
	nv12                               cuda.Function
}

// Load loads the embedded kernels on dev. The driver picks the SASS for the device or
// JIT-compiles the PTX (newer GPUs than sm_90).
func Load(dev *cuda.Device) (*Module, error) {
	img, err := Image()
	if err != nil {
		return nil, err
	}
	mod, err := dev.LoadModule(img)
	if err != nil {
		return nil, fmt.Errorf("loading the CUDA kernels on device %d: %w", dev.Ordinal(), err)
	}
	m := &Module{dev: dev, mod: mod}
	for _, f := range []struct {
		name string
		fn   *cuda.Function
	}{{"godali_resize_h", &m.resizeH}, {"godali_resize_v", &m.resizeV}, {"godali_cmn", &m.cmn}, {"godali_crop", &m.crop}, {"godali_color", &m.color}, {"godali_nv12_rgb", &m.nv12}} {
		if *f.fn, err = mod.Function(f.name); err != nil {
			_ = mod.Unload()
			return nil, err
		}
	}
	return m, nil
}

// NV12Frame is one decoded frame in NV12 (Luma and Chroma planes of Pitch bytes per
// row) to convert to packed RGB at Dst (DstPitch bytes per row), W x H pixels.
type NV12Frame struct {
	Luma, Chroma uintptr
	Pitch        int
	W, H         int
	Dst          uintptr
	DstPitch     int
	Matrix       YUVMatrix
}

// NV12ToRGB queues the conversion of f on stream, with args (reset here) for the
// launch's arguments.
func (m *Module) NV12ToRGB(f *NV12Frame, stream cuda.Stream, args *cuda.KernelArgs) error {
	grid := cuda.Dim3{X: uint32((f.W + blockX - 1) / blockX), Y: uint32((f.H + blockY - 1) / blockY), Z: 1}
	c := &f.Matrix
	args.Reset().Ptr(f.Luma).Ptr(f.Chroma).I32(int32(f.Pitch)).I32(int32(f.W)).I32(int32(f.H)).
		Ptr(f.Dst).I32(int32(f.DstPitch)).F32(c.YOff).F32(c.YScale).F32(c.CrV).F32(c.CgU).F32(c.CgV).F32(c.CbU)
	return m.dev.Launch(m.nv12, grid, cuda.Dim3{X: blockX, Y: blockY, Z: 1}, 0, stream, args)
}

// Close unloads the kernels; runners of the module must be closed first.
func (m *Module) Close() error { return m.mod.Unload() }

// Launch geometry: one thread per output pixel, 256 threads per block, one sample per
// grid z index (at most 65535 per launch; larger batches take several launches).
const (
	blockX   = 32
	blockY   = 8
	maxGridZ = 65535
)

// Runner launches kernels on one stream. It plans each batch on the host, uploads the
// plan through a pinned staging block with one copy, and takes scratch memory from the
// pools; every block is released after the work queued on the stream, so pools reuse
// them in stream order and steady state makes no allocation, on the device or in Go.
// One per stream and goroutine: not safe for concurrent use.
type Runner struct {
	m      *Module
	stream cuda.Stream
	dev    *cuda.Pool
	pinned *cuda.Pool
	args   *cuda.KernelArgs
	rb     ResizeBatch
	cb     CMNBatch
	xb     CropBatch
	kb     ColorBatch
	held   [3]*cuda.Block
	nheld  int
}

// NewRunner returns a runner for stream, with scratch from devPool and staging from
// pinnedPool (pools of the module's device).
func (m *Module) NewRunner(stream cuda.Stream, devPool, pinnedPool *cuda.Pool) *Runner {
	return &Runner{m: m, stream: stream, dev: devPool, pinned: pinnedPool, args: cuda.NewKernelArgs()}
}

// Close releases the runner's argument block.
func (r *Runner) Close() { r.args.Free() }

// get takes a block for this launch; finish releases them after the stream's work.
func (r *Runner) get(p *cuda.Pool, n int) (*cuda.Block, error) {
	b, err := p.Get(max(n, 1), r.stream)
	if err != nil {
		return nil, err
	}
	r.held[r.nheld] = b
	r.nheld++
	return b, nil
}

func (r *Runner) finish(err error) error {
	for i := 0; i < r.nheld; i++ {
		if ferr := r.held[i].ReleaseAfter(r.stream); ferr != nil && err == nil {
			err = ferr
		}
		r.held[i] = nil
	}
	r.nheld = 0
	return err
}

// upload copies host staging to a device block on the stream.
func (r *Runner) upload(n int) (host, dev *cuda.Block, err error) {
	if host, err = r.get(r.pinned, n); err != nil {
		return nil, nil, err
	}
	if dev, err = r.get(r.dev, n); err != nil {
		return nil, nil, err
	}
	return host, dev, nil
}

func (r *Runner) send(host, dev *cuda.Block, n int) error {
	return r.m.dev.CopyHtoDAsync(dev.Ptr(), host.HostPtr(), n, r.stream)
}

func (r *Runner) launch(f cuda.Function, w, h, n int, descs uintptr, descSize int, p1, p2 uintptr, two bool) error {
	grid := cuda.Dim3{X: uint32((w + blockX - 1) / blockX), Y: uint32((h + blockY - 1) / blockY)}
	for first := 0; first < n; first += maxGridZ {
		grid.Z = uint32(min(n-first, maxGridZ))
		r.args.Reset().Ptr(descs + uintptr(first*descSize))
		if two {
			r.args.Ptr(p1).Ptr(p2)
		}
		if err := r.m.dev.Launch(f, grid, cuda.Dim3{X: blockX, Y: blockY, Z: 1}, 0, r.stream, r.args); err != nil {
			return err
		}
	}
	return nil
}

// Resize queues the resizes of samples (random resized crop included: a resize of the
// crop window, see CropROI). The output equals imaging's Resize.
func (r *Runner) Resize(samples []ResizeSample) error {
	r.rb.Reset()
	if err := addSamples("resize", samples, r.rb.Add); err != nil {
		return err
	}
	if r.rb.Len() == 0 {
		return nil
	}
	tmp, err := r.get(r.dev, r.rb.TmpBytes())
	if err != nil {
		return r.finish(err)
	}
	l := r.rb.layout()
	host, dev, err := r.upload(l.size)
	if err != nil {
		return r.finish(err)
	}
	r.rb.pack(host.Bytes(), tmp.Ptr())
	if err := r.send(host, dev, l.size); err != nil {
		return r.finish(err)
	}
	base, n := dev.Ptr(), r.rb.Len()
	size := int(unsafe.Sizeof(resizeDesc{}))
	if err := r.launch(r.m.resizeH, r.rb.maxW, r.rb.maxRows, n, base, size, base+uintptr(l.taps), base+uintptr(l.weights), true); err != nil {
		return r.finish(fmt.Errorf("godali_resize_h: %w", err))
	}
	if err := r.launch(r.m.resizeV, r.rb.maxW, r.rb.maxH, n, base, size, base+uintptr(l.taps), base+uintptr(l.weights), true); err != nil {
		return r.finish(fmt.Errorf("godali_resize_v: %w", err))
	}
	return r.finish(nil)
}

// addSamples adds each sample to a batch plan, naming the one a plan refuses.
func addSamples[S any](what string, samples []S, add func(*S) error) error {
	for i := range samples {
		if err := add(&samples[i]); err != nil {
			return fmt.Errorf("%s sample %d: %w", what, i, err)
		}
	}
	return nil
}

// queueDescs is the one launch of a per-sample kernel: it packs n descriptors of
// descSize bytes (size bytes in all: pack writes them to host staging, given the
// device address they will have) and launches f over a w x h grid per sample.
func (r *Runner) queueDescs(f cuda.Function, name string, n, w, h, size, descSize int, pack func(host []byte, dev uintptr)) error {
	if n == 0 {
		return nil
	}
	host, dev, err := r.upload(size)
	if err != nil {
		return r.finish(err)
	}
	pack(host.Bytes(), dev.Ptr())
	if err := r.send(host, dev, size); err != nil {
		return r.finish(err)
	}
	if err := r.launch(f, w, h, n, dev.Ptr(), descSize, 0, 0, false); err != nil {
		return r.finish(fmt.Errorf("%s: %w", name, err))
	}
	return r.finish(nil)
}

// CropMirrorNormalize queues crop_mirror_normalize of samples with the operator's
// parameters p; every sample has channels channels. The output equals imaging's
// CropMirrorNormalize.
func (r *Runner) CropMirrorNormalize(p *CMNParams, channels int, samples []CMNSample) error {
	if err := r.cb.Reset(p, channels); err != nil {
		return err
	}
	if err := addSamples("crop_mirror_normalize", samples, r.cb.Add); err != nil {
		return err
	}
	_, size := r.cb.layout()
	return r.queueDescs(r.m.cmn, "godali_cmn", r.cb.Len(), r.cb.maxW, r.cb.maxH, size, int(unsafe.Sizeof(cmnDesc{})), r.cb.pack)
}

// Crop queues crops and flips (a flip is a crop of the whole image with FlipH/FlipV).
// The output equals imaging's Crop and Flip.
func (r *Runner) Crop(samples []CropSample) error {
	r.xb.Reset()
	if err := addSamples("crop", samples, r.xb.Add); err != nil {
		return err
	}
	return r.queueDescs(r.m.crop, "godali_crop", r.xb.Len(), r.xb.maxW, r.xb.maxH, r.xb.size(), int(unsafe.Sizeof(cropDesc{})),
		func(host []byte, _ uintptr) { r.xb.pack(host) })
}

// Color queues brightness_contrast, hsv and color_twist samples. The output equals
// imaging's AffineTable and ColorMatrix.Apply bit for bit.
func (r *Runner) Color(samples []ColorSample) error {
	r.kb.Reset()
	if err := addSamples("color", samples, r.kb.Add); err != nil {
		return err
	}
	return r.queueDescs(r.m.color, "godali_color", r.kb.Len(), r.kb.maxW, r.kb.maxH, r.kb.size(), int(unsafe.Sizeof(colorDesc{})),
		func(host []byte, _ uintptr) { r.kb.pack(host) })
}
