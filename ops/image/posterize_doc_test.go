package image

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
)

// docs/operators.md shows posterize_example_test.go as the example of a new operator:
// the two stay the same, so the example compiles and runs (the test below).
func TestOperatorsDocShowsTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("posterize_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+string(src)+"```") {
		t.Errorf("docs/operators.md's \"Adding an operator\" block differs from ops/image/posterize_example_test.go; copy the file into the doc")
	}
}

// The example operator on random images, with bits constant and per sample, against
// the same arithmetic written out; and its errors.
func TestPosterizeExample(t *testing.T) {
	run := func(bits string, argInputs string) (in, out [][]byte, perBits []int) {
		t.Helper()
		spec := fmt.Sprintf(`{"batch_size": 3, "num_threads": 1, "seed": 5, "ops": [
			{"op": "random.uniform", "name": "u", "outputs": ["f"], "args": {"range": [0, 256], "shape": [4, 5, 3]}},
			{"op": "cast", "name": "c", "inputs": ["f"], "outputs": ["img"], "args": {"dtype": "UINT8"}},
			{"op": "random.choice", "name": "b", "outputs": ["bits"], "args": {"a": [1, 3, 8]}},
			{"op": "posterize", "name": "p", "inputs": ["img"], "outputs": ["out"]%s%s}],
			"outputs": ["img", "out", "bits"]}`, bits, argInputs)
		p, err := engine.NewPipeline([]byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.Build(); err != nil {
			t.Fatal(err)
		}
		b, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		var res [3][][]byte
		for k := 0; k < 3; k++ {
			o := b.Output(k)
			for i := 0; i < o.NumSamples(); i++ {
				v, err := o.SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				n := v.DType.Size()
				for _, d := range v.Shape {
					n *= int(d)
				}
				res[k] = append(res[k], append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...))
				v.Lease.Release()
			}
		}
		for _, s := range res[2] {
			perBits = append(perBits, int(int32(s[0])|int32(s[1])<<8|int32(s[2])<<16|int32(s[3])<<24))
		}
		return res[0], res[1], perBits
	}
	check := func(in, out [][]byte, bits func(i int) int) {
		t.Helper()
		for i := range in {
			mask := byte(0xff << (8 - bits(i)))
			for j, v := range in[i] {
				if out[i][j] != v&mask {
					t.Fatalf("sample %d element %d: %d -> %d, want %d (bits %d)", i, j, v, out[i][j], v&mask, bits(i))
				}
			}
		}
	}
	in, out, _ := run(`, "args": {"bits": 3}`, "")
	check(in, out, func(int) int { return 3 })
	in, out, per := run("", `, "arg_inputs": {"bits": "bits"}`)
	for _, b := range per {
		if b != 1 && b != 3 && b != 8 {
			t.Fatalf("per-sample bits %v: not drawn from [1, 3, 8]", per)
		}
	}
	check(in, out, func(i int) int { return per[i] })

	if _, err := engine.NewPipeline([]byte(`{"batch_size": 1, "ops": [
		{"op": "random.uniform", "name": "u", "outputs": ["f"], "args": {"shape": [2, 2, 3]}},
		{"op": "posterize", "name": "p", "inputs": ["f"], "outputs": ["out"]}], "outputs": ["out"]}`)); err == nil ||
		!strings.Contains(err.Error(), `node "p" (posterize): input 0 must be HWC uint8`) {
		t.Errorf("float input: %v", err)
	}
	if _, err := engine.NewPipeline([]byte(`{"batch_size": 1, "ops": [
		{"op": "random.uniform", "name": "u", "outputs": ["f"], "args": {"shape": [2, 2, 3]}},
		{"op": "cast", "name": "c", "inputs": ["f"], "outputs": ["img"], "args": {"dtype": "UINT8"}},
		{"op": "posterize", "name": "p", "inputs": ["img"], "outputs": ["out"], "args": {"bits": 9}}], "outputs": ["out"]}`)); err == nil ||
		!strings.Contains(err.Error(), `argument "bits": expected 1 to 8, got 9`) {
		t.Errorf("bits 9: %v", err)
	}
}
