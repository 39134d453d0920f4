package tar

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// tarfileScript writes, with Python's tarfile, one archive per header format holding
// the awkward cases (long names, ustar prefixes, directories, links, hidden files,
// files without extension, multi-dot and upper-case extensions, an empty file, a key
// that reappears), and prints for each the members tarfile itself reports.
const tarfileScript = `
import io, json, sys, tarfile, os
out = sys.argv[1]
deep = "d" * 60 + "/" + "e" * 60 + "/" + "f" * 20          # ustar prefix territory
longname = "x" * 150 + ".jpg"                               # needs GNU L or pax path
files = [
    ("dir/", None),
    ("dir/0001.jpg", b"\xff\xd8jpeg-one"),
    ("dir/0001.cls", b"3"),
    ("dir/0001.seg.png", b"\x89PNG" + bytes(600)),         # crosses a block boundary
    ("dir/0002.JPG", b"upper"),
    ("dir/0002.json", b'{"a": 1}'),
    ("dir/.hidden.txt", b"hidden"),
    ("dir/README", b"no extension"),
    ("link.jpg", "->dir/0001.jpg"),
    ("dir/0003.txt", b""),
    (deep + "/k.v.txt", b"deep"),
    (longname, b"long" * 50),
    ("dir/0001.extra", b"key reappears"),
]
res = {}
for fmtname, fmt in (("ustar", tarfile.USTAR_FORMAT), ("gnu", tarfile.GNU_FORMAT), ("pax", tarfile.PAX_FORMAT)):
    path = os.path.join(out, fmtname + ".tar")
    with tarfile.open(path, "w", format=fmt) as tf:
        for name, data in files:
            if fmt == tarfile.USTAR_FORMAT and name == longname:
                continue                                     # ustar cannot hold it
            ti = tarfile.TarInfo(name)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            elif isinstance(data, str):
                ti.type = tarfile.SYMTYPE
                ti.linkname = data[2:]
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    with tarfile.open(path) as tf:
        res[fmtname] = [dict(name=m.name, reg=m.isreg(), offset=m.offset_data, size=m.size,
                             data=tf.extractfile(m).read().hex() if m.isreg() else "")
                        for m in tf.getmembers()]
json.dump(res, sys.stdout)
`

type pyMember struct {
	Name   string
	Reg    bool
	Offset int64
	Size   int64
	Data   string
}

func TestScanAgainstTarfile(t *testing.T) {
	dir := t.TempDir()
	var want map[string][]pyMember
	pyref.RunJSON(t, &want, nil, tarfileScript, dir)
	for _, format := range []string{"ustar", "gnu", "pax"} {
		t.Run(format, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, format+".tar"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Entries(bytes.NewReader(raw), int64(len(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want[format]) {
				t.Fatalf("%d entries, tarfile lists %d: %+v", len(got), len(want[format]), got)
			}
			for i, w := range want[format] {
				g := got[i]
				// tarfile strips the trailing slash of directory names.
				if strings.TrimSuffix(g.Name, "/") != w.Name || g.IsRegular() != w.Reg {
					t.Errorf("entry %d: got %q regular=%v, tarfile %q regular=%v", i, g.Name, g.IsRegular(), w.Name, w.Reg)
					continue
				}
				if !w.Reg {
					continue
				}
				if g.Offset != w.Offset || g.Size != w.Size {
					t.Errorf("%s: offset/size %d/%d, tarfile %d/%d", w.Name, g.Offset, g.Size, w.Offset, w.Size)
				}
				if hex.EncodeToString(raw[g.Offset:g.Offset+g.Size]) != w.Data {
					t.Errorf("%s: data differs from tarfile's", w.Name)
				}
			}
		})
	}
}

// webdatasetScript writes a shard with webdataset's TarWriter, reads it back with
// webdataset's own tar iterator and key grouping, and prints the samples it sees.
const webdatasetScript = `
import json, sys
import webdataset as wds
from webdataset import tariterators
path = sys.argv[1]
with wds.TarWriter(path) as w:
    for i in range(7):
        s = {"__key__": "shard/%05d" % i, "jpg": bytes([i]) * (100 + 300 * i), "cls": str(i).encode()}
        if i % 2 == 0:
            s["seg.png"] = b"seg" * i
        if i == 3:
            s["TXT"] = b"upper-case extension"
        w.write(s)
samples = []
with open(path, "rb") as f:
    files = tariterators.tar_file_expander([{"stream": f, "url": path}])
    for s in tariterators.group_by_keys(files, lcase=False):
        samples.append({"key": s["__key__"],
                        "parts": {k: v.hex() for k, v in s.items() if not k.startswith("__")}})
json.dump(samples, sys.stdout)
`

func TestSamplesAgainstWebdataset(t *testing.T) {
	testref.Long(t, "the webdataset package as reference")
	path := filepath.Join(t.TempDir(), "shard.tar")
	var want []struct {
		Key   string
		Parts map[string]string
	}
	pyref.RunJSON(t, &want, []string{"webdataset"}, webdatasetScript, path)
	raw := pyref.ReadFile(t, path)
	got, err := Samples(bytes.NewReader(raw), int64(len(raw)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) != 7 {
		t.Fatalf("%d samples, webdataset groups %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Key != w.Key || len(g.Components) != len(w.Parts) {
			t.Errorf("sample %d: key %q with %d components, webdataset %q with %d", i, g.Key, len(g.Components), w.Key, len(w.Parts))
			continue
		}
		for _, c := range g.Components {
			if hex.EncodeToString(raw[c.Offset:c.Offset+c.Size]) != w.Parts[c.Ext] {
				t.Errorf("sample %q component %q: bytes differ from webdataset's", g.Key, c.Ext)
			}
		}
	}
	lower, err := Samples(bytes.NewReader(raw), int64(len(raw)), Options{CaseInsensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	if exts := extsOf(lower[3]); !strings.Contains(exts, "txt") || strings.Contains(exts, "TXT") {
		t.Errorf("case-insensitive extensions of sample 3: %s", exts)
	}
	if exts := extsOf(got[3]); !strings.Contains(exts, "TXT") {
		t.Errorf("case-sensitive extensions of sample 3: %s", exts)
	}
}

func extsOf(s Sample) string {
	var e []string
	for _, c := range s.Components {
		e = append(e, c.Ext)
	}
	return strings.Join(e, ",")
}

func TestSplitName(t *testing.T) {
	for _, c := range []struct{ in, key, ext string }{
		{"a.jpg", "a", "jpg"},
		{"dir.v1/a.seg.png", "dir.v1/a", "seg.png"},
		{"a.", "a", ""},
		{".hidden", "", ""},
		{"dir/.hidden.txt", "", ""},
		{"noext", "", ""},
		{"dir.x/noext", "", ""},
	} {
		k, e, ok := SplitName(c.in)
		if k != c.key || e != c.ext || ok != (c.key != "") {
			t.Errorf("SplitName(%q) = %q, %q, %v; want %q, %q", c.in, k, e, ok, c.key, c.ext)
		}
	}
}

func TestScanRejectsDamage(t *testing.T) {
	dir := t.TempDir()
	pyref.Run(t, nil, tarfileScript, dir)
	raw := pyref.ReadFile(t, filepath.Join(dir, "pax.tar"))
	// A flipped byte in the first header breaks its checksum.
	bad := bytes.Clone(raw)
	bad[10] ^= 0x40
	if _, err := Entries(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("corrupt header: err = %v, want ErrMalformed", err)
	}
	// Cutting the archive inside a file's data.
	ents, _ := Entries(bytes.NewReader(raw), int64(len(raw)))
	var cut int64
	for _, e := range ents {
		if e.Size > 512 {
			cut = e.Offset + 100
			break
		}
	}
	if _, err := Entries(bytes.NewReader(raw[:cut]), cut); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("truncated data: err = %v, want ErrMalformed", err)
	}
	// Without the end-of-archive blocks the archive still lists fully.
	last := ents[len(ents)-1]
	end := (last.Offset + last.Size + BlockSize - 1) / BlockSize * BlockSize
	short, err := Entries(bytes.NewReader(raw[:end]), end)
	if err != nil || len(short) != len(ents) {
		t.Errorf("archive without end marker: %d entries, err %v; want %d", len(short), err, len(ents))
	}
}
