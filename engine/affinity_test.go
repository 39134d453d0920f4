package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// threadAffinities reads Cpus_allowed_list of every thread of the process.
func threadAffinities(t *testing.T) map[string]int {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Skip("no /proc")
	}
	out := map[string]int{}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[strings.TrimSpace(v)]++
			}
		}
	}
	return out
}

func TestAffinityMaskPinsWorkers(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	t.Setenv("GODALI_AFFINITY_MASK", "1,0")
	p := mustPipeline(t, `{"batch_size": 2, "num_threads": 3, "ops": [{"op": "random.coin_flip", "outputs": ["c"]}], "outputs": ["c"]}`)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	got := threadAffinities(t)
	// Workers 0 and 1 are pinned to CPUs 1 and 0; worker 2 is not in the mask.
	if got["1"] < 1 || got["0"] < 1 {
		t.Errorf("thread affinities %v: want a thread on CPU 1 only and one on CPU 0 only", got)
	}
	// pipe.tuning() says where the workers run.
	if tn := p.Tuning(); !slices.Equal(tn.WorkerCPUs, []int{1, 0}) || !strings.Contains(tn.Affinity, "GODALI_AFFINITY_MASK pins workers 0-1") {
		t.Errorf("tuning: worker_cpus %v, affinity %q", tn.WorkerCPUs, tn.Affinity)
	}

	t.Setenv("GODALI_AFFINITY_MASK", "3,x")
	q, _ := NewPipeline([]byte(`{"batch_size": 1, "ops": [{"op": "random.coin_flip", "outputs": ["c"]}], "outputs": ["c"]}`))
	defer q.Close()
	if err := q.Build(); err == nil || !strings.Contains(err.Error(), "GODALI_AFFINITY_MASK") {
		t.Errorf("bad mask: %v", err)
	}
}

// DALI's variable pins the workers the same way when godali's own is not set.
func TestDALIAffinityMaskPinsWorkers(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	t.Setenv("GODALI_AFFINITY_MASK", "")
	t.Setenv("DALI_AFFINITY_MASK", "1,0")
	p := mustPipeline(t, `{"batch_size": 2, "num_threads": 3, "ops": [{"op": "random.coin_flip", "outputs": ["c"]}], "outputs": ["c"]}`)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	got := threadAffinities(t)
	if got["1"] < 1 || got["0"] < 1 {
		t.Errorf("thread affinities %v: want a thread on CPU 1 only and one on CPU 0 only", got)
	}

	t.Setenv("DALI_AFFINITY_MASK", "3,x")
	q, _ := NewPipeline([]byte(`{"batch_size": 1, "ops": [{"op": "random.coin_flip", "outputs": ["c"]}], "outputs": ["c"]}`))
	defer q.Close()
	if err := q.Build(); err == nil || !strings.Contains(err.Error(), "DALI_AFFINITY_MASK") {
		t.Errorf("bad mask: %v", err)
	}
}

// Without a mask (and on the CPU flavour, no GPU) nothing pins the workers.
func TestNoAffinityUnpinned(t *testing.T) {
	t.Setenv("GODALI_AFFINITY_MASK", "")
	t.Setenv("DALI_AFFINITY_MASK", "")
	p := mustPipeline(t, `{"batch_size": 2, "num_threads": 2, "ops": [{"op": "random.coin_flip", "outputs": ["c"]}], "outputs": ["c"]}`)
	if tn := p.Tuning(); tn.WorkerCPUs != nil || tn.Affinity != "" {
		t.Errorf("tuning: worker_cpus %v, affinity %q", tn.WorkerCPUs, tn.Affinity)
	}
}
