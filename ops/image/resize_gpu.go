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
