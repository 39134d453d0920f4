package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// _test.host_parts is a serial host-batch node that may run on parts of a batch (as
// python_function): it records each call's samples and the pool's bytes in use, and
// writes its input + 1 (uint8) to its output.
func init() {
	RegisterSchema(&Schema{Name: "_test.host_parts", Doc: "test only: a host-batch node that runs on parts",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"out"}, HostOnly: true,
		Args: []ArgSpec{{Name: "key", Type: ArgInt, Required: true, Doc: "the probe"}}})
	RegisterBackend("_test.host_parts", "cpu", func(a *Args) (Operator, error) {
		return &partsOp{key: a.Int("key")}, nil
	})
}

type partsProbe struct {
	mu    sync.Mutex
	sizes []int
	inUse []int64 // crossing bytes the batch's leases hold at each call
}

var partsProbes sync.Map // key -> *partsProbe

type partsOp struct{ key int }

func (*partsOp) SerialCalls() {}
func (*partsOp) RunsOnParts() {}
func (o *partsOp) Infer(in []TensorMeta) ([]TensorMeta, error) {
	return []TensorMeta{DynamicMeta(in[0].Layout)}, nil
}
func (o *partsOp) Setup(*Workspace) error { return Errorf(StatusInternal, "per batch") }
func (o *partsOp) Run(*Workspace) error   { return Errorf(StatusInternal, "per batch") }
func (o *partsOp) RunHostBatch(hw *HostBatchWorkspace) error {
	v, _ := partsProbes.Load(o.key)
	pr := v.(*partsProbe)
	var held int64
	for _, cv := range hw.b.cross {
		for _, l := range cv.leases {
			if l != nil {
				held += int64(len(l.Bytes()))
			}
		}
	}
	pr.mu.Lock()
	pr.sizes = append(pr.sizes, hw.Size)
	pr.inUse = append(pr.inUse, held)
	pr.mu.Unlock()
	for i, t := range hw.In[0] {
		dst, err := hw.Output(0, i, t.DType, t.Shape)
		if err != nil {
			return err
		}
		for k := range dst {
			dst[k] = t.Data[k] + 1
		}
	}
	return nil
}

// subBatchDesc: random images -> _test.host_parts -> a per-sample node after it
// (flip, in the second phase), with sub_batch_size sub (0: none).
func subBatchDesc(key, batch, sub int) string {
	s := ""
	if sub > 0 {
		s = fmt.Sprintf(`"sub_batch_size": %d, `, sub)
	}
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "prefetch_queue_depth": 2, "device_id": null, "seed": 3, %s"ops": [
	 {"op": "random.uniform", "name": "u", "outputs": ["f"], "args": {"range": [0, 250], "shape": [64, 48, 3]}},
	 {"op": "cast", "name": "c", "inputs": ["f"], "outputs": ["x"], "args": {"dtype": "UINT8"}},
	 {"op": "_test.host_parts", "name": "h", "inputs": ["x"], "outputs": ["y"], "args": {"key": %d}},
	 {"op": "flip", "name": "fl", "inputs": ["y"], "outputs": ["z"], "args": {"horizontal": 1}}],
	 "outputs": ["z"]}`, batch, s, key)
}

// TestSubBatchesIdentical: sub_batch_size runs the host-batch node once per part with
// that part's samples (the last part smaller), gives outputs identical byte for byte to
// the whole-batch run, and holds the crossing data of one part, not of the batch.
func TestSubBatchesIdentical(t *testing.T) {
	const batch, iters = 10, 4
	run := func(key, sub int) ([][]byte, *partsProbe) {
		pr := &partsProbe{}
		partsProbes.Store(key, pr)
		t.Cleanup(func() { partsProbes.Delete(key) })
		p := mustPipeline(t, subBatchDesc(key, batch, sub))
		var outs [][]byte
		for it := 0; it < iters; it++ {
			b, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 1; k++ {
				for i := 0; i < batch; i++ {
					v, err := b.Output(k).SampleView(i)
					if err != nil {
						t.Fatal(err)
					}
					n := v.DType.Size()
					for _, d := range v.Shape {
						n *= int(d)
					}
					outs = append(outs, bytes.Clone(unsafe.Slice((*byte)(v.Ptr), n)))
				}
			}
		}
		return outs, pr
	}
	whole, wp := run(9101, 0)
	for _, sub := range []int{1, 3, 5, batch, 64} {
		got, pr := run(9102+sub, sub)
		if sub < batch && !strings.Contains(fmt.Sprint(pr.sizes), fmt.Sprint(sub)) {
			t.Fatalf("sub_batch_size %d: calls saw %v", sub, pr.sizes)
		}
		for i := range whole {
			if !bytes.Equal(whole[i], got[i]) {
				t.Fatalf("sub_batch_size %d: output value %d differs from the whole-batch run", sub, i)
			}
		}
		want := []int{}
		for it := 0; it < iters; it++ {
			for lo := 0; lo < batch; lo += min(sub, batch) {
				want = append(want, min(min(sub, batch), batch-lo))
			}
		}
		pr.mu.Lock()
		defer pr.mu.Unlock()
		// The batches prepared ahead have run too: the first calls are the four's.
		if len(pr.sizes) < len(want) || fmt.Sprint(pr.sizes[:len(want)]) != fmt.Sprint(want) {
			t.Errorf("sub_batch_size %d: calls saw %v samples, want %v", sub, pr.sizes, want)
		}
		// The node's input (64x48x3 bytes a sample) is what crosses into its call: one
		// part's worth when it runs, however large the batch.
		for _, held := range pr.inUse {
			if sub < batch && held > int64(min(sub, batch))*int64(classSize(64*48*3)) {
				t.Errorf("sub_batch_size %d: %d bytes of crossing data held at a call, more than one part's", sub, held)
			}
		}
	}
	if most := max(wp.inUse[0], wp.inUse[len(wp.inUse)-1]); most < int64(batch*64*48*3) {
		t.Errorf("whole batch: %d bytes crossing, want the batch's %d (the probe sees nothing?)", most, batch*64*48*3)
	}
}

// TestSubBatchLastNode: a host-batch node that makes the pipeline's output (no phase
// after it) runs on parts too.
func TestSubBatchLastNode(t *testing.T) {
	pr := &partsProbe{}
	partsProbes.Store(9401, pr)
	t.Cleanup(func() { partsProbes.Delete(9401) })
	desc := strings.Replace(subBatchDesc(9401, 6, 4), `"outputs": ["z"]}`, `"outputs": ["y"]}`, 1)
	p := mustPipeline(t, desc)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if len(pr.sizes) < 2 || pr.sizes[0] != 4 || pr.sizes[1] != 2 {
		t.Errorf("calls saw %v samples, want parts of 4 and 2", pr.sizes)
	}
}

// TestSubBatchRefused: a whole-batch host node (one that is no SubBatchOperator) refuses
// sub_batch_size by name, and bad values are refused by key.
func TestSubBatchRefused(t *testing.T) {
	desc := strings.Replace(subBatchDesc(9201, 4, 2), `"op": "_test.host_parts"`, `"op": "_test.host_batch"`, 1)
	if _, err := NewPipeline([]byte(desc)); err == nil || !strings.Contains(err.Error(), `sub_batch_size 2: node "h"`) || !strings.Contains(err.Error(), "needs the whole batch") {
		t.Errorf("a whole-batch node with sub_batch_size: %v", err)
	}
	for _, bad := range []string{`0`, `-3`, `"auto"`, `1.5`, `true`} {
		desc := strings.Replace(subBatchDesc(9202, 4, 0), `"seed": 3,`, `"seed": 3, "sub_batch_size": `+bad+`,`, 1)
		if _, err := NewPipeline([]byte(desc)); err == nil || !strings.Contains(err.Error(), `"sub_batch_size"`) {
			t.Errorf("sub_batch_size %s: %v", bad, err)
		}
	}
	for _, ok := range []string{`null`, `4`, `100`} {
		desc := strings.Replace(subBatchDesc(9203, 4, 0), `"seed": 3,`, `"seed": 3, "sub_batch_size": `+ok+`,`, 1)
		p, err := NewPipeline([]byte(desc))
		if err != nil {
			t.Errorf("sub_batch_size %s: %v", ok, err)
		} else if p.Spec.SubBatchSize != 0 {
			t.Errorf("sub_batch_size %s: parts of %d, want the whole batch", ok, p.Spec.SubBatchSize)
		}
	}
}

// TestSubBatchPlan: the memory plan counts a host-batch node's crossing data for every
// sample of the batches being prepared, and with sub_batch_size for one part of each.
func TestSubBatchPlan(t *testing.T) {
	partsProbes.Store(9301, &partsProbe{})
	t.Cleanup(func() { partsProbes.Delete(9301) })
	per := int64(classSize(64 * 48 * 3))
	for _, c := range []struct{ sub, samples int }{{0, 10 * 2}, {3, 3 * 2}} {
		p, err := NewPipeline([]byte(subBatchDesc(9301, 10, c.sub)))
		if err != nil {
			t.Fatal(err)
		}
		mp := p.MemoryPlan(0)
		var x *PlanValue
		for i, v := range mp.Crossing {
			if v.Name == "x" {
				x = &mp.Crossing[i]
			}
		}
		if x == nil || x.Bytes != per*int64(c.samples) || mp.SubBatchSize != c.sub {
			t.Errorf("sub_batch_size %d: crossing %+v, want x at %d bytes", c.sub, mp.Crossing, per*int64(c.samples))
		}
		if mp.HostBytesWorst != mp.OutputBytes+mp.IntermediateBytes+mp.CrossingBytes+mp.DecoderWorkBytes+mp.RuntimeBytes {
			t.Errorf("totals %+v", mp)
		}
	}
}

// TestSubBatchSkip: on_error "skip" with parts: files that fail before the host-batch
// node are replaced as in the whole-batch run (same outputs, same count of skips).
func TestSubBatchSkip(t *testing.T) {
	partsProbes.Store(9501, &partsProbe{})
	t.Cleanup(func() { partsProbes.Delete(9501) })
	dir := t.TempDir()
	var files []string
	for i := 0; i < 6; i++ {
		f := filepath.Join(dir, fmt.Sprintf("%d.jpg", i))
		if i == 1 || i == 4 {
			os.WriteFile(f, []byte("not an image"), 0o644)
		} else {
			writeJPEG(t, f, 32+4*i, 24, i)
		}
		files = append(files, fmt.Sprintf("%q", f))
	}
	run := func(sub string) ([][]byte, int64) {
		p := mustPipeline(t, fmt.Sprintf(`{"batch_size": 6, "num_threads": 2, "on_error": "skip", %s"ops": [
		{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"files": [%s]}},
		{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"]},
		{"op": "_test.host_parts", "name": "h", "inputs": ["img"], "outputs": ["y"], "args": {"key": 9501}}], "outputs": ["y"]}`,
			sub, strings.Join(files, ", ")))
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		var outs [][]byte
		for i := 0; i < 6; i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := 1
			for _, d := range v.Shape {
				n *= int(d)
			}
			outs = append(outs, bytes.Clone(unsafe.Slice((*byte)(v.Ptr), n)))
		}
		return outs, b.Skipped
	}
	whole, ws := run("")
	parts, ps := run(`"sub_batch_size": 3, `)
	if ws != 2 || ps != 2 {
		t.Fatalf("skipped %d (whole) and %d (parts), want 2", ws, ps)
	}
	for i := range whole {
		if !bytes.Equal(whole[i], parts[i]) {
			t.Fatalf("sample %d differs between the whole-batch and the sub-batch run", i)
		}
	}
}
