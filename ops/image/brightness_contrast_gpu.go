//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("brightness_contrast", "gpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newBrightnessContrast(a)
		if err != nil {
			return nil, err
		}
		return &gpuBrightnessContrast{cpu: o}, nil
	})
}

// gpuBrightnessContrast is brightness_contrast on device "gpu": the CPU operator's
// per-sample scale and offset, applied by godali_color with the CPU's float32 rounding,
// one launch per batch.
type gpuBrightnessContrast struct {
	engine.RunInBatch
	gpuKernels
	cpu  *brightnessContrastOp
	plan gpuPlan[kernels.ColorSample, *kernels.ColorSample]
	v    [4]float64
}

// gpuColorInfer is the CPU operator's Infer (cpuInfer) within the gpu kernel's limits:
// HWC uint8 in (the schema's Backends["gpu"], checked by the graph), UINT8 or FLOAT out.
func gpuColorInfer(a *engine.Args, in []engine.TensorMeta, cpuInfer func([]engine.TensorMeta) ([]engine.TensorMeta, error)) ([]engine.TensorMeta, error) {
	out, err := cpuInfer(in)
	if err == nil && out[0].DType != engine.UInt8 && out[0].DType != engine.Float32 {
		return nil, a.Invalidf("the gpu backend gives UINT8 or FLOAT, not %s; use device \"cpu\"", out[0].DType)
	}
	return out, err
}

func (o *gpuBrightnessContrast) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return gpuColorInfer(o.cpu.args, in, o.cpu.Infer)
}

func (o *gpuBrightnessContrast) Setup(ws *engine.Workspace) error {
	if err := sampleArgs(ws, o.cpu.args, o.cpu.params, o.v[:]); err != nil {
		return err
	}
	in := ws.In[0]
	ws.Out[0].SetShape(in.Shape...)
	scale, offset := o.cpu.affine(o.v[:])
	*o.plan.at(ws.Sample) = kernels.ColorSample{Src: in.Dev, W: in.Shape[1], H: in.Shape[0], Channels: in.Shape[2],
		Float: o.cpu.out == engine.Float32, Scale: scale, Offset: offset}
	return nil
}

func (o *gpuBrightnessContrast) RunBatch(bw *engine.BatchWorkspace) error {
	return o.run.Color(o.plan.batch(bw))
}
