//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("resize", "gpu", func(a *engine.Args) (engine.Operator, error) {
		r, err := newResize(a)
		if err != nil {
			return nil, err
		}
		return &gpuResize{cpu: r}, nil
	})
	engine.RegisterBackend("random_resized_crop", "gpu", func(a *engine.Args) (engine.Operator, error) {
		r, err := newRandomResizedCrop(a)
		if err != nil {
			return nil, err
		}
		return &gpuRandomResizedCrop{cpu: r}, nil
	})
}

// gpuSample is a kernel's per-sample record (kernels.ResizeSample, ...).
type gpuSample[T any] interface {
	*T
	SetDst(uintptr)
}

// gpuPlan collects the samples of a batch between the stage's per-sample Setup calls
// and RunBatch; its slices are reused from batch to batch. The operators using it embed
// engine.RunInBatch: batch takes the output addresses from the batch workspace.
type gpuPlan[T any, P gpuSample[T]] struct {
	samples []T
}

// at returns sample i's entry, growing the plan to the batch.
func (p *gpuPlan[T, P]) at(i int) *T {
	for len(p.samples) <= i {
		var z T
		p.samples = append(p.samples, z)
	}
	return &p.samples[i]
}

// batch is the plan of bw's samples, each with its output 0's device address.
func (p *gpuPlan[T, P]) batch(bw *engine.BatchWorkspace) []T {
	s := p.samples[:bw.Size]
	for i := range s {
		P(&s[i]).SetDst(bw.Out[0][i].Dev)
	}
	return s
}

// gpuResize is resize on device "gpu": the CPU operator's sizes and filters (kernels uses
// the same weights), one launch pair per batch.
type gpuResize struct {
	engine.RunInBatch
	gpuKernels
	cpu  *resizeOp
	plan gpuPlan[kernels.ResizeSample, *kernels.ResizeSample]
}

func (r *gpuResize) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return r.cpu.Infer(in)
}

func (r *gpuResize) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	var buf ResizeSpec
	spec, err := r.cpu.specAt(ws, &buf)
	if err != nil {
		return err
	}
	roi := spec.ROI(w, h)
	ow, oh, err := spec.sampleSize(r.cpu.args, ws, &roi, w, h)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(oh, ow, c)
	*r.plan.at(ws.Sample) = kernels.ResizeSample{Src: in.Dev, SrcW: w, SrcH: h, Channels: c, DstW: ow, DstH: oh,
		ROI: roi, Interp: spec.Interp(w, ow), Antialias: spec.Antialias}
	return nil
}

func (r *gpuResize) RunBatch(bw *engine.BatchWorkspace) error {
	return r.run.Resize(r.plan.batch(bw))
}

// gpuRandomResizedCrop is random_resized_crop on device "gpu": the window is drawn from
// the sample's random stream as on the CPU, and resized as a region of interest.
type gpuRandomResizedCrop struct {
	engine.RunInBatch
	gpuKernels
	cpu  *randomResizedCropOp
	plan gpuPlan[kernels.ResizeSample, *kernels.ResizeSample]
}

// Infer: the gpu variant resizes HWC uint8 images (the schema's Backends["gpu"], checked
// by the graph; the cpu one takes any layout and type).
func (o *gpuRandomResizedCrop) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	m, err := o.cpu.Infer(in)
	if err == nil && o.cpu.out != engine.UInt8 {
		return nil, o.cpu.args.Errorf("dtype", "the gpu variant outputs UINT8 only")
	}
	return m, err
}

func (o *gpuRandomResizedCrop) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	win := o.cpu.crop.Window(w, h, ws.RNG)
	ws.Out[0].SetShape(o.cpu.h, o.cpu.w, c)
	// The window as an image of its own (rows w*c bytes apart), as the cpu variant and
	// torchvision resample it: the filters read nothing outside it.
	*o.plan.at(ws.Sample) = kernels.ResizeSample{Src: in.Dev + uintptr((win.Y*w+win.X)*c), SrcW: win.W, SrcH: win.H,
		SrcStride: w * c, Channels: c, DstW: o.cpu.w, DstH: o.cpu.h, Interp: o.cpu.interp, Antialias: o.cpu.aa}
	return nil
}

func (o *gpuRandomResizedCrop) RunBatch(bw *engine.BatchWorkspace) error {
	return o.run.Resize(o.plan.batch(bw))
}
