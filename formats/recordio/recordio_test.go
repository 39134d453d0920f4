package recordio

import (
	"bytes"
	"encoding/hex"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// mxnetScript writes records with mxnet's own MXIndexedRecordIO and recordio.pack
// (dmlc-core's C++ writer underneath): scalar and array labels, payloads of every
// length modulo 4, an empty one, and payloads holding the magic at 4-aligned
// positions, which the writer splits into multi-part records. It reads them back
// with mxnet's reader and prints what mxnet sees.
const mxnetScript = `
import json, struct, sys
import mxnet.recordio as rio
rec_path, idx_path = sys.argv[1], sys.argv[2]
magic = struct.pack("<I", 0xced7230a)
items = [
    (7, rio.IRHeader(0, 3.0, 11, 0), b"abcde"),
    (9, rio.IRHeader(0, -1.5, 12, 99), b""),
    (2, rio.IRHeader(0, 0.0, 13, 0), b"ab"),
    (40, rio.IRHeader(0, 0.0, 14, 0), b"abc"),
    (41, rio.IRHeader(0, 0.0, 15, 0), b"abcd" * 300),
    (5, rio.IRHeader(0, [1.0, 2.5, -4.0], 16, 0), b"with label array"),
    (6, rio.IRHeader(0, 2.0, 17, 0), magic + b"1234" + magic + b"tail!"),   # three parts
    (8, rio.IRHeader(0, 2.0, 18, 0), b"xy" + magic + magic),                 # unaligned, then aligned
    (1, rio.IRHeader(0, [7.0], 19, 0), magic),
]
w = rio.MXIndexedRecordIO(idx_path, rec_path, "w")
for key, h, data in items:
    w.write_idx(key, rio.pack(h, data))
w.close()
r = rio.MXIndexedRecordIO(idx_path, rec_path, "r")
out = []
for key, _, _ in items:
    h, data = rio.unpack(r.read_idx(key))
    label = h.label.tolist() if hasattr(h.label, "tolist") else [h.label]
    out.append(dict(key=str(key), flag=int(h.flag), label=[float(x) for x in (label if isinstance(label, list) else [label])],
                    id=int(h.id), id2=int(h.id2), data=data.hex(), offset=r.idx[key]))
r.close()
json.dump(out, sys.stdout)
`

type mxRecord struct {
	Key    string
	Flag   uint32
	Label  []float64
	ID     uint64
	ID2    uint64
	Data   string
	Offset int64
}

func TestAgainstMXNet(t *testing.T) {
	testref.Long(t, "mxnet as reference")
	dir := t.TempDir()
	recPath, idxPath := filepath.Join(dir, "d.rec"), filepath.Join(dir, "d.idx")
	var want []mxRecord
	pyref.RunJSON(t, &want, []string{"mxnet.recordio"}, mxnetScript, recPath, idxPath)
	raw := pyref.ReadFile(t, recPath)
	idxRaw := pyref.ReadFile(t, idxPath)
	size := int64(len(raw))
	recs, err := Records(bytes.NewReader(raw), size)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, mxnet wrote %d", len(recs), len(want))
	}
	idx, err := ReadIndex(bytes.NewReader(idxRaw))
	if err != nil {
		t.Fatal(err)
	}
	var entries []IndexEntry
	for i, w := range want {
		if recs[i].Offset != w.Offset {
			t.Errorf("record %d at offset %d, mxnet's index says %d", i, recs[i].Offset, w.Offset)
		}
		entries = append(entries, IndexEntry{Key: w.Key, Offset: recs[i].Offset})
	}
	if !reflect.DeepEqual(idx, entries) {
		t.Errorf("ReadIndex of mxnet's index: %v, want %v", idx, entries)
	}
	var buf bytes.Buffer
	if err := WriteIndex(&buf, entries); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), idxRaw) {
		t.Errorf("index differs from mxnet's:\n%q\n%q", buf.Bytes(), idxRaw)
	}
	ext, keys, err := Extents(idx, size)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ext, recs) {
		t.Errorf("extents from the index %v, scan %v", ext, recs)
	}
	for i, w := range want {
		if keys[i] != w.Key {
			t.Errorf("extent %d key %q, want %q", i, keys[i], w.Key)
		}
		p, err := ReadRecord(bytes.NewReader(raw), size, recs[i], nil)
		if err != nil {
			t.Fatalf("record %s: %v", w.Key, err)
		}
		h, labels, data, err := Unpack(p)
		if err != nil {
			t.Fatalf("record %s: %v", w.Key, err)
		}
		if h.Flag != w.Flag || h.ID != w.ID || h.ID2 != w.ID2 || hex.EncodeToString(data) != w.Data {
			t.Errorf("record %s: header %+v data %x; mxnet %+v", w.Key, h, data, w)
		}
		if len(labels) != len(w.Label) {
			t.Errorf("record %s: labels %v, mxnet %v", w.Key, labels, w.Label)
			continue
		}
		for j := range labels {
			if labels[j] != float32(w.Label[j]) {
				t.Errorf("record %s: labels %v, mxnet %v", w.Key, labels, w.Label)
			}
		}
	}
}

// recorded is what mxnet 1.9.1 (MXIndexedRecordIO.write_idx of recordio.pack)
// wrote for IRHeader(0, 1.0, 1, 0) with data magic+"abcd"+magic+"xyz": one record
// split into three parts (flags 1, 2, 3 in the top bits of the length words), the
// last padded from 3 to 4 bytes. Kept so the layout is checked without mxnet.
const recorded = "0a23d7ce18000020" + // magic, flag 1 | length 24
	"00000000" + "0000803f" + "0100000000000000" + "0000000000000000" + // IRHeader
	"0a23d7ce04000040" + "61626364" + // magic, flag 2 | length 4, "abcd"
	"0a23d7ce03000060" + "78797a00" // magic, flag 3 | length 3, "xyz" + padding

func TestRecordedMXNetBytes(t *testing.T) {
	b, err := hex.DecodeString(recorded)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := Records(bytes.NewReader(b), int64(len(b)))
	if err != nil || len(recs) != 1 || recs[0] != (Record{0, int64(len(b))}) {
		t.Fatalf("records %v, %v", recs, err)
	}
	p, err := ReadRecord(bytes.NewReader(b), int64(len(b)), recs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	h, labels, data, err := Unpack(p)
	magic := "\x0a\x23\xd7\xce"
	if err != nil || h != (Header{Flag: 0, Label: 1, ID: 1}) || !reflect.DeepEqual(labels, []float32{1}) ||
		string(data) != magic+"abcd"+magic+"xyz" {
		t.Errorf("header %+v labels %v data %q err %v", h, labels, data, err)
	}
}

func TestRejectsDamage(t *testing.T) {
	b, _ := hex.DecodeString(recorded)
	for name, bad := range map[string][]byte{
		"magic":         func() []byte { c := bytes.Clone(b); c[0] ^= 1; return c }(),
		"flag 5":        func() []byte { c := bytes.Clone(b); c[7] = 0xa0; return c }(),
		"no first part": b[32:],
		"truncated":     b[:len(b)-6],
		"open multi":    b[:32],
		"length":        func() []byte { c := bytes.Clone(b); c[6] = 0x10; return c }(),
	} {
		if _, err := Records(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
		if _, _, err := Decode(bad, 0, nil); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("Decode %s: err = %v, want ErrMalformed", name, err)
		}
	}
	short := make([]byte, 28)
	short[0] = 3 // flag 3: three labels, no room for them
	if _, _, _, err := Unpack(short); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("Unpack with missing labels: %v", err)
	}
	if _, _, err := Extents([]IndexEntry{{"a", 0}, {"b", 0}}, 100); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("Extents with a repeated offset: %v", err)
	}
	if _, _, err := Extents([]IndexEntry{{"a", 200}}, 100); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("Extents past the end: %v", err)
	}
	if _, err := ReadIndex(strings.NewReader("1\t-4\n")); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("ReadIndex negative offset: %v", err)
	}
}
