//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
	"github.com/godali/godali/ops/internal/gpukernels"
)

// gpuKernels is embedded by the family's gpu operators: BindGPU gives them the
// pipeline's launcher of kernels/, loaded once per GPU stage and shared by its nodes
// (engine.GPUContext.Shared; the engine itself knows no kernel).
type gpuKernels struct {
	run *kernels.Runner
}

// BindGPU implements the engine's gpuBinder (docs/cuda.md).
func (g *gpuKernels) BindGPU(ctx *engine.GPUContext) error {
	k, err := gpukernels.For(ctx)
	if err != nil {
		return err
	}
	g.run = k.Runner
	return nil
}

// UnbindGPU forgets the launcher; the stage closes it.
func (g *gpuKernels) UnbindGPU() { g.run = nil }

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
