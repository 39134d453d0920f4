package engine

import (
	"fmt"
	"strings"
	"testing"
)

// passOp copies its input: a stand-in operator registered for every device, so that the
// partitioning can be tested in the CPU flavour, where no real mixed or gpu backend
// exists.
type passOp struct{}

func (passOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	if len(in) == 0 {
		return []TensorMeta{{DType: UInt8, Shape: []int{4}}}, nil
	}
	return []TensorMeta{in[0]}, nil
}
func (passOp) Setup(ws *Workspace) error {
	if len(ws.In) == 0 {
		ws.Out[0].SetShape(4)
		return nil
	}
	ws.Out[0].SetShape(ws.In[0].Shape...)
	return nil
}
func (passOp) Run(ws *Workspace) error {
	if len(ws.In) > 0 {
		copy(ws.Out[0].Data, ws.In[0].Data)
	}
	return nil
}

func init() {
	RegisterSchema(&Schema{Name: "_test.pass", Doc: "test only: copies its input",
		MinInputs: 0, MaxInputs: 1, Outputs: []string{"out"}, Backends: map[string]BackendFacts{"mixed": {}, "gpu": {}},
		Args: []ArgSpec{{Name: "flag", Type: ArgInt, Default: 0, TensorInput: true, Doc: "ignored"}}})
	for _, dev := range []string{"cpu", "mixed", "gpu"} {
		RegisterBackend("_test.pass", dev, func(*Args) (Operator, error) { return passOp{}, nil })
	}
}

// stagePipeline is a ResNet-50-shaped graph of stand-in operators: a reader, a mixed
// "decoder", two gpu nodes, one of them with a host argument input, and labels moved to
// the GPU by a mixed node.
const stagePipeline = `{"batch_size": 2, "device_id": 0, "ops": [
	{"op": "readers.file", "name": "R", "outputs": ["jpegs", "labels"], "args": {"files": ["a.jpg", "b.jpg"]}},
	{"op": "_test.pass", "name": "dec", "device": "mixed", "inputs": ["jpegs"], "outputs": ["images"]},
	{"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"]},
	{"op": "_test.pass", "name": "res", "device": "gpu", "inputs": ["images"], "outputs": ["resized"]},
	{"op": "_test.pass", "name": "cmn", "device": "gpu", "inputs": ["resized"], "arg_inputs": {"flag": "mirror"}, "outputs": ["out"]},
	{"op": "_test.pass", "name": "lab", "device": "mixed", "inputs": ["labels"], "outputs": ["labels_gpu"]}],
	"outputs": ["out", "labels", "labels_gpu"]}`

func nodeNames(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func dataNames(ds []*DataNode) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

// inGraphOrder reports whether ns keeps the order of g.Nodes.
func inGraphOrder(g *Graph, ns []*Node) bool {
	last := -1
	for _, n := range ns {
		if n.ID <= last || g.Nodes[n.ID] != n {
			return false
		}
		last = n.ID
	}
	return true
}

func sameSet(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	m := map[string]int{}
	for _, s := range got {
		m[s]++
	}
	for _, s := range want {
		m[s]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestPartitionSplitsSampleAndBatchNodes(t *testing.T) {
	p, err := NewPipeline([]byte(stagePipeline))
	if err != nil {
		t.Fatal(err)
	}
	pt := p.Part
	if !pt.UsesGPU() {
		t.Fatal("UsesGPU is false")
	}
	// Workers run cpu and mixed nodes per sample; the GPU stage runs mixed and gpu nodes
	// per batch, both in graph order.
	if got := nodeNames(pt.Sample); !sameSet(got, []string{"R", "dec", "coin", "lab"}) || !inGraphOrder(p.Graph, pt.Sample) {
		t.Errorf("per-sample nodes %v", got)
	}
	if got := nodeNames(pt.Batch); !sameSet(got, []string{"dec", "res", "cmn", "lab"}) || !inGraphOrder(p.Graph, pt.Batch) {
		t.Errorf("per-batch nodes %v", got)
	}
	// Host data read by the GPU phase is kept with the batch: the encoded images, the
	// argument input and the labels (also a host output).
	if got := dataNames(pt.Kept); !sameSet(got, []string{"jpegs", "mirror", "labels"}) {
		t.Errorf("kept %v", got)
	}
	if got := dataNames(pt.Device); !sameSet(got, []string{"images", "resized", "out", "labels_gpu"}) {
		t.Errorf("device data %v", got)
	}
	for name, gpu := range map[string]bool{"jpegs": false, "labels": false, "mirror": false, "images": true, "out": true, "labels_gpu": true} {
		d := p.Graph.Data[name]
		if pt.OnGPU(d) != gpu {
			t.Errorf("%s: OnGPU %v, want %v", name, pt.OnGPU(d), gpu)
		}
		if pt.IsKept(d) == gpu && name != "images" && name != "out" && name != "labels_gpu" {
			t.Errorf("%s: IsKept %v", name, pt.IsKept(d))
		}
	}
	// The workers write each output where the GPU stage expects it.
	slots := func(name string) outSlot {
		d := p.Graph.Data[name]
		return pt.slots[d.Producer.ID][d.Index]
	}
	if s := slots("jpegs"); s.kept < 0 || s.device >= 0 || s.output {
		t.Errorf("jpegs slot %+v", s)
	}
	if s := slots("labels"); s.kept < 0 || !s.output {
		t.Errorf("labels slot %+v", s)
	}
	if s := slots("images"); s.device < 0 || s.kept >= 0 {
		t.Errorf("images slot %+v", s)
	}
	if s := slots("labels_gpu"); s.device < 0 || !s.output {
		t.Errorf("labels_gpu slot %+v", s)
	}
	// Outputs know where they live.
	b := p.newBatch(0, 0, p.Spec.BatchSize)
	for k, want := range []bool{true, false, true} {
		if b.Output(k).OnGPU != want {
			t.Errorf("output %d (%s): OnGPU %v", k, b.Output(k).Name, b.Output(k).OnGPU)
		}
	}
}

func TestPartitionCPUOnlyPipeline(t *testing.T) {
	p, err := NewPipeline([]byte(resnetJSON(t.TempDir(), 2, 4, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Part.UsesGPU() || len(p.Part.Kept) != 0 || len(p.Part.Device) != 0 {
		t.Fatalf("a CPU pipeline has a GPU phase: %+v", p.Part)
	}
	if len(p.Part.Sample) != len(p.Graph.Nodes) {
		t.Fatalf("workers run %d of %d nodes", len(p.Part.Sample), len(p.Graph.Nodes))
	}
}

func TestPartitionRejectsWrongDataFlow(t *testing.T) {
	const head = `{"batch_size": 2, "device_id": 0, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["jpegs", "labels"], "args": {"files": ["a.jpg"]}},
		{"op": "_test.pass", "name": "dec", "device": "mixed", "inputs": ["jpegs"], "outputs": ["images"]},`
	cases := []struct {
		name, ops string
		want      []string
	}{
		{"cpu node on GPU data",
			`{"op": "_test.pass", "name": "back", "device": "cpu", "inputs": ["images"], "outputs": ["x"]}`,
			[]string{`"back"`, `input "images" is GPU data`, `node "dec"`, `device=\"gpu\"`}},
		{"mixed node on GPU data",
			`{"op": "_test.pass", "name": "again", "device": "mixed", "inputs": ["images"], "outputs": ["x"]}`,
			[]string{`"again"`, "GPU data", "host data"}},
		{"gpu node on host data",
			`{"op": "_test.pass", "name": "g", "device": "gpu", "inputs": ["labels"], "outputs": ["x"]}`,
			[]string{`"g"`, `input "labels" is host data`, ".gpu()"}},
		{"GPU argument input",
			`{"op": "_test.pass", "name": "g", "device": "gpu", "inputs": ["images"], "arg_inputs": {"flag": "images"}, "outputs": ["x"]}`,
			[]string{`"g"`, `argument input "images"`, "host data"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			desc := head + c.ops + `], "outputs": ["x"]}`
			_, err := NewPipeline([]byte(desc))
			if err == nil {
				t.Fatalf("accepted: %s", desc)
			}
			if StatusOf(err) != StatusInvalidPipeline {
				t.Errorf("status %d: %v", StatusOf(err), err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), strings.ReplaceAll(w, `\"`, `"`)) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestCPUFlavourRefusesGPUDevices: in libgodali.so a real operator on device "gpu" or
// "mixed" fails at build with ErrNoCUDA and a message naming the node; a graph that gets
// past BuildGraph (stand-in operators) fails at Build the same way.
func TestCPUFlavourRefusesGPUDevices(t *testing.T) {
	if CUDAFlavour {
		t.Skip("the CUDA flavour has GPU operators")
	}
	for _, dev := range []string{"gpu", "mixed"} {
		op := "resize"
		if dev == "mixed" {
			op = "decoders.image"
		}
		desc := fmt.Sprintf(`{"batch_size": 2, "device_id": 0, "ops": [
			{"op": "readers.file", "name": "R", "outputs": ["jpegs", "labels"], "args": {"files": ["a.jpg"]}},
			{"op": %q, "name": "onGPU", "device": %q, "inputs": ["jpegs"], "outputs": ["x"], "args": {}}],
			"outputs": ["x"]}`, op, dev)
		_, err := NewPipeline([]byte(desc))
		if StatusOf(err) != StatusNoCUDA || !strings.Contains(err.Error(), `"onGPU"`) || !strings.Contains(err.Error(), "libgodali_cuda.so") {
			t.Errorf("device %s: %v (status %d)", dev, err, StatusOf(err))
		}
	}
	p, err := NewPipeline([]byte(stagePipeline))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.readers, p.primary = nil, -1 // no files to open: the GPU stage is what must fail
	err = p.Build()
	if StatusOf(err) != StatusNoCUDA || !strings.Contains(err.Error(), `"dec"`) {
		t.Fatalf("Build: %v (status %d)", err, StatusOf(err))
	}
}
