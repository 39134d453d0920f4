package tensor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	_ "github.com/godali/godali/ops/all"
)

func constNode(name string, shape []int, vals []int64) string {
	d, _ := json.Marshal(vals)
	s, _ := json.Marshal(shape)
	return fmt.Sprintf(`{"op": "constant", "name": %q, "outputs": [%q], "args": {"idata": %s, "shape": %s, "dtype": "INT32"}}`, name, name, d, s)
}

func node(op, name string, inputs []string, args string) string {
	in, _ := json.Marshal(inputs)
	return fmt.Sprintf(`{"op": %q, "name": %q, "inputs": %s, "outputs": [%q], "args": {%s}}`, op, name, in, name, args)
}

func build(t *testing.T, nodes []string, outputs ...string) (*engine.Pipeline, error) {
	t.Helper()
	outs, _ := json.Marshal(outputs)
	desc := fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "prefetch_queue_depth": 1, "seed": 3, "ops": [%s], "outputs": %s}`,
		strings.Join(nodes, ",\n"), outs)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, err
	}
	if err := p.Build(); err != nil {
		p.Close()
		return nil, err
	}
	t.Cleanup(p.Close)
	return p, nil
}

func sample(t *testing.T, b *engine.Batch, k, i int) ([]int64, []int64) {
	t.Helper()
	v, err := b.Output(k).SampleView(i)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Lease.Release()
	n := 1
	for _, d := range v.Shape {
		n *= int(d)
	}
	sz := v.DType.Size()
	raw := unsafe.Slice((*byte)(v.Ptr), n*sz)
	out := make([]int64, n)
	for j := range out {
		out[j] = int64(engine.ReadScalar(raw[j*sz:], v.DType))
	}
	return out, v.Shape
}

// iota3 is a 2x3x4 tensor of base+0..23 in row-major order.
func iota3(base int64) []int64 {
	v := make([]int64, 24)
	for i := range v {
		v[i] = base + int64(i)
	}
	return v
}

// TestStackCatReshapeAgainstIndexing checks the copies against element-by-element index
// arithmetic: stack at axis 1 of two 2x3x4 tensors is out[i][s][j][k] = in_s[i][j][k];
// cat along axis 2 is out[i][j][k] = a[i][j][k] for k < 4, b[i][j][k-4] after.
func TestStackCatReshapeAgainstIndexing(t *testing.T) {
	a, b := iota3(0), iota3(100)
	nodes := []string{
		constNode("a", []int{2, 3, 4}, a), constNode("b", []int{2, 3, 4}, b),
		node("stack", "st", []string{"a", "b"}, `"axis": 1`),
		node("cat", "ct", []string{"a", "b"}, `"axis": -1`),
		node("reshape", "rs", []string{"a"}, `"shape": [4, -1]`),
		node("expand_dims", "ex", []string{"a"}, `"axes": [1]`),
		node("squeeze", "sq", []string{"ex"}, `"axes": [1]`),
	}
	p, err := build(t, nodes, "st", "ct", "rs", "sq")
	if err != nil {
		t.Fatal(err)
	}
	bt, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	at := func(v []int64, i, j, k int) int64 { return v[(i*3+j)*4+k] }
	st, shape := sample(t, bt, 0, 1)
	if fmt.Sprint(shape) != "[2 2 3 4]" {
		t.Fatalf("stack shape %v", shape)
	}
	for i := 0; i < 2; i++ {
		for s, src := range [][]int64{a, b} {
			for j := 0; j < 3; j++ {
				for k := 0; k < 4; k++ {
					if got := st[((i*2+s)*3+j)*4+k]; got != at(src, i, j, k) {
						t.Fatalf("stack[%d][%d][%d][%d] = %d, want %d", i, s, j, k, got, at(src, i, j, k))
					}
				}
			}
		}
	}
	ct, shape := sample(t, bt, 1, 0)
	if fmt.Sprint(shape) != "[2 3 8]" {
		t.Fatalf("cat shape %v", shape)
	}
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 8; k++ {
				want := at(a, i, j, k%4)
				if k >= 4 {
					want = at(b, i, j, k-4)
				}
				if got := ct[(i*3+j)*8+k]; got != want {
					t.Fatalf("cat[%d][%d][%d] = %d, want %d", i, j, k, got, want)
				}
			}
		}
	}
	for k, want := range []string{"[4 6]", "[2 3 4]"} {
		v, shape := sample(t, bt, 2+k, 0)
		if fmt.Sprint(shape) != want || fmt.Sprint(v) != fmt.Sprint(a) {
			t.Errorf("output %d: shape %v (want %s), values %v", 2+k, shape, want, v)
		}
	}
}

func TestSelectPicksPerSample(t *testing.T) {
	nodes := []string{
		`{"op": "random.coin_flip", "name": "c", "outputs": ["c"]}`,
		constNode("a", []int{3}, []int64{1, 2, 3}), constNode("b", []int{2}, []int64{7, 8}),
		node("_select", "s", []string{"c", "a", "b"}, ``),
	}
	p, err := build(t, nodes, "c", "s")
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 4; it++ {
		bt, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			c, _ := sample(t, bt, 0, i)
			v, _ := sample(t, bt, 1, i)
			want := "[7 8]"
			if c[0] != 0 {
				want = "[1 2 3]"
			}
			if fmt.Sprint(v) != want {
				t.Errorf("sample %d with condition %d: got %v, want %s", i, c[0], v, want)
			}
		}
	}
}

func TestShapeOperatorErrors(t *testing.T) {
	a := constNode("a", []int{2, 3, 4}, iota3(0))
	for _, c := range []struct {
		node, want string
	}{
		{node("reshape", "r", []string{"a"}, `"shape": [5, 5]`), "elements"},
		{node("reshape", "r", []string{"a"}, `"shape": [-1, -1]`), "negative"},
		{node("squeeze", "r", []string{"a"}, `"axes": [0]`), "Requested a shape with 12 elements but the original shape has 24 elements"},
		{node("stack", "r", []string{"a", "a"}, `"axis": 5`), "out of range"},
		{node("cat", "r", []string{"a", "c"}, `"axis": 0`), "dimensions"},
		{node("expand_dims", "r", []string{"a"}, `"axes": [0], "new_axis_names": "AB"`), "new dimension names"},
		{node("expand_dims", "r", []string{"a"}, `"axes": [-1]`), "can't be negative"},
		{node("expand_dims", "r", []string{"a"}, `"axes": [4]`), "not enough dimensions"},
		{node("squeeze", "r", []string{"a"}, `"axes": [0, 0]`), "twice"},
	} {
		_, err := build(t, []string{a, constNode("c", []int{4}, []int64{1, 2, 3, 4}), c.node}, "r")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"r"`) {
			t.Errorf("%s: got %v, want an error naming the node and saying %q", c.node, err, c.want)
		}
	}
}
