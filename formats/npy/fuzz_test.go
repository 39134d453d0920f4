package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// FuzzParseHeader feeds arbitrary bytes to the header parser and, when it accepts
// them, reads and rearranges the data: errors are fine, panics and data outside the
// file are not. Seeds are numpy's files when python is there.
func FuzzParseHeader(f *testing.F) {
	dir := f.TempDir()
	if _, err := pyref.Output([]string{"numpy"}, numpyScript, dir); err == nil {
		for _, n := range []string{"f4leC", "i2beF", "?leC", "scalar", "empty", "v2", "v3"} {
			if b, err := os.ReadFile(filepath.Join(dir, n+".npy")); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add(header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 1, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		size := int64(len(b))
		h, err := ParseHeader(bytes.NewReader(b), size)
		if err != nil {
			return
		}
		if h.DataOffset+h.DataSize > size {
			t.Fatalf("header %+v announces data past %d bytes", h, size)
		}
		data, err := ReadData(bytes.NewReader(b), size, h, nil)
		if err != nil {
			t.Fatalf("data of an accepted header unreadable: %v", err)
		}
		if _, err := h.ToC(data); err != nil {
			t.Fatalf("ToC: %v", err)
		}
	})
}
