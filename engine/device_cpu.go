//go:build !cuda

package engine

// DevicePoolStats returns the pipeline's GPU pool counters; the CPU flavour has none.
func (p *Pipeline) DevicePoolStats() (PoolStats, error) { return PoolStats{}, ErrNoCUDA }

// PinnedPoolStats returns the pipeline's pinned host pool counters; the CPU flavour has
// none.
func (p *Pipeline) PinnedPoolStats() (PoolStats, error) { return PoolStats{}, ErrNoCUDA }

// GlobalDeviceStats returns the process-wide GPU pool counters (zero without CUDA).
func GlobalDeviceStats() PoolStats { return PoolStats{} }

// GlobalPinnedStats returns the process-wide pinned host pool counters (zero without
// CUDA).
func GlobalPinnedStats() PoolStats { return PoolStats{} }
