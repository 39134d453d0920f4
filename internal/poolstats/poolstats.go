// Package poolstats holds the counters every buffer pool of godali keeps (host pools in
// engine, device and pinned pools in internal/cuda); godali_pool_stats_t mirrors Stats.
package poolstats

import "sync/atomic"

// Stats is a snapshot of a pool's counters.
type Stats struct {
	Allocations   int64 // buffers obtained from the system (mmap, cuMemAlloc, cuMemHostAlloc)
	Releases      int64 // buffers given back to the system
	Acquires      int64 // buffers handed out
	Returns       int64 // buffers returned
	Outstanding   int64 // handed out and not returned
	ReservedBytes int64 // bytes obtained from the system and not given back
	InUseBytes    int64 // bytes of outstanding buffers
	Exported      int64 // DLPack tensors whose deleter has not run
}

// Field names one counter.
type Field int

// The counters, in the order of Stats.
const (
	Allocations Field = iota
	Releases
	Acquires
	Returns
	Outstanding
	ReservedBytes
	InUseBytes
	Exported
	numFields
)

// Counters are a pool's live counters, safe for concurrent use.
type Counters struct {
	v [numFields]atomic.Int64
}

// Add adds d to one counter.
func (c *Counters) Add(f Field, d int64) { c.v[f].Add(d) }

// Load reads one counter.
func (c *Counters) Load(f Field) int64 { return c.v[f].Load() }

// Snapshot reads every counter.
func (c *Counters) Snapshot() Stats {
	return Stats{
		Allocations: c.Load(Allocations), Releases: c.Load(Releases),
		Acquires: c.Load(Acquires), Returns: c.Load(Returns),
		Outstanding: c.Load(Outstanding), ReservedBytes: c.Load(ReservedBytes),
		InUseBytes: c.Load(InUseBytes), Exported: c.Load(Exported),
	}
}
