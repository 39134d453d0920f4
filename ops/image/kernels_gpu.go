//go:build cuda

package image

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

// gpuKernels is embedded by the family's gpu operators: BindGPU gives them the
// pipeline's launcher of kernels/, loaded once per GPU stage and shared by its nodes
// (engine.GPUContext.Shared; the engine itself knows no kernel).
type gpuKernels struct {
	run *kernels.Runner
}

// stageKernels is the GPU stage's loaded module and its launcher on the stage's stream.
type stageKernels struct {
	mod *kernels.Module
	run *kernels.Runner
}

func (k *stageKernels) Close() {
	k.run.Close()
	_ = k.mod.Close()
}

type stageKernelsKey struct{}

// BindGPU implements the engine's gpuBinder (docs/cuda.md).
func (g *gpuKernels) BindGPU(ctx *engine.GPUContext) error {
	v, err := ctx.Shared(stageKernelsKey{}, func() (any, error) {
		mod, err := kernels.Load(ctx.Device)
		if err != nil {
			return nil, err
		}
		return &stageKernels{mod: mod, run: mod.NewRunner(ctx.Stream, ctx.DevPool, ctx.Pinned)}, nil
	})
	if err != nil {
		return err
	}
	g.run = v.(*stageKernels).run
	return nil
}

// UnbindGPU forgets the launcher; the stage closes it.
func (g *gpuKernels) UnbindGPU() { g.run = nil }
