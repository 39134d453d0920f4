package tar

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// wdsIndexScript writes a shard with webdataset's TarWriter plus a few files that
// belong to no sample, then writes the DALI v1.2 index of it the way DALI's wds2idx
// defines it (header "v1.2 <samples>", per sample "<ext> <offset> <size> <name>"
// joined by spaces), with offsets and sizes taken from Python's tarfile and keys from
// webdataset's own base_plus_ext. Nothing in it comes from godali.
const wdsIndexScript = `
import io, sys, tarfile
import webdataset as wds
from webdataset.tariterators import base_plus_ext
tar_path, idx_path = sys.argv[1], sys.argv[2]
with wds.TarWriter(tar_path) as w:
    for i in range(5):
        w.write({"__key__": "s/%04d" % i, "jpg": b"j" * (i * 700 + 1), "cls": b"%d" % i,
                 "meta.json": b"{}"})
with tarfile.open(tar_path, "a") as tf:
    for name, data in (("s/.hidden.jpg", b"h"), ("s/README", b"r"), ("s/0009.Png", b"p" * 513)):
        ti = tarfile.TarInfo(name); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
samples, last = [], None
with tarfile.open(tar_path) as tf:
    for m in tf.getmembers():
        if not m.isreg():
            continue
        key, ext = base_plus_ext(m.name)
        if key is None or key.endswith("/") or key.split("/")[-1].startswith("."):
            continue
        if key != last:
            samples.append([])
            last = key
        samples[-1].append("%s %d %d %s" % (ext, m.offset_data, m.size, m.name))
with open(idx_path, "w") as f:
    f.write("v1.2 %d\n" % len(samples))
    for s in samples:
        f.write(" ".join(s) + "\n")
`

func TestIndexMatchesWds2idxFormat(t *testing.T) {
	testref.Long(t, "the webdataset package as reference")
	dir := t.TempDir()
	tarPath, idxPath := filepath.Join(dir, "s.tar"), filepath.Join(dir, "s.idx")
	pyref.Run(t, []string{"webdataset"}, wdsIndexScript, tarPath, idxPath)
	raw := pyref.ReadFile(t, tarPath)
	want := pyref.ReadFile(t, idxPath)
	samples, err := Samples(bytes.NewReader(raw), int64(len(raw)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteIndex(&buf, samples); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("index differs from the reference:\n--- godali\n%s--- reference\n%s", buf.Bytes(), want)
	}
	read, err := ReadIndex(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, samples) {
		t.Errorf("ReadIndex of the reference index:\n%+v\nscan:\n%+v", read, samples)
	}
	if err := CheckIndex(read, int64(len(raw))); err != nil {
		t.Error(err)
	}
	if err := CheckIndex(read, int64(len(raw))/2); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("CheckIndex against half the archive: %v, want ErrMalformed", err)
	}
}

// A hand-written v1.1 index, in the layout DALI's loader accepts: no file names.
func TestReadIndexV11(t *testing.T) {
	got, err := ReadIndex(strings.NewReader("v1.1 2\njpg 512 10 cls 1536 1\npng 2560 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{Components: []Component{{Ext: "jpg", Offset: 512, Size: 10}, {Ext: "cls", Offset: 1536, Size: 1}}},
		{Components: []Component{{Ext: "png", Offset: 2560, Size: 3}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
}

func TestReadIndexRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"v1.3 1\njpg 512 1 a.jpg\n",
		"v1.2 0\n",
		"v1.2 -4\n",
		"v1.2 2\njpg 512 1 a.jpg\n",  // fewer samples than declared
		"v1.2 1\njpg 100 1 a.jpg\n",  // offset not block-aligned
		"v1.2 1\njpg 512 1\n",        // v1.2 needs the name
		"v1.2 1\n\n",                 // empty sample
		"v1.2 1\njpg 512 -1 a.jpg\n", // negative size
		"v1.2 1\njpg 512 99999999999999999999 a.jpg\n",
		"v1.2 99999999999999\njpg 512 1 a.jpg\n", // huge count: no huge allocation
	} {
		if _, err := ReadIndex(strings.NewReader(in)); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("ReadIndex(%q): err = %v, want ErrMalformed", in, err)
		}
	}
}

func TestWriteIndexRefusesWhiteSpace(t *testing.T) {
	s := []Sample{{Key: "a b", Components: []Component{{Ext: "jpg", Offset: 512, Size: 1, Name: "a b.jpg"}}}}
	if err := WriteIndex(&bytes.Buffer{}, s); err == nil {
		t.Error("a name with a space was written")
	}
	if err := WriteIndex(&bytes.Buffer{}, nil); err == nil {
		t.Error("an empty index was written")
	}
}

func TestParseNumeric(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want int64
		ok   bool
	}{
		{[]byte("0000644\x00"), 0o644, true},
		{[]byte("   17 \x00"), 0o17, true},
		{[]byte{0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0}, 2 << 32, true}, // GNU base-256, 8 GiB
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, 0, false},
		{[]byte{0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, false},
		{[]byte("12x4"), 0, false},
		{[]byte("9"), 0, false},
	} {
		got, err := parseNumeric(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseNumeric(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
