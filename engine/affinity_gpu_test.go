//go:build cuda

package engine

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// With a device and no affinity mask, the workers are pinned to the CPUs NVML reports
// near the GPU (the emulator reports GODALI_EMU_NVML_CPUS; a real NVML its own set, which
// the test reads back), and pipe.tuning() says so. A mask keeps its CPUs for the workers
// it covers.
func TestGPUAffinityNearDevice(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	t.Setenv("GODALI_AFFINITY_MASK", "")
	t.Setenv("DALI_AFFINITY_MASK", "")
	t.Setenv("GODALI_EMU_NVML_CPUS", "1")
	const desc = `{"batch_size": 2, "num_threads": 3, "device_id": 0, "ops": [
	 {"op": "random.uniform", "name": "u", "outputs": ["u"], "args": {"shape": [4]}},
	 {"op": "_to_gpu", "name": "up", "device": "mixed", "inputs": ["u"], "outputs": ["g"]}],
	"outputs": ["g"]}`
	p := mustPipeline(t, desc)
	info, err := p.gpu.ctx.Device.Info()
	if err != nil || len(info.CPUAffinity) == 0 {
		t.Skipf("NVML reports no CPU affinity: %v", err)
	}
	tn := p.Tuning()
	if len(tn.WorkerCPUs) != 3 || !strings.Contains(tn.Affinity, "the CPUs near GPU 0 (NVML: ") {
		t.Fatalf("tuning: worker_cpus %v, affinity %q (NVML reports %v)", tn.WorkerCPUs, tn.Affinity, info.CPUAffinity)
	}
	for i, c := range tn.WorkerCPUs {
		if !slices.Contains(info.CPUAffinity, c) {
			t.Errorf("worker %d on CPU %d, not one NVML reports near the GPU (%v)", i, c, info.CPUAffinity)
		}
	}
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	got := threadAffinities(t)
	if slices.Equal(info.CPUAffinity, []int{1}) { // the emulator: every worker on CPU 1
		if !slices.Equal(tn.WorkerCPUs, []int{1, 1, 1}) || got["1"] < 3 {
			t.Errorf("worker_cpus %v, thread affinities %v: want 3 threads on CPU 1 only", tn.WorkerCPUs, got)
		}
	}

	// A mask for the first worker: it keeps CPU 0, the others go near the GPU.
	t.Setenv("GODALI_AFFINITY_MASK", "0")
	q := mustPipeline(t, desc)
	tn = q.Tuning()
	if len(tn.WorkerCPUs) != 3 || tn.WorkerCPUs[0] != 0 || !slices.Contains(info.CPUAffinity, tn.WorkerCPUs[2]) ||
		!strings.Contains(tn.Affinity, "GODALI_AFFINITY_MASK pins workers 0-0") || !strings.Contains(tn.Affinity, "take workers 1-2") {
		t.Errorf("with a mask: worker_cpus %v, affinity %q", tn.WorkerCPUs, tn.Affinity)
	}
}
