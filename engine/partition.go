package engine

// Partition says where each node of a Graph runs (docs/cuda.md). Nodes on device "cpu"
// run per sample on the worker threads; "gpu" nodes run per batch on the GPU stage;
// "mixed" nodes do both: a per-sample half on the workers (host inputs, GPU outputs) and
// a per-batch half on the GPU stage. The CPU phase of a batch is therefore complete
// before its GPU phase starts, and the producer keeps dispatching the CPU phase of the
// next batches while the GPU stage works.
type Partition struct {
	// Sample lists the nodes the workers run per sample (cpu and mixed), in graph order.
	Sample []*Node
	// Batch lists the nodes the GPU stage runs per batch (mixed and gpu), in graph order.
	Batch []*Node
	// Kept lists host data the GPU stage reads: inputs and argument inputs of mixed and
	// gpu nodes. Workers write them into pinned memory kept with the batch.
	Kept []*DataNode
	// Device lists GPU data: outputs of mixed and gpu nodes.
	Device []*DataNode
	// Phases splits Sample at host-batch nodes (HostBatchOperator): the workers run
	// Phases[p] for every sample of a batch, then the batch's goroutine runs
	// HostBatch[p], then phase p+1 starts. A graph without host-batch nodes has one phase.
	Phases    [][]*Node
	HostBatch [][]*Node
	// Cross lists the host data that crosses a phase boundary (host-batch nodes' inputs
	// and outputs, and whatever a later phase reads); the batch holds it.
	Cross []*DataNode

	onGPU map[*DataNode]bool
	value map[*DataNode]int // index in Kept ++ Device
	slots [][]outSlot       // by node ID, output index: where the worker writes it

	cross   map[*DataNode]int // index in Cross
	crossIn [][]*DataNode     // by phase: the values it reads from earlier phases
}

// outSlot is where a worker writes output k of a per-sample node.
type outSlot struct {
	output bool // a pipeline output: the batch's host lease
	kept   int  // value index of host data the GPU stage reads, -1 if none
	device int  // value index of GPU data (mixed outputs), -1 if none
	cross  int  // index in Cross of data a later phase reads, -1 if none
}

// UsesGPU reports whether the graph has mixed or gpu nodes.
func (pt *Partition) UsesGPU() bool { return len(pt.Batch) > 0 }

// OnGPU reports whether d is GPU data.
func (pt *Partition) OnGPU(d *DataNode) bool { return pt.onGPU[d] }

// IsKept reports whether d is host data the GPU stage reads.
func (pt *Partition) IsKept(d *DataNode) bool {
	v, ok := pt.value[d]
	return ok && v < len(pt.Kept)
}

// valueIndex is d's index among the values the GPU stage tracks (Kept then Device), -1
// for data only the workers see.
func (pt *Partition) valueIndex(d *DataNode) int {
	if v, ok := pt.value[d]; ok {
		return v
	}
	return -1
}

// PartitionGraph checks where data flows between host and GPU and splits g's nodes
// between the workers and the GPU stage. A cpu or mixed node cannot take GPU data (there
// is no way back to the host inside a pipeline), a gpu node cannot take host data (move
// it with a mixed operator, e.g. DataNode.gpu()), and argument inputs are host data.
func PartitionGraph(g *Graph) (*Partition, error) {
	pt := &Partition{onGPU: map[*DataNode]bool{}, value: map[*DataNode]int{}, cross: map[*DataNode]int{}}
	for _, n := range g.Nodes {
		for _, d := range n.Out {
			pt.onGPU[d] = n.Device != "cpu"
		}
	}
	kept := map[*DataNode]bool{}
	for _, n := range g.Nodes {
		where := describe(n.Name, n.OpName)
		for _, d := range n.In {
			switch {
			case n.Device != "gpu" && pt.onGPU[d]:
				return nil, Errorf(StatusInvalidPipeline,
					"%s on device %q: input %q is GPU data (from node %q on device %q), but a %s node takes host data; run %q with device=\"gpu\" (GPU data does not go back to the host inside a pipeline)",
					where, n.Device, d.Name, d.Producer.Name, d.Producer.Device, n.Device, n.Name)
			case n.Device == "gpu" && !pt.onGPU[d]:
				return nil, Errorf(StatusInvalidPipeline,
					"%s on device \"gpu\": input %q is host data (from node %q on device %q); give it GPU data: decode with device=\"mixed\", or move it with .gpu() (operator _to_gpu)",
					where, d.Name, d.Producer.Name, d.Producer.Device)
			}
			if n.Device != "cpu" && !pt.onGPU[d] {
				kept[d] = true
			}
		}
		for _, d := range n.ArgIn {
			if pt.onGPU[d] {
				return nil, Errorf(StatusInvalidPipeline,
					"%s: argument input %q is GPU data (from node %q on device %q); argument inputs must be host data (produce them on the CPU)",
					where, d.Name, d.Producer.Name, d.Producer.Device)
			}
			if n.Device != "cpu" {
				kept[d] = true
			}
		}
		if n.Device != "gpu" && !isHostBatch(n) {
			pt.Sample = append(pt.Sample, n)
		}
		if n.Device != "cpu" {
			pt.Batch = append(pt.Batch, n)
		}
	}
	// Values in graph order, so that the layout does not depend on map iteration.
	for _, n := range g.Nodes {
		for _, d := range n.Out {
			if kept[d] {
				pt.value[d] = len(pt.Kept)
				pt.Kept = append(pt.Kept, d)
			}
		}
	}
	for _, n := range g.Nodes {
		for _, d := range n.Out {
			if pt.onGPU[d] {
				pt.value[d] = len(pt.Kept) + len(pt.Device)
				pt.Device = append(pt.Device, d)
			}
		}
	}
	if err := pt.splitPhases(g); err != nil {
		return nil, err
	}
	pt.slots = make([][]outSlot, len(g.Nodes))
	for _, n := range pt.Sample {
		s := make([]outSlot, len(n.Out))
		for k, d := range n.Out {
			s[k] = outSlot{output: d.Output >= 0, kept: -1, device: -1, cross: -1}
			if v, ok := pt.cross[d]; ok {
				s[k].cross = v
			}
			if v, ok := pt.value[d]; ok {
				if pt.onGPU[d] {
					s[k].device = v
				} else {
					s[k].kept = v
				}
			}
		}
		pt.slots[n.ID] = s
	}
	return pt, nil
}

func isHostBatch(n *Node) bool {
	_, ok := n.Op.(HostBatchOperator)
	return ok && n.Device == "cpu"
}

// splitPhases places every per-sample node in the first phase after all the host-batch
// nodes it depends on, and lists the data crossing phases.
func (pt *Partition) splitPhases(g *Graph) error {
	phase := make(map[*Node]int, len(g.Nodes))
	last := 0
	for _, n := range g.Nodes { // producers first
		p := 0
		for _, d := range append(append([]*DataNode{}, n.In...), n.ArgIn...) {
			q := phase[d.Producer]
			if isHostBatch(d.Producer) {
				q++
			}
			p = max(p, q)
		}
		if p > 0 && n.Device != "cpu" {
			return Errorf(StatusInvalidPipeline, "%s on device %q depends on the output of a host-batch operator (python_function); godali runs those only before the CPU operators, not before GPU ones: move the data to the GPU after the pipeline, or do the GPU step in the function",
				describe(n.Name, n.OpName), n.Device)
		}
		phase[n] = p
		last = max(last, p)
	}
	pt.Phases = make([][]*Node, last+1)
	pt.HostBatch = make([][]*Node, last+1)
	pt.crossIn = make([][]*DataNode, last+1)
	for _, n := range g.Nodes {
		p := phase[n]
		switch {
		case isHostBatch(n):
			pt.HostBatch[p] = append(pt.HostBatch[p], n)
		case n.Device != "gpu":
			pt.Phases[p] = append(pt.Phases[p], n)
		}
	}
	// A value crosses when a host-batch node makes or reads it, or a later phase reads it.
	for _, n := range g.Nodes {
		for _, d := range n.Out {
			crosses := isHostBatch(n)
			for _, c := range d.Consumers {
				if isHostBatch(c) {
					crosses = true
					continue
				}
				if isHostBatch(n) || phase[c] > phase[n] {
					crosses = true
					if !containsData(pt.crossIn[phase[c]], d) {
						pt.crossIn[phase[c]] = append(pt.crossIn[phase[c]], d)
					}
				}
			}
			if crosses {
				pt.cross[d] = len(pt.Cross)
				pt.Cross = append(pt.Cross, d)
			}
		}
	}
	return nil
}

func containsData(ds []*DataNode, d *DataNode) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}
