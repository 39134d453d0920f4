package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Tuning is the pipeline's num_threads and prefetch_queue_depth and why they are what
// they are. With "auto" (Spec.AutoThreads, Spec.AutoPrefetch) the pipeline chooses: at
// creation from the CPUs the process may use (its affinity mask and cgroup CPU quota,
// less the trainer's share), then once from the stage times measured over the first
// batches (docs/pipeline.md, "Automatic tuning").
type Tuning struct {
	NumThreads         int  `json:"num_threads"`
	PrefetchQueueDepth int  `json:"prefetch_queue_depth"`
	AutoThreads        bool `json:"auto_threads"`
	AutoPrefetch       bool `json:"auto_prefetch"`
	// CPU is the process's CPU budget; ReservedCPUs of it are left to the trainer until
	// the measurements show the consumer waiting on the pipeline.
	CPU          CPUBudget `json:"cpu"`
	ReservedCPUs int       `json:"reserved_cpus"`
	// MaxThreads, MaxPrefetch bound what the measurements may raise the values to.
	MaxThreads  int `json:"max_threads"`
	MaxPrefetch int `json:"max_prefetch_queue_depth"`
	// State: "fixed" (no "auto"), "initial" (chosen from the CPU budget, not measured
	// yet or not adjustable), "adjusted" or "kept" (after the measurements).
	State    string      `json:"state"`
	Reason   string      `json:"reason"`
	Measured *StageTimes `json:"measured,omitempty"`
	// WorkerCPUs is the CPU each worker is pinned to, by worker (-1: not pinned), as
	// many as "auto" may grow the workers to; Affinity says where they come from
	// (GODALI_AFFINITY_MASK / DALI_AFFINITY_MASK, the CPUs NVML reports near the GPU);
	// both empty when nothing pins the workers.
	WorkerCPUs []int  `json:"worker_cpus,omitempty"`
	Affinity   string `json:"affinity,omitempty"`
}

// StageTimes are the measurements the adjustment reads, over the batches after the
// warm-up.
type StageTimes struct {
	Batches int     `json:"batches"`
	Seconds float64 `json:"seconds"`
	// ConsumerWait is the fraction of the consumer's time spent waiting for batches
	// (the rest it spent on its own work between them).
	ConsumerWait float64 `json:"consumer_wait_fraction"`
	// WorkerBusy is the workers' time processing samples over num_threads x Seconds.
	WorkerBusy float64 `json:"worker_busy_fraction"`
	// ReaderIO is the readers' off-CPU time (waiting on I/O) over the samples' time.
	ReaderIO float64 `json:"reader_io_fraction"`
	// SampleCPU is the samples' thread CPU time over their wall time.
	SampleCPU float64 `json:"sample_cpu_fraction"`
	Samples   int64   `json:"samples"`
}

// Adjustment thresholds and window.
const (
	tuneWarmup      = 2    // batches taken before measuring (first decodes, page cache, pools)
	tuneWindow      = 8    // batches measured
	tuneMinBatches  = 3    // fewest measured batches an epoch's end still decides on
	tuneWaitKeeps   = 0.05 // the consumer waits less than this: the pipeline keeps up
	tuneIOBound     = 0.25 // readers off CPU this much of the samples' time: I/O-bound
	tuneBusyCPU     = 0.60 // workers busy this much: compute-bound
	maxAutoPrefetch = 6    // prefetch_queue_depth "auto" goes no higher
)

// initialTuning chooses from the CPU budget. maskLen is the length of the affinity mask
// the user set for the workers (GODALI_AFFINITY_MASK), 0 without one.
func initialTuning(spec *Spec, cpu CPUBudget, maskLen int) Tuning {
	t := Tuning{NumThreads: spec.NumThreads, PrefetchQueueDepth: spec.PrefetchQueueDepth,
		AutoThreads: spec.AutoThreads, AutoPrefetch: spec.AutoPrefetch, CPU: cpu,
		MaxThreads: spec.NumThreads, MaxPrefetch: spec.PrefetchQueueDepth, State: "fixed",
		Reason: "num_threads and prefetch_queue_depth as given"}
	if !t.AutoThreads && !t.AutoPrefetch {
		return t
	}
	t.State = "initial"
	var why []string
	if t.AutoThreads {
		usable := cpu.Usable
		if maskLen > 0 {
			usable = min(usable, maskLen)
		}
		// The trainer's share: one CPU, one more per 16 beyond the first.
		if usable > 1 {
			t.ReservedCPUs = 1 + (usable-1)/16
		}
		t.NumThreads = max(usable-t.ReservedCPUs, 1)
		t.MaxThreads = max(usable, 1)
		why = append(why, fmt.Sprintf("num_threads %d: %s, %d left to the trainer",
			t.NumThreads, describeCPUs(cpu, maskLen, usable), t.ReservedCPUs))
	}
	if t.AutoPrefetch {
		t.PrefetchQueueDepth = 2
		t.MaxPrefetch = maxAutoPrefetch
		why = append(why, "prefetch_queue_depth 2 to start")
	}
	t.Reason = joinReasons(why)
	return t
}

func describeCPUs(cpu CPUBudget, maskLen, usable int) string {
	s := fmt.Sprintf("%d usable CPUs (affinity %d", usable, cpu.AffinityCPUs)
	if cpu.QuotaCPUs > 0 {
		s += fmt.Sprintf(", cgroup quota %.2f", cpu.QuotaCPUs)
	}
	if maskLen > 0 {
		s += fmt.Sprintf(", affinity mask of %d", maskLen)
	}
	return s + ")"
}

// noteAffinity records where the workers run (at Build): cpus by worker, from the
// affinity mask variable mask (user CPUs; "" when none) and, with a GPU, the CPUs near
// it (near). Pinning to NVML's CPUs is said once per device on stderr
// (GODALI_TUNING_LOG=0 silences it).
func (p *Pipeline) noteAffinity(mask string, user int, cpus, near []int) {
	var why []string
	if user > 0 {
		why = append(why, fmt.Sprintf("%s pins workers 0-%d", mask, min(user, len(cpus))-1))
	}
	pinned := false
	for _, c := range cpus {
		pinned = pinned || c >= 0
	}
	if len(near) > 0 && len(cpus) > user {
		dev := 0
		if p.Spec.DeviceID != nil {
			dev = *p.Spec.DeviceID
		}
		why = append(why, fmt.Sprintf("the CPUs near GPU %d (NVML: %s) take workers %d-%d", dev, cpuList(near), user, len(cpus)-1))
		if _, done := nvmlAffinityLogged.LoadOrStore(dev, true); !done && os.Getenv("GODALI_TUNING_LOG") != "0" {
			fmt.Fprintf(os.Stderr, "godali: affinity: worker threads pinned to the CPUs near GPU %d that NVML reports (%s); set GODALI_AFFINITY_MASK to choose others\n", dev, cpuList(near))
		}
	}
	if !pinned {
		cpus, why = nil, nil
	}
	p.tune.mu.Lock()
	p.tune.t.WorkerCPUs, p.tune.t.Affinity = cpus, joinReasons(why)
	p.tune.mu.Unlock()
}

// nvmlAffinityLogged holds the devices whose NVML pinning was logged.
var nvmlAffinityLogged sync.Map

// cpuList writes CPUs as ranges ("0-3,8").
func cpuList(cpus []int) string {
	var b []byte
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", cpus[i])
		if j > i {
			b = fmt.Appendf(b, "-%d", cpus[j])
		}
		i = j + 1
	}
	return string(b)
}

func joinReasons(r []string) string {
	s := ""
	for i, x := range r {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}

// decide is the adjustment: from the measurements, the new num_threads and
// prefetch_queue_depth (within the maxima, only those that are "auto") and why.
func decide(t Tuning, m StageTimes) (threads, depth int, state, reason string) {
	threads, depth = t.NumThreads, t.PrefetchQueueDepth
	moreThreads := func() bool {
		if t.AutoThreads && threads < t.MaxThreads {
			threads = t.MaxThreads
			return true
		}
		return false
	}
	morePrefetch := func() bool {
		if t.AutoPrefetch && depth < t.MaxPrefetch {
			depth = min(depth*2, t.MaxPrefetch)
			return true
		}
		return false
	}
	pct := func(f float64) int { return int(f*100 + 0.5) }
	switch {
	case m.ConsumerWait < tuneWaitKeeps:
		return threads, depth, "kept", fmt.Sprintf("the consumer waited %d%% of its time: the pipeline keeps up", pct(m.ConsumerWait))
	case m.ReaderIO >= tuneIOBound:
		p, n := morePrefetch(), moreThreads()
		if !p && !n {
			return threads, depth, "kept", fmt.Sprintf("readers wait on I/O %d%% of the samples' time, and the values are at their maxima", pct(m.ReaderIO))
		}
		return threads, depth, "adjusted", fmt.Sprintf("the consumer waited %d%% of its time and the readers wait on I/O %d%% of the samples' time (I/O-bound): prefetch_queue_depth %d -> %d, num_threads %d -> %d",
			pct(m.ConsumerWait), pct(m.ReaderIO), t.PrefetchQueueDepth, depth, t.NumThreads, threads)
	case m.WorkerBusy >= tuneBusyCPU:
		if !moreThreads() {
			return threads, depth, "kept", fmt.Sprintf("the workers are busy %d%% of the time (compute-bound) and num_threads is at the usable CPUs (%d)", pct(m.WorkerBusy), t.MaxThreads)
		}
		return threads, depth, "adjusted", fmt.Sprintf("the consumer waited %d%% of its time and the workers are busy %d%% (compute-bound, decode): num_threads %d -> %d, the usable CPUs",
			pct(m.ConsumerWait), pct(m.WorkerBusy), t.NumThreads, threads)
	default:
		if !morePrefetch() {
			return threads, depth, "kept", fmt.Sprintf("the consumer waited %d%% of its time while the workers were busy only %d%%: the bound is elsewhere (the consumer's calls, the GPU stage or fed data)", pct(m.ConsumerWait), pct(m.WorkerBusy))
		}
		return threads, depth, "adjusted", fmt.Sprintf("the consumer waited %d%% of its time while the workers were busy only %d%%: more batches in flight, prefetch_queue_depth %d -> %d",
			pct(m.ConsumerWait), pct(m.WorkerBusy), t.PrefetchQueueDepth, depth)
	}
}

// tuner measures the first batches of an "auto" pipeline and applies the adjustment.
type tuner struct {
	mu sync.Mutex // guards t (Tuning may be read from any goroutine)
	t  Tuning

	// measuring: the workers time their samples (runSample).
	measuring atomic.Bool
	sampleNS  atomic.Int64 // samples' wall time
	sampleCPU atomic.Int64 // samples' thread CPU time
	readerNS  atomic.Int64 // reader nodes' wall time
	readerCPU atomic.Int64 // reader nodes' thread CPU time
	samples   atomic.Int64

	// Consumer side, under Pipeline.mu.
	taken    int       // batches taken since build
	arrived  time.Time // the consumer's first call for the next batch
	lastGot  time.Time // when the last batch was handed out
	wait     time.Duration
	work     time.Duration
	start    time.Time
	measured int
	done     bool // adjusted or kept: nothing more to measure
	logged   bool
}

func newTuner(t Tuning) *tuner {
	tu := &tuner{t: t}
	tu.done = !t.AutoThreads && !t.AutoPrefetch
	return tu
}

// Tuning returns the pipeline's current tuning.
func (p *Pipeline) Tuning() Tuning {
	p.tune.mu.Lock()
	defer p.tune.mu.Unlock()
	t := p.tune.t
	if t.Measured != nil {
		m := *t.Measured
		t.Measured = &m
	}
	return t
}

// TuningJSON is Tuning as a JSON object (the C ABI's and Python's).
func (p *Pipeline) TuningJSON() []byte {
	data, _ := json.Marshal(p.Tuning())
	return data
}

// log writes the tuning once, to stderr, when something was chosen ("auto");
// GODALI_TUNING_LOG=0 silences it.
func (tu *tuner) log() {
	if tu.logged {
		return
	}
	tu.logged = true
	t := tu.t
	if (!t.AutoThreads && !t.AutoPrefetch) || os.Getenv("GODALI_TUNING_LOG") == "0" {
		return
	}
	fmt.Fprintf(os.Stderr, "godali: tuning: num_threads=%d prefetch_queue_depth=%d (%s: %s)\n",
		t.NumThreads, t.PrefetchQueueDepth, t.State, t.Reason)
}

// arrive notes the consumer's first call (WaitReady or Next) for the next batch.
func (tu *tuner) arrive() {
	if !tu.done && tu.arrived.IsZero() {
		tu.arrived = time.Now()
	}
}

// resetClock forgets the consumer's timing (a reset or an epoch's end: the pause
// between epochs is not the consumer's work).
func (tu *tuner) resetClock() {
	tu.arrived, tu.lastGot = time.Time{}, time.Time{}
}

// timeSample adds a sample's times (worker side, while measuring).
func (tu *tuner) timeSample(wall, cpu, readerWall, readerCPU int64) {
	tu.sampleNS.Add(wall)
	tu.sampleCPU.Add(cpu)
	tu.readerNS.Add(readerWall)
	tu.readerCPU.Add(readerCPU)
	tu.samples.Add(1)
}

// threadCPU is the calling thread's CPU time in nanoseconds (workers keep their
// thread: runtime.LockOSThread).
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// got notes a batch handed to the consumer (under Pipeline.mu) and, once the window is
// measured, adjusts the pipeline.
func (p *Pipeline) tuneGot() {
	tu := p.tune
	if tu.done {
		return
	}
	now := time.Now()
	if tu.measuring.Load() {
		if !tu.arrived.IsZero() {
			tu.wait += now.Sub(tu.arrived)
			if !tu.lastGot.IsZero() {
				tu.work += tu.arrived.Sub(tu.lastGot)
			}
		}
		tu.measured++
	}
	tu.taken++
	tu.arrived, tu.lastGot = time.Time{}, now
	switch {
	case tu.taken == tuneWarmup:
		tu.measuring.Store(true)
		tu.start = now
	case tu.measured >= tuneWindow:
		p.tuneDecide(now)
	}
}

// tuneEpochEnd decides on what was measured when an epoch ends before the window is
// full (a small data set), if enough was.
func (p *Pipeline) tuneEpochEnd() {
	tu := p.tune
	tu.resetClock()
	if !tu.done && tu.measured >= tuneMinBatches {
		p.tuneDecide(time.Now())
	}
}

// tuneDecide applies the adjustment (under Pipeline.mu).
func (p *Pipeline) tuneDecide(now time.Time) {
	tu := p.tune
	tu.measuring.Store(false)
	tu.done = true
	secs := now.Sub(tu.start).Seconds()
	m := StageTimes{Batches: tu.measured, Seconds: secs, Samples: tu.samples.Load()}
	if total := tu.wait + tu.work; total > 0 {
		m.ConsumerWait = float64(tu.wait) / float64(total)
	}
	wall := float64(tu.sampleNS.Load())
	if threads := len(p.workers); secs > 0 && threads > 0 {
		m.WorkerBusy = min(wall/1e9/(float64(threads)*secs), 1)
	}
	if wall > 0 {
		m.ReaderIO = max(float64(tu.readerNS.Load()-tu.readerCPU.Load())/wall, 0)
		m.SampleCPU = min(float64(tu.sampleCPU.Load())/wall, 1)
	}
	tu.mu.Lock()
	t := tu.t
	tu.mu.Unlock()
	threads, depth, state, reason := decide(t, m)
	if p.gpu != nil && (threads != t.NumThreads || depth != t.PrefetchQueueDepth) {
		// The GPU stage sized its per-thread and per-batch resources at build.
		threads, depth, state = t.NumThreads, t.PrefetchQueueDepth, "kept"
		reason += " (not applied: the GPU stage's resources are sized at build)"
	}
	p.applyTuning(threads, depth)
	tu.mu.Lock()
	tu.t.State, tu.t.Reason, tu.t.Measured = state, reason, &m
	tu.mu.Unlock()
	tu.log()
}

// applyTuning raises num_threads and prefetch_queue_depth to threads and depth (under
// Pipeline.mu, built; depth within MaxPrefetch, the credits channel's room). Neither is
// ever lowered.
func (p *Pipeline) applyTuning(threads, depth int) {
	tu := p.tune
	p.growWorkers(threads)
	depth = min(depth, cap(p.credits))
	for i := p.Spec.PrefetchQueueDepth; i < depth; i++ {
		p.credits <- struct{}{}
	}
	p.Spec.NumThreads = max(p.Spec.NumThreads, len(p.workers))
	p.Spec.PrefetchQueueDepth = max(p.Spec.PrefetchQueueDepth, depth)
	tu.mu.Lock()
	tu.t.NumThreads, tu.t.PrefetchQueueDepth = p.Spec.NumThreads, p.Spec.PrefetchQueueDepth
	tu.mu.Unlock()
}

// growWorkers starts workers until there are n (under Pipeline.mu, built).
func (p *Pipeline) growWorkers(n int) {
	var started sync.WaitGroup
	for i := len(p.workers); i < n; i++ {
		w := newWorker(p, i)
		p.workers = append(p.workers, w)
		cpu := -1
		if i < len(p.cpus) {
			cpu = p.cpus[i]
		}
		started.Add(1)
		p.workerWG.Add(1)
		go w.loop(cpu, &started)
	}
	started.Wait()
}
