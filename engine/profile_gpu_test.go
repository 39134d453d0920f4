//go:build cuda

package engine

import (
	"testing"

	_ "github.com/godali/godali/internal/cuda/cudatest" // skips this binary without a GPU
)

// The GPU stage's nodes are profiled too: a mixed decoder's samples are counted by the
// workers that run its host part (the stage adds its batch time), gpu nodes by the stage.
func TestProfileGPUPipeline(t *testing.T) {
	t.Setenv(ProfileEnv, "1")
	root := writeDataset(t, 4, 8) // 32 images: 4 batches of 8
	p := mustPipeline(t, rn50GPUJSON(root, 8, 2, true, "decoders.image_random_crop"))
	eachBatch(t, p, func(*Batch) {})
	prof := p.Profile()
	devices := map[string]string{}
	for _, n := range prof.Nodes {
		t.Logf("%-8s %-6s %4d samples %8.1f us/sample fused %v", n.Name, n.Device, n.Calls, n.MeanUs, n.Fused)
		devices[n.Name] = n.Device
		if n.Calls != 32 || n.TotalS <= 0 {
			t.Errorf("%s (%s): %d calls, %v s; want 32 calls and some time", n.Name, n.Device, n.Calls, n.TotalS)
		}
	}
	if devices["decode"] != "mixed" || devices["cmn"] != "gpu" || devices["Reader"] != "cpu" {
		t.Errorf("nodes: %+v", prof.Nodes)
	}
}
