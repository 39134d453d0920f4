//go:build cuda

package engine

import "github.com/godali/godali/internal/cuda"

// DevicePoolStats returns the pipeline's GPU pool counters. The executor has no GPU
// stage yet, so a pipeline owns no device pool and its counters are zero; the process's
// device pools (the GPU tests', for now) show in GlobalDeviceStats.
func (p *Pipeline) DevicePoolStats() (PoolStats, error) { return PoolStats{}, nil }

// GlobalDeviceStats returns the process-wide GPU pool counters, including pools whose
// pipeline is gone but whose tensors are still held.
func GlobalDeviceStats() PoolStats { return PoolStats(cuda.GlobalStats(cuda.KindDevice)) }
