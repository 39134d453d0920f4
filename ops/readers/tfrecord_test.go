package readers_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// tfWriterScript writes two TFRecord files with the PyPI tfrecord package and indexes
// them with its tfrecord2idx tool; it prints what it wrote as JSON.
const tfWriterScript = `
import json, sys
import numpy as np
from tfrecord import TFRecordWriter
from tfrecord.tools.tfrecord2idx import create_index
out = sys.argv[1]
recs = []
for f in range(2):
    w = TFRecordWriter("%s/part%d.tfrecord" % (out, f))
    for i in range(5 + f):
        k = len(recs)
        d = {
            "image/encoded": (bytes([k]) * (k * 7 + 1), "byte"),
            "label": ([k * 3 - 4], "int"),
            "box": ([0.25 * k, -1.5, 1e-3 * k, 7.0], "float"),
            "tags": (list(range(k % 4)), "int"),
        }
        if k == 3:
            del d["label"]
        w.write(d)
        recs.append(d)
    w.close()
    create_index("%s/part%d.tfrecord" % (out, f), "%s/part%d.idx" % (out, f))
json.dump([{"image": d["image/encoded"][0].hex(), "label": d["label"][0][0] if "label" in d else None,
            "box": [float(np.float32(x)) for x in d["box"][0]], "tags": d["tags"][0]} for d in recs], sys.stdout)
`

func TestTFRecordFeaturesEqualWriter(t *testing.T) {
	testref.Long(t, "the tfrecord package as reference")
	dir := t.TempDir()
	var want []struct {
		Image string
		Label *int64
		Box   []float32
		Tags  []int64
	}
	if err := json.Unmarshal(pyref.Run(t, []string{"tfrecord", "numpy"}, tfWriterScript, dir), &want); err != nil {
		t.Fatal(err)
	}
	features := `[{"name": "image/encoded", "kind": "fixed", "dtype": "string", "shape": [], "default": ""},
		{"name": "label", "kind": "fixed", "dtype": "int64", "shape": [1], "default": -1},
		{"name": "box", "kind": "fixed", "dtype": "float32", "shape": [2, 2], "default": 0.0},
		{"name": "tags", "kind": "var", "dtype": "int64", "default": 0}]`
	paths := []string{filepath.Join(dir, "part0.tfrecord"), filepath.Join(dir, "part1.tfrecord")}
	idx := []string{filepath.Join(dir, "part0.idx"), filepath.Join(dir, "part1.idx")}
	for _, withIndex := range []bool{true, false} {
		extra := ""
		if withIndex {
			extra = `, "index_path": ` + quoted(idx)
		}
		desc := fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "ops": [{"op": "readers.tfrecord", "name": "R",
			"outputs": ["img", "label", "box", "tags"], "args": {"path": %s, "features": %q %s}}],
			"outputs": ["img", "label", "box", "tags"]}`, quoted(paths), features, extra)
		p := build(t, desc, nil)
		n := 0
		for n < len(want) {
			b, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < b.Size() && n < len(want); i, n = i+1, n+1 {
				w := want[n]
				img := sample(t, b.Output(0), i)
				if fmt.Sprintf("%x", img) != w.Image {
					t.Errorf("record %d image: %x, want %s", n, img, w.Image)
				}
				label := int64(binary.LittleEndian.Uint64(sample(t, b.Output(1), i)))
				wl := int64(-1)
				if w.Label != nil {
					wl = *w.Label
				}
				if label != wl || !reflect.DeepEqual(b.Output(1).SampleShape(i), []int{1}) {
					t.Errorf("record %d label: %d %v, want %d [1]", n, label, b.Output(1).SampleShape(i), wl)
				}
				boxb := sample(t, b.Output(2), i)
				var box []float32
				for k := 0; k < len(boxb); k += 4 {
					box = append(box, math.Float32frombits(binary.LittleEndian.Uint32(boxb[k:])))
				}
				if !reflect.DeepEqual(box, w.Box) || !reflect.DeepEqual(b.Output(2).SampleShape(i), []int{2, 2}) {
					t.Errorf("record %d box: %v %v, want %v [2 2]", n, box, b.Output(2).SampleShape(i), w.Box)
				}
				tagb := sample(t, b.Output(3), i)
				tags := []int64{}
				for k := 0; k < len(tagb); k += 8 {
					tags = append(tags, int64(binary.LittleEndian.Uint64(tagb[k:])))
				}
				if !reflect.DeepEqual(tags, w.Tags) || b.Output(3).SampleShape(i)[0] != len(w.Tags) {
					t.Errorf("record %d tags: %v, want %v", n, tags, w.Tags)
				}
			}
		}
	}
}

func sample(t testing.TB, o *engine.OutputBatch, i int) []byte {
	t.Helper()
	v, err := o.SampleView(i)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Lease.Release()
	n := v.DType.Size()
	for _, e := range v.Shape {
		n *= int(e)
	}
	if n == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...)
}

func TestTFRecordBadFeatures(t *testing.T) {
	for _, f := range []string{`{}`, `[]`, `[{"name": "a", "kind": "fixed", "dtype": "int32"}]`,
		`[{"name": "a", "kind": "sparse", "dtype": "int64"}]`, `[{"name": "a", "kind": "fixed", "dtype": "int64", "default": "x"}]`} {
		desc := fmt.Sprintf(`{"batch_size": 1, "ops": [{"op": "readers.tfrecord", "name": "R", "outputs": ["a"],
			"args": {"path": ["x.tfrecord"], "features": %q}}], "outputs": ["a"]}`, f)
		p, err := engine.NewPipeline([]byte(desc))
		if err == nil {
			err = p.Build()
			p.Close()
		}
		if err == nil || !strings.Contains(err.Error(), `"features"`) {
			t.Errorf("features %s: got %v, want an error naming the argument", f, err)
		}
	}
}
