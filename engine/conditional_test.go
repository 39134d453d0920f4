package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
)

// condDesc: x split by the fed predicate p; the true branch adds 100 and draws a
// batch_permutation of its own samples, the false branch negates x and (nested) splits
// again by x > 2, adding 1000 there; everything is merged back.
func condDesc(batch int) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": 1, "seed": 3, "device_id": null, "ops": [
	 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 0}},
	 {"op": "external_source", "name": "cond", "outputs": ["p"], "args": {"dtype": "INT32", "ndim": 0}},
	 {"op": "constant", "name": "c100", "outputs": ["k100"], "args": {"idata": [100], "shape": []}},
	 {"op": "constant", "name": "cm1", "outputs": ["km1"], "args": {"idata": [-1], "shape": []}},
	 {"op": "constant", "name": "c2", "outputs": ["k2"], "args": {"idata": [2], "shape": []}},
	 {"op": "constant", "name": "c0", "outputs": ["k0"], "args": {"idata": [-7], "shape": []}},
	 {"op": "_conditional.split", "name": "s", "inputs": ["x", "p"], "outputs": ["xt", "xf"]},
	 {"op": "_arithmetic", "name": "add", "inputs": ["xt", "k100"], "outputs": ["yt"], "args": {"op": "add"}},
	 {"op": "batch_permutation", "name": "perm", "arg_inputs": {"_scope": "xt"}, "outputs": ["pt"]},
	 {"op": "_arithmetic", "name": "neg", "inputs": ["xf", "km1"], "outputs": ["yf"], "args": {"op": "mul"}},
	 {"op": "_arithmetic", "name": "gt", "inputs": ["xf", "k2"], "outputs": ["q"], "args": {"op": "gt"}},
	 {"op": "_conditional.split", "name": "s2", "inputs": ["yf", "q"], "outputs": ["yft", "yff"]},
	 {"op": "_arithmetic", "name": "add2", "inputs": ["yft", "k100"], "outputs": ["zt"], "args": {"op": "sub"}},
	 {"op": "_conditional.merge", "name": "m2", "inputs": ["zt", "yff", "q"], "outputs": ["zf"]},
	 {"op": "_conditional.merge", "name": "m", "inputs": ["yt", "zf", "p"], "outputs": ["y"]},
	 {"op": "_conditional.split", "name": "s4", "inputs": ["k0", "p"], "outputs": ["k0t", "k0f"]},
	 {"op": "_conditional.merge", "name": "mp", "inputs": ["pt", "k0f", "p"], "outputs": ["perm_out"]}],
	 "outputs": ["y", "perm_out"]}`, batch)
}

func scalars(vals []int32) *Feed {
	var s [][]int32
	var shapes [][]int
	for _, v := range vals {
		s = append(s, []int32{v})
		shapes = append(shapes, []int{})
	}
	return counted(s, shapes, new(atomic.Int32))
}

func readInt32s(t *testing.T, b *Batch, o int) []int32 {
	t.Helper()
	var out []int32
	for i := 0; i < b.Size(); i++ {
		v, err := b.Output(o).SampleView(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, int32s(unsafe.Slice((*byte)(v.Ptr), 4))[0])
		v.Lease.Release()
	}
	return out
}

// Each branch runs on its samples only; batch_permutation inside a branch permutes the
// branch's samples; an empty branch works.
func TestConditionalSplitMerge(t *testing.T) {
	p := mustPipeline(t, condDesc(6))
	xs := [][]int32{{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {5, 4}}
	ps := [][]int32{{1, 0, 1, 0, 0, 1}, {0, 0, 0, 0, 0, 0}, {1, 1}}
	for k := range xs {
		if err := p.FeedInput("src", scalars(xs[k])); err != nil {
			t.Fatal(err)
		}
		if err := p.FeedInput("cond", scalars(ps[k])); err != nil {
			t.Fatal(err)
		}
	}
	for k := range xs {
		b, err := p.Next()
		if err != nil {
			t.Fatalf("batch %d: %v", k, err)
		}
		y, perm := readInt32s(t, b, 0), readInt32s(t, b, 1)
		var inTrue []int32
		for i, x := range xs[k] {
			want := -x
			if ps[k][i] != 0 {
				want = x + 100
			} else if x > 2 {
				want = -x - 100
			}
			if y[i] != want {
				t.Fatalf("batch %d sample %d (x %d, p %d): y %d, want %d", k, i, x, ps[k][i], y[i], want)
			}
			if ps[k][i] != 0 {
				inTrue = append(inTrue, perm[i])
			} else if perm[i] != -7 {
				t.Fatalf("batch %d sample %d: the false branch's value %d, want -7", k, i, perm[i])
			}
		}
		// the true branch's permutation is one of its own samples' indices 0..n-1
		sort.Slice(inTrue, func(a, b int) bool { return inTrue[a] < inTrue[b] })
		for j, v := range inTrue {
			if v != int32(j) {
				t.Fatalf("batch %d: the true branch's batch_permutation gave %v, want a permutation of 0..%d", k, inTrue, len(inTrue)-1)
			}
		}
	}
}

func TestConditionalBranchChecks(t *testing.T) {
	bad := []struct{ ops, outputs, want string }{
		{`{"op": "_conditional.split", "name": "s", "inputs": ["x", "p"], "outputs": ["xt", "xf"]},
		  {"op": "_arithmetic", "name": "a", "inputs": ["xt", "xf"], "outputs": ["y"], "args": {"op": "add"}}`, `"y"`, "different branches"},
		{`{"op": "_conditional.split", "name": "s", "inputs": ["x", "p"], "outputs": ["xt", "xf"]}`, `"xt"`, "pipeline output \"xt\""},
		{`{"op": "_conditional.split", "name": "s", "inputs": ["x", "p"], "outputs": ["xt", "xf"]},
		  {"op": "_conditional.merge", "name": "m", "inputs": ["xf", "xt", "p"], "outputs": ["y"]}`, `"y"`, "merging by"},
	}
	for _, c := range bad {
		desc := `{"batch_size": 2, "num_threads": 1, "device_id": null, "ops": [
		 {"op": "external_source", "name": "src", "outputs": ["x"], "args": {"dtype": "INT32", "ndim": 0}},
		 {"op": "external_source", "name": "cond", "outputs": ["p"], "args": {"dtype": "INT32", "ndim": 0}}, ` + c.ops + `],
		 "outputs": [` + c.outputs + `]}`
		_, err := NewPipeline([]byte(desc))
		if err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(c.want, `\"`, `"`)) {
			t.Fatalf("%s: error %v, want one containing %q", c.ops, err, c.want)
		}
	}
}
