package npy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
)

// numpyScript saves arrays with np.save in every supported dtype, both byte orders,
// C and Fortran order, 0-d, empty and 1-D shapes, and format versions 1.0, 2.0 and
// 3.0 (np.lib.format.write_array), and prints for each the dtype, shape, order and
// the C-ordered little-endian bytes numpy itself produces from the array.
const numpyScript = `
import json, sys
import numpy as np
from numpy.lib import format as npf
out = sys.argv[1]
res = []
rng = np.random.default_rng(7)
def save(name, a, version=None, fortran=False):
    path = f"{out}/{name}.npy"
    stored = np.asfortranarray(a) if fortran else a
    if version is None:
        np.save(path, stored)
    else:
        with open(path, "wb") as f:
            npf.write_array(f, stored, version=version)
    c = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"))
    res.append(dict(name=name, descr=a.dtype.str, shape=list(a.shape), fortran=bool(npf.header_data_from_array_1_0(stored)["fortran_order"]),
                    data=c.tobytes().hex()))
for code in ["?", "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]:
    for order in "<>":
        dt = np.dtype(code).newbyteorder(order) if code not in ("?", "u1", "i1") else np.dtype(code)
        if code == "?":
            a = rng.integers(0, 2, (3, 4, 5)).astype(bool)
        elif code[0] == "f":
            a = (rng.standard_normal((3, 4, 5)) * 1000).astype(dt)
        else:
            info = np.iinfo(np.dtype(code))
            a = rng.integers(info.min, info.max, (3, 4, 5), dtype=np.dtype(code), endpoint=True).astype(dt)
        for fortran in (False, True):
            save(f"{code}{'le' if order == '<' else 'be'}{'F' if fortran else 'C'}", a, fortran=fortran)
save("scalar", np.array(3.5, dtype=">f8"))
save("empty", np.zeros((0, 3), dtype="<i4"))
save("vec", np.arange(7, dtype="<u2"), fortran=True)
save("v1", np.arange(6, dtype="<f4").reshape(2, 3), version=(1, 0))
save("v2", np.arange(6, dtype="<f4").reshape(3, 2), version=(2, 0), fortran=True)
save("v3", np.arange(6, dtype=">i8").reshape(1, 6), version=(3, 0))
json.dump(res, sys.stdout)
`

type pyArray struct {
	Name    string
	Descr   string
	Shape   []int64
	Fortran bool
	Data    string
}

func TestAgainstNumpy(t *testing.T) {
	dir := t.TempDir()
	var want []pyArray
	pyref.RunJSON(t, &want, []string{"numpy"}, numpyScript, dir)
	if len(want) < 48 {
		t.Fatalf("only %d arrays written", len(want))
	}
	versions := map[string]byte{"v1": 1, "v2": 2, "v3": 3}
	for _, w := range want {
		raw, err := os.ReadFile(filepath.Join(dir, w.Name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHeader(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		if h.DType.String() != w.Descr || !reflect.DeepEqual(h.Shape, w.Shape) {
			t.Errorf("%s: dtype %v shape %v; numpy %s %v", w.Name, h.DType, h.Shape, w.Descr, w.Shape)
		}
		if h.Fortran != w.Fortran {
			t.Errorf("%s: fortran_order %v, numpy wrote %v", w.Name, h.Fortran, w.Fortran)
		}
		if v, ok := versions[w.Name]; ok && h.Major != v {
			t.Errorf("%s: version %d.%d", w.Name, h.Major, h.Minor)
		}
		if h.DataOffset%64 != 0 {
			t.Errorf("%s: data offset %d not 64-aligned as numpy writes it", w.Name, h.DataOffset)
		}
		data, err := ReadData(bytes.NewReader(raw), int64(len(raw)), h, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := h.ToC(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := hexOf(c); got != w.Data {
			t.Errorf("%s: C-ordered little-endian data differs from numpy's", w.Name)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func header(dict string, version byte, data int) []byte {
	b := []byte(Magic)
	b = append(b, version, 0)
	if version == 1 {
		b = append(b, byte(len(dict)), byte(len(dict)>>8))
	} else {
		b = append(b, byte(len(dict)), byte(len(dict)>>8), 0, 0)
	}
	b = append(b, dict...)
	return append(b, make([]byte, data)...)
}

func TestParseHeaderRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"magic":        []byte("\x93NUMPX\x01\x00\x00\x00"),
		"short":        []byte("\x93NUMPY\x01"),
		"version":      header("{}", 4, 0),
		"structured":   header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 1, 4),
		"object":       header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 1, 8),
		"f16":          header("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 1, 16),
		"missing key":  header("{'descr': '<f4', 'shape': (1,), }", 1, 4),
		"extra key":    header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 1, 4),
		"short data":   header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 1, 23),
		"overflow":     header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 1, 0),
		"negative":     header("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }", 1, 0),
		"bad tuple":    header("{'descr': '<f8', 'fortran_order': False, 'shape': (1 2), }", 1, 8),
		"header len":   append([]byte(Magic+"\x02\x00"), 0xff, 0xff, 0xff, 0x7f),
		"unterminated": header("{'descr': '<f8", 1, 0),
	} {
		if _, err := ParseHeader(bytes.NewReader(b), int64(len(b))); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	empty := header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }", 1, 0)
	if h, err := ParseHeader(bytes.NewReader(empty), int64(len(empty))); err != nil || h.DataSize != 0 {
		t.Errorf("empty array with huge extents: %+v, %v", h, err)
	}
	// Hand-written but valid: double quotes, no trailing comma, Python 2 long.
	ok := header(`{"descr": ">u2", "fortran_order": True, "shape": (2L, 3L)}`+"\n", 1, 12)
	h, err := ParseHeader(bytes.NewReader(ok), int64(len(ok)))
	if err != nil || h.DType != (DType{Kind: 'u', Size: 2, BigEndian: true}) || !h.Fortran || !reflect.DeepEqual(h.Shape, []int64{2, 3}) || h.DataSize != 12 {
		t.Errorf("valid header: %+v, %v", h, err)
	}
}

// FortranToC against a straightforward index computation on a 2x3x4 array.
func TestFortranToC(t *testing.T) {
	shape := []int64{2, 3, 4}
	src := make([]byte, 24*2)
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 4; k++ {
				f := i + 2*(j+3*k)
				v := 100*i + 10*j + k
				src[2*f], src[2*f+1] = byte(v), byte(v>>8)
			}
		}
	}
	dst := make([]byte, len(src))
	if err := FortranToC(dst, src, shape, 2); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 24; c++ {
		i, j, k := c/12, c/4%3, c%4
		if got, want := int(dst[2*c])|int(dst[2*c+1])<<8, 100*i+10*j+k; got != want {
			t.Fatalf("element (%d,%d,%d) = %d, want %d", i, j, k, got, want)
		}
	}
	if err := FortranToC(dst[:3], src, shape, 2); err == nil {
		t.Error("mismatched lengths accepted")
	}
}

// A shape of MaxDims dimensions parses; one more is malformed, named (issue 24: numpy
// cannot take it, and the engine's own limit is lower still).
func TestParseHeaderRank(t *testing.T) {
	dims := func(n int) string {
		return "(" + strings.Repeat("1, ", n) + ")"
	}
	for _, n := range []int{0, 1, 31, 32, 33, MaxDims} {
		b := header("{'descr': '|u1', 'fortran_order': False, 'shape': "+dims(n)+", }", 1, 1)
		h, err := ParseHeader(bytes.NewReader(b), int64(len(b)))
		if err != nil || len(h.Shape) != n {
			t.Errorf("%d dimensions: %v, %v", n, h.Shape, err)
		}
	}
	for _, n := range []int{MaxDims + 1, 70, 1000} {
		b := header("{'descr': '|u1', 'fortran_order': False, 'shape': "+dims(n)+", }", 1, 1)
		_, err := ParseHeader(bytes.NewReader(b), int64(len(b)))
		if !errors.Is(err, formats.ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d dimensions", MaxDims)) {
			t.Errorf("%d dimensions: %v", n, err)
		}
	}
}
