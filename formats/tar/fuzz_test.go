package tar

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// FuzzScan feeds arbitrary bytes to the archive scanner and the index reader: they
// must return (an error or a result) without panicking, and every component the
// scanner reports must lie inside the data. Seeds are tarfile's archives when
// python is there.
func FuzzScan(f *testing.F) {
	dir := f.TempDir()
	if _, err := pyref.Output(nil, tarfileScript, dir); err == nil {
		for _, n := range []string{"ustar", "gnu", "pax"} {
			if b, err := os.ReadFile(filepath.Join(dir, n+".tar")); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, 1024))
	f.Add([]byte("v1.2 1\njpg 512 1 a.jpg\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		size := int64(len(b))
		samples, err := Samples(bytes.NewReader(b), size, Options{CaseInsensitive: len(b)%2 == 0})
		if err == nil {
			if err := CheckIndex(samples, size); err != nil {
				t.Fatalf("scanner reported a component outside the data: %v", err)
			}
		}
		if idx, err := ReadIndex(bytes.NewReader(b)); err == nil {
			_ = CheckIndex(idx, size)
		}
	})
}
