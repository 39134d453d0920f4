//go:build !cuda

package engine

// DevicePoolStats returns the pipeline's GPU pool counters; the CPU flavour has none.
func (p *Pipeline) DevicePoolStats() (PoolStats, error) { return PoolStats{}, ErrNoCUDA }

// GlobalDeviceStats returns the process-wide GPU pool counters (zero without CUDA).
func GlobalDeviceStats() PoolStats { return PoolStats{} }
