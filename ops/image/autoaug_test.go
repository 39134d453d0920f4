package image

import (
	"math"
	"testing"

	"github.com/godali/godali/engine"
)

// chi2Crit999 is an upper bound of the chi-squared 0.999 quantile for df degrees of
// freedom (Wilson-Hilferty approximation, z = 3.09), so a correct sampler fails about
// once in a thousand runs at most, and the seeds below are fixed anyway.
func chi2Crit999(df int) float64 {
	k := float64(df)
	z := 3.09
	v := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * v * v * v
}

func chi2(counts []int, probs []float64, n int) float64 {
	s := 0.0
	for i, c := range counts {
		e := probs[i] * float64(n)
		s += (float64(c) - e) * (float64(c) - e) / e
	}
	return s
}

func TestAutoAugChoiceDistribution(t *testing.T) {
	pol := augPolicy{Scheme: "auto", Bins: 11, Augs: []augDef{{Name: "equalize"}, {Name: "rotate", Hi: 30, Negate: true}, {Name: "invert"}}}
	pol.SubPolicies = [][]augStage{
		{{Aug: 0, Prob: 0.8, Bin: -1}, {Aug: 1, Prob: 0.3, Bin: 4}},
		{{Aug: 2, Prob: 0.5, Bin: -1}},
		{{Aug: 1, Prob: 1.0, Bin: 10}, {Aug: 2, Prob: 0.1, Bin: -1}},
	}
	if err := pol.check(); err != nil {
		t.Fatal(err)
	}
	const n = 30000
	subCount := make([]int, 3)
	applied := map[[2]int]int{} // (sub-policy, stage) -> times applied
	negative := 0
	rotations := 0
	var rng engine.RNG
	var steps []augStep
	for i := 0; i < n; i++ {
		rng.Seed(7, uint64(i))
		var sp int
		steps, sp = pol.choose(&rng, steps)
		subCount[sp]++
		k := 0
		for si, st := range pol.SubPolicies[sp] {
			if k < len(steps) && steps[k].Aug == st.Aug && steps[k].Bin == st.Bin {
				applied[[2]int{sp, si}]++
				if st.Aug == 1 {
					rotations++
					if steps[k].Negative {
						negative++
					}
				}
				k++
			}
		}
		if k != len(steps) {
			t.Fatalf("sample %d: steps %v do not follow sub-policy %d in order", i, steps, sp)
		}
	}
	if c := chi2(subCount, []float64{1. / 3, 1. / 3, 1. / 3}, n); c > chi2Crit999(2) {
		t.Errorf("sub-policy counts %v: chi2 %.2f > %.2f", subCount, c, chi2Crit999(2))
	}
	for sp, sub := range pol.SubPolicies {
		for si, st := range sub {
			got := applied[[2]int{sp, si}]
			c := chi2([]int{got, subCount[sp] - got}, []float64{st.Prob, 1 - st.Prob}, subCount[sp])
			if st.Prob == 1 {
				if got != subCount[sp] {
					t.Errorf("sub-policy %d stage %d with probability 1 applied %d of %d", sp, si, got, subCount[sp])
				}
				continue
			}
			if c > chi2Crit999(1) {
				t.Errorf("sub-policy %d stage %d: applied %d of %d, expected p=%g (chi2 %.2f)", sp, si, got, subCount[sp], st.Prob, c)
			}
		}
	}
	if c := chi2([]int{negative, rotations - negative}, []float64{0.5, 0.5}, rotations); c > chi2Crit999(1) {
		t.Errorf("negated %d of %d rotations (chi2 %.2f)", negative, rotations, c)
	}
}

func TestTrivialAndRandAugChoices(t *testing.T) {
	augs := []augDef{{Name: "identity"}, {Name: "invert"}, {Name: "equalize"}, {Name: "brightness", Hi: 0.9, Negate: true, Param: "shift_enhance"}}
	triv := augPolicy{Scheme: "trivial", Bins: 5, Augs: augs}
	rnd := augPolicy{Scheme: "rand", Bins: 31, N: 3, M: 7, Augs: augs}
	for _, p := range []*augPolicy{&triv, &rnd} {
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20000
	augCount, binCount := make([]int, 4), make([]int, 5)
	var rng engine.RNG
	var steps []augStep
	for i := 0; i < n; i++ {
		rng.Seed(3, uint64(i))
		steps, _ = triv.choose(&rng, steps)
		if len(steps) != 1 {
			t.Fatalf("trivial: %d steps", len(steps))
		}
		augCount[steps[0].Aug]++
		binCount[steps[0].Bin]++
	}
	if c := chi2(augCount, []float64{.25, .25, .25, .25}, n); c > chi2Crit999(3) {
		t.Errorf("trivial: augmentation counts %v (chi2 %.2f)", augCount, c)
	}
	if c := chi2(binCount, []float64{.2, .2, .2, .2, .2}, n); c > chi2Crit999(4) {
		t.Errorf("trivial: bin counts %v (chi2 %.2f)", binCount, c)
	}
	augCount = make([]int, 4)
	for i := 0; i < n; i++ {
		rng.Seed(4, uint64(i))
		steps, _ = rnd.choose(&rng, steps)
		if len(steps) != 3 {
			t.Fatalf("rand: %d steps, expected n=3", len(steps))
		}
		for _, s := range steps {
			if s.Bin != 7 {
				t.Fatalf("rand: bin %d, expected m=7", s.Bin)
			}
			augCount[s.Aug]++
		}
	}
	if c := chi2(augCount, []float64{.25, .25, .25, .25}, 3*n); c > chi2Crit999(3) {
		t.Errorf("rand: augmentation counts %v (chi2 %.2f)", augCount, c)
	}
}

func TestAutoAugMagnitudes(t *testing.T) {
	p := augPolicy{Bins: 11}
	// numpy: np.linspace(0, 0.3, 11)[4] = 0.12; shift_enhance of (0, 0.9) bin 10 negated = 0.1.
	if m := p.magnitude(&augDef{Hi: 0.3, Negate: true}, augStep{Bin: 4, Negative: true}); math.Abs(m+0.12) > 1e-12 {
		t.Errorf("shear bin 4 negated: %g, expected -0.12", m)
	}
	if m := p.magnitude(&augDef{Hi: 0.9, Negate: true, Param: "shift_enhance"}, augStep{Bin: 10, Negative: true}); math.Abs(m-0.1) > 1e-12 {
		t.Errorf("enhance bin 10 negated: %g, expected 0.1", m)
	}
	if m := p.magnitude(&augDef{Lo: 256, Hi: 0}, augStep{Bin: 10}); m != 0 {
		t.Errorf("solarize (256, 0) bin 10: %g, expected 0", m)
	}
	// DALI's poster_mask_uint8: round(m) clamped to [1, 8] bits kept.
	for _, c := range []struct {
		m    float64
		mask byte
	}{{0, 0x80}, {0.4, 0x80}, {1, 0x80}, {2.5, 0xc0}, {3.6, 0xf0}, {4, 0xf0}, {8, 0xff}, {9, 0xff}} {
		if got := posterMask(c.m); got != c.mask {
			t.Errorf("posterMask(%g) = %#x, expected %#x", c.m, got, c.mask)
		}
	}
}
