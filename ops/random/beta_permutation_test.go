package random_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// betaKS runs scipy's Kolmogorov-Smirnov test of the values (float64, little-endian in
// a file) against Beta(a, b) and prints the p-value.
const betaKS = `
import sys, numpy as np
from scipy import stats
x = np.fromfile(sys.argv[1], dtype="<f8")
print(stats.kstest(x, "beta", args=(float(sys.argv[2]), float(sys.argv[3]))).pvalue)
`

// TestBetaMatchesScipyDistribution draws 8 x 4000 values for each (alpha, beta) with a
// fixed seed and requires scipy's KS test not to reject Beta(alpha, beta) at the 0.1%
// level (deterministic: the seed is fixed, so the test does not flake); it also checks
// the values against another beta, which the test must reject.
func TestBetaMatchesScipyDistribution(t *testing.T) {
	testref.Long(t, "a large sample against scipy")
	dir := t.TempDir()
	for _, c := range [][2]float64{{0.5, 0.5}, {2, 5}, {1, 1}, {0.2, 3}} {
		desc := fmt.Sprintf(`{"batch_size": 8, "num_threads": 2, "prefetch_queue_depth": 1, "seed": 11, "ops": [
			{"op": "random.beta", "name": "b", "outputs": ["b"], "args": {"alpha": %g, "beta": %g, "shape": [4000], "dtype": "FLOAT64"}}], "outputs": ["b"]}`, c[0], c[1])
		p, err := engine.NewPipeline([]byte(desc))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Build(); err != nil {
			t.Fatal(err)
		}
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		for i := 0; i < 8; i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			s := unsafe.Slice((*byte)(v.Ptr), 4000*8)
			for k := 0; k < 4000; k++ {
				x := math.Float64frombits(binary.LittleEndian.Uint64(s[k*8:]))
				if !(x >= 0 && x <= 1) {
					t.Fatalf("Beta%v: value %g outside [0, 1]", c, x)
				}
			}
			raw = append(raw, s...)
			v.Lease.Release()
		}
		p.Close()
		f := filepath.Join(dir, "x.bin")
		if err := os.WriteFile(f, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		pv := func(a, b float64) float64 {
			out := strings.TrimSpace(string(pyref.Run(t, []string{"numpy", "scipy"}, betaKS, f, fmt.Sprint(a), fmt.Sprint(b))))
			x, err := strconv.ParseFloat(out, 64)
			if err != nil {
				t.Fatalf("scipy said %q", out)
			}
			return x
		}
		if p := pv(c[0], c[1]); p < 1e-3 {
			t.Errorf("Beta%v: KS p-value %g against scipy's Beta%v", c, p, c)
		}
		if p := pv(c[0]+1, c[1]); p > 1e-3 {
			t.Errorf("Beta%v: KS p-value %g against Beta(%g, %g): the test cannot tell betas apart", c, p, c[0]+1, c[1])
		}
	}
}

func TestBatchPermutation(t *testing.T) {
	nodes := []string{
		node("batch_permutation", "p", nil, ``),
		node("batch_permutation", "d", nil, `"no_fixed_points": true`),
		node("batch_permutation", "r", nil, `"allow_repetitions": true, "no_fixed_points": true`),
	}
	one := runBatches(t, 6, 1, nodes, "p", "d", "r")
	two := runBatches(t, 6, 2, nodes, "p", "d", "r")
	if fmt.Sprint(one) != fmt.Sprint(two) {
		t.Fatalf("permutations depend on num_threads:\n%v\n%v", one, two)
	}
	distinct := map[string]bool{}
	for it := 0; it < 6; it++ {
		for k, name := range []string{"p", "d", "r"} {
			seen := map[int64]bool{}
			batch := one[k][it*8 : it*8+8] // runBatches appends the samples of each batch
			for i, v := range batch {
				if len(v) != 1 || v[0] < 0 || v[0] >= 8 {
					t.Fatalf("%s: batch %d sample %d: %v, want one index in [0, 8)", name, it, i, v)
				}
				if name != "p" && v[0] == int64(i) {
					t.Errorf("%s: batch %d: sample %d maps to itself with no_fixed_points", name, it, i)
				}
				if name != "r" && seen[v[0]] {
					t.Errorf("%s: batch %d: index %d repeats without allow_repetitions", name, it, v[0])
				}
				seen[v[0]] = true
			}
			if k == 0 {
				distinct[fmt.Sprint(batch)] = true
			}
		}
	}
	if len(distinct) < 5 {
		t.Errorf("6 batches gave %d distinct permutations: %v", len(distinct), one[0][:8])
	}
}
