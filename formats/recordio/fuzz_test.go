package recordio

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// FuzzRecords feeds arbitrary bytes to the scanner, the decoder, the header
// unpacker and the index reader: errors are fine, panics and records outside the
// data are not. Seeds are mxnet's files when it is installed.
func FuzzRecords(f *testing.F) {
	dir := f.TempDir()
	rec := filepath.Join(dir, "s.rec")
	if testing.Short() {
		// make check: no Python-written seed, whose interpreter start dominates the run.
	} else if _, err := pyref.Output([]string{"mxnet.recordio"}, mxnetScript, rec, rec+".idx"); err == nil {
		if b, err := os.ReadFile(rec); err == nil {
			f.Add(b)
		}
	}
	b, _ := hex.DecodeString(recorded)
	f.Add(b)
	f.Add([]byte("1\t0\n2\t32\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		size := int64(len(b))
		if recs, err := Records(bytes.NewReader(b), size); err == nil {
			for _, r := range recs {
				if r.Offset < 0 || r.Size <= 0 || r.Offset+r.Size > size {
					t.Fatalf("record %+v outside %d bytes", r, size)
				}
				p, err := ReadRecord(bytes.NewReader(b), size, r, nil)
				if err != nil {
					t.Fatalf("scanned record unreadable: %v", err)
				}
				_, _, _, _ = Unpack(p)
			}
		}
		_, _, _ = Decode(b, 0, nil)
		_, _, _, _ = Unpack(b)
		if idx, err := ReadIndex(bytes.NewReader(b)); err == nil {
			if ext, _, err := Extents(idx, size); err == nil {
				for _, r := range ext {
					_, _ = ReadRecord(bytes.NewReader(b), size, r, nil)
				}
			}
		}
	})
}
