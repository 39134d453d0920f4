package engine

import (
	"sort"
	"strings"
)

// Node is a checked operator node of a Graph.
type Node struct {
	Name   string
	OpName string
	Device string
	Schema *Schema
	Args   *Args
	Op     Operator
	In     []*DataNode
	ArgIn  []*DataNode // in the order of Args' per-sample inputs
	Out    []*DataNode
	ID     int // position in execution order
	// opSeed is the node's own `seed` argument (hasOpSeed), read once from Args when the
	// node is made: StreamKeys runs for every sample.
	opSeed    int64
	hasOpSeed bool
	// Fused names the nodes fused into this one (their work is its work), producers first.
	Fused []string
	// Gate is the conditional branch the node runs in (conditional.go), nil for the
	// whole batch; split holds a _conditional.split node's two branches.
	Gate  *Gate
	split [2]*Gate
}

// DataNode is a named value flowing between nodes.
type DataNode struct {
	Name      string
	Producer  *Node
	Index     int // output index of the producer
	Meta      TensorMeta
	Consumers []*Node
	Output    int   // position in the pipeline outputs, -1 if internal
	gate      *Gate // the conditional branch whose samples it holds (nil: the batch)
}

// Graph is a validated, ordered, instantiated pipeline graph.
type Graph struct {
	Nodes   []*Node // execution order
	Data    map[string]*DataNode
	Outputs []*DataNode
	// Readers are the nodes that plan batches (BatchSource), in the description's order;
	// each plans its own samples of every batch. Reader is the first of them, nil if none.
	Readers []*Node
	Reader  *Node
	// Declared lists every node as written, in the description's order, including those
	// fused into their consumer (checkpoint fingerprints describe the pipeline as written).
	Declared []*Node
	// Gates are the branches of the graph's conditionals (conditional.go).
	Gates []*Gate
}

// SizeHinter is implemented by operators that can say, for an input of w x h, the output
// size they will produce. Decoders feeding them decode no larger than needed.
type SizeHinter interface {
	OutputSizeFor(w, h int) (int, int)
}

// WindowReader is implemented by operators that, for some inputs, read only a window
// of their HWC image input, known from the image's size alone (no sample's argument or
// random draw decides it). A decoder feeding one may decode only that window in place,
// leaving the rest of its output unwritten: the consumer's result is the same.
type WindowReader interface {
	// NewWindowState returns the scratch InputWindow needs, one per worker.
	NewWindowState() any
	// InputWindow reports the pixels [x0, x1) x [y0, y1) of a w x h input that the
	// operator reads; ok is false when it may read others, or cannot tell.
	InputWindow(w, h int, state any) (x0, y0, x1, y1 int, ok bool)
}

// ConsumerAware operators are told about their single consumer after the build.
type ConsumerAware interface {
	SetConsumer(c Operator)
}

// Fusable is implemented by an operator that can absorb its producer (e.g.
// crop_mirror_normalize absorbing resize) so a sample is touched once.
type Fusable interface {
	Fuse(producer Operator) (Operator, bool)
}

// BuildGraph checks a Spec and instantiates its operators. cudaAvailable tells whether
// mixed/gpu backends may be used.
func BuildGraph(s *Spec) (*Graph, error) {
	g := &Graph{Data: map[string]*DataNode{}}
	names := map[string]bool{}
	var nodes []*Node
	for _, ns := range s.Nodes {
		if names[ns.Name] {
			return nil, Errorf(StatusInvalidPipeline, "node %q: name used twice", ns.Name)
		}
		names[ns.Name] = true
		schema, ok := LookupSchema(ns.Op)
		if !ok {
			return nil, errUnknownOp(ns.Name, ns.Op)
		}
		ns.Op = schema.Name // an alias (file_reader) is the operator it names from here on
		where := describe(ns.Name, ns.Op)
		switch ns.Device {
		case "cpu", "mixed", "gpu":
		default:
			return nil, Errorf(StatusInvalidPipeline, "%s: unknown device %q; valid: cpu, mixed, gpu", where, ns.Device)
		}
		if _, ok := lookupFactory(ns.Op, ns.Device); !ok {
			if schema.HostOnly {
				return nil, errHostOnly(ns.Name, ns.Op, ns.Device)
			}
			if ns.Device != "cpu" && !CUDAFlavour {
				return nil, &Error{Status: StatusNoCUDA, Msg: where + ": device \"" + ns.Device + "\"", Err: ErrNoCUDA}
			}
			return nil, Errorf(StatusInvalidPipeline, "%s: no %s implementation; available devices: %s", where, ns.Device, strings.Join(schema.Devices, ", "))
		}
		if ns.Device != "cpu" && s.DeviceID == nil {
			return nil, Errorf(StatusInvalidPipeline, "%s: device %q needs a GPU, but the pipeline's device_id is null", where, ns.Device)
		}
		if len(ns.Inputs) < schema.MinInputs || len(ns.Inputs) > schema.MaxInputs {
			return nil, Errorf(StatusInvalidPipeline, "%s: takes %d to %d inputs, got %d", where, schema.MinInputs, schema.MaxInputs, len(ns.Inputs))
		}
		if len(ns.Outputs) == 0 || (len(ns.Outputs) > len(schema.Outputs) && !schema.VariableOutputs) {
			return nil, Errorf(StatusInvalidPipeline, "%s: names %d outputs; it produces %d (%s)", where, len(ns.Outputs), len(schema.Outputs), strings.Join(schema.Outputs, ", "))
		}
		argInputNames := make([]string, 0, len(ns.ArgInputs))
		for k := range ns.ArgInputs {
			if k != ScopeArg {
				argInputNames = append(argInputNames, k)
			}
		}
		sort.Strings(argInputNames)
		args, err := newArgs(ns.Name, schema, ns.Args, argInputNames)
		if err != nil {
			return nil, err
		}
		n := &Node{Name: ns.Name, OpName: ns.Op, Device: ns.Device, Schema: schema, Args: args}
		n.opSeed, n.hasOpSeed = n.readOpSeed()
		for i, name := range ns.Outputs {
			if _, dup := g.Data[name]; dup {
				return nil, Errorf(StatusInvalidPipeline, "%s: output %q is already produced by node %q", where, name, g.Data[name].Producer.Name)
			}
			d := &DataNode{Name: name, Producer: n, Index: i, Output: -1}
			g.Data[name] = d
			n.Out = append(n.Out, d)
		}
		nodes = append(nodes, n)
	}
	// Resolve inputs now that every output is known.
	for i, ns := range s.Nodes {
		n := nodes[i]
		resolve := func(name, role string) (*DataNode, error) {
			d, ok := g.Data[name]
			if !ok {
				return nil, Errorf(StatusInvalidPipeline, "%s: %s %q is produced by no node; available: %s", describe(n.Name, n.OpName), role, name, g.dataNames())
			}
			d.Consumers = append(d.Consumers, n)
			return d, nil
		}
		for _, in := range ns.Inputs {
			d, err := resolve(in, "input")
			if err != nil {
				return nil, err
			}
			n.In = append(n.In, d)
		}
		for _, argName := range sortedKeys(ns.ArgInputs) {
			if argName == ScopeArg {
				continue
			}
			d, err := resolve(ns.ArgInputs[argName], "argument input "+argName+":")
			if err != nil {
				return nil, err
			}
			n.ArgIn = append(n.ArgIn, d)
		}
		if scope, ok := ns.ArgInputs[ScopeArg]; ok {
			// The branch the node runs in (after the arguments: it is no argument).
			d, err := resolve(scope, "argument input "+ScopeArg+":")
			if err != nil {
				return nil, err
			}
			n.ArgIn = append(n.ArgIn, d)
		}
	}
	for i, name := range s.Outputs {
		d, ok := g.Data[name]
		if !ok {
			return nil, Errorf(StatusInvalidPipeline, "pipeline output %q is produced by no node; available: %s", name, g.dataNames())
		}
		if d.Output >= 0 {
			return nil, Errorf(StatusInvalidPipeline, "pipeline output %q listed twice", name)
		}
		d.Output = i
		g.Outputs = append(g.Outputs, d)
	}
	order, err := topoSort(nodes)
	if err != nil {
		return nil, err
	}
	if err := g.assignGates(order); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Schema.IsReader {
			g.Readers = append(g.Readers, n)
		}
	}
	if len(g.Readers) > 0 {
		g.Reader = g.Readers[0]
	}
	// Instantiate and infer in order.
	for _, n := range order {
		f, _ := lookupFactory(n.OpName, n.Device)
		op, err := f(n.Args)
		if err != nil {
			return nil, err
		}
		n.Op = op
		if err := checkDynamicInputs(n); err != nil {
			return nil, err
		}
		in := make([]TensorMeta, len(n.In))
		for i, d := range n.In {
			in[i] = d.Meta
		}
		argMetas := make([]TensorMeta, len(n.ArgIn))
		for i, d := range n.ArgIn {
			argMetas[i] = d.Meta
		}
		framed, err := framedInputs(n, in, argMetas)
		if err != nil {
			return nil, err
		}
		if framed != nil && !takesWholeSequences(op) {
			// Sequences go through the operator frame by frame (sequence.go): the schema's
			// input declaration and the arguments' metadata apply to a frame.
			fop := &frameOp{inner: op, name: n.OpName, args: n.Args, framed: framed,
				planes: channelFramed(n.OpName) && isChannelSequence(in[0])}
			op, n.Op = fop, fop
			if err := checkSchemaInput(n.Args, n.Device, fop.frameInputs(in)); err != nil {
				return nil, err
			}
			for i, m := range argMetas {
				if isPerFrame(m) {
					argMetas[i] = frameMeta(m)
				}
			}
		} else if err := checkSchemaInput(n.Args, n.Device, in); err != nil {
			return nil, err
		}
		if n.Args != nil {
			n.Args.argMetas = append(n.Args.argMetas[:0], argMetas...)
		}
		metas, err := op.Infer(in)
		if err != nil {
			if _, ok := err.(*Error); ok {
				return nil, err
			}
			return nil, Errorf(StatusInvalidPipeline, "%s: %v", describe(n.Name, n.OpName), err)
		}
		if len(metas) < len(n.Out) {
			return nil, Errorf(StatusInvalidPipeline, "%s: names %d outputs; with these arguments and inputs it produces %d", describe(n.Name, n.OpName), len(n.Out), len(metas))
		}
		for i, d := range n.Out {
			d.Meta = metas[i]
			if err := checkOutputMeta(n, d, s.MaxImagePixels, s.BatchSize); err != nil {
				return nil, err
			}
		}
	}
	g.Declared = nodes
	g.Nodes = fuse(order)
	for i, n := range g.Nodes {
		n.ID = i
	}
	// Tell producers about their single consumer (decoders size their output by it).
	for _, n := range g.Nodes {
		ca, ok := n.Op.(ConsumerAware)
		if !ok || len(n.Out) != 1 {
			continue
		}
		d := n.Out[0]
		if d.Output < 0 && len(d.Consumers) == 1 {
			ca.SetConsumer(d.Consumers[0].Op)
		}
	}
	return g, nil
}

// fuse merges a producer into its single consumer when the consumer can absorb it and
// nobody else needs the intermediate value.
func fuse(order []*Node) []*Node {
	removed := map[*Node]bool{}
	for _, n := range order {
		fz, ok := n.Op.(Fusable)
		if !ok || len(n.In) != 1 {
			continue
		}
		d := n.In[0]
		p := d.Producer
		if d.Output >= 0 || len(d.Consumers) != 1 || len(p.In) != 1 || len(p.ArgIn) != 0 || p.Device != n.Device {
			continue
		}
		fused, ok := fz.Fuse(p.Op)
		if !ok {
			continue
		}
		n.Op = fused
		n.Fused = append(append(append([]string{}, p.Fused...), p.Name), n.Fused...)
		n.In = []*DataNode{p.In[0]}
		src := p.In[0]
		for i, c := range src.Consumers {
			if c == p {
				src.Consumers[i] = n
			}
		}
		removed[p] = true
	}
	out := order[:0:0]
	for _, n := range order {
		if !removed[n] {
			out = append(out, n)
		}
	}
	return out
}

func topoSort(nodes []*Node) ([]*Node, error) {
	indeg := map[*Node]int{}
	for _, n := range nodes {
		for _, d := range append(append([]*DataNode{}, n.In...), n.ArgIn...) {
			_ = d
			indeg[n]++
		}
	}
	var ready, order []*Node
	for _, n := range nodes {
		if indeg[n] == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, d := range n.Out {
			for _, c := range d.Consumers {
				indeg[c]--
				if indeg[c] == 0 {
					ready = append(ready, c)
				}
			}
		}
	}
	if len(order) != len(nodes) {
		var cyc []string
		for _, n := range nodes {
			if indeg[n] > 0 {
				cyc = append(cyc, n.Name)
			}
		}
		return nil, Errorf(StatusInvalidPipeline, "the graph has a cycle through nodes %s", strings.Join(cyc, ", "))
	}
	return order, nil
}

func (g *Graph) dataNames() string {
	if len(g.Data) == 0 {
		return "(none)"
	}
	return strings.Join(sortedKeys(g.Data), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DynamicInputs is implemented by operators whose Infer accepts inputs whose element
// type and rank are known only at run time (DTypeInvalid, nil Shape: a python_function's
// output) because they read them per sample (cast, reshape, flip).
type DynamicInputs interface {
	TakesDynamicInputs() bool
}

// checkDynamicInputs refuses a node that needs at build time the type of data that is
// known only at run time (a host-batch operator's output, e.g. python_function's); only
// host-batch operators and DynamicInputs ones take such data as inputs. Argument inputs may be dynamic: the
// argument helpers (FloatAt, FloatsAt, ...) read each sample's value by its run-time
// type and refuse a sample that does not fit, as DALI does.
func checkDynamicInputs(n *Node) error {
	if _, ok := n.Op.(HostBatchOperator); ok {
		return nil
	}
	if d, ok := n.Op.(DynamicInputs); ok && d.TakesDynamicInputs() {
		return nil
	}
	for _, d := range n.In {
		if _, ok := d.Producer.Op.(HostBatchOperator); ok && d.Meta.IsDynamic() {
			return Errorf(StatusInvalidPipeline, "%s: input %q comes from node %q (%s), whose element type and dimensions are known only when it runs; godali's operators need them when the pipeline is built, so only another python_function (or cast, reshape, flip) may take it (or do this step inside the function)",
				describe(n.Name, n.OpName), d.Name, d.Producer.Name, d.Producer.OpName)
		}
	}
	return nil
}
