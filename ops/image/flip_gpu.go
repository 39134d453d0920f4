//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("flip", "gpu", func(a *engine.Args) (engine.Operator, error) { return &gpuFlip{cpu: &flipOp{args: a}}, nil })
}

// gpuFlip is flip on device "gpu": a crop of the whole image, mirrored as asked.
type gpuFlip struct {
	engine.RunInBatch
	gpuKernels
	cpu  *flipOp
	plan gpuPlan[kernels.CropSample, *kernels.CropSample]
}

// Infer: the gpu flip takes HWC uint8 images (the schema's Backends["gpu"], checked by
// the graph; the cpu one takes any layout and type).
func (o *gpuFlip) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return o.cpu.Infer(in)
}

func (o *gpuFlip) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	fh, fv, err := o.cpu.flags(ws)
	if err != nil {
		return err
	}
	ws.Out[0].SetShape(in.Shape...)
	*o.plan.at(ws.Sample) = kernels.CropSample{Src: in.Dev, W: w, H: h, Channels: c, CropW: w, CropH: h, FlipH: fh, FlipV: fv}
	return nil
}

func (o *gpuFlip) RunBatch(bw *engine.BatchWorkspace) error {
	return o.run.Crop(o.plan.batch(bw))
}
