package lmdb

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// checkDB opens b and reads every record. A corrupt input must fail with an error
// that wraps formats.ErrMalformed and names the file; what opens must read back
// either the original value (want, when given) or such an error. It returns the
// first error.
func checkDB(t *testing.T, b []byte, name string, want map[string][]byte) error {
	t.Helper()
	bad := func(err error) {
		t.Helper()
		if !errors.Is(err, formats.ErrMalformed) || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: error not malformed-data naming the file: %v", name, err)
		}
	}
	db, err := OpenReader(bytes.NewReader(b), int64(len(b)), name)
	if err != nil {
		bad(err)
		return err
	}
	defer db.Close()
	var first error
	var buf []byte
	for _, r := range db.Records() {
		v, err := db.Read(r, buf, 0) // no max: the file's bounds alone must hold
		if err != nil {
			bad(err)
			if first == nil {
				first = err
			}
			continue
		}
		if w, ok := want[string(r.Key)]; want != nil && (!ok || !bytes.Equal(v, w)) {
			t.Fatalf("%s: key %q read back wrong (%d bytes) from a corrupt file", name, r.Key, len(v))
		}
		buf = v
	}
	return first
}

func kvMap(keys, vals [][]byte) map[string][]byte {
	m := map[string][]byte{}
	for i := range keys {
		m[string(keys[i])] = vals[i]
	}
	return m
}

// findNode returns the file offset of record rec's node.
func findNode(b []byte, psize int, rec Record) int {
	base := int(rec.Page) * psize
	return base + int(binary.LittleEndian.Uint16(b[base+pageHeader+2*rec.Index:]))
}

// TestBuiltDB reads a built database, with one and with several tree levels.
func TestBuiltDB(t *testing.T) {
	for _, n := range []int{1, 7, 2000} {
		keys, vals := sampleKV(n)
		b := buildDB(512, keys, vals, 100)
		db, err := OpenReader(bytes.NewReader(b), int64(len(b)), "built.mdb")
		if err != nil {
			t.Fatalf("%d keys: %v", n, err)
		}
		if got := db.Keys(); len(got) != n {
			t.Fatalf("%d keys read, want %d", len(got), n)
		}
		for i, k := range keys {
			v, err := db.Get(k, nil, 0)
			if err != nil || !bytes.Equal(v, vals[i]) {
				t.Fatalf("key %q: %d bytes, err %v", k, len(v), err)
			}
		}
		if n == 2000 && db.meta.depth < 3 {
			t.Errorf("2000 keys in 512-byte pages: depth %d, want a tree of at least 3 levels", db.meta.depth)
		}
	}
}

// TestCorruptions reproduces issue 16's crashes on a Python-written database and on
// a built one: each is an error naming the file, no panic, no huge allocation.
func TestCorruptions(t *testing.T) {
	testref.Long(t, "many corrupted databases")
	keys, vals := sampleKV(300)
	built := buildDB(512, keys, vals, 100)
	want := kvMap(keys, vals)
	corpora := map[string][]byte{"built.mdb": built}
	if py := pyDB(t); py != nil {
		corpora["py.mdb"] = py
	}
	for name, good := range corpora {
		psize := int(binary.LittleEndian.Uint32(good[40:]))
		db, err := OpenReader(bytes.NewReader(good), int64(len(good)), name)
		if err != nil {
			t.Fatal(err)
		}
		var inline, big Record
		for _, r := range db.Records() {
			o := findNode(good, psize, r)
			if binary.LittleEndian.Uint16(good[o+4:])&nodeBig != 0 {
				big = r
			} else if inline.Key == nil {
				inline = r
			}
		}
		if inline.Key == nil || big.Key == nil {
			t.Fatalf("%s: need an inline and an overflow value", name)
		}
		if name == "py.mdb" {
			want = nil
		}
		// Truncations: every length from 0 to the full file in uneven steps, and at and
		// around every page boundary. Each that cuts a page in use fails cleanly.
		truncFailed, truncs := 0, 0
		for n := 0; n < len(good); n += 1 + n/7 {
			for _, m := range []int{n, n / psize * psize, n/psize*psize + 1} {
				truncs++
				if checkDB(t, good[:m], name, want) != nil {
					truncFailed++
				}
			}
		}
		if truncFailed != truncs {
			t.Errorf("%s: %d of %d truncations opened and read cleanly", name, truncs-truncFailed, truncs)
		}
		mod := func(f func(b []byte)) []byte {
			b := append([]byte(nil), good...)
			f(b)
			return b
		}
		setSize := func(b []byte, r Record, size uint32) {
			o := findNode(b, psize, r)
			binary.LittleEndian.PutUint16(b[o:], uint16(size))
			binary.LittleEndian.PutUint16(b[o+2:], uint16(size>>16))
		}
		cases := map[string][]byte{
			"inline node claiming 100 MB":   mod(func(b []byte) { setSize(b, inline, 100<<20) }),
			"overflow node claiming 100 MB": mod(func(b []byte) { setSize(b, big, 100<<20) }),
			"value of 4 GB":                 mod(func(b []byte) { setSize(b, big, 0xffffffff) }),
			"both meta roots 0": mod(func(b []byte) {
				binary.LittleEndian.PutUint64(b[128:], 0)
				binary.LittleEndian.PutUint64(b[psize+128:], 0)
			}),
			"root 1":   mod(func(b []byte) { binary.LittleEndian.PutUint64(b[psize+128:], 1) }),
			"depth 0":  mod(func(b []byte) { binary.LittleEndian.PutUint16(b[psize+94:], 0) }),
			"depth 99": mod(func(b []byte) { binary.LittleEndian.PutUint16(b[psize+94:], 99) }),
			"root past the file": mod(func(b []byte) {
				binary.LittleEndian.PutUint64(b[psize+128:], 1<<40)
				binary.LittleEndian.PutUint64(b[psize+136:], 1<<41)
			}),
			"page size 3000": mod(func(b []byte) {
				binary.LittleEndian.PutUint32(b[40:], 3000)
				binary.LittleEndian.PutUint32(b[psize+40:], 3000)
			}),
			"two branch nodes, one child": mod(func(b []byte) {
				root := binary.LittleEndian.Uint64(b[psize+128:])
				r := int(root) * psize
				o0 := r + int(binary.LittleEndian.Uint16(b[r+pageHeader:]))
				o1 := r + int(binary.LittleEndian.Uint16(b[r+pageHeader+2:]))
				copy(b[o1:o1+6], b[o0:o0+6])
			}),
			"dupsort": mod(func(b []byte) { binary.LittleEndian.PutUint16(b[psize+92:], 0x04) }),
			"overflow run past the end": mod(func(b []byte) {
				o := findNode(b, psize, big)
				ov := binary.LittleEndian.Uint64(b[o+nodeHeader+len(big.Key):])
				binary.LittleEndian.PutUint32(b[int(ov)*psize+12:], 1<<30)
			}),
			"branch cycle": mod(func(b []byte) {
				root := binary.LittleEndian.Uint64(b[psize+128:])
				r := int(root) * psize
				o := r + int(binary.LittleEndian.Uint16(b[r+pageHeader+2:]))
				binary.LittleEndian.PutUint16(b[o:], uint16(root))
				binary.LittleEndian.PutUint16(b[o+2:], uint16(root>>16))
			}),
		}
		for what, b := range cases {
			if err := checkDB(t, b, name, want); err == nil {
				t.Errorf("%s: %s: no error", name, what)
			} else {
				t.Logf("%s: %s: %v", name, what, err)
			}
		}
		// Random byte flips, anywhere in the file: errors or correct values, no panic.
		rng := rand.New(rand.NewSource(16))
		flipFailed := 0
		for i := 0; i < 200; i++ {
			b := mod(func(b []byte) {
				for j := 0; j < 1+i%4; j++ {
					b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
				}
			})
			if checkDB(t, b, name, nil) != nil {
				flipFailed++
			}
		}
		t.Logf("%s: %d truncations failed cleanly; %d of 200 flipped files failed cleanly", name, truncFailed, flipFailed)
	}
}

// pyDB is a data.mdb the PyPI lmdb package wrote over several transactions (puts,
// deletes, overwrites), or nil when Python or lmdb is missing.
func pyDB(t *testing.T) []byte {
	dir := filepath.Join(t.TempDir(), "db")
	if _, err := pyref.Output([]string{"lmdb"}, multiTxnScript, dir); err != nil {
		if errors.Is(err, pyref.ErrMissing) {
			t.Log(err)
			return nil
		}
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// multiTxnScript writes a database over several transactions and prints, in key
// order, each key and its value's sha256, both hex.
const multiTxnScript = `
import hashlib, json, lmdb, random, sys
rng = random.Random(7)
env = lmdb.open(sys.argv[1], map_size=1 << 28)
def val(i, salt):
    n = rng.choice([0, 1, 17, 300, 1900, 2100, 4000, 5000, 9000, 40000])
    return bytes((i * 7 + salt + j) % 256 for j in range(n))
with env.begin(write=True) as txn:
    for i in range(1500):
        txn.put(b"k%06d" % rng.randrange(10**6), val(i, 0))
with env.begin(write=True) as txn:
    cur = txn.cursor()
    for i, (k, _) in enumerate(list(cur)):
        if i % 5 == 0:
            txn.delete(k)
        elif i % 7 == 0:
            txn.put(k, val(i, 1))
with env.begin(write=True) as txn:
    for i in range(200):
        txn.put(b"z" * rng.randrange(1, 400) + b"%d" % i, val(i, 2))
with env.begin() as txn:
    print(json.dumps([[k.hex(), hashlib.sha256(v).hexdigest()] for k, v in txn.cursor()]))
env.close()
`

// TestMultiTxnAgainstPyLMDB reads a database written over several transactions,
// and its compacted copy, and compares every key and value with what lmdb reads.
func TestMultiTxnAgainstPyLMDB(t *testing.T) {
	testref.Long(t, "py-lmdb as reference")
	dir := filepath.Join(t.TempDir(), "db")
	out := pyref.Run(t, []string{"lmdb"}, multiTxnScript+`
env = lmdb.open(sys.argv[1], readonly=True, lock=False)
import os
os.makedirs(sys.argv[1] + "_compact")
env.copy(sys.argv[1] + "_compact", compact=True)
`, dir)
	var ref [][2]string
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, dir + "_compact", filepath.Join(dir, "data.mdb")} {
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		recs := db.Records()
		if len(recs) != len(ref) {
			t.Fatalf("%s: %d records, lmdb reads %d", path, len(recs), len(ref))
		}
		var buf []byte
		for i, r := range recs {
			if hex.EncodeToString(r.Key) != ref[i][0] {
				t.Fatalf("%s: record %d key %x, lmdb reads %s", path, i, r.Key, ref[i][0])
			}
			v, err := db.Read(r, buf, 0)
			if err != nil {
				t.Fatal(err)
			}
			if sha := sha256Hex(v); sha != ref[i][1] {
				t.Fatalf("%s: key %q: value sha256 %s, lmdb reads %s", path, r.Key, sha, ref[i][1])
			}
			buf = v
		}
		db.Close()
	}
}

// TestUnsupportedLayoutsRefused: a named sub-database is refused, saying so (a DUPSORT
// main database, which the PyPI lmdb package cannot write, is TestCorruptions' "dupsort").
func TestUnsupportedLayoutsRefused(t *testing.T) {
	dir := t.TempDir()
	pyref.Run(t, []string{"lmdb"}, `
import lmdb, sys
env = lmdb.open(sys.argv[1] + "/sub", max_dbs=2)
env.open_db(b"named")
env.close()
`, dir)
	if _, err := Open(filepath.Join(dir, "sub")); err == nil || !strings.Contains(err.Error(), "sub-database") {
		t.Errorf("named sub-database: %v", err)
	}
}

// TestBuiltDBReadByPyLMDB checks the test writer against liblmdb: the PyPI lmdb
// package reads buildDB's output (4096-byte pages, several levels) key for key.
func TestBuiltDBReadByPyLMDB(t *testing.T) {
	keys, vals := sampleKV(3000)
	b := buildDB(4096, keys, vals, 1000)
	path := filepath.Join(t.TempDir(), "built.mdb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := pyref.Run(t, []string{"lmdb"}, `
import hashlib, json, lmdb, sys
env = lmdb.open(sys.argv[1], subdir=False, readonly=True, lock=False)
print(json.dumps({"stat": env.stat(), "kv": [[k.hex(), hashlib.sha256(v).hexdigest()] for k, v in env.begin().cursor()]}))
`, path)
	var ref struct {
		Stat map[string]int
		KV   [][2]string
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.KV) != len(keys) || ref.Stat["depth"] < 2 {
		t.Fatalf("lmdb reads %d records (depth %d), want %d", len(ref.KV), ref.Stat["depth"], len(keys))
	}
	for i := range keys {
		if ref.KV[i][0] != hex.EncodeToString(keys[i]) || ref.KV[i][1] != sha256Hex(vals[i]) {
			t.Fatalf("record %d: lmdb reads %v", i, ref.KV[i])
		}
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
