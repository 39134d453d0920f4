package readers

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

type sample struct {
	dtype engine.DType
	shape []int64
	data  []byte
}

// readAll runs a pipeline of one reader node (args as JSON, outputs named) for one
// batch of batch samples and returns [sample][output].
func readAll(t *testing.T, op, args string, outputs, batch int) [][]sample {
	t.Helper()
	var names []string
	for i := 0; i < outputs; i++ {
		names = append(names, fmt.Sprintf("%q", fmt.Sprintf("o%d", i)))
	}
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 2, "device_id": null, "seed": 3,
	  "ops": [{"op": %q, "name": "R", "outputs": [%s], "args": %s}], "outputs": [%s]}`,
		batch, op, strings.Join(names, ","), args, strings.Join(names, ","))
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]sample, b.Size())
	for i := range out {
		for k := 0; k < b.NumOutputs(); k++ {
			v, err := b.Output(k).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			n := v.DType.Size()
			for _, d := range v.Shape {
				n *= int(d)
			}
			data := append([]byte(nil), unsafe.Slice((*byte)(v.Ptr), n)...)
			out[i] = append(out[i], sample{v.DType, v.Shape, data})
			v.Lease.Release()
		}
	}
	return out
}

const numpyScript = `
import json, sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
out = []
specs = [("<f4", (3, 4, 5)), (">i4", (2, 7, 3)), ("<i8", (4, 1, 6)), ("|u1", (5, 5, 2)), ("<f8", (1, 3, 3)),
         ("|i1", (2, 2, 9)), ("<f2", (3, 3, 3)), ("|b1", (2, 3, 4)), ("<u2", (3, 2, 5)), (">i2", (2, 4, 3)),
         (">u4", (3, 1, 4)), ("<u8", (2, 3, 2)), (">f2", (2, 2, 2))]
for i, (dt, shape) in enumerate(specs):
    a = (rng.standard_normal(shape) * 100).astype(dt)
    for order in "CF":
        name = "%s/a%02d%s.npy" % (d, i, order)
        np.save(name, np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a))
        c = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"))
        out.append(dict(name=name, dtype=a.dtype.str, shape=list(shape), c=c.tobytes().hex(), fortran=order == "F"))
json.dump(out, sys.stdout)
`

var npyDTypes = map[string]engine.DType{"<f4": engine.Float32, ">i4": engine.Int32, "<i8": engine.Int64, "|u1": engine.UInt8,
	"<f8": engine.Float64, "|i1": engine.Int8, "<f2": engine.Float16, "|b1": engine.Bool,
	"<u2": engine.UInt16, ">i2": engine.Int16, ">u4": engine.UInt32, "<u8": engine.UInt64, ">f2": engine.Float16}

// TestNumpyAgainstNumpy: arrays numpy.save wrote, C and Fortran order, little and big
// endian, every dtype; readers.numpy outputs the C-order little-endian bytes numpy gives.
func TestNumpyAgainstNumpy(t *testing.T) {
	dir := t.TempDir()
	var ref []struct {
		Name, Dtype, C string
		Shape          []int64
		Fortran        bool
	}
	if err := json.Unmarshal(pyref.Run(t, []string{"numpy"}, numpyScript, dir), &ref); err != nil {
		t.Fatal(err)
	}
	// One dtype per pipeline (the output's dtype is the data set's).
	for _, r := range ref {
		got := readAll(t, "readers.numpy", fmt.Sprintf(`{"files": [%q]}`, r.Name), 1, 1)[0][0]
		want, _ := hexDecode(r.C)
		if got.dtype != npyDTypes[r.Dtype] || !reflect.DeepEqual(got.shape, r.Shape) || !bytes.Equal(got.data, want) {
			t.Errorf("%s (%s, fortran %v): got %v %v, want %v %v; bytes equal %v", filepath.Base(r.Name), r.Dtype, r.Fortran,
				got.dtype, got.shape, npyDTypes[r.Dtype], r.Shape, bytes.Equal(got.data, want))
		}
	}
	// file_root with file_filter: the float32 pair, sorted.
	sub := filepath.Join(dir, "f4")
	os.MkdirAll(sub, 0o755)
	for _, n := range []string{"a00C.npy", "a00F.npy"} {
		os.Rename(filepath.Join(dir, n), filepath.Join(sub, n))
	}
	os.WriteFile(filepath.Join(sub, "skip.txt"), []byte("x"), 0o644)
	got := readAll(t, "readers.numpy", fmt.Sprintf(`{"file_root": %q}`, sub), 1, 2)
	if !bytes.Equal(got[0][0].data, got[1][0].data) || len(got[0][0].data) != 3*4*5*4 {
		t.Errorf("file_root: the C and Fortran files of one array differ")
	}
	// A data set mixing dtypes fails on the odd sample, naming it.
	_, err := tryRead("readers.numpy", fmt.Sprintf(`{"files": [%q, %q]}`, filepath.Join(sub, "a00C.npy"), filepath.Join(dir, "a01C.npy")), 2)
	if err == nil || !strings.Contains(err.Error(), "a01C.npy") {
		t.Errorf("mixed dtypes: err %v, want one naming a01C.npy", err)
	}
}

func tryRead(op, args string, batch int) (*engine.Batch, error) {
	desc := fmt.Sprintf(`{"batch_size": %d, "num_threads": 1, "device_id": null, "ops": [{"op": %q, "name": "R", "outputs": ["o"], "args": %s}], "outputs": ["o"]}`, batch, op, args)
	p, err := engine.NewPipeline([]byte(desc))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Build(); err != nil {
		return nil, err
	}
	if err := p.Run(); err != nil {
		return nil, err
	}
	return p.Next()
}

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

const mxnetWriter = `
import json, sys, numpy as np
import mxnet.recordio as rio
out = []
for part in range(2):
    rec, idx = sys.argv[1] + "%d.rec" % part, sys.argv[1] + "%d.idx" % part
    w = rio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(5):
        key = 10 * part + i
        label = float(key) if i % 2 == 0 else [float(key), 0.5, -2.0]
        data = bytes((key * 7 + j) % 256 for j in range(13 * i + 3))
        w.write_idx(key, rio.pack(rio.IRHeader(0, label, key, 0), data))
        out.append(dict(data=data.hex(), label=label if isinstance(label, list) else [label]))
    w.close()
json.dump(out, sys.stdout)
`

// TestMXNetAgainstMXNet: .rec/.idx pairs written by mxnet's MXIndexedRecordIO, scalar
// and array labels; readers.mxnet gives each record's data and label.
func TestMXNetAgainstMXNet(t *testing.T) {
	testref.Long(t, "mxnet as reference")
	base := filepath.Join(t.TempDir(), "part")
	var ref []struct {
		Data  string
		Label []float64
	}
	if err := json.Unmarshal(pyref.Run(t, []string{"mxnet"}, mxnetWriter, base), &ref); err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf(`{"path": [%q, %q], "index_path": [%q, %q]}`, base+"0.rec", base+"1.rec", base+"0.idx", base+"1.idx")
	got := readAll(t, "readers.mxnet", args, 2, len(ref))
	for i, r := range ref {
		want, _ := hexDecode(r.Data)
		if !bytes.Equal(got[i][0].data, want) {
			t.Errorf("record %d: data differs", i)
		}
		var lab []float64
		for j := 0; j+4 <= len(got[i][1].data); j += 4 {
			lab = append(lab, float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i][1].data[j:]))))
		}
		if got[i][1].dtype != engine.Float32 || !reflect.DeepEqual(lab, r.Label) {
			t.Errorf("record %d: label %v (%v), want %v", i, lab, got[i][1].dtype, r.Label)
		}
	}
}

func caffeRef(t *testing.T, kind, db string, files []string) map[string]map[string]any {
	script, err := os.ReadFile("../../formats/caffe/testdata/caffe_ref.py")
	if err != nil {
		t.Fatal(err)
	}
	out := pyref.Run(t, []string{"lmdb", "google.protobuf"}, string(script), append([]string{kind, db}, files...)...)
	var ref map[string]map[string]any
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

func someFiles(t *testing.T, n int) []string {
	dir := t.TempDir()
	var out []string
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("img%d.jpg", i))
		b := bytes.Repeat([]byte{0xff, 0xd8, byte(i)}, 40+i*17)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestCaffeAgainstPyLMDB: a Caffe LMDB of Datum messages the protobuf and lmdb packages
// wrote (encoded images and one raw HWC datum), read in key order.
func TestCaffeAgainstPyLMDB(t *testing.T) {
	files := someFiles(t, 6)
	db := filepath.Join(t.TempDir(), "caffe_db")
	ref := caffeRef(t, "caffe", db, files)
	got := readAll(t, "readers.caffe", fmt.Sprintf(`{"path": %q}`, db), 2, len(ref))
	keys := sortedKeys(ref)
	for i, k := range keys {
		r := ref[k]
		var want []byte
		if f, ok := r["file"].(string); ok {
			want, _ = os.ReadFile(f)
			if len(got[i][0].shape) != 1 {
				t.Errorf("%s: encoded image shape %v", k, got[i][0].shape)
			}
		} else {
			want, _ = base64.StdEncoding.DecodeString(r["raw"].(string))
			if !reflect.DeepEqual(got[i][0].shape, []int64{2, 3, 3}) {
				t.Errorf("%s: raw image shape %v, want [2 3 3]", k, got[i][0].shape)
			}
		}
		if !bytes.Equal(got[i][0].data, want) {
			t.Errorf("%s: image bytes differ", k)
		}
		if l := int32(binary.LittleEndian.Uint32(got[i][1].data)); got[i][1].dtype != engine.Int32 || l != int32(r["label"].(float64)) {
			t.Errorf("%s: label %d, want %v", k, l, r["label"])
		}
	}
	// label only: one output, the label.
	lo := readAll(t, "readers.caffe", fmt.Sprintf(`{"path": %q, "image_available": false}`, db), 1, 2)
	if lo[1][0].dtype != engine.Int32 || binary.LittleEndian.Uint32(lo[1][0].data) != uint32(ref[keys[1]]["label"].(float64)) {
		t.Errorf("label-only output: %+v", lo[1][0])
	}
	if _, err := tryRead("readers.caffe", fmt.Sprintf(`{"path": %q}`, filepath.Join(db, "nope")), 1); err == nil {
		t.Error("a missing database opened")
	}
}

// TestCaffe2AgainstPyLMDB: a Caffe2 LMDB of TensorProtos [image STRING, label INT32,
// extra FLOAT]; single label plus one additional input.
func TestCaffe2AgainstPyLMDB(t *testing.T) {
	files := someFiles(t, 5)
	db := filepath.Join(t.TempDir(), "caffe2_db")
	ref := caffeRef(t, "caffe2", db, files)
	got := readAll(t, "readers.caffe2", fmt.Sprintf(`{"path": %q, "additional_inputs": 1}`, db), 3, len(ref))
	for i, k := range sortedKeys(ref) {
		r := ref[k]
		want, _ := os.ReadFile(r["file"].(string))
		if !bytes.Equal(got[i][0].data, want) {
			t.Errorf("%s: image bytes differ", k)
		}
		if l := int32(binary.LittleEndian.Uint32(got[i][1].data)); got[i][1].dtype != engine.Int32 || l != int32(r["label"].(float64)) {
			t.Errorf("%s: label %d, want %v", k, l, r["label"])
		}
		var extra []any
		for j := 0; j+4 <= len(got[i][2].data); j += 4 {
			extra = append(extra, float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i][2].data[j:]))))
		}
		if got[i][2].dtype != engine.Float32 || !reflect.DeepEqual(extra, r["extra"]) {
			t.Errorf("%s: extra %v, want %v", k, extra, r["extra"])
		}
	}
	// Multi-label sparse: the int32 label is an index into a num_labels vector.
	ml := readAll(t, "readers.caffe2", fmt.Sprintf(`{"path": %q, "label_type": 1, "num_labels": 7, "image_available": true}`, db), 2, 1)
	vec := ml[0][1]
	want := make([]byte, 28)
	binary.LittleEndian.PutUint32(want[4*int(ref[sortedKeys(ref)[0]]["label"].(float64)):], 1)
	if !reflect.DeepEqual(vec.shape, []int64{7}) || !bytes.Equal(vec.data, want) {
		t.Errorf("multi-label sparse: %v %v, want %v", vec.shape, vec.data, want)
	}
	// More outputs named than the arguments produce: refused at build.
	if _, err := engine.NewPipeline([]byte(fmt.Sprintf(`{"batch_size": 1, "num_threads": 1, "device_id": null,
	  "ops": [{"op": "readers.caffe2", "name": "R", "outputs": ["a", "b", "c"], "args": {"path": %q}}], "outputs": ["a"]}`, db))); err == nil ||
		!strings.Contains(err.Error(), "produces 2") {
		t.Errorf("three outputs of a two-output caffe2 reader: err %v", err)
	}
}

func sortedKeys(m map[string]map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestNumpyRegionArguments: conflicting or malformed region arguments are refused with
// an error naming the argument; a region leaving the array under "error" names the
// dimension; rounding of relative bounds is halves away from zero (2.5 -> 3).
func TestNumpyRegionArguments(t *testing.T) {
	dir := t.TempDir()
	var ref []struct {
		Name, Dtype, C string
		Shape          []int64
		Fortran        bool
	}
	if err := json.Unmarshal(pyref.Run(t, []string{"numpy"}, numpyScript, dir), &ref); err != nil {
		t.Fatal(err)
	}
	f := ref[0].Name // float32 (3, 4, 5), C order
	for args, want := range map[string]string{
		`"roi_start": [0, 0, 0], "rel_roi_start": [0, 0, 0]`: `"rel_roi_start"`,
		`"roi_end": [1, 1, 1], "roi_shape": [1, 1, 1]`:       `"roi_end"`,
		`"roi_start": [0], "out_of_bounds_policy": "wrap"`:   `"out_of_bounds_policy"`,
		`"roi_start": [0], "roi_axes": [3]`:                  `"roi_axes"`,
		`"roi_start": [0], "roi_axes": [1, 1]`:               `"roi_axes"`,
		`"roi_start": [0, 1]`:                                `"roi_start": 2 values for 3 region axes`,
		`"roi_start": [0, 0, 2], "roi_end": [1, 1, 1]`:       `ends (1) before it starts (2)`,
		`"roi_start": [0, 0, 4], "roi_end": [1, 1, 6]`:       `region [4, 6) of dimension 2 leaves the array of shape [3 4 5]`,
	} {
		_, err := tryRead("readers.numpy", fmt.Sprintf(`{"files": [%q], %s}`, f, args), 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want one containing %s", args, err, want)
		}
	}
	// rel_roi_start 0.5 of 5 is 2.5: rounded to 3; rel_roi_end 0.9 of 5 is 4.5: 5.
	got := readAll(t, "readers.numpy", fmt.Sprintf(`{"files": [%q], "rel_roi_start": [0.5], "rel_roi_end": [0.9], "roi_axes": [2]}`, f), 1, 1)[0][0]
	all, _ := hexDecode(ref[0].C)
	var want []byte
	for row := 0; row < 12; row++ {
		want = append(want, all[(row*5+3)*4:(row*5+5)*4]...)
	}
	if !reflect.DeepEqual(got.shape, []int64{3, 4, 2}) || !bytes.Equal(got.data, want) {
		t.Errorf("relative region: shape %v (want [3 4 2]), data equal %v", got.shape, bytes.Equal(got.data, want))
	}
}
