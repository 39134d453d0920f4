package random_test

// DALI's per-operator `seed`: a node given one draws the same values in any pipeline
// (whatever the pipeline seed, the node's place in the graph or num_threads); a node
// without one follows the pipeline seed.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
)

// drawn runs 3 batches of 8 and returns every sample of output 0 as float64 values.
func drawn(t *testing.T, pipeSeed, threads int, nodes []string, output string) [][]float64 {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": 8, "num_threads": %d, "prefetch_queue_depth": 1, "seed": %d, "ops": [%s], "outputs": [%q]}`,
		threads, pipeSeed, strings.Join(nodes, ",\n"), output)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	var res [][]float64
	for it := 0; it < 3; it++ {
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 8; i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			cnt := 1
			for _, d := range v.Shape {
				cnt *= int(d)
			}
			raw := unsafe.Slice((*byte)(v.Ptr), cnt*v.DType.Size())
			vals := make([]float64, cnt)
			for j := range vals {
				vals[j] = engine.ReadScalar(raw[j*v.DType.Size():], v.DType)
			}
			v.Lease.Release()
			res = append(res, vals)
		}
	}
	return res
}

func uniformNode(name, extra string) string {
	args := `"range": [0, 1000], "shape": [4]` + extra
	return fmt.Sprintf(`{"op": "random.uniform", "name": %q, "outputs": [%q], "args": {%s}}`, name, name, args)
}

func TestOperatorSeedGivesTheSameValuesInAnyPipeline(t *testing.T) {
	seeded := uniformNode("u", `, "seed": 1234`)
	a := drawn(t, 1, 1, []string{seeded}, "u")
	// Another pipeline seed, other nodes before it, more threads: the same values.
	other := []string{uniformNode("x", ""), uniformNode("y", `, "seed": 99`), seeded}
	b := drawn(t, 77, 3, other, "u")
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed=1234 drew differently in two pipelines:\n%v\n%v", a[:2], b[:2])
	}
	// Another op seed: other values; samples within a batch differ too.
	c := drawn(t, 1, 1, []string{uniformNode("u", `, "seed": 1235`)}, "u")
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 1234 and 1235 drew the same values")
	}
	if reflect.DeepEqual(a[0], a[1]) {
		t.Fatal("two samples of a batch drew the same values")
	}
	// Without an op seed the pipeline seed decides (and seed -1 is "not given").
	d1 := drawn(t, 1, 1, []string{uniformNode("u", "")}, "u")
	d2 := drawn(t, 2, 2, []string{uniformNode("u", `, "seed": -1`)}, "u")
	d3 := drawn(t, 1, 4, []string{uniformNode("u", `, "seed": -1`)}, "u")
	if reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(d1, d3) {
		t.Fatal("without an op seed, the pipeline seed must decide (and num_threads must not)")
	}
	for _, s := range a {
		for _, v := range s {
			if v < 0 || v >= 1000 {
				t.Fatalf("%v outside [0, 1000)", v)
			}
		}
	}
}

// DALI's _random_state: samples given the same state draw the same values, in any node
// and pipeline; another state draws others.
func TestRandomStateReplacesTheStream(t *testing.T) {
	state := func(name string, words string) string {
		return fmt.Sprintf(`{"op": "constant", "name": %q, "outputs": [%q], "args": {"idata": [%s], "shape": [7], "dtype": "UINT32"}}`, name, name, words)
	}
	u := func(name, st string) string {
		return fmt.Sprintf(`{"op": "random.uniform", "name": %q, "outputs": [%q], "arg_inputs": {"_random_state": %q}, "args": {"shape": [5]}}`, name, name, st)
	}
	s1 := state("s1", "1, 2, 3, 4, 5, 6, 7")
	a := drawn(t, 1, 1, []string{s1, u("a", "s1")}, "a")
	b := drawn(t, 9, 3, []string{s1, u("x", "s1"), u("b", "s1")}, "b")
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same _random_state drew differently")
	}
	// Every sample has the same state here: every sample draws the same values.
	if !reflect.DeepEqual(a[0], a[7]) {
		t.Fatal("samples with the same state drew differently")
	}
	c := drawn(t, 1, 1, []string{state("s2", "8, 9, 10, 11, 12, 13, 14"), u("c", "s2")}, "c")
	if reflect.DeepEqual(a[0], c[0]) {
		t.Fatal("two states drew the same values")
	}
}
