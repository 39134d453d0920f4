//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("crop", "gpu", func(a *engine.Args) (engine.Operator, error) {
		c, err := newCrop(a)
		if err != nil {
			return nil, err
		}
		return &gpuCrop{cpu: c}, nil
	})
}

// gpuCrop is crop on device "gpu": the CPU operator's window, one launch per batch.
type gpuCrop struct {
	engine.RunInBatch
	gpuKernels
	cpu  *cropOp
	plan gpuPlan[kernels.CropSample, *kernels.CropSample]
}

// Infer: the gpu variant crops HWC uint8 images (the schema's Backends["gpu"], checked
// by the graph; the cpu one takes any layout and type).
func (o *gpuCrop) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if !o.cpu.fast("HWC", engine.UInt8) {
		return nil, o.cpu.args.Invalidf("on the gpu: crop depth, trim_to_shape, per-channel or non-byte fill_values and dtype other than UINT8 are cpu only")
	}
	return o.cpu.Infer(in)
}

func (o *gpuCrop) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	cw, ch, err := o.cpu.sizeAt(ws)
	if err != nil {
		return err
	}
	x, y, err := o.cpu.window(ws, w, h, cw, ch)
	if err != nil {
		return err
	}
	if !o.cpu.pad && (x < 0 || y < 0 || x+cw > w || y+ch > h) {
		return o.cpu.args.DataErrorf(ws, "%s Got: crop %dx%d at (%d, %d), which leaves the %dx%d image (out_of_bounds_policy=\"error\"; use \"pad\")", outOfBoundsMessage, cw, ch, x, y, w, h)
	}
	ws.Out[0].SetShape(ch, cw, c)
	*o.plan.at(ws.Sample) = kernels.CropSample{Src: in.Dev, W: w, H: h, Channels: c, X: x, Y: y,
		CropW: cw, CropH: ch, Fill: o.cpu.fill}
	return nil
}

func (o *gpuCrop) RunBatch(bw *engine.BatchWorkspace) error {
	return o.run.Crop(o.plan.batch(bw))
}
