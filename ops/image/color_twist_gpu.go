//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

func init() {
	for _, twist := range []bool{false, true} {
		name := "hsv"
		if twist {
			name = "color_twist"
		}
		engine.RegisterBackend(name, "gpu", func(a *engine.Args) (engine.Operator, error) {
			o, err := newColorTwist(a, twist)
			if err != nil {
				return nil, err
			}
			return &gpuColorTwist{cpu: o}, nil
		})
	}
}

// gpuColorTwist is hsv and color_twist on device "gpu": the CPU operator's per-sample
// matrix, applied by godali_color with the CPU's float32 rounding.
type gpuColorTwist struct {
	engine.RunInBatch
	gpuKernels
	cpu  *colorTwistOp
	plan gpuPlan[kernels.ColorSample, *kernels.ColorSample]
	v    [5]float64
}

func (o *gpuColorTwist) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return gpuColorInfer(o.cpu.args, in, o.cpu.Infer)
}

func (o *gpuColorTwist) Setup(ws *engine.Workspace) error {
	if err := o.cpu.Setup(ws); err != nil { // checks the channels, sets the shape
		return err
	}
	v := o.v[:len(o.cpu.params)]
	if err := sampleArgs(ws, o.cpu.args, o.cpu.params, v); err != nil {
		return err
	}
	in := ws.In[0]
	s := o.plan.at(ws.Sample)
	*s = kernels.ColorSample{Src: in.Dev, W: in.Shape[1], H: in.Shape[0], Channels: 3,
		Float: o.cpu.out == engine.Float32, UseMatrix: true}
	o.cpu.matrix(v, &s.Matrix)
	return nil
}

func (o *gpuColorTwist) RunBatch(bw *engine.BatchWorkspace) error {
	return o.run.Color(o.plan.batch(bw))
}
