package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func autoSpec(t *testing.T, threads, depth string) *Spec {
	t.Helper()
	s, err := ParseSpec([]byte(`{"batch_size": 4, "num_threads": ` + threads + `, "prefetch_queue_depth": ` + depth + `,
		"ops": [{"op": "random.uniform", "name": "u", "outputs": ["x"]}], "outputs": ["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpecAuto(t *testing.T) {
	s := autoSpec(t, `"auto"`, `"auto"`)
	if !s.AutoThreads || !s.AutoPrefetch {
		t.Fatalf("auto not parsed: %+v", s)
	}
	s = autoSpec(t, `3`, `"auto"`)
	if s.AutoThreads || s.NumThreads != 3 || !s.AutoPrefetch {
		t.Fatalf("mixed: %+v", s)
	}
	for _, bad := range []string{`"fast"`, `"AUTO"`, `0`} {
		_, err := ParseSpec([]byte(`{"batch_size": 4, "num_threads": ` + bad + `, "ops": [], "outputs": []}`))
		if err == nil || !strings.Contains(err.Error(), "num_threads") {
			t.Fatalf("num_threads %s: error %v, want one naming num_threads", bad, err)
		}
	}
}

func TestInitialTuning(t *testing.T) {
	auto := autoSpec(t, `"auto"`, `"auto"`)
	cases := []struct {
		usable, mask                 int
		threads, reserved, maxThread int
	}{
		{1, 0, 1, 0, 1},
		{2, 0, 1, 1, 2},    // this machine: one for the trainer, grows to 2 if decode-bound
		{8, 0, 7, 1, 8},    // a cgroup quota of 8 on a big host
		{32, 0, 30, 2, 32}, // one more per 16
		{32, 4, 3, 1, 4},   // a mask of 4 CPUs bounds it
	}
	for _, c := range cases {
		tn := initialTuning(auto, CPUBudget{AffinityCPUs: 64, QuotaCPUs: float64(c.usable), Usable: c.usable}, c.mask)
		if tn.NumThreads != c.threads || tn.ReservedCPUs != c.reserved || tn.MaxThreads != c.maxThread ||
			tn.PrefetchQueueDepth != 2 || tn.MaxPrefetch != maxAutoPrefetch || tn.State != "initial" {
			t.Errorf("usable %d mask %d: %+v", c.usable, c.mask, tn)
		}
		if !strings.Contains(tn.Reason, "cgroup quota") {
			t.Errorf("reason %q does not name the quota", tn.Reason)
		}
	}
	fixed := autoSpec(t, `5`, `3`)
	tn := initialTuning(fixed, CPUBudget{AffinityCPUs: 2, Usable: 2}, 0)
	if tn.NumThreads != 5 || tn.PrefetchQueueDepth != 3 || tn.State != "fixed" {
		t.Fatalf("fixed: %+v", tn)
	}
}

func TestDecide(t *testing.T) {
	base := Tuning{NumThreads: 1, PrefetchQueueDepth: 2, AutoThreads: true, AutoPrefetch: true,
		MaxThreads: 4, MaxPrefetch: 6}
	cases := []struct {
		name          string
		t             Tuning
		m             StageTimes
		threads, dep  int
		state, reason string
	}{
		{"keeps up", base, StageTimes{ConsumerWait: 0.01, WorkerBusy: 0.99}, 1, 2, "kept", "keeps up"},
		{"decode-bound", base, StageTimes{ConsumerWait: 0.8, WorkerBusy: 0.95, ReaderIO: 0.02}, 4, 2, "adjusted", "compute-bound"},
		{"io-bound", base, StageTimes{ConsumerWait: 0.8, WorkerBusy: 0.9, ReaderIO: 0.6}, 4, 4, "adjusted", "I/O-bound"},
		{"idle workers", base, StageTimes{ConsumerWait: 0.5, WorkerBusy: 0.3}, 1, 4, "adjusted", "more batches in flight"},
		{"at the cores", func() Tuning { x := base; x.NumThreads = 4; return x }(),
			StageTimes{ConsumerWait: 0.8, WorkerBusy: 0.95}, 4, 2, "kept", "at the usable CPUs"},
		{"threads fixed", func() Tuning { x := base; x.AutoThreads = false; return x }(),
			StageTimes{ConsumerWait: 0.8, WorkerBusy: 0.95}, 1, 2, "kept", "compute-bound"},
		{"prefetch fixed, io", func() Tuning { x := base; x.AutoPrefetch = false; return x }(),
			StageTimes{ConsumerWait: 0.8, WorkerBusy: 0.9, ReaderIO: 0.5}, 4, 2, "adjusted", "I/O-bound"},
		{"prefetch at max", func() Tuning { x := base; x.PrefetchQueueDepth = 6; return x }(),
			StageTimes{ConsumerWait: 0.5, WorkerBusy: 0.2}, 1, 6, "kept", "bound is elsewhere"},
		{"prefetch capped", func() Tuning { x := base; x.PrefetchQueueDepth = 4; return x }(),
			StageTimes{ConsumerWait: 0.5, WorkerBusy: 0.2}, 1, 6, "adjusted", "4 -> 6"},
	}
	for _, c := range cases {
		th, d, st, why := decide(c.t, c.m)
		if th != c.threads || d != c.dep || st != c.state || !strings.Contains(why, c.reason) {
			t.Errorf("%s: got %d threads, depth %d, %s (%s); want %d, %d, %s (%q)", c.name, th, d, st, why,
				c.threads, c.dep, c.state, c.reason)
		}
	}
}

func autoJSON(root string, batch int) string {
	s := resnetJSON(root, 1, batch, 2)
	s = strings.Replace(s, `"num_threads": 1`, `"num_threads": "auto"`, 1)
	return strings.Replace(s, `"prefetch_queue_depth": 2`, `"prefetch_queue_depth": "auto"`, 1)
}

// An "auto" pipeline measures its first batches, decides once, and its outputs are
// those of a fixed pipeline of the same seed.
func TestAutoTuningPipeline(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := writeDataset(t, 3, 5)
	ref := epochBytes(t, mustPipeline(t, resnetJSON(root, 2, 2, 2)))
	p := mustPipeline(t, autoJSON(root, 2))
	before := p.Tuning()
	if before.State != "initial" || !before.AutoThreads || before.NumThreads < 1 || before.NumThreads > before.CPU.Usable {
		t.Fatalf("before: %+v", before)
	}
	if mp := p.MemoryPlan(0); mp.NumThreads != before.MaxThreads || mp.PrefetchQueueDepth != maxAutoPrefetch {
		t.Fatalf("plan before the decision counts %d threads x depth %d, want the maxima %d x %d",
			mp.NumThreads, mp.PrefetchQueueDepth, before.MaxThreads, maxAutoPrefetch)
	}
	got := epochBytes(t, p) // 8 batches: 2 warm-up, 6 measured, decided at the epoch's end
	if len(got) != len(ref) {
		t.Fatalf("%d batches, want %d", len(got), len(ref))
	}
	for i := range ref {
		if !bytes.Equal(got[i], ref[i]) {
			t.Fatalf("batch %d differs from the fixed pipeline's", i)
		}
	}
	after := p.Tuning()
	if after.State != "adjusted" && after.State != "kept" {
		t.Fatalf("after an epoch: %+v", after)
	}
	if after.Measured == nil || after.Measured.Batches != 6 || after.Measured.Samples < 1 || after.Reason == "" {
		t.Fatalf("measurements: %+v", after)
	}
	if after.NumThreads != len(p.workers) || after.NumThreads > after.MaxThreads ||
		after.PrefetchQueueDepth > after.MaxPrefetch || after.PrefetchQueueDepth < 2 {
		t.Fatalf("after: %+v with %d workers", after, len(p.workers))
	}
	// Decided once for the pipeline's life: the plan counts the values, not the maxima.
	if mp := p.MemoryPlan(0); mp.NumThreads != after.NumThreads || mp.PrefetchQueueDepth != after.PrefetchQueueDepth {
		t.Fatalf("plan after the decision counts %d threads x depth %d, want %d x %d",
			mp.NumThreads, mp.PrefetchQueueDepth, after.NumThreads, after.PrefetchQueueDepth)
	}
	var doc map[string]any
	if err := json.Unmarshal(p.TuningJSON(), &doc); err != nil || doc["state"] != after.State {
		t.Fatalf("tuning JSON: %s (%v)", p.TuningJSON(), err)
	}
	// The next epoch runs with the adjusted values, same outputs as the fixed pipeline.
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	ref2 := epochBytes(t, mustPipeline(t, strings.Replace(resnetJSON(root, 2, 2, 2), `"seed": 12`, `"seed": 12, "first_epoch": 1`, 1)))
	got2 := epochBytes(t, p)
	for i := range ref2 {
		if !bytes.Equal(got2[i], ref2[i]) {
			t.Fatalf("epoch 1 batch %d differs", i)
		}
	}
}

// Workers and prefetch credits added while the pipeline runs (what an adjustment does)
// change nothing of the outputs.
func TestTuningGrowthKeepsOutputs(t *testing.T) {
	t.Setenv("GODALI_TUNING_LOG", "0")
	root := writeDataset(t, 2, 5)
	ref := epochBytes(t, mustPipeline(t, resnetJSON(root, 1, 2, 2)))
	p := mustPipeline(t, autoJSON(root, 2))
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := b.Output(0).DenseView()
	got := [][]byte{append([]byte(nil), first.Lease.Bytes()...)}
	first.Lease.Release()
	p.mu.Lock()
	p.applyTuning(4, 5)
	p.mu.Unlock()
	if tn := p.Tuning(); len(p.workers) != 4 || tn.NumThreads != 4 || tn.PrefetchQueueDepth != 5 || cap(p.credits) != maxAutoPrefetch {
		t.Fatalf("%d workers after growth, tuning %+v", len(p.workers), tn)
	}
	got = append(got, epochBytes(t, p)...)
	if len(got) != len(ref) {
		t.Fatalf("%d batches, want %d", len(got), len(ref))
	}
	for i := range ref {
		if !bytes.Equal(got[i], ref[i]) {
			t.Fatalf("batch %d differs after growth", i)
		}
	}
}
