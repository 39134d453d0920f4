//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("random_resized_crop", "gpu", func(a *engine.Args) (engine.Operator, error) {
		r, err := newRandomResizedCrop(a)
		if err != nil {
			return nil, err
		}
		return &gpuRandomResizedCrop{cpu: r}, nil
	})
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
