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
