//go:build cuda

// Package gpukernels gives the operators of one GPU stage one loaded module of kernels/
// and one launcher on the stage's stream, shared by every node of the stage
// (engine.GPUContext.Shared; the engine itself knows no kernel): the image operators
// launch through the Runner, the video operators hand the Module to NVDEC's colour
// conversion.
package gpukernels

import (
	"github.com/godali/godali/engine"
	"github.com/godali/godali/kernels"
)

// Stage is a GPU stage's loaded module and its launcher on the stage's stream.
type Stage struct {
	Module *kernels.Module
	Runner *kernels.Runner
}

// Close releases the launcher and the module; the stage calls it when it ends.
func (s *Stage) Close() {
	s.Runner.Close()
	_ = s.Module.Close()
}

type key struct{}

// For returns the stage's kernels, loading them the first time a node of the stage asks
// (from BindGPU, on the stage's goroutine).
func For(ctx *engine.GPUContext) (*Stage, error) {
	v, err := ctx.Shared(key{}, func() (any, error) {
		mod, err := kernels.Load(ctx.Device)
		if err != nil {
			return nil, err
		}
		return &Stage{Module: mod, Runner: mod.NewRunner(ctx.Stream, ctx.DevPool, ctx.Pinned)}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Stage), nil
}
