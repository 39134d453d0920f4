package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// Tests of the augmentation operators (random.normal, random.choice,
// brightness_contrast, hsv, color_twist, rotate, gaussian_blur): argument checks, per-thread
// determinism and allocation-free steady state. Their numbers are checked against
// numpy/PIL references in python/tests/test_augment.py.

func oneNode(op, args string) string {
	return fmt.Sprintf(`{"batch_size": 2, "ops": [
		{"op": "readers.file", "name": "R", "outputs": ["jpegs", "labels"], "args": {"files": ["a.jpg"]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["jpegs"], "outputs": ["img"]},
		{"op": %q, "name": "aug", "inputs": ["img"], "outputs": ["x"], "args": %s}], "outputs": ["x"]}`, op, args)
}

func oneRandom(op, args string) string {
	return fmt.Sprintf(`{"batch_size": 2, "ops": [{"op": %q, "name": "rnd", "outputs": ["x"], "args": %s}], "outputs": ["x"]}`, op, args)
}

func TestAugmentArgumentErrors(t *testing.T) {
	cases := []struct {
		name, json string
		want       []string
	}{
		{"normal stddev", oneRandom("random.normal", `{"stddev": -1}`), []string{`"rnd"`, "random.normal", `"stddev"`, ">= 0"}},
		{"choice zero", oneRandom("random.choice", `{"a": 0}`), []string{`"rnd"`, `"a"`, "int >= 1"}},
		{"choice fraction", oneRandom("random.choice", `{"a": 2.5}`), []string{`"a"`, "int >= 1"}},
		{"choice empty", oneRandom("random.choice", `{"a": []}`), []string{`"a"`, "empty"}},
		{"choice missing a", oneRandom("random.choice", `{}`), []string{`"rnd"`, `"a"`, "missing"}},
		{"choice p length", oneRandom("random.choice", `{"a": [1, 2, 3], "p": [0.5, 0.5]}`), []string{`"p"`, "Unexpected shape", "Expected {3}, but got {2}"}},
		{"choice p sum", oneRandom("random.choice", `{"a": 3, "p": [0.3, 0.3, 0.3]}`), []string{`"p"`, "Sum of probabilities must be 1.0"}},
		{"choice p negative", oneRandom("random.choice", `{"a": 2, "p": [1.5, -0.5]}`), []string{`"p"`, "in range [0, 1], but got: 1.5"}},
		{"bc dtype", oneNode("brightness_contrast", `{"dtype": "FLOAT16"}`), []string{`"aug"`, "brightness_contrast", `"dtype"`, "UINT8, INT16, INT32 or FLOAT"}},
		{"bc unknown", oneNode("brightness_contrast", `{"brightnes": 1}`), []string{`"aug"`, `"brightnes"`, "brightness_shift"}},
		{"hsv dtype", oneNode("hsv", `{"dtype": "INT8"}`), []string{`"aug"`, "hsv", `"dtype"`}},
		{"hsv type", oneNode("hsv", `{"hue": "red"}`), []string{`"aug"`, `"hue"`, "expected number"}},
		{"twist brightness", oneNode("color_twist", `{"brightness": -0.5}`), []string{`"aug"`, "color_twist", `"brightness"`, ">= 0"}},
		{"twist contrast", oneNode("color_twist", `{"contrast": -2}`), []string{`"contrast"`, ">= 0"}},
		{"twist gray", oneNode("color_twist", `{"image_type": "GRAY"}`), []string{`"image_type"`, "RGB or BGR"}},
		{"rotate angle", oneNode("rotate", `{}`), []string{`"aug"`, "rotate", `"angle"`, "Not all required arguments were specified"}},
		{"rotate size and keep", oneNode("rotate", `{"angle": 5, "size": [4, 4], "keep_size": true}`), []string{`"size"`, "keep_size"}},
		{"rotate size", oneNode("rotate", `{"angle": 5, "size": [0, 4]}`), []string{`"size"`, "at least 1"}},
		{"rotate interp", oneNode("rotate", `{"angle": 5, "interp_type": "INTERP_CUBIC"}`), []string{`"interp_type"`, "INTERP_LINEAR and INTERP_NN"}},
		{"rotate fill", oneNode("rotate", `{"angle": 5, "fill_value": 300}`), []string{`"fill_value"`, "[0, 255]"}},
		{"rotate dtype", oneNode("rotate", `{"angle": 5, "dtype": "FLOAT"}`), []string{`"dtype"`, "UINT8"}},
		{"blur nothing", oneNode("gaussian_blur", `{}`), []string{`"aug"`, "gaussian_blur", "`sigma` and `window_size` shouldn't be 0"}},
		{"blur even window", oneNode("gaussian_blur", `{"window_size": 4}`), []string{`"window_size"`, "odd"}},
		{"blur sigma", oneNode("gaussian_blur", `{"sigma": [1, -2]}`), []string{"`sigma` must have non-negative values, got -2", "axis: 1"}},
		{"blur three sigmas", oneNode("gaussian_blur", `{"sigma": [1, 2, 3]}`), []string{`"sigma"`, "one per spatial axis"}},
		{"hsv gray input", strings.Replace(oneNode("hsv", `{}`), `"outputs": ["img"]`, `"outputs": ["img"], "args": {"output_type": "GRAY"}`, 1),
			[]string{`"aug"`, "3 channels"}},
		{"rotate on labels", `{"batch_size": 2, "ops": [
			{"op": "readers.file", "name": "R", "outputs": ["jpegs", "labels"], "args": {"files": ["a.jpg"]}},
			{"op": "rotate", "name": "aug", "inputs": ["labels"], "outputs": ["x"], "args": {"angle": 3}}], "outputs": ["x"]}`,
			[]string{`"aug"`, "HWC uint8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewPipeline([]byte(c.json))
			if err == nil {
				t.Fatalf("accepted: %s", c.json)
			}
			if s := StatusOf(err); s != StatusInvalidPipeline {
				t.Errorf("status %d, want invalid pipeline: %v", s, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A gpu request for a host-only operator fails at build time in both flavours, naming
// the node and the operator and saying that only the cpu exists.
func TestAugmentGPURequestNamesTheOperator(t *testing.T) {
	// brightness_contrast, hsv and color_twist have gpu backends (the CUDA flavour's).
	for _, op := range []string{"rotate", "gaussian_blur", "random.normal", "random.choice"} {
		args := `{"angle": 3, "a": 3}`
		var desc string
		if strings.HasPrefix(op, "random.") {
			desc = fmt.Sprintf(`{"batch_size": 2, "device_id": 0, "ops": [{"op": %q, "name": "aug", "device": "gpu", "outputs": ["x"], "args": {"a": 3}}], "outputs": ["x"]}`, op)
		} else {
			desc = strings.Replace(oneNode(op, args), `"name": "aug",`, `"name": "aug", "device": "gpu",`, 1)
			desc = strings.Replace(desc, `"batch_size": 2,`, `"batch_size": 2, "device_id": 0,`, 1)
			if op != "rotate" {
				desc = strings.Replace(desc, args, "{}", 1)
			}
		}
		_, err := NewPipeline([]byte(desc))
		if err == nil {
			t.Fatalf("%s: device gpu accepted", op)
		}
		msg := err.Error()
		for _, w := range []string{`"aug"`, op, "only a cpu implementation", `"gpu"`} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not mention %q", op, msg, w)
			}
		}
		if s := StatusOf(err); s != StatusInvalidPipeline {
			t.Errorf("%s: status %d, want invalid pipeline (no flavour has it)", op, s)
		}
	}
}

func TestHostOnlySchemasHaveOnlyCPU(t *testing.T) {
	for _, s := range Schemas() {
		if s.HostOnly && (len(s.Devices) != 1 || s.Devices[0] != "cpu") {
			t.Errorf("%s is HostOnly but has devices %v", s.Name, s.Devices)
		}
	}
}

func augmentJSON(root string, threads int) string {
	return fmt.Sprintf(`{"batch_size": 5, "num_threads": %d, "seed": 77, "prefetch_queue_depth": 2,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "random_shuffle": true}},
	 {"op": "decoders.image", "name": "decode", "inputs": ["jpegs"], "outputs": ["images"]},
	 {"op": "resize", "name": "small", "inputs": ["images"], "outputs": ["small"], "args": {"resize_shorter": 40}},
	 {"op": "random.uniform", "name": "u", "outputs": ["b"], "args": {"range": [0.6, 1.4]}},
	 {"op": "random.normal", "name": "n", "outputs": ["hue"], "args": {"stddev": 20}},
	 {"op": "random.normal", "name": "n2", "outputs": ["noise"], "args": {"shape": [3, 2], "mean": 2, "stddev": 3, "dtype": "INT32"}},
	 {"op": "random.choice", "name": "ch", "outputs": ["angle"], "args": {"a": [-30, 0, 15, 90], "p": [0.25, 0.25, 0.25, 0.25]}},
	 {"op": "random.choice", "name": "ch2", "outputs": ["k"], "args": {"a": 7, "shape": [4]}},
	 {"op": "brightness_contrast", "name": "bc", "inputs": ["small"], "arg_inputs": {"brightness": "b", "contrast": "b"}, "outputs": ["bc"]},
	 {"op": "hsv", "name": "hsv", "inputs": ["bc"], "arg_inputs": {"hue": "hue"}, "outputs": ["hsv"], "args": {"saturation": 1.3}},
	 {"op": "color_twist", "name": "ct", "inputs": ["hsv"], "arg_inputs": {"brightness": "b"}, "outputs": ["ct"], "args": {"hue": 10}},
	 {"op": "rotate", "name": "rot", "inputs": ["ct"], "arg_inputs": {"angle": "angle"}, "outputs": ["rot"], "args": {"fill_value": 0}},
	 {"op": "gaussian_blur", "name": "blur", "inputs": ["rot"], "arg_inputs": {"sigma": "b"}, "outputs": ["blur"]}],
	"outputs": ["blur", "hue", "noise", "angle", "k", "labels"]}`, threads, root)
}

func viewBytes(v View) []byte {
	n := v.DType.Size()
	for _, d := range v.Shape {
		n *= int(d)
	}
	return unsafe.Slice((*byte)(v.Ptr), n)
}

// epochSamples runs one epoch and returns every output's samples, with their shapes.
func epochSamples(t *testing.T, p *Pipeline) []string {
	var out []string
	eachBatch(t, p, func(b *Batch) {
		for k := 0; k < b.NumOutputs(); k++ {
			o := b.Output(k)
			for i := 0; i < o.NumSamples(); i++ {
				v, err := o.SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%d/%d %v %x", k, i, v.Shape, viewBytes(v)))
				v.Lease.Release()
			}
		}
	})
	return out
}

// The random operators draw from the sample's stream: every output is bit for bit the
// same whatever the number of threads, and the random values really vary.
func TestAugmentDeterministicAcrossThreads(t *testing.T) {
	root := writeSmallDataset(t, 3, 4)
	ref := epochSamples(t, mustPipeline(t, augmentJSON(root, 1)))
	if len(ref) != 3*6*5 { // 3 batches of 5 samples, 6 outputs
		t.Fatalf("%d samples, want 90", len(ref))
	}
	for _, threads := range []int{2, 4} {
		got := epochSamples(t, mustPipeline(t, augmentJSON(root, threads)))
		if len(got) != len(ref) {
			t.Fatalf("%d threads: %d samples, want %d", threads, len(got), len(ref))
		}
		for i := range ref {
			if got[i] != ref[i] {
				t.Fatalf("%d threads: sample %d differs:\n%.200s\n%.200s", threads, i, got[i], ref[i])
			}
		}
	}
	angles := map[string]bool{}
	for _, s := range ref {
		if strings.HasPrefix(s, "3/") {
			angles[s[strings.LastIndexByte(s, ' ')+1:]] = true
		}
	}
	if len(angles) < 2 {
		t.Errorf("random.choice drew one angle for every sample: %v", angles)
	}
}

// testOp builds one operator of a node with the given JSON args and per-sample
// argument names, as the graph does, for direct Setup/Run calls.
func testOp(t *testing.T, op, args string, argInputs ...string) (Operator, *Args) {
	t.Helper()
	s, ok := LookupSchema(op)
	if !ok {
		t.Fatalf("no operator %s", op)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &raw); err != nil {
		t.Fatal(err)
	}
	a, err := newArgs("t", s, raw, argInputs)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := lookupFactory(op, "cpu")
	o, err := f(a)
	if err != nil {
		t.Fatal(err)
	}
	return o, a
}

func scalarTensor(v float32) *Tensor {
	t := &Tensor{DType: Float32, Shape: []int{}, Data: make([]byte, 4)}
	writeScalar(t.Data, Float32, float64(v))
	return t
}

// Setup and Run allocate nothing once the worker has its state and buffers.
func TestAugmentSteadyStateDoesNotAllocate(t *testing.T) {
	const h, w = 37, 53
	in := &Tensor{DType: UInt8, Layout: "HWC", Shape: []int{h, w, 3}, Data: make([]byte, h*w*3)}
	for i := range in.Data {
		in.Data[i] = byte(i * 7)
	}
	meta := TensorMeta{DType: UInt8, Layout: "HWC", Shape: []int{-1, -1, 3}}
	cases := []struct {
		op, args string
		per      []string
	}{
		{"brightness_contrast", `{"brightness_shift": 0.1}`, []string{"brightness", "contrast"}},
		{"brightness_contrast", `{"dtype": "FLOAT"}`, nil},
		{"hsv", `{"saturation": 0.7}`, []string{"hue"}},
		{"color_twist", `{"image_type": "BGR"}`, []string{"brightness", "hue"}},
		{"rotate", `{"fill_value": 9}`, []string{"angle"}},
		{"rotate", `{"angle": 33, "interp_type": "INTERP_NN"}`, nil},
		{"gaussian_blur", `{"window_size": [3, 5]}`, []string{"sigma"}},
		{"gaussian_blur", `{"sigma": 1.5, "dtype": "FLOAT"}`, nil},
		{"random.normal", `{"shape": [8]}`, []string{"mean"}},
		{"random.choice", `{"a": [1, 2, 3], "p": [0.2, 0.3, 0.5], "shape": [8]}`, nil},
	}
	for _, c := range cases {
		t.Run(c.op+c.args, func(t *testing.T) {
			o, _ := testOp(t, c.op, c.args, c.per...)
			inputs := []TensorMeta{meta}
			if strings.HasPrefix(c.op, "random.") {
				inputs = nil
			}
			metas, err := o.Infer(inputs)
			if err != nil {
				t.Fatal(err)
			}
			ws := &Workspace{Node: "t", RNG: &RNG{}, Out: []*Tensor{{DType: metas[0].DType}}}
			if inputs != nil {
				ws.In = []*Tensor{in}
			}
			for range c.per {
				ws.ArgIn = append(ws.ArgIn, scalarTensor(1.25))
			}
			if s, ok := o.(WorkerStateful); ok {
				ws.State = s.NewWorkerState()
			}
			out := make([]byte, 4*(h+w)*(h+w)*3)
			step := func() {
				if err := o.Setup(ws); err != nil {
					t.Fatal(err)
				}
				ws.Out[0].Data = out[:ws.Out[0].NumBytes()]
				if err := o.Run(ws); err != nil {
					t.Fatal(err)
				}
			}
			step()
			if n := testing.AllocsPerRun(20, step); n != 0 {
				t.Errorf("%v allocations per sample", n)
			}
		})
	}
}

// A per-sample argument that is not one number per sample is a data error naming the
// node and the argument; so is a negative per-sample color_twist brightness.
func TestAugmentPerSampleArgumentErrors(t *testing.T) {
	in := &Tensor{DType: UInt8, Layout: "HWC", Shape: []int{4, 4, 3}, Data: make([]byte, 48)}
	o, _ := testOp(t, "color_twist", `{}`, "brightness")
	ws := &Workspace{Node: "t", RNG: &RNG{}, In: []*Tensor{in}, Out: []*Tensor{{DType: UInt8, Data: make([]byte, 48)}},
		State: o.(WorkerStateful).NewWorkerState()}
	ws.ArgIn = []*Tensor{{DType: Float32, Shape: []int{2}, Data: make([]byte, 8)}}
	if err := o.Setup(ws); err != nil {
		t.Fatal(err)
	}
	err := o.Run(ws)
	if err == nil || !strings.Contains(err.Error(), `"brightness"`) || !strings.Contains(err.Error(), "one number per sample") {
		t.Errorf("two values per sample: %v", err)
	}
	ws.ArgIn = []*Tensor{scalarTensor(-1)}
	err = o.Run(ws)
	if err == nil || !strings.Contains(err.Error(), `"t" (color_twist)`) || !strings.Contains(err.Error(), ">= 0") {
		t.Errorf("negative brightness: %v", err)
	}
}

// The sample stream gives random.normal its distribution and random.choice its
// probabilities (loose bounds: 20000 draws).
func TestRandomDistributions(t *testing.T) {
	const n = 20000
	o, _ := testOp(t, "random.normal", `{"mean": 3, "stddev": 2, "shape": [20000]}`)
	metas, _ := o.Infer(nil)
	ws := &Workspace{RNG: &RNG{}, Out: []*Tensor{{DType: metas[0].DType, Data: make([]byte, 4*n)}}}
	ws.RNG.Seed(1, 2, 3)
	if err := o.Run(ws); err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	for i := 0; i < n; i++ {
		v := readScalar(ws.Out[0].Data[4*i:], Float32)
		sum += v
		sq += v * v
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-3) > 0.05 || math.Abs(sd-2) > 0.05 {
		t.Errorf("normal: mean %.3f sd %.3f, want 3 and 2", mean, sd)
	}

	o, _ = testOp(t, "random.choice", `{"a": [10, 20, 30, 40], "p": [0.1, 0, 0.6, 0.3], "shape": [20000]}`)
	metas, _ = o.Infer(nil)
	if metas[0].DType != Int32 {
		t.Errorf("choice of whole numbers: dtype %s, want INT32", metas[0].DType)
	}
	ws.Out[0] = &Tensor{DType: Int32, Data: make([]byte, 4*n)}
	if s, ok := o.(WorkerStateful); ok {
		ws.State = s.NewWorkerState()
	}
	if err := o.Run(ws); err != nil {
		t.Fatal(err)
	}
	count := map[float64]int{}
	for i := 0; i < n; i++ {
		count[readScalar(ws.Out[0].Data[4*i:], Int32)]++
	}
	for v, p := range map[float64]float64{10: 0.1, 20: 0, 30: 0.6, 40: 0.3} {
		if got := float64(count[v]) / n; math.Abs(got-p) > 0.015 {
			t.Errorf("choice: %v drawn %.3f of the time, want %.2f", v, got, p)
		}
	}
	if len(count) != 3 {
		t.Errorf("choice drew values outside a or of probability 0: %v", count)
	}
}
