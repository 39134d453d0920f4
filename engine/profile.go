package engine

import (
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Per-operator profiling: with GODALI_PROFILE=1 in the environment when a pipeline is
// created, each worker (and the GPU stage) adds up, per graph node, the time its
// operator's Setup and Run take on every sample, including the output memory given to
// it in between; Pipeline.Profile sums them. Each worker keeps counters of its own, so
// that workers never share a cache line; without GODALI_PROFILE the hot path pays one
// nil check per node and sample.

// ProfileEnv is the environment variable that turns profiling on.
const ProfileEnv = "GODALI_PROFILE"

// profileEnabled says whether GODALI_PROFILE asks for profiling ("1", "true", "yes", "on").
func profileEnabled() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(ProfileEnv))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// nodeTimes is one node's cumulative time in one worker.
type nodeTimes struct {
	ns, calls atomic.Int64
	_         [48]byte // a cache line of its own: the next node's counters are written as often
}

func (t *nodeTimes) add(since time.Time) {
	t.ns.Add(int64(time.Since(since)))
	t.calls.Add(1)
}

// NodeProfile is one node's time in Pipeline.Profile.
type NodeProfile struct {
	Name   string  `json:"name"`
	Op     string  `json:"op"`
	Device string  `json:"device"`
	Calls  int64   `json:"calls"`   // samples processed (Setup+Run pairs)
	TotalS float64 `json:"total_s"` // summed over the workers, so it may exceed the wall time
	MeanUs float64 `json:"mean_us"` // per sample
	Share  float64 `json:"share"`   // of all nodes' total
	// Fused names the nodes of the description whose work this node does (an operator
	// fused into its consumer, e.g. resize into crop_mirror_normalize), producers first.
	Fused []string `json:"fused,omitempty"`
}

// Profile is what Pipeline.Profile reports.
type Profile struct {
	Enabled bool          `json:"enabled"`
	Threads int           `json:"num_threads"`
	WallS   float64       `json:"wall_s"` // since Build
	Nodes   []NodeProfile `json:"nodes"`  // the most expensive first
}

// newNodeTimes gives a worker its counters, or nil when profiling is off.
func (p *Pipeline) newNodeTimes() []nodeTimes {
	if !p.profile {
		return nil
	}
	return make([]nodeTimes, len(p.Graph.Nodes))
}

// Profile sums the workers' (and the GPU stage's) per-node times. It may be called at
// any time, also while batches are being prepared; with profiling off it reports
// Enabled false and no nodes.
func (p *Pipeline) Profile() Profile {
	p.mu.Lock()
	workers := p.workers
	built := p.builtAt
	gpu := p.gpuNodeTimes()
	p.mu.Unlock()
	out := Profile{Enabled: p.profile, Threads: p.Spec.NumThreads, Nodes: []NodeProfile{}}
	if !built.IsZero() {
		out.WallS = time.Since(built).Seconds()
	}
	if !p.profile {
		return out
	}
	sets := make([][]nodeTimes, 0, len(workers)+1)
	for _, w := range workers {
		sets = append(sets, w.prof)
	}
	if gpu != nil {
		sets = append(sets, gpu)
	}
	var all float64
	for _, n := range p.Graph.Nodes {
		var ns, calls int64
		for _, s := range sets {
			if n.ID < len(s) {
				ns += s[n.ID].ns.Load()
				calls += s[n.ID].calls.Load()
			}
		}
		np := NodeProfile{Name: n.Name, Op: n.OpName, Device: n.Device, Calls: calls,
			TotalS: float64(ns) / 1e9, Fused: n.Fused}
		if calls > 0 {
			np.MeanUs = float64(ns) / 1e3 / float64(calls)
		}
		all += np.TotalS
		out.Nodes = append(out.Nodes, np)
	}
	for i := range out.Nodes {
		if all > 0 {
			out.Nodes[i].Share = out.Nodes[i].TotalS / all
		}
	}
	sort.SliceStable(out.Nodes, func(i, j int) bool { return out.Nodes[i].TotalS > out.Nodes[j].TotalS })
	return out
}

// SetProfiling turns per-node timing on or off before Build (GODALI_PROFILE sets it when
// the pipeline is created); after Build it fails with StatusState.
func (p *Pipeline) SetProfiling(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.built {
		if on == p.profile {
			return nil
		}
		return Errorf(StatusState, "profiling is chosen before the pipeline is built")
	}
	p.profile = on
	return nil
}
