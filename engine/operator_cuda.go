//go:build cuda

package engine

import "github.com/godali/godali/internal/cuda"

// GPU hooks for the operators of mixed and gpu nodes (ops/...). Batch operators that
// need the GPU before the first batch implement BindGPU(*GPUContext) error and
// UnbindGPU(); those that know their per-sample output size ahead implement
// PreallocBytes() int (docs/cuda.md).

// SampleGPU is what the per-sample half of a mixed node sees of the GPU: the worker's
// stream, ordered after the batch's device memory is free.
type SampleGPU sampleGPU

// GPU returns the sample's GPU hooks; nil except in the per-sample half of a mixed node.
func (ws *Workspace) GPU() *SampleGPU { return (*SampleGPU)(ws.gpu) }

// Begin returns the worker's stream, made to wait until the batch's device memory may
// be written. Work for the sample is queued on it between Begin and End.
func (sg *SampleGPU) Begin() (cuda.Stream, error) { return (*sampleGPU)(sg).begin() }

// End marks the sample's GPU work as queued; the GPU stage waits for it before the
// batch's per-batch half runs.
func (sg *SampleGPU) End() error { return (*sampleGPU)(sg).end() }

// CUDAError wraps a CUDA or nvJPEG failure as a StatusCUDA error saying what was being
// done; nil stays nil and godali errors pass through unchanged.
func CUDAError(what string, err error) error { return cudaError(what, err) }
