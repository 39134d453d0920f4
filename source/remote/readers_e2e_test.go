package remote_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
	_ "github.com/godali/godali/ops/all"
	"github.com/godali/godali/source/remote"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// End to end: readers.webdataset and readers.file read from moto (S3) and nginx (HTTP)
// through the fault proxy (latency, 503s, cut bodies), and one epoch delivers every
// sample exactly once with the right bytes.

var readerFaults = faultproxy.Faults{Latency: time.Millisecond, ErrorRate: 0.1, DropRate: 0.1}

// shardScript writes tar shards with Python's tarfile: argv = dir, JSON {shard: [[key,
// payload file]]}; each sample is KEY.bin (the payload) and KEY.txt (the key).
const shardScript = `
import sys, json, tarfile, io
out, shards = sys.argv[1], json.load(open(sys.argv[2]))
for name, samples in sorted(shards.items()):
    with tarfile.open(out + "/" + name, "w") as tf:
        for key, payload in samples:
            for ext, b in (("bin", open(payload, "rb").read()), ("txt", key.encode())):
                ti = tarfile.TarInfo(key + "." + ext); ti.size = len(b)
                tf.addfile(ti, io.BytesIO(b))
`

type e2eData struct {
	files   map[string][]byte // object name -> bytes (shards and the readers.file tree)
	samples map[string][]byte // sample key -> payload
	shards  []string
	tree    []string // readers.file paths, relative
}

func makeE2E(t *testing.T) e2eData {
	rng := rand.New(rand.NewPCG(7, 9))
	d := e2eData{files: map[string][]byte{}, samples: map[string][]byte{}}
	dir := t.TempDir()
	shards := map[string][][2]string{}
	for s := 0; s < 3; s++ {
		name := fmt.Sprintf("shard%d.tar", s)
		d.shards = append(d.shards, name)
		for i := 0; i < 9+s; i++ {
			key := fmt.Sprintf("k%d_%03d", s, i)
			b := make([]byte, 1+rng.IntN(200<<10))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			d.samples[key] = b
			pf := filepath.Join(dir, key+".payload")
			if err := os.WriteFile(pf, b, 0o644); err != nil {
				t.Fatal(err)
			}
			shards[name] = append(shards[name], [2]string{key, pf})
			rel := fmt.Sprintf("tree/c%d/%s.jpg", i%2, key)
			d.files[rel] = b
			d.tree = append(d.tree, rel)
		}
	}
	js, _ := json.Marshal(shards)
	spec := filepath.Join(dir, "shards.json")
	if err := os.WriteFile(spec, js, 0o644); err != nil {
		t.Fatal(err)
	}
	pyref.Run(t, nil, shardScript, dir, spec)
	for _, s := range d.shards {
		b, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		d.files[s] = b
	}
	var list strings.Builder
	for i, p := range d.tree {
		fmt.Fprintf(&list, "%s %d\n", strings.TrimPrefix(p, "tree/"), i)
	}
	d.files["tree/list.txt"] = []byte(list.String())
	return d
}

// readEpoch runs one epoch of a one-reader pipeline and returns the samples it gave:
// key -> bytes of output 0, where the key is output 1 (webdataset) or the label's
// sample key (readers.file, whose labels index tree).
func readEpoch(t *testing.T, reader string, keyOf func(out1 []byte) string) map[string][][]byte {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": 5, "num_threads": 3, "ops": [%s], "outputs": ["a", "b"]}`, reader)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	got := map[string][][]byte{}
	for {
		b, err := p.Next()
		if errors.Is(err, engine.ErrEndOfEpoch) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Size(); i++ {
			out := [2][]byte{}
			for k := 0; k < 2; k++ {
				v, err := b.Output(k).SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				n := v.DType.Size()
				for _, e := range v.Shape {
					n *= int(e)
				}
				out[k] = append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...)
				v.Lease.Release()
			}
			key := keyOf(out[1])
			got[key] = append(got[key], out[0])
		}
		if b.Size() < 5 {
			t.Fatalf("short batch")
		}
	}
}

// checkOnce checks that every sample came once (padding aside: the epoch is rounded up
// to whole batches by wrapping, so the first few samples may come twice) with its bytes.
func checkOnce(t *testing.T, what string, got map[string][][]byte, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d distinct samples, want %d", what, len(got), len(want))
	}
	extra := 0
	for k, w := range want {
		gs := got[k]
		if len(gs) == 0 {
			t.Errorf("%s: sample %s missing", what, k)
		}
		extra += max(0, len(gs)-1)
		for _, g := range gs {
			if string(g) != string(w) {
				t.Errorf("%s: sample %s: %d bytes differ from the %d written", what, k, len(g), len(w))
			}
		}
	}
	if extra >= 5 {
		t.Errorf("%s: %d samples repeated; the epoch should wrap less than a batch", what, extra)
	}
}

func quoted(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func keyOfText(b []byte) string { return string(b) }

func TestReadersOverS3(t *testing.T) {
	testref.Long(t, "starts moto's S3 server")
	d := makeE2E(t)
	endpoint := remote.MotoServer(t)
	p, err := faultproxy.Start(endpoint, readerFaults, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	remote.S3Env(t, p.URL)
	bucket := "rdr" + strings.ReplaceAll(remote.TestName(t), "-", "")
	remote.PutObjects(t, endpoint, bucket, d.files)
	base := "s3://" + bucket + "/"

	var shards []string
	for _, s := range d.shards {
		shards = append(shards, base+s)
	}
	got := readEpoch(t, fmt.Sprintf(`{"op": "readers.webdataset", "name": "R", "outputs": ["a", "b"], "args": {"paths": %s, "ext": ["bin", "txt"], "io_concurrency": 8}}`, quoted(shards)), keyOfText)
	checkOnce(t, "webdataset over s3", got, d.samples)

	// readers.tfrecord over S3, records written by the PyPI tfrecord package, scanned
	// (no index) and read ahead.
	recs := tfrecordFiles(t)
	remote.PutObjects(t, endpoint, bucket, recs.files)
	got = readEpoch(t, fmt.Sprintf(`{"op": "readers.tfrecord", "name": "R", "outputs": ["a", "b"], "args": {"path": [%q, %q], "features": %q}}`,
		base+"r0.tfrecord", base+"r1.tfrecord", `[{"name": "data", "kind": "fixed", "dtype": "string", "shape": []}, {"name": "key", "kind": "fixed", "dtype": "string", "shape": []}]`), keyOfText)
	checkOnce(t, "tfrecord over s3", got, recs.samples)

	keys := treeKeys(d)
	cacheDir := t.TempDir()
	got = readEpoch(t, fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_root": %q, "file_filters": ["*.jpg"], "cache_dir": %q}}`, base+"tree", cacheDir),
		func(b []byte) string { return fmt.Sprint(b) })
	// file_root labels are class indices: check by content instead.
	byContent := map[string][][]byte{}
	for _, bs := range got {
		for _, b := range bs {
			byContent[keys[string(b)]] = append(byContent[keys[string(b)]], b)
		}
	}
	checkOnce(t, "readers.file file_root over s3", byContent, d.samples)
	if ents, _ := os.ReadDir(cacheDir); len(ents) < len(d.samples) {
		t.Errorf("cache_dir holds %d entries after the epoch; want one per file (%d)", len(ents), len(d.samples))
	}
	if p.Errors.Load() == 0 || p.Drops.Load() == 0 {
		t.Errorf("faults were not exercised: %d 503s, %d drops", p.Errors.Load(), p.Drops.Load())
	}
}

// treeKeys maps a file's bytes to its sample key.
func treeKeys(d e2eData) map[string]string {
	m := map[string]string{}
	for k, b := range d.samples {
		m[string(b)] = k
	}
	return m
}

func TestReadersOverHTTP(t *testing.T) {
	d := makeE2E(t)
	url, root := remote.NginxServer(t)
	dir := filepath.Join(root, remote.TestName(t))
	for name, b := range d.files {
		full := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := faultproxy.Start(url, readerFaults, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base := p.URL + "/" + remote.TestName(t) + "/"
	var shards []string
	for _, s := range d.shards {
		shards = append(shards, base+s)
	}
	got := readEpoch(t, fmt.Sprintf(`{"op": "readers.webdataset", "name": "R", "outputs": ["a", "b"], "args": {"paths": %s, "ext": ["bin", "txt"]}}`, quoted(shards)), keyOfText)
	checkOnce(t, "webdataset over http", got, d.samples)

	// readers.file with a file_list (HTTP has no listing); labels index d.tree.
	got = readEpoch(t, fmt.Sprintf(`{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_list": %q, "random_shuffle": true}}`, base+"tree/list.txt"),
		func(b []byte) string {
			l := int(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
			k := filepath.Base(d.tree[l])
			return strings.TrimSuffix(k, ".jpg")
		})
	checkOnce(t, "readers.file file_list over http", got, d.samples)

	// A file the list names but the server lacks fails after its request, as a data
	// error naming the URL; on_error="skip" replaces it and the epoch goes on.
	list := string(d.files["tree/list.txt"]) + "missing/none.jpg 0\n"
	if err := os.WriteFile(filepath.Join(dir, "tree", "list2.txt"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, onError := range []string{"raise", "skip"} {
		pp, err := engine.NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 31, "on_error": %q, "ops": [{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_list": %q}}], "outputs": ["a"]}`, onError, base+"tree/list2.txt")))
		if err != nil {
			t.Fatal(err)
		}
		if err = pp.Build(); err == nil {
			_, err = pp.Next()
		}
		pp.Close()
		if onError == "skip" && err != nil {
			t.Errorf("on_error=skip: %v", err)
		}
		if onError == "raise" && (err == nil || !strings.Contains(err.Error(), base+"tree/missing/none.jpg") || !strings.Contains(err.Error(), "not found")) {
			t.Errorf("on_error=raise: got %v, want a data error naming the missing URL", err)
		} else if onError == "raise" {
			var e *engine.Error
			if !errors.As(err, &e) || e.Status != engine.StatusData {
				t.Errorf("on_error=raise: %v is not a data error", err)
			}
		}
	}

	// file_root needs a listing: the error says so.
	pp, err := engine.NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 2, "ops": [{"op": "readers.file", "name": "R", "outputs": ["a", "b"], "args": {"file_root": %q}}], "outputs": ["a"]}`, base+"tree")))
	if err == nil {
		err = pp.Build()
		pp.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "listing is not available over HTTP") {
		t.Errorf("file_root over http: got %v, want the listing error", err)
	}
	if p.Errors.Load() == 0 || p.Drops.Load() == 0 {
		t.Errorf("faults were not exercised: %d 503s, %d drops", p.Errors.Load(), p.Drops.Load())
	}
	var names []string
	for k := range got {
		names = append(names, k)
	}
	sort.Strings(names)
}

const tfrecordScript = `
import sys, os
from tfrecord import TFRecordWriter
out = sys.argv[1]
for f in range(2):
    w = TFRecordWriter("%s/r%d.tfrecord" % (out, f))
    for i in range(8 + f):
        key = "t%d_%02d" % (f, i)
        w.write({"data": (os.urandom(1 + (i * 7919) % 150000), "byte"), "key": (key.encode(), "byte")})
    w.close()
`

type recData struct {
	files   map[string][]byte
	samples map[string][]byte
}

// tfrecordFiles writes two record files and reads back what they hold with the
// package's own reader, as the expected samples.
func tfrecordFiles(t *testing.T) recData {
	dir := t.TempDir()
	pyref.Run(t, []string{"tfrecord"}, tfrecordScript, dir)
	out := pyref.Run(t, []string{"tfrecord"}, `
import sys, json
from tfrecord.reader import tfrecord_loader
res = {}
for f in range(2):
    for rec in tfrecord_loader("%s/r%d.tfrecord" % (sys.argv[1], f), None, {"data": "byte", "key": "byte"}):
        res[bytes(rec["key"]).decode()] = bytes(rec["data"]).hex()
json.dump(res, sys.stdout)
`, dir)
	var m map[string]string
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	d := recData{files: map[string][]byte{}, samples: map[string][]byte{}}
	for k, h := range m {
		b := make([]byte, len(h)/2)
		fmt.Sscanf(h, "%x", &b)
		d.samples[k] = b
	}
	for _, f := range []string{"r0.tfrecord", "r1.tfrecord"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		d.files[f] = b
	}
	return d
}
