package readers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/tar"
	"github.com/godali/godali/internal/pyref"
	_ "github.com/godali/godali/ops/all"
)

// wdsData is a data set written twice: as a readers.file tree and, by an independent
// writer (Python's tarfile), as webdataset shards of the same samples in the same order.
type wdsData struct {
	files  []string // sample order
	labels []int
	shards []string
}

// writeImages writes n small JPEGs in class directories of root.
func writeImages(t testing.TB, root string, n int) ([]string, []int) {
	t.Helper()
	var files []string
	var labels []int
	for i := 0; i < n; i++ {
		label := i % 3
		p := filepath.Join(root, fmt.Sprintf("c%d", label), fmt.Sprintf("img%03d.jpg", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		w, h := 16+i%5*4, 12+i%3*4
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				img.Set(x, y, color.RGBA{uint8(x*13 + i*7), uint8(y*17 + i), uint8((x + y) * 5), 255})
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		labels = append(labels, label)
	}
	return files, labels
}

// tarWriterScript writes shards with tarfile: argv = out_dir, shards, then a JSON list
// of [path, label, drop_label]; each sample is KEY.jpg plus KEY.lbl (int32 LE).
const tarWriterScript = `
import sys, json, tarfile, io, struct
out, nshards, samples = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
per = [samples[len(samples)*i//nshards:len(samples)*(i+1)//nshards] for i in range(nshards)]
k = 0
for i, part in enumerate(per):
    with tarfile.open("%s/shard%d.tar" % (out, i), "w", format=tarfile.GNU_FORMAT) as tf:
        for path, label, drop in part:
            key = "sample%05d" % k
            k += 1
            tf.add(path, arcname=key + ".jpg")
            if not drop:
                b = struct.pack("<i", label)
                ti = tarfile.TarInfo(key + ".lbl"); ti.size = len(b)
                tf.addfile(ti, io.BytesIO(b))
            ti = tarfile.TarInfo(key + ".txt"); b = path.encode(); ti.size = len(b)
            tf.addfile(ti, io.BytesIO(b))
`

func makeWDS(t testing.TB, n, shards int, drop map[int]bool) wdsData {
	t.Helper()
	dir := t.TempDir()
	files, labels := writeImages(t, filepath.Join(dir, "tree"), n)
	var spec [][]any
	for i := range files {
		spec = append(spec, []any{files[i], labels[i], drop[i]})
	}
	js, _ := json.Marshal(spec)
	pyref.Run(t, nil, tarWriterScript, dir, fmt.Sprint(shards), string(js))
	d := wdsData{files: files, labels: labels}
	for i := 0; i < shards; i++ {
		d.shards = append(d.shards, filepath.Join(dir, fmt.Sprintf("shard%d.tar", i)))
	}
	return d
}

func quoted(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func ints(s []int) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func build(t testing.TB, desc string, restore []byte) *engine.Pipeline {
	t.Helper()
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	if restore != nil {
		if err := p.Restore(restore); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func pipeDesc(batch int, reader string) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "seed": 1234, "enable_checkpointing": true, "ops": [
		%s,
		{"op": "decoders.image", "name": "dec", "inputs": ["R:0"], "outputs": ["img"], "args": {"output_type": "RGB"}}],
		"outputs": ["img", "R:1"]}`, batch, reader)
}

func fileReaderDesc(batch int, d wdsData, common string) string {
	return pipeDesc(batch, fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["R:0", "R:1"], "args": {"files": %s, "labels": %s %s}}`,
		quoted(d.files), ints(d.labels), common))
}

func wdsDesc(batch int, d wdsData, common string) string {
	return pipeDesc(batch, fmt.Sprintf(`{"op": "readers.webdataset", "name": "R", "outputs": ["R:0", "R:1"], "args": {"paths": %s, "ext": ["jpg", "lbl;cls"], "dtypes": ["UINT8", "INT32"] %s}}`,
		quoted(d.shards), common))
}

// batchDump is one batch: every sample's outputs, shape and bytes.
func batchDump(t testing.TB, b *engine.Batch) string {
	t.Helper()
	var sb strings.Builder
	for k := 0; k < b.NumOutputs(); k++ {
		o := b.Output(k)
		for i := 0; i < o.NumSamples(); i++ {
			v, err := o.SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, e := range v.Shape {
				n *= int(e)
			}
			fmt.Fprintf(&sb, "%d/%d %v %x\n", k, i, o.SampleShape(i), unsafe.Slice((*byte)(v.Ptr), n))
			v.Lease.Release()
		}
	}
	return sb.String()
}

// epochs runs n epochs and returns every batch.
func epochs(t testing.TB, p *engine.Pipeline, n int) []string {
	t.Helper()
	var out []string
	for e := 0; e < n; e++ {
		for {
			b, err := p.Next()
			if errors.Is(err, engine.ErrEndOfEpoch) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, batchDump(t, b))
		}
		if err := p.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestWebdatasetEqualsFileReader: the same samples read from tar shards and from files
// decode to the same pixels and labels, batch by batch, under every combination of
// sharding, shuffling, stick_to_shard and pad_last_batch, over epochs.
func TestWebdatasetEqualsFileReader(t *testing.T) {
	d := makeWDS(t, 23, 3, nil)
	for _, common := range []string{
		``,
		`, "num_shards": 3, "shard_id": 1`,
		`, "num_shards": 4, "shard_id": 3, "pad_last_batch": true`,
		`, "num_shards": 2, "shard_id": 0, "random_shuffle": true, "initial_fill": 5`,
		`, "num_shards": 3, "shard_id": 2, "random_shuffle": true, "stick_to_shard": true, "pad_last_batch": true`,
		`, "shuffle_after_epoch": true, "num_shards": 2, "shard_id": 1`,
	} {
		for _, batch := range []int{4, 7} {
			want := epochs(t, build(t, fileReaderDesc(batch, d, common), nil), 3)
			got := epochs(t, build(t, wdsDesc(batch, d, common), nil), 3)
			if len(got) != len(want) {
				t.Fatalf("%s batch %d: %d batches, readers.file gives %d", common, batch, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s batch %d: batch %d differs from readers.file's:\n%.600s\nwant\n%.600s", common, batch, i, got[i], want[i])
				}
			}
		}
	}
}

// TestWebdatasetIndexAndMissing: an index gives what a scan gives; a sample without a
// component is empty, skipped or an error as missing_component_behavior says.
func TestWebdatasetIndexAndMissing(t *testing.T) {
	d := makeWDS(t, 10, 2, map[int]bool{3: true})
	var idx []string
	for _, s := range d.shards {
		f, err := os.Open(s)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		samples, err := tar.Samples(f, st.Size(), tar.Options{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := tar.WriteIndex(&b, samples); err != nil {
			t.Fatal(err)
		}
		ip := s + ".idx"
		os.WriteFile(ip, b.Bytes(), 0o644)
		idx = append(idx, ip)
	}
	scan := epochs(t, build(t, wdsDesc(5, d, ""), nil), 1)
	indexed := epochs(t, build(t, wdsDesc(5, d, `, "index_paths": `+quoted(idx)), nil), 1)
	if strings.Join(scan, "") != strings.Join(indexed, "") {
		t.Fatalf("index_paths changes the samples")
	}
	if !strings.Contains(scan[0], "1/3 [0] \n") {
		t.Errorf("missing label of sample 3 is not empty:\n%s", scan[0])
	}
	skip := epochs(t, build(t, wdsDesc(9, d, `, "missing_component_behavior": "skip"`), nil), 1)
	if len(skip) != 1 || strings.Count(skip[0], "\n") != 18 || strings.Contains(skip[0], "[0] \n") {
		t.Errorf("skip: want 9 samples, none empty:\n%s", strings.Join(skip, "--\n"))
	}
	p, err := engine.NewPipeline([]byte(wdsDesc(5, d, `, "missing_component_behavior": "error"`)))
	if err == nil {
		err = p.Build()
		defer p.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "sample00003") || !strings.Contains(err.Error(), "shard0.tar") {
		t.Errorf("missing_component_behavior=error: got %v, want an error naming the sample and the shard", err)
	}
	// Extensions case-insensitively: "JPG;LBL" matches nothing unless asked.
	ci := strings.Replace(wdsDesc(5, d, `, "case_sensitive_extensions": false`), `["jpg", "lbl;cls"]`, `["JPG", "LBL"]`, 1)
	if got := epochs(t, build(t, ci, nil), 1); strings.Join(got, "") != strings.Join(scan, "") {
		t.Errorf("case_sensitive_extensions=false changes the samples")
	}
}

// TestWebdatasetCheckpoint: a pipeline restored from a mid-epoch checkpoint gives the
// batches the saved one gave next, shuffling included.
func TestWebdatasetCheckpoint(t *testing.T) {
	d := makeWDS(t, 19, 2, nil)
	desc := wdsDesc(3, d, `, "random_shuffle": true, "initial_fill": 6, "num_shards": 2, "shard_id": 1`)
	p := build(t, desc, nil)
	for i := 0; i < 2; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	want := epochs(t, p, 2)
	got := epochs(t, build(t, desc, cp), 2)
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("restored pipeline differs: %d batches vs %d", len(got), len(want))
	}
}
