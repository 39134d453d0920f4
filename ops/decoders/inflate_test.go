package decoders_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
)

// literalBlock is an LZ4 block of literals only (valid per the block format).
func literalBlock(data []byte) []byte {
	n := len(data)
	b := []byte{byte(min(n, 15) << 4)}
	if n >= 15 {
		r := n - 15
		for ; r >= 255; r -= 255 {
			b = append(b, 255)
		}
		b = append(b, byte(r))
	}
	return append(b, data...)
}

// inflatePipeline runs decoders.inflate on one constant sample of bytes.
func inflatePipeline(t *testing.T, sample []byte, args string) ([]byte, []int64, error) {
	t.Helper()
	ints := make([]int, len(sample))
	for i, b := range sample {
		ints[i] = int(b)
	}
	d, _ := json.Marshal(ints)
	desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "prefetch_queue_depth": 1, "ops": [
		{"op": "constant", "name": "c", "outputs": ["c"], "args": {"idata": %s, "shape": [%d], "dtype": "UINT8"}},
		{"op": "decoders.inflate", "name": "z", "inputs": ["c"], "outputs": ["z"], "args": %s}
	], "outputs": ["z"]}`, d, len(sample), args)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		return nil, nil, err
	}
	b, err := p.Next()
	if err != nil {
		return nil, nil, err
	}
	v, err := b.Output(0).SampleView(0)
	if err != nil {
		return nil, nil, err
	}
	defer v.Lease.Release()
	n := 1
	for _, e := range v.Shape {
		n *= int(e)
	}
	return append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...), v.Shape, nil
}

// TestInflateChunks: three chunks packed in one sample inflate to a [3, 2, 5] tensor
// (chunk_sizes alone: packed from the start); a chunk that inflates to other than
// shape's size, and a shape LZ4 cannot reach from the sample, are data errors naming why.
func TestInflateChunks(t *testing.T) {
	var sample, want []byte
	var sizes []int
	for c := 0; c < 3; c++ {
		raw := bytes.Repeat([]byte{byte(10 * (c + 1))}, 10)
		raw[c] = 7
		blk := literalBlock(raw)
		sample, want, sizes = append(sample, blk...), append(want, raw...), append(sizes, len(blk))
	}
	sz, _ := json.Marshal(sizes)
	got, shape, err := inflatePipeline(t, sample, fmt.Sprintf(`{"shape": [2, 5], "chunk_sizes": %s}`, sz))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(shape) != "[3 2 5]" || !bytes.Equal(got, want) {
		t.Fatalf("got %v %v, want [3 2 5] %v", shape, got, want)
	}
	_, _, err = inflatePipeline(t, literalBlock(want[:10]), `{"shape": [12]}`)
	if err == nil || !strings.Contains(err.Error(), "inflates to 10 bytes") {
		t.Fatalf("short chunk: %v", err)
	}
	_, _, err = inflatePipeline(t, literalBlock(want[:10]), `{"shape": [100000]}`)
	if err == nil || !strings.Contains(err.Error(), "LZ4 expands at most") {
		t.Fatalf("impossible shape: %v", err)
	}
}
