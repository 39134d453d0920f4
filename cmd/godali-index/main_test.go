package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// refScript writes a webdataset shard with tarfile plus its index in DALI's wds2idx
// v1.2 layout (offsets and sizes from tarfile), and a TFRecord file with the
// tfrecord package plus the index its tfrecord2idx writes.
const refScript = `
import io, sys, tarfile
from tfrecord import TFRecordWriter
from tfrecord.tools.tfrecord2idx import create_index
d = sys.argv[1]
with tarfile.open(d + "/s.tar", "w") as tf:
    for name, data in (("a/1.jpg", b"x" * 700), ("a/1.cls", b"1"), ("a/2.jpg", b"y"), ("a/2.cls", b"2")):
        ti = tarfile.TarInfo(name); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
with tarfile.open(d + "/s.tar") as tf, open(d + "/s.ref.idx", "w") as f:
    m = tf.getmembers()
    f.write("v1.2 2\n")
    for a, b in ((m[0], m[1]), (m[2], m[3])):
        f.write(" ".join("%s %d %d %s" % (x.name.split(".", 1)[1], x.offset_data, x.size, x.name) for x in (a, b)) + "\n")
w = TFRecordWriter(d + "/t.tfrecord")
for i in range(4):
    w.write({"v": (list(range(i)), "int"), "b": (b"z" * (i * 100), "byte")})
w.close()
create_index(d + "/t.tfrecord", d + "/t.ref.idx")
`

func TestIndexToolMatchesReferences(t *testing.T) {
	testref.Long(t, "three Python references")
	d := t.TempDir()
	pyref.Run(t, []string{"tfrecord", "crc32c"}, refScript, d)
	for _, c := range []struct{ kind, in, ref string }{
		{"wds", "s.tar", "s.ref.idx"},
		{"tfrecord", "t.tfrecord", "t.ref.idx"},
	} {
		out := filepath.Join(d, c.kind+".idx")
		var stderr bytes.Buffer
		if code := run([]string{c.kind, filepath.Join(d, c.in), out}, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.kind, code, stderr.String())
		}
		got, _ := os.ReadFile(out)
		want, _ := os.ReadFile(filepath.Join(d, c.ref))
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s index:\n%s\nreference:\n%s", c.kind, got, want)
		}
	}
}

func TestIndexToolErrors(t *testing.T) {
	d := t.TempDir()
	junk := filepath.Join(d, "junk")
	os.WriteFile(junk, []byte("definitely not a tar archive, nor a tfrecord file....."), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"zip", junk, junk + ".idx"}, 2, "unknown format"},
		{[]string{"wds", junk}, 2, "usage"},
		{[]string{"wds", junk, junk + ".idx"}, 1, "junk"},
		{[]string{"tfrecord", junk, junk + ".idx"}, 1, "malformed"},
		{[]string{"recordio", junk, junk + ".idx"}, 1, "magic"},
		{[]string{"wds", filepath.Join(d, "missing.tar"), junk + ".idx"}, 1, "no such file"},
	} {
		var stderr bytes.Buffer
		if code := run(c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("run(%q) = %d, %q; want %d mentioning %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
	if _, err := os.Stat(junk + ".idx"); !os.IsNotExist(err) {
		t.Errorf("a failed run left an index behind: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(d, ".*tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
