package lmdb

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// TestAgainstPyLMDB reads a database the PyPI lmdb package wrote.
func TestAgainstPyLMDB(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	pyref.Run(t, []string{"lmdb"}, `
import lmdb, sys
env = lmdb.open(sys.argv[1], map_size=1 << 24)
with env.begin(write=True) as txn:
    for i in range(300):
        txn.put(b"key%04d" % (299 - i), bytes([i % 256]) * (i * 37 % 5000))
env.close()
`, dir)
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keys := db.Keys()
	if len(keys) != 300 {
		t.Fatalf("%d keys, want 300", len(keys))
	}
	var buf []byte
	for j, k := range keys {
		if want := fmt.Sprintf("key%04d", j); string(k) != want {
			t.Fatalf("key %d: %q, want %q (sorted)", j, k, want)
		}
		i := 299 - j
		v, err := db.Get(k, buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v, bytes.Repeat([]byte{byte(i % 256)}, i*37%5000)) {
			t.Fatalf("value of %q differs", k)
		}
		buf = v
	}
	if _, err := db.Get([]byte("nope"), nil, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	if _, err := db.Get(keys[1], nil, 10); err == nil {
		t.Errorf("a value over max was returned")
	}
	// The data file itself opens too (NoSubdir).
	db2, err := Open(filepath.Join(dir, "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	db2.Close()
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing path opened")
	}
}
