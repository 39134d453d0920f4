package tfrecord

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// writerScript writes records with the PyPI tfrecord package's TFRecordWriter
// (packed float/int64 lists, as proto3 serialises them), indexes the file with that
// package's tfrecord2idx, and prints the features it wrote.
const writerScript = `
import json, sys
import numpy as np
from tfrecord import TFRecordWriter
from tfrecord.tools.tfrecord2idx import create_index
path, idx = sys.argv[1], sys.argv[2]
recs = []
for i in range(6):
    d = {
        "image": (bytes(range(256)) * (i * 50 + 1), "byte"),
        "label": ([i, -1 - i, 2**62 + i, -2**63], "int"),
        "bbox": ([0.1 * i, -1.5, 3.25e-3, 1e30], "float"),
        "pair": ([b"first", b"second-" + bytes([i])], "byte"),
    }
    if i == 2:
        del d["label"]
    if i == 3:
        d["bbox"] = ([], "float")
    recs.append(d)
w = TFRecordWriter(path)
for d in recs:
    w.write(d)
w.close()
create_index(path, idx)
def enc(v, t):
    if t == "byte":
        return {"bytes": [x.hex() for x in (v if isinstance(v, list) else [v])]}
    if t == "float":
        return {"floats": [float(np.float32(x)) for x in v]}
    return {"ints": [str(x) for x in v]}
json.dump([{k: enc(*v) for k, v in d.items()} for d in recs], sys.stdout)
`

// unpackedScript serialises Examples whose float and int64 lists are NOT packed:
// the same field numbers declared in a proto2 file (whose repeated scalars default
// to unpacked) through python protobuf's dynamic messages. Features.feature is a
// repeated key/value message, which is how a map is encoded on the wire.
const unpackedScript = `
import sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
FD = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="unpacked_example.proto", package="u", syntax="proto2")
def msg(name, *fields):
    m = fdp.message_type.add(name=name)
    for fname, num, typ, label, tname in fields:
        f = m.field.add(name=fname, number=num, type=typ, label=label)
        if tname:
            f.type_name = tname
R, O = FD.LABEL_REPEATED, FD.LABEL_OPTIONAL
msg("BytesList", ("value", 1, FD.TYPE_BYTES, R, None))
msg("FloatList", ("value", 1, FD.TYPE_FLOAT, R, None))
msg("Int64List", ("value", 1, FD.TYPE_INT64, R, None))
msg("Feature", ("bytes_list", 1, FD.TYPE_MESSAGE, O, ".u.BytesList"),
    ("float_list", 2, FD.TYPE_MESSAGE, O, ".u.FloatList"), ("int64_list", 3, FD.TYPE_MESSAGE, O, ".u.Int64List"))
msg("Entry", ("key", 1, FD.TYPE_STRING, O, None), ("value", 2, FD.TYPE_MESSAGE, O, ".u.Feature"))
msg("Features", ("feature", 1, FD.TYPE_MESSAGE, R, ".u.Entry"))
msg("Example", ("features", 1, FD.TYPE_MESSAGE, O, ".u.Features"))
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
Example = message_factory.GetMessageClass(pool.FindMessageTypeByName("u.Example"))
ex = Example()
e = ex.features.feature.add(key="ints"); e.value.int64_list.value.extend([5, -7, 2**40])
e = ex.features.feature.add(key="floats"); e.value.float_list.value.extend([0.5, -2.0, 8.0])
e = ex.features.feature.add(key="name"); e.value.bytes_list.value.append(b"unpacked")
sys.stdout.write(ex.SerializeToString().hex())
`

type pyFeature struct {
	Bytes  []string
	Floats []float64
	Ints   []json.Number
}

func TestAgainstPythonTfrecord(t *testing.T) {
	testref.Long(t, "the tfrecord package as reference")
	dir := t.TempDir()
	path, idxPath := filepath.Join(dir, "data.tfrecord"), filepath.Join(dir, "data.idx")
	out := pyref.Run(t, []string{"tfrecord", "crc32c"}, writerScript, path, idxPath)
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var want []map[string]pyFeature
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	raw := pyref.ReadFile(t, path)
	idxRaw := pyref.ReadFile(t, idxPath)

	recs, err := Records(bytes.NewReader(raw), int64(len(raw)), true)
	if err != nil {
		t.Fatal(err)
	}
	// The index tfrecord2idx wrote is read back as the scan, and ours is byte-equal.
	idx, err := ReadIndex(bytes.NewReader(idxRaw))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(idx, recs) {
		t.Fatalf("tfrecord2idx index %v, scan %v", idx, recs)
	}
	var buf bytes.Buffer
	if err := WriteIndex(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), idxRaw) {
		t.Fatalf("index differs from tfrecord2idx's:\n%s---\n%s", buf.Bytes(), idxRaw)
	}
	if err := CheckIndex(idx, int64(len(raw))); err != nil {
		t.Fatal(err)
	}

	if len(recs) != len(want) {
		t.Fatalf("%d records, wrote %d", len(recs), len(want))
	}
	for i, rec := range recs {
		p, err := ReadPayload(bytes.NewReader(raw), int64(len(raw)), rec, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := ParseExample(p)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if len(ex) != len(want[i]) {
			t.Errorf("record %d: %d features, wrote %d", i, len(ex), len(want[i]))
		}
		for name, w := range want[i] {
			checkFeature(t, ex[name], w, name)
		}
	}
}

func checkFeature(t *testing.T, g Feature, w pyFeature, name string) {
	t.Helper()
	switch {
	case w.Bytes != nil:
		if g.Kind != KindBytes || len(g.Bytes) != len(w.Bytes) {
			t.Fatalf("%s: kind %v with %d values, want bytes_list of %d", name, g.Kind, len(g.Bytes), len(w.Bytes))
		}
		for j, b := range w.Bytes {
			if got := hexOf(g.Bytes[j]); got != b {
				t.Errorf("%s[%d] differs", name, j)
			}
		}
	case w.Floats != nil:
		if g.Kind != KindFloat || len(g.Floats) != len(w.Floats) {
			t.Fatalf("%s: kind %v with %d values, want float_list of %d", name, g.Kind, len(g.Floats), len(w.Floats))
		}
		for j, f := range w.Floats {
			if g.Floats[j] != float32(f) {
				t.Errorf("%s[%d] = %v, want %v", name, j, g.Floats[j], f)
			}
		}
	case w.Ints != nil:
		if g.Kind != KindInt64 || len(g.Int64s) != len(w.Ints) {
			t.Fatalf("%s: kind %v with %d values, want int64_list of %d", name, g.Kind, len(g.Int64s), len(w.Ints))
		}
		for j, n := range w.Ints {
			v, _ := n.Int64()
			if g.Int64s[j] != v {
				t.Errorf("%s[%d] = %d, want %d", name, j, g.Int64s[j], v)
			}
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

func TestParseExampleUnpacked(t *testing.T) {
	out := pyref.Run(t, []string{"google.protobuf"}, unpackedScript)
	b := make([]byte, len(out)/2)
	for i := range b {
		b[i] = unhex(out[2*i])<<4 | unhex(out[2*i+1])
	}
	ex, err := ParseExample(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := ex["ints"].Int64s; !reflect.DeepEqual(got, []int64{5, -7, 1 << 40}) {
		t.Errorf("ints = %v", got)
	}
	if got := ex["floats"].Floats; !reflect.DeepEqual(got, []float32{0.5, -2, 8}) {
		t.Errorf("floats = %v", got)
	}
	if got := ex["name"]; got.Kind != KindBytes || string(got.Bytes[0]) != "unpacked" {
		t.Errorf("name = %+v", got)
	}
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// The masked CRC of published values: CRC-32C("123456789") is 0xe3069283 (the
// standard check value); masking rotates right by 15 and adds 0xa282ead8.
func TestMaskedCRC(t *testing.T) {
	c := uint32(0xe3069283)
	want := (c>>15 | c<<17) + 0xa282ead8
	if got := MaskedCRC([]byte("123456789")); got != want {
		t.Errorf("MaskedCRC = %#x, want %#x", got, want)
	}
}

func frame(payload []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, MaskedCRC(b[:8]))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC(payload))
}

func TestScanRejectsDamage(t *testing.T) {
	good := append(frame([]byte("hello")), frame([]byte("world!"))...)
	if recs, err := Records(bytes.NewReader(good), int64(len(good)), true); err != nil || len(recs) != 2 {
		t.Fatalf("good file: %v %v", recs, err)
	}
	for name, b := range map[string][]byte{
		"payload crc": func() []byte { b := bytes.Clone(good); b[13] ^= 1; return b }(),
		"length crc":  func() []byte { b := bytes.Clone(good); b[9] ^= 1; return b }(),
		"truncated":   good[:len(good)-3],
		"short head":  good[:len(good)-len(frame([]byte("world!")))+5],
		"huge length": func() []byte {
			b := binary.LittleEndian.AppendUint64(nil, math.MaxUint64-3)
			return binary.LittleEndian.AppendUint32(b, MaskedCRC(b))
		}(),
	} {
		if _, err := Records(bytes.NewReader(b), int64(len(b)), true); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	// Without verification the payload CRC is not read.
	b := bytes.Clone(good)
	b[13] ^= 1
	if _, err := Records(bytes.NewReader(b), int64(len(b)), false); err != nil {
		t.Errorf("unverified scan: %v", err)
	}
	// An index entry that disagrees with the frame's length field.
	if _, err := ReadPayload(bytes.NewReader(good), int64(len(good)), Record{Offset: 0, Size: 22}, nil, false); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("mismatched index size: %v", err)
	}
}

func TestReadIndexRejects(t *testing.T) {
	for _, in := range []string{"0\n", "0 15\n", "-1 20\n", "0 20 3\n", "x 20\n"} {
		if _, err := ReadIndex(strings.NewReader(in)); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("ReadIndex(%q) = %v, want ErrMalformed", in, err)
		}
	}
	if err := CheckIndex([]Record{{Offset: 10, Size: 20}}, 25); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("CheckIndex past the end: %v", err)
	}
}

// Deeply nested protobuf groups recurse without bound in the protowire of
// google.golang.org/protobuf v1.25.0 (the version go.mod carried before): this test
// then dies with "goroutine stack exceeds 1000000000-byte limit", a fatal error no
// recover catches. v1.36 limits the depth; they must be an ordinary error.
func TestParseExampleDeepGroups(t *testing.T) {
	b := bytes.Repeat([]byte{0x2b}, 16<<20) // field 5, start group, again and again
	if _, err := ParseExample(b); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("err = %v, want ErrMalformed", err)
	}
}
