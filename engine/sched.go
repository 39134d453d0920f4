package engine

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// The worker threads and the Go scheduler (issue 28). A worker is a goroutine locked to
// its thread that spends most of a sample in C (libjpeg-turbo, FFmpeg, the codecs); the
// runtime counts a thread in a C call as holding its P, and its monitor thread (sysmon)
// takes the P away from a C call that lasts when no other P is idle or when the
// goroutine has not been through the scheduler for 10 ms. Each such take wakes a spare
// thread to look for work and keeps the monitor awake at 20 us intervals for the next
// millisecond or more. workerProcs and yieldIfDue keep the workers clear of both.

// workerProcs keeps GOMAXPROCS at least one above the number of worker threads of the
// process's live pipelines.
//
// With GOMAXPROCS equal to the worker count (the default where num_threads is the
// number of CPUs) no P is ever idle, so the monitor takes the P of every worker in a
// C call, and the consumer's calls and the goroutine that finishes each batch wait for
// such a take. One idle P lets the runtime leave the workers' Ps alone: on the 2-CPU
// machine of issue 28 the training and validation pipelines made 3x fewer context
// switches per image and used about 5% less CPU per image. More Ps than CPUs costs
// nothing here: the workers are OS threads that run whether or not they hold a P.
//
// GOMAXPROCS from the environment is left as it is. The value is raised when workers
// start and given back to the runtime (SetDefaultGOMAXPROCS) when the last one ends, so
// that a process that stops using pipelines gets the runtime's own choice, and its
// updates when the cgroup's CPU limit changes, back. A value someone else set while it
// was raised (a test's -test.cpu) is kept.
var workerProcs procBudget

type procBudget struct {
	mu      sync.Mutex
	workers int  // worker threads running
	raised  bool // GOMAXPROCS is ours: set, raised from base
	set     int
	base    int
}

// procsFor is the GOMAXPROCS for workers worker threads over a base value.
func procsFor(base, workers int) int {
	if workers == 0 {
		return base
	}
	return max(base, workers+1)
}

// add counts d more (or, negative, fewer) worker threads and adjusts GOMAXPROCS.
func (b *procBudget) add(d int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.workers += d
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	cur := runtime.GOMAXPROCS(0)
	if b.raised && cur != b.set {
		b.raised = false // someone else set it since: theirs stands
	}
	if !b.raised {
		b.base = cur
	}
	want := procsFor(b.base, b.workers)
	switch {
	case want > b.base:
		if want != cur {
			runtime.GOMAXPROCS(want)
		}
		b.raised, b.set = true, want
	case b.raised:
		runtime.SetDefaultGOMAXPROCS()
		b.raised = false
	}
}

// yieldEvery is how often a busy worker goes through the scheduler of its own accord.
// A worker that always finds a task queued never blocks, so the runtime preempted it
// every 10 ms (its forcePreemptNS), mostly inside a C call, which means taking its P:
// a voluntary yield between samples every 5 ms costs one hand-off of the locked thread
// and spares that, and the monitor sleeps. Issue 28's machine: context switches per
// training image 1.4 -> 0.55, CPU per image -3%.
const yieldEvery = 5 * time.Millisecond

// yieldIfDue yields the worker's thread (runtime.Gosched) when yieldEvery has passed
// since last, and returns the time of the last yield.
func yieldIfDue(last time.Time) time.Time {
	now := time.Now()
	if now.Sub(last) < yieldEvery {
		return last
	}
	runtime.Gosched()
	return now
}
