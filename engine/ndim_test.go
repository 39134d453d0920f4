package engine

import (
	"fmt"
	"strings"
	"testing"
)

// _test.ndim outputs a uint8 sample of shape [1]*ndim; with "declare" its Infer tells the
// build that rank, otherwise the rank is known only when Setup runs (as decoders.numpy's).
func init() {
	RegisterSchema(&Schema{Name: "_test.ndim", Outputs: []string{"out"}, HostOnly: true, Args: []ArgSpec{
		{Name: "ndim", Type: ArgInt, Required: true},
		{Name: "declare", Type: ArgBool, Default: false},
	}})
	RegisterBackend("_test.ndim", "cpu", func(a *Args) (Operator, error) {
		return ndimOp{n: int(a.Int("ndim")), declare: a.Bool("declare")}, nil
	})
}

type ndimOp struct {
	n       int
	declare bool
}

func (o ndimOp) Infer([]TensorMeta) ([]TensorMeta, error) {
	m := TensorMeta{DType: UInt8}
	if o.declare {
		m.Shape = make([]int, o.n)
		for i := range m.Shape {
			m.Shape[i] = -1
		}
	}
	return []TensorMeta{m}, nil
}

func (o ndimOp) Setup(ws *Workspace) error {
	ws.Out[0].Shape = ws.Out[0].Shape[:0]
	for i := 0; i < o.n; i++ {
		ws.Out[0].Shape = append(ws.Out[0].Shape, 1)
	}
	ws.Out[0].DType = UInt8
	return nil
}

func (o ndimOp) Run(ws *Workspace) error { ws.Out[0].Data[0] = 7; return nil }

func ndimDesc(n int, declare bool) string {
	return fmt.Sprintf(`{"batch_size": 2, "num_threads": 1, "ops": [
	 {"op": "_test.ndim", "name": "deep", "outputs": ["x"], "args": {"ndim": %d, "declare": %v}}], "outputs": ["x"]}`, n, declare)
}

// Issue 24 item 1: an output of more dimensions than numpy takes (32 with the batch's)
// is refused, at build when the rank is declared and per sample otherwise, naming the
// node, the operator and the rank; MaxSampleNDim itself runs.
func TestOutputRankBounded(t *testing.T) {
	for _, n := range []int{0, 1, MaxSampleNDim} {
		for _, declare := range []bool{true, false} {
			p := mustPipeline(t, ndimDesc(n, declare))
			b, err := p.Next()
			if err != nil {
				t.Fatalf("ndim %d declare %v: %v", n, declare, err)
			}
			if got := len(b.Output(0).SampleShape(0)); got != n {
				t.Errorf("ndim %d: sample of %d dimensions", n, got)
			}
		}
	}
	for _, n := range []int{MaxSampleNDim + 1, MaxNDim + 1, 64, 70, 1000} {
		want := []string{`"deep"`, "_test.ndim", fmt.Sprintf("%d dimensions", n), fmt.Sprint(MaxSampleNDim)}
		_, err := NewPipeline([]byte(ndimDesc(n, true)))
		if err == nil || StatusOf(err) != StatusInvalidPipeline {
			t.Fatalf("ndim %d declared: status %d, %v; want refused at build", n, StatusOf(err), err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ndim %d declared: %q does not name %s", n, err, w)
			}
		}
		p := mustPipeline(t, ndimDesc(n, false))
		_, err = p.Next()
		if err == nil || StatusOf(err) != StatusData {
			t.Fatalf("ndim %d at run time: status %d, %v; want a data error", n, StatusOf(err), err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ndim %d at run time: %q does not name %s", n, err, w)
			}
		}
	}
}

func TestCheckNDim(t *testing.T) {
	for _, n := range []int{-1, 0, MaxSampleNDim} {
		if err := CheckNDim("x", n); err != nil {
			t.Errorf("%d: %v", n, err)
		}
	}
	for _, n := range []int{MaxSampleNDim + 1, MaxNDim, 1 << 40} {
		if err := CheckNDim("x", n); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("x would have %d dimensions", n)) {
			t.Errorf("%d: %v", n, err)
		}
	}
}
