package lmdb

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
)

// FuzzLMDB opens arbitrary bytes as an LMDB data file and reads every record and
// every key: errors must wrap formats.ErrMalformed, and nothing may panic or
// allocate past the data. Seeds are small built databases (512-byte pages, one to
// three levels, inline and overflow values) and, when Python is there, one the PyPI
// lmdb package wrote.
func FuzzLMDB(f *testing.F) {
	for _, n := range []int{0, 1, 5, 40} {
		keys, vals := sampleKV(n)
		f.Add(buildDB(512, keys, vals, 100))
	}
	dir := filepath.Join(f.TempDir(), "db")
	if _, err := pyref.Output([]string{"lmdb"}, `
import lmdb, sys
env = lmdb.open(sys.argv[1], map_size=1 << 22)
with env.begin(write=True) as txn:
    for i in range(12):
        txn.put(b"%03d" % i, bytes(range(i % 7)) * (i * 131 % 1500))
env.close()
`, dir); err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "data.mdb")); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(err error) {
			if err != nil && !errors.Is(err, formats.ErrMalformed) {
				t.Fatalf("error not malformed data: %v", err)
			}
		}
		db, err := OpenReader(bytes.NewReader(b), int64(len(b)), "fuzz.mdb")
		if err != nil {
			check(err)
			return
		}
		var buf []byte
		for _, r := range db.Records() {
			v, err := db.Read(r, buf, 0)
			check(err)
			if int64(len(v)) > int64(len(b)) {
				t.Fatalf("key %q: a value of %d bytes from %d bytes of data", r.Key, len(v), len(b))
			}
			if v != nil {
				buf = v
			}
			if _, err := db.Get(r.Key, nil, 64); err != nil && !errors.Is(err, ErrNotFound) {
				check(err)
			}
		}
		db.Close()
	})
}
