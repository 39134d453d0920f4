//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/imaging"
	"github.com/godali/godali/kernels"
)

func init() {
	engine.RegisterBackend("crop_mirror_normalize", "gpu", func(a *engine.Args) (engine.Operator, error) {
		o, err := newCMN(a)
		if err != nil {
			return nil, err
		}
		s := o.spec
		if s.dynNorm {
			return nil, a.Errorf("mean", "per-sample mean/std (from a pipeline value) is supported on device \"cpu\" only; the GPU kernel takes one table per batch")
		}
		return &gpuCMN{cpu: o, params: kernels.CMNParams{Mean: s.Mean, Std: s.Std, Scale: s.Scale, Shift: s.Shift,
			Out: s.Out, CHW: s.CHW, PadChannels: s.Pad}}, nil
	})
}

// gpuCMN is crop_mirror_normalize on device "gpu": the CPU operator's windows and
// mirroring per sample, and a table of the CPU's exact results for the normalisation.
type gpuCMN struct {
	engine.RunInBatch
	gpuKernels
	cpu      *cmnOp
	params   kernels.CMNParams
	plan     gpuPlan[kernels.CMNSample, *kernels.CMNSample]
	np       imaging.NormalizeParams
	channels []int
}

// Infer: the gpu variant takes what the fused kernel does, HWC uint8 images (the
// schema's Backends["gpu"], checked by the graph).
func (o *gpuCMN) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	if !o.cpu.spec.fast("HWC", engine.UInt8) {
		return nil, o.cpu.spec.args.Invalidf("on the gpu: crop_d, trim_to_shape, nonzero fill_values and output layouts other than HWC/CHW are cpu only")
	}
	return o.cpu.Infer(in)
}

func (o *gpuCMN) Setup(ws *engine.Workspace) error {
	in := ws.In[0]
	h, w, c := in.Shape[0], in.Shape[1], in.Shape[2]
	if err := o.cpu.spec.params(ws, w, h, &o.np); err != nil {
		return err
	}
	o.cpu.spec.setShape(ws.Out[0], o.np.CropW, o.np.CropH, c)
	*o.plan.at(ws.Sample) = kernels.CMNSample{Src: in.Dev, W: w, H: h, CropX: o.np.CropX, CropY: o.np.CropY,
		CropW: o.np.CropW, CropH: o.np.CropH, Mirror: o.np.Mirror}
	for len(o.channels) <= ws.Sample {
		o.channels = append(o.channels, 0)
	}
	o.channels[ws.Sample] = c
	return nil
}

func (o *gpuCMN) RunBatch(bw *engine.BatchWorkspace) error {
	c := o.channels[0]
	for i, ci := range o.channels[:bw.Size] {
		if ci != c {
			return o.cpu.spec.args.BatchDataErrorf(bw, i, "on the GPU, one channel count per batch is needed: sample 0 has %d, this one %d", c, ci)
		}
	}
	return o.run.CropMirrorNormalize(&o.params, c, o.plan.batch(bw))
}
