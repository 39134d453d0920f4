//go:build cuda

package engine

import "github.com/godali/godali/internal/cuda"

// DevicePoolStats returns the counters of the pipeline's device memory pool (zero until
// Build, and for pipelines without mixed or gpu nodes, which have no device pool).
func (p *Pipeline) DevicePoolStats() (PoolStats, error) {
	if p.gpu == nil {
		return PoolStats{}, nil
	}
	return PoolStats(p.gpu.ctx.DevPool.Stats()), nil
}

// PinnedPoolStats returns the counters of the pipeline's pinned host memory pool.
func (p *Pipeline) PinnedPoolStats() (PoolStats, error) {
	if p.gpu == nil {
		return PoolStats{}, nil
	}
	return PoolStats(p.gpu.ctx.Pinned.Stats()), nil
}

// GlobalDeviceStats returns the process-wide GPU pool counters, including pools whose
// pipeline is gone but whose tensors are still held.
func GlobalDeviceStats() PoolStats { return PoolStats(cuda.GlobalStats(cuda.KindDevice)) }

// GlobalPinnedStats returns the process-wide pinned host pool counters.
func GlobalPinnedStats() PoolStats { return PoolStats(cuda.GlobalStats(cuda.KindPinned)) }
