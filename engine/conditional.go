package engine

import (
	"fmt"
	"strings"
)

// Conditional execution (DALI's enable_conditionals): an `if` on pipeline data splits the
// batch by a per-sample predicate, runs each branch's operators on the branch's samples
// only, and merges the branches' results back into the batch's order.
//
//   - _conditional.split(data, predicate) gives the samples whose predicate is true on
//     output 0 and the others on output 1. It runs over the batch at once (a host-batch
//     node: the executor's phases make every sample's predicate known before a branch's
//     operators run), and fixes each branch's samples for the batch.
//   - every node whose inputs come from a branch (through a split) runs in that branch: a
//     sample outside it skips the node, and the node sees the branch as its batch (the
//     sample's index among the branch's samples, the branch's size, its random streams
//     by that index), as DALI's operators see the split batch. A node without inputs runs
//     on the whole batch; the hidden argument input `_scope` puts it in a branch (DALI's
//     batch_permutation inside an `if`).
//   - _conditional.merge(true, false, predicate) takes, per sample, the branch the
//     predicate names.
//
// A branch is a Gate: the samples whose predicate took Value, among the samples of the
// predicate's own gate (nested ifs).

// ScopeArg is the hidden argument input that puts a node in the branch of its data.
const ScopeArg = "_scope"

const (
	splitOp = "_conditional.split"
	mergeOp = "_conditional.merge"
)

// Gate is a branch of an `if`: the samples whose predicate (one value per sample) is
// Value, among those of Parent (nil: the whole batch).
type Gate struct {
	ID     int
	Pred   *DataNode
	Value  bool
	Parent *Gate
}

func (g *Gate) String() string {
	if g == nil {
		return "the whole batch"
	}
	br := "false"
	if g.Value {
		br = "true"
	}
	return fmt.Sprintf("the %s branch of the condition %q", br, g.Pred.Name)
}

// within reports whether every sample of g is a sample of outer.
func (g *Gate) within(outer *Gate) bool {
	for x := g; x != nil; x = x.Parent {
		if x == outer {
			return true
		}
	}
	return outer == nil
}

// gateOf returns the gate of (pred, value), made once per graph.
func (g *Graph) gateOf(pred *DataNode, value bool) *Gate {
	for _, x := range g.Gates {
		if x.Pred == pred && x.Value == value {
			return x
		}
	}
	x := &Gate{ID: len(g.Gates), Pred: pred, Value: value, Parent: pred.gate}
	g.Gates = append(g.Gates, x)
	return x
}

// assignGates places every node (in execution order) in its branch and checks that data
// of one branch is not read outside it but through a merge.
func (g *Graph) assignGates(order []*Node) error {
	for _, n := range order {
		where := describe(n.Name, n.OpName)
		switch n.OpName {
		case splitOp:
			data, pred := n.In[0], n.In[1]
			if !data.gate.within(pred.gate) {
				return Errorf(StatusInvalidPipeline, "%s: splits %q (data of %s) by %q (of %s); split data by a condition of its own branch", where, data.Name, data.gate, pred.Name, pred.gate)
			}
			n.Gate = pred.gate
			n.split = [2]*Gate{g.gateOf(pred, true), g.gateOf(pred, false)}
			for k, d := range n.Out {
				d.gate = n.split[k]
			}
			continue
		case mergeOp:
			pred := n.In[2]
			for k, want := range []bool{true, false} {
				// The branch's data, or data of an enclosing branch (all its samples).
				d, br := n.In[k], g.gateOf(pred, want)
				if !br.within(d.gate) {
					return Errorf(StatusInvalidPipeline, "%s: input %d %q is data of %s; merging by %q takes data of %s", where, k, d.Name, d.gate, pred.Name, br)
				}
			}
			n.Gate = pred.gate
			n.Out[0].gate = pred.gate
			continue
		}
		var gate *Gate
		for _, d := range append(append([]*DataNode{}, n.In...), n.ArgIn...) {
			switch {
			case d.gate.within(gate):
				gate = d.gate
			case gate.within(d.gate):
			default:
				return Errorf(StatusInvalidPipeline, "%s: reads data of %s and of %s; data of different branches meet only through _conditional.merge", where, gate, d.gate)
			}
		}
		if gate != nil && n.Device != "cpu" {
			return Errorf(StatusInvalidPipeline, "%s on device %q runs in %s; godali runs the operators of a conditional branch on the CPU only (move data to the GPU after the merge)", where, n.Device, gate)
		}
		if gate != nil && n.Schema.IsReader {
			return Errorf(StatusInvalidPipeline, "%s: a reader cannot run inside a conditional branch (%s)", where, gate)
		}
		n.Gate = gate
		for _, d := range n.Out {
			d.gate = gate
		}
	}
	for _, d := range g.Outputs {
		if d.gate != nil {
			return Errorf(StatusInvalidPipeline, "pipeline output %q is data of %s; a pipeline output holds the whole batch: merge the branches (_conditional.merge)", d.Name, d.gate)
		}
	}
	return nil
}

// branchRun is a gate's samples in one batch: rank[i] is sample i's index among them (-1:
// not in the branch), count how many there are.
type branchRun struct {
	rank  []int32
	count int
	set   bool
}

func (b *Batch) initBranches(gates, n int) {
	if gates == 0 {
		return
	}
	b.branches = make([]branchRun, gates)
	for k := range b.branches {
		b.branches[k].rank = make([]int32, n)
	}
}

// inBranch returns sample i's index in gate g's samples and their number (i and the
// batch's size for the whole batch); ok is false when the sample is not in the branch.
func (b *Batch) inBranch(g *Gate, i int) (rank, count int, ok bool) {
	if g == nil {
		return i, len(b.refs), true
	}
	br := &b.branches[g.ID]
	if !br.set || i >= len(br.rank) || br.rank[i] < 0 {
		return 0, 0, false
	}
	return int(br.rank[i]), br.count, true
}

// decide fixes the samples of the two branches of pred (gates t and f) for the batch from
// the predicate's value of each sample of its own gate.
func (b *Batch) decide(t, f *Gate, pred []*Tensor, where string) error {
	bt, bf := &b.branches[t.ID], &b.branches[f.ID]
	if bt.set {
		return nil // another split by the same predicate decided
	}
	bt.count, bf.count = 0, 0
	for i := range bt.rank {
		bt.rank[i], bf.rank[i] = -1, -1
		if _, _, ok := b.inBranch(t.Parent, i); !ok || i >= len(pred) {
			continue
		}
		v, err := predicateValue(pred[i])
		if err != nil {
			return Errorf(StatusData, "%s: sample %d: %v", where, i, err)
		}
		if v {
			bt.rank[i] = int32(bt.count)
			bt.count++
		} else {
			bf.rank[i] = int32(bf.count)
			bf.count++
		}
	}
	bt.set, bf.set = true, true
	return nil
}

func predicateValue(p *Tensor) (bool, error) {
	if len(p.Shape) != 0 || p.DType.Size() == 0 || len(p.Data) < p.DType.Size() {
		// DALI's enforce message (its assert's condition first).
		return false, fmt.Errorf("Assert on \"dim == 0\" failed: Conditions inside `if` statements are restricted to scalar (0-d tensors) inputs, that are placed on CPU. Got a %d-d input as a condition of the `if` statement.", len(p.Shape))
	}
	return readScalar(p.Data, p.DType) != 0, nil
}

func init() {
	RegisterSchema(&Schema{
		Name: splitOp,
		Doc: "Splits the batch by a per-sample predicate (DALI's fn._conditional.split, what an " +
			"`if` on pipeline data becomes): output 0 holds the samples whose predicate is true, " +
			"output 1 the others; the operators that read them run on those samples only.",
		MinInputs: 2, MaxInputs: 2, Outputs: []string{"true_output", "false_output"}, HostOnly: true,
	})
	RegisterBackend(splitOp, "cpu", func(a *Args) (Operator, error) { return &splitNode{}, nil })
	RegisterSchema(&Schema{
		Name: mergeOp,
		Doc: "Merges the two branches of a split batch back into its order (DALI's " +
			"fn._conditional.merge): per sample, input 0 where the predicate (input 2) is true, " +
			"else input 1.",
		MinInputs: 3, MaxInputs: 3, Outputs: []string{"output"}, HostOnly: true,
	})
	RegisterBackend(mergeOp, "cpu", func(a *Args) (Operator, error) { return &mergeNode{where: a.Where()}, nil })
	RegisterSchema(&Schema{
		Name: validateOp,
		Doc: "Passes an operand of `and`, `or` or `not` on pipeline data through, checking that " +
			"each sample is a scalar (and BOOL for `and`/`or`), as DALI's " +
			"fn._conditional.validate_logical does.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"output"}, HostOnly: true,
		Args: []ArgSpec{
			{Name: "expression_name", Type: ArgString, Default: "and", Doc: "the expression: and, or, not"},
			{Name: "expression_side", Type: ArgString, Default: "left", Doc: "the operand: left or right"},
		},
	})
	RegisterBackend(validateOp, "cpu", func(a *Args) (Operator, error) {
		return &validateNode{name: a.String("expression_name"), side: a.String("expression_side")}, nil
	})
}

const validateOp = "_conditional.validate_logical"

// validateNode is _conditional.validate_logical.
type validateNode struct{ name, side string }

// Infer checks what the build knows (DALI reports the same when the pipeline runs).
func (o *validateNode) Infer(in []TensorMeta) ([]TensorMeta, error) {
	m := in[0]
	ndim := -1
	if m.Shape != nil {
		ndim = len(m.Shape)
	}
	if err := o.check(ndim, m.DType); err != nil {
		return nil, err
	}
	return []TensorMeta{{DType: m.DType, Shape: []int{}, Layout: m.Layout}}, nil
}

func (o *validateNode) check(ndim int, dt DType) error {
	what := "Logical expression `" + o.name + "` is restricted to scalar (0-d tensors) inputs"
	if o.name != "not" {
		what += " of `bool` type"
	}
	what += ", that are placed on CPU."
	if ndim > 0 {
		return Errorf(StatusInvalidPipeline, "%s Got a %d-d input as the %s argument in logical expression.", what, ndim, o.side)
	}
	if o.name != "not" && dt != DTypeInvalid && dt != Bool {
		return Errorf(StatusInvalidPipeline, "%s Got an input of type `%s` as the %s argument in logical expression.", what, strings.ToLower(dt.String()), o.side)
	}
	return nil
}

func (o *validateNode) Setup(ws *Workspace) error {
	in := ws.In[0]
	if err := o.check(len(in.Shape), in.DType); err != nil {
		return err
	}
	out := ws.Out[0]
	out.DType, out.Layout = in.DType, in.Layout
	out.SetShape()
	return nil
}

func (o *validateNode) Run(ws *Workspace) error {
	copy(ws.Out[0].Data, ws.In[0].Data[:ws.In[0].NumBytes()])
	return nil
}

// splitNode is _conditional.split: the batch's goroutine decides the branches and gives
// each sample's data to its branch's output.
type splitNode struct{}

func (o *splitNode) Infer(in []TensorMeta) ([]TensorMeta, error) {
	return []TensorMeta{in[0], in[0]}, nil
}

func (o *splitNode) Setup(ws *Workspace) error { return nil }
func (o *splitNode) Run(ws *Workspace) error   { return nil }

func (o *splitNode) RunHostBatch(hw *HostBatchWorkspace) error {
	n := hw.n
	pred := n.In[1]
	t, f := n.split[0], n.split[1]
	full := make([]*Tensor, len(hw.b.refs))
	for k, i := range hw.samples() {
		full[i] = hw.In[1][k]
	}
	if err := hw.b.decide(t, f, full, describe(n.Name, n.OpName)+" (condition "+pred.Name+")"); err != nil {
		return err
	}
	for k, i := range hw.samples() {
		out := 1
		if _, _, ok := hw.b.inBranch(t, i); ok {
			out = 0
		}
		if out >= len(n.Out) {
			continue
		}
		// No copy: the branch's output is the input's memory, which the batch holds
		// until it is released (a split's input crosses a phase; its outputs are never
		// pipeline outputs).
		hw.b.crossRef(hw.part.cross[n.Out[out]], i, hw.In[0][k])
	}
	return nil
}

// mergeNode is _conditional.merge, run per sample.
type mergeNode struct{ where string }

// TakesDynamicInputs: a branch may end in a python_function.
func (o *mergeNode) TakesDynamicInputs() bool { return true }

func (o *mergeNode) Infer(in []TensorMeta) ([]TensorMeta, error) {
	m, err := MergeBranchMeta(in[0], in[1])
	if err != nil {
		return nil, Errorf(StatusInvalidPipeline, "%s: %v", o.where, err)
	}
	return []TensorMeta{m}, nil
}

// MergeBranchMeta is the metadata of the merge of two branches' values
// (_conditional.merge, _select), or DALI's error for branches whose values cannot be
// merged into one batch (without the node's name, which the caller adds). A dynamic type
// (a python_function's output) is checked when it runs.
func MergeBranchMeta(t, f TensorMeta) (TensorMeta, error) {
	divergent := func(format string, args ...any) error {
		return fmt.Errorf("Divergent data found in different branches of conditional operation. All paths in conditional operation are merged into one batch which must have consistent type, number of dimensions, layout and other metadata. Found distinct "+format, args...)
	}
	if t.DType != f.DType && !t.IsDynamic() && !f.IsDynamic() {
		// DALI's enforce message (its assert's condition first).
		return TensorMeta{}, fmt.Errorf("Assert on \"base_input.type() == input.type()\" failed: %w",
			divergent("types: %s and %s; the branches must have the same type (cast one)", t.DType, f.DType))
	}
	if t.Shape != nil && f.Shape != nil && len(t.Shape) != len(f.Shape) {
		return TensorMeta{}, divergent("sample dimensions: %d-D and %d-D data; the branches must have the same number of dimensions", len(t.Shape), len(f.Shape))
	}
	if t.Layout != "" && f.Layout != "" && t.Layout != f.Layout {
		return TensorMeta{}, divergent("layouts: %q and %q", t.Layout, f.Layout)
	}
	// One branch without a layout (godali's operators name some layouts DALI leaves
	// empty): the merge has none.
	m := TensorMeta{DType: t.DType, Layout: t.Layout}
	if t.Layout != f.Layout {
		m.Layout = ""
	}
	if t.Shape != nil && f.Shape != nil {
		m.Shape = make([]int, len(t.Shape))
		for i := range m.Shape {
			m.Shape[i] = -1
			if t.Shape[i] == f.Shape[i] {
				m.Shape[i] = t.Shape[i]
			}
		}
	}
	return m, nil
}

func (o *mergeNode) pick(ws *Workspace) (*Tensor, error) {
	v, err := predicateValue(ws.In[2])
	if err != nil {
		return nil, Errorf(StatusData, "%s: %v", o.where, err)
	}
	if v {
		return ws.In[0], nil
	}
	return ws.In[1], nil
}

func (o *mergeNode) Setup(ws *Workspace) error {
	src, err := o.pick(ws)
	if err != nil {
		return err
	}
	out := ws.Out[0]
	out.DType, out.Layout = src.DType, src.Layout
	out.SetShape(src.Shape...)
	return nil
}

func (o *mergeNode) Run(ws *Workspace) error {
	src, err := o.pick(ws)
	if err != nil {
		return err
	}
	copy(ws.Out[0].Data, src.Data[:src.NumBytes()])
	return nil
}
