package tfrecord

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// FuzzRecords feeds arbitrary bytes to the frame scanner, the index reader and the
// Example parser with a few specs: errors are fine, panics and frames outside the
// data are not. Seeds are the tfrecord package's files when python is there.
func FuzzRecords(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.tfrecord")
	if testing.Short() {
		// make check: no Python-written seed, whose interpreter start dominates the run.
	} else if _, err := pyref.Output([]string{"tfrecord", "crc32c"}, writerScript, path, path+".idx"); err == nil {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
			if recs, err := Records(bytes.NewReader(b), int64(len(b)), true); err == nil && len(recs) > 0 {
				f.Add(b[recs[0].Offset+12 : recs[0].Offset+recs[0].Size-4]) // an Example
			}
		}
	}
	f.Add(frame([]byte("\x0a\x10\x0a\x0e\x0a\x01a\x12\x09\x1a\x07\x0a\x05\x01\x02\x03\x04\x05")))
	f.Add([]byte("0 16\n"))
	specs := []FeatureSpec{}
	for _, mk := range []func() (FeatureSpec, error){
		func() (FeatureSpec, error) { return FixedLenFeature([]int64{2}, Int64, 0) },
		func() (FeatureSpec, error) { return FixedLenFeature(nil, String, "") },
		func() (FeatureSpec, error) { return VarLenFeature(Float32, 0.0, 2) },
		func() (FeatureSpec, error) { return VarLenFeature(Int64, 0) },
	} {
		s, err := mk()
		if err != nil {
			f.Fatal(err)
		}
		specs = append(specs, s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		size := int64(len(b))
		if recs, err := Records(bytes.NewReader(b), size, true); err == nil {
			if err := CheckIndex(recs, size); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if _, err := ReadPayload(bytes.NewReader(b), size, r, nil, true); err != nil {
					t.Fatalf("scanned frame unreadable: %v", err)
				}
			}
		}
		if idx, err := ReadIndex(bytes.NewReader(b)); err == nil {
			for _, r := range idx {
				_, _ = ReadPayload(bytes.NewReader(b), size, r, nil, true)
			}
		}
		ex, err := ParseExample(b)
		if err != nil {
			return
		}
		for name := range ex {
			for _, s := range specs {
				_, _ = s.Extract(ex, name)
			}
		}
		for _, s := range specs {
			_, _ = s.Extract(ex, "a")
		}
	})
}
