package remote_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/source/remote"
	"github.com/godali/godali/source/remote/internal/faultproxy"
)

// numpyE2EScript saves arrays with np.save (C and Fortran order, big-endian among them)
// and prints for each its C-ordered little-endian bytes, whole and of a[1:3, 2:5].
const numpyE2EScript = `
import json, sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(9)
out = {}
for i in range(6):
    a = rng.integers(-30000, 30000, (4 + i, 6), dtype=np.int16).astype(">i2" if i % 3 == 0 else "<i2")
    name = "n%02d.npy" % i
    np.save(d + "/" + name, np.asfortranarray(a) if i % 2 else a)
    le = lambda x: np.ascontiguousarray(x).astype("<i2").tobytes().hex()
    out[name] = dict(all=le(a), roi=le(a[1:3, 2:5]))
json.dump(out, sys.stdout)
`

// readNumpy reads one epoch of readers.numpy with args and returns the bytes of each
// sample.
func readNumpy(t *testing.T, args string) [][]byte {
	t.Helper()
	desc := fmt.Sprintf(`{"batch_size": 3, "num_threads": 2, "ops": [{"op": "readers.numpy", "name": "R", "outputs": ["a"], "args": %s}], "outputs": ["a"]}`, args)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for {
		b, err := p.Next()
		if errors.Is(err, engine.ErrEndOfEpoch) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Size(); i++ {
			v, err := b.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, e := range v.Shape {
				n *= int(e)
			}
			got = append(got, append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...))
			v.Lease.Release()
		}
	}
}

// TestNumpyOverS3AndHTTP: readers.numpy over moto (file_root listing, whole arrays and
// a region read by ranges) and nginx (a files list), against numpy's bytes.
func TestNumpyOverS3AndHTTP(t *testing.T) {
	dir := t.TempDir()
	var ref map[string]struct{ All, Roi string }
	if err := json.Unmarshal(pyref.Run(t, []string{"numpy"}, numpyE2EScript, dir), &ref); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var names []string
	for name := range ref {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files["npy/"+name] = b
		names = append(names, name)
	}
	files["npy/skip.txt"] = []byte("not an array")
	check := func(what string, got [][]byte, roi bool) {
		t.Helper()
		if len(got) != len(ref) {
			t.Fatalf("%s: %d samples, want %d", what, len(got), len(ref))
		}
		for i := 1; i < len(names); i++ { // sorted names: file_root's order
			for j := i; j > 0 && names[j] < names[j-1]; j-- {
				names[j], names[j-1] = names[j-1], names[j]
			}
		}
		for i, name := range names {
			w := ref[name].All
			if roi {
				w = ref[name].Roi
			}
			want, _ := hex.DecodeString(w)
			if string(got[i]) != string(want) {
				t.Errorf("%s: %s differs from numpy's", what, name)
			}
		}
	}
	endpoint := remote.MotoServer(t)
	remote.S3Env(t, endpoint)
	bucket := "npy" + strings.ReplaceAll(remote.TestName(t), "-", "")
	remote.PutObjects(t, endpoint, bucket, files)
	root := "s3://" + bucket + "/npy"
	check("s3 file_root", readNumpy(t, fmt.Sprintf(`{"file_root": %q}`, root)), false)
	check("s3 region", readNumpy(t, fmt.Sprintf(`{"file_root": %q, "roi_start": [1, 2], "roi_end": [3, 5]}`, root)), true)

	flat := map[string][]byte{}
	for _, n := range names {
		flat[n] = files["npy/"+n]
	}
	url, _, _ := remote.NginxFixture(t, flat, faultproxy.Faults{})
	var list []string
	for _, n := range names {
		list = append(list, url+n)
	}
	check("http files", readNumpy(t, fmt.Sprintf(`{"files": %s}`, quoted(list))), false)
	check("http region", readNumpy(t, fmt.Sprintf(`{"files": %s, "roi_shape": [2, 3], "roi_start": [1, 2]}`, quoted(list))), true)
}
