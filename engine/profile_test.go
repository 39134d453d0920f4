package engine

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestProfileCountsEveryNodeOfEverySample(t *testing.T) {
	t.Setenv(ProfileEnv, "1")
	root := writeDataset(t, 2, 6) // 12 images: 3 full batches of 4
	start := time.Now()
	p := mustPipeline(t, resnetJSON(root, 2, 4, 2))
	batches := 0
	eachBatch(t, p, func(*Batch) { batches++ })
	wall := time.Since(start).Seconds()
	prof := p.Profile()
	if !prof.Enabled || prof.Threads != 2 || batches != 3 {
		t.Fatalf("enabled %v threads %d batches %d", prof.Enabled, prof.Threads, batches)
	}
	byName := map[string]NodeProfile{}
	var share, total float64
	for i, n := range prof.Nodes {
		byName[n.Name] = n
		share += n.Share
		total += n.TotalS
		if i > 0 && n.TotalS > prof.Nodes[i-1].TotalS {
			t.Errorf("nodes not sorted by time: %+v", prof.Nodes)
		}
		if n.Calls > 0 && math.Abs(n.MeanUs-n.TotalS*1e6/float64(n.Calls)) > 1e-6*n.MeanUs+1e-9 {
			t.Errorf("%s: mean %v us, total %v s over %d calls", n.Name, n.MeanUs, n.TotalS, n.Calls)
		}
	}
	// resize is fused into crop_mirror_normalize: its work is cmn's, and cmn says so.
	if _, ok := byName["resize"]; ok || len(byName["cmn"].Fused) != 1 || byName["cmn"].Fused[0] != "resize" {
		t.Errorf("resize: %+v; cmn: %+v", byName["resize"], byName["cmn"])
	}
	for _, name := range []string{"Reader", "decode", "coin", "cmn"} {
		n, ok := byName[name]
		if !ok || n.Calls != 12 || n.TotalS <= 0 || n.Device != "cpu" {
			t.Errorf("%s: %+v, want 12 calls of the cpu device and some time", name, n)
		}
	}
	if byName["decode"].Op != "decoders.image_random_crop" {
		t.Errorf("decode's op: %q", byName["decode"].Op)
	}
	// Decoding a JPEG costs far more than drawing a coin flip.
	if byName["decode"].MeanUs < 10*byName["coin"].MeanUs {
		t.Errorf("decode %.1f us per sample, coin %.1f us", byName["decode"].MeanUs, byName["coin"].MeanUs)
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares add up to %v", share)
	}
	// The workers' summed time fits in the threads' wall time.
	if total > 2*wall || prof.WallS <= 0 || prof.WallS > wall {
		t.Errorf("total %.3f s, wall %.3f s (profile's %.3f s) on 2 threads", total, wall, prof.WallS)
	}
	// The next epoch adds to the same counters.
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	eachBatch(t, p, func(*Batch) {})
	if n := p.Profile(); n.Nodes[0].Calls != 24 {
		t.Errorf("after two epochs: %+v", n.Nodes[0])
	}
}

func TestProfileOffByDefault(t *testing.T) {
	t.Setenv(ProfileEnv, "")
	root := writeDataset(t, 1, 4)
	p := mustPipeline(t, resnetJSON(root, 2, 4, 1))
	if _, err := p.Next(); err != nil && !errors.Is(err, ErrEndOfEpoch) {
		t.Fatal(err)
	}
	prof := p.Profile()
	if prof.Enabled || len(prof.Nodes) != 0 || prof.Nodes == nil {
		t.Fatalf("profile without %s: %+v", ProfileEnv, prof)
	}
	for _, w := range p.workers {
		if w.prof != nil {
			t.Fatal("a worker keeps counters with profiling off")
		}
	}
}

func TestProfileEnvValues(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, " ON ": true, "yes": true,
		"0": false, "": false, "false": false, "2": false} {
		t.Setenv(ProfileEnv, v)
		if got := profileEnabled(); got != want {
			t.Errorf("%s=%q: %v", ProfileEnv, v, got)
		}
	}
}

// BenchmarkProfileAdd: what profiling adds per node and sample when on (a clock read
// before Setup, one after Run, two uncontended atomic adds); off, it is one nil check.
func BenchmarkProfileAdd(b *testing.B) {
	var t nodeTimes
	for i := 0; i < b.N; i++ {
		t.add(time.Now())
	}
}
