package readers

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/npy"
	_ "github.com/godali/godali/ops/decoders" // decoders.numpy
)

// writeDeepNpy writes a .npy of one uint8 (value 9) in an array of shape [1]*ndim.
func writeDeepNpy(t *testing.T, dir string, ndim int) string {
	t.Helper()
	dict := "{'descr': '|u1', 'fortran_order': False, 'shape': (" + strings.Repeat("1, ", ndim) + "), }\n"
	b := append([]byte(npy.Magic), 1, 0, 0, 0)
	binary.LittleEndian.PutUint16(b[8:], uint16(len(dict)))
	b = append(append(b, dict...), 9)
	path := filepath.Join(dir, fmt.Sprintf("deep%d.npy", ndim))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 24 item 1: a .npy of more dimensions than a sample may have is refused by
// readers.numpy (at build, from the first file) and decoders.numpy (per sample), naming
// the file and the rank; engine.MaxSampleNDim dimensions read.
func TestNumpyRankBounded(t *testing.T) {
	dir := t.TempDir()
	ok := writeDeepNpy(t, dir, engine.MaxSampleNDim)
	got := readAll(t, "readers.numpy", fmt.Sprintf(`{"files": [%q]}`, ok), 1, 1)[0][0]
	if len(got.shape) != engine.MaxSampleNDim || len(got.data) != 1 || got.data[0] != 9 {
		t.Errorf("%d dimensions: shape %v data %v", engine.MaxSampleNDim, got.shape, got.data)
	}
	dec := func(path string) error {
		desc := fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "device_id": null, "ops": [
		  {"op": "readers.file", "name": "F", "outputs": ["b", "l"], "args": {"files": [%q]}},
		  {"op": "decoders.numpy", "name": "D", "inputs": ["b"], "outputs": ["o"]}], "outputs": ["o"]}`, path)
		p, err := engine.NewPipeline([]byte(desc))
		if err != nil {
			return err
		}
		defer p.Close()
		if err := p.Build(); err != nil {
			return err
		}
		_, err = p.Next()
		return err
	}
	if err := dec(ok); err != nil {
		t.Errorf("decoders.numpy, %d dimensions: %v", engine.MaxSampleNDim, err)
	}
	for _, n := range []int{engine.MaxSampleNDim + 1, engine.MaxNDim + 1, npy.MaxDims, npy.MaxDims + 1, 70} {
		path := writeDeepNpy(t, dir, n)
		rank := fmt.Sprintf("%d dimensions", n)
		if n > npy.MaxDims {
			rank = fmt.Sprintf("more than %d dimensions", npy.MaxDims)
		}
		_, err := tryRead("readers.numpy", fmt.Sprintf(`{"files": [%q]}`, path), 1)
		if err == nil || !strings.Contains(err.Error(), filepath.Base(path)) || !strings.Contains(err.Error(), rank) || !strings.Contains(err.Error(), "readers.numpy") {
			t.Errorf("readers.numpy, %d dimensions: %v", n, err)
		}
		err = dec(path)
		if err == nil || engine.StatusOf(err) != engine.StatusData || !strings.Contains(err.Error(), filepath.Base(path)) ||
			!strings.Contains(err.Error(), rank) || !strings.Contains(err.Error(), "decoders.numpy") {
			t.Errorf("decoders.numpy, %d dimensions: %d %v", n, engine.StatusOf(err), err)
		}
	}
}
