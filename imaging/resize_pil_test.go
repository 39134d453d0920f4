package imaging

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/godali/godali/internal/pyref"
	"github.com/godali/godali/internal/testref"
)

// pilScript resizes raw images with PIL as the independent reference: it reads a JSON
// spec naming the raw input and the cases, and writes each result's raw bytes.
const pilScript = `
import json, sys
from PIL import Image
spec = json.load(open(sys.argv[1]))
R = getattr(Image, "Resampling", Image)
if "decode" in spec:
    im = Image.open(spec["decode"]).convert("RGB")
    open(spec["out"], "wb").write(im.tobytes())
    print(json.dumps(list(im.size)))
    sys.exit(0)
src = Image.frombytes(spec["mode"], (spec["w"], spec["h"]), open(spec["raw"], "rb").read())
for case in spec["cases"]:
    out = src.resize(tuple(case["size"]), getattr(R, case["filter"]), box=tuple(case["box"]))
    open(case["out"], "wb").write(out.tobytes())
`

// systemPython is the project's Python (internal/pyref), with Debian's PIL.
var systemPython = pyref.Python()

// pythonWithPIL returns the project's Python if it can import PIL, or skips the test.
func pythonWithPIL(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		testref.Missing(t, "%s not found: skipping the comparison with PIL", systemPython)
	}
	if out, err := exec.Command(systemPython, "-c", "import PIL.Image").CombinedOutput(); err != nil {
		testref.Missing(t, "PIL not importable by %s: %v: %s", systemPython, err, out)
	}
	return systemPython
}

func runPIL(t *testing.T, py string, spec map[string]any) []byte {
	t.Helper()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.json")
	scriptPath := filepath.Join(dir, "pil_resize.py")
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptPath, []byte(pilScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, scriptPath, specPath).CombinedOutput()
	if err != nil {
		t.Fatalf("PIL script failed: %v\n%s", err, out)
	}
	return out
}

// decodeWithPIL decodes an image file to raw RGB with PIL.
func decodeWithPIL(t *testing.T, py, path string) (img []byte, w, h int) {
	t.Helper()
	raw := filepath.Join(t.TempDir(), "decoded.rgb")
	out := runPIL(t, py, map[string]any{"decode": path, "out": raw})
	var size [2]int
	if err := json.Unmarshal(out, &size); err != nil {
		t.Fatalf("PIL decode of %s: unexpected output %q: %v", path, out, err)
	}
	img, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	return img, size[0], size[1]
}

type pilCase struct {
	name   string
	dw, dh int
	box    [4]float64
}

func pilCases(w, h int) []pilCase {
	fw, fh := float64(w), float64(h)
	full := FullROI(w, h)
	return []pilCase{
		{"down2x", w / 2, h / 2, full},
		{"down3.7x", int(fw / 3.7), int(fh / 3.7), full},
		{"up1.5x", w * 3 / 2, h * 3 / 2, full},
		{"rn50_224", 224, 224, full},
		{"roi_224", 224, 224, [4]float64{37.5, 20.25, fw - 61.3, fh - 40.9}},
		{"roi_int_same_size", 200, 150, [4]float64{10, 12, 210, 162}},
		{"roi_upscale", 300, 280, [4]float64{100.2, 50.7, 200.9, 180.3}},
		{"width_only", w / 3, h, full},
		{"height_only", w, h/2 + 3, full},
		{"aspect_squash", 96, 300, full},
	}
}

var pilFilters = []struct {
	pil       string
	interp    Interp
	antialias bool
}{
	{"BILINEAR", InterpTriangular, true},
	{"BILINEAR", InterpLinear, true},
	{"BICUBIC", InterpCubic, true},
	{"LANCZOS", InterpLanczos3, true},
}

// TestResizeMatchesPIL compares Resize with PIL's Image.resize on a synthetic image
// (RGB and L) and a real photograph. DALI's test tolerance is a mean absolute error of
// at most 0.4 and a maximum of 10 on interior pixels; because the kernels reproduce
// PIL's fixed-point arithmetic, the test demands much more: over all pixels, a mean
// of at most 0.01 and a maximum of 1 level.
func TestResizeMatchesPIL(t *testing.T) {
	py := pythonWithPIL(t)
	type image struct {
		name    string
		mode    string
		c, w, h int
		data    []byte
	}
	var images []image
	syn := testImage(503, 377, 3, 1)
	images = append(images, image{"synthetic_rgb", "RGB", 3, 503, 377, syn})
	images = append(images, image{"synthetic_l", "L", 1, 331, 257, testImage(331, 257, 1, 2)})
	flower, fw, fh := decodeWithPIL(t, py, "testdata/flower.jpg")
	images = append(images, image{"flower", "RGB", 3, fw, fh, flower})

	var s Scratch
	for _, im := range images {
		dir := t.TempDir()
		raw := filepath.Join(dir, "src.raw")
		if err := os.WriteFile(raw, im.data, 0o644); err != nil {
			t.Fatal(err)
		}
		type job struct {
			c    pilCase
			fi   int
			path string
		}
		var jobs []job
		var cases []map[string]any
		for _, pc := range pilCases(im.w, im.h) {
			for fi, f := range pilFilters {
				path := filepath.Join(dir, fmt.Sprintf("%s_%d.raw", pc.name, fi))
				jobs = append(jobs, job{pc, fi, path})
				cases = append(cases, map[string]any{"size": []int{pc.dw, pc.dh}, "box": pc.box[:], "filter": f.pil, "out": path})
			}
		}
		runPIL(t, py, map[string]any{"mode": im.mode, "w": im.w, "h": im.h, "raw": raw, "cases": cases})
		for _, j := range jobs {
			f := pilFilters[j.fi]
			name := fmt.Sprintf("%s/%s/%v_aa=%v", im.name, j.c.name, f.interp, f.antialias)
			t.Run(name, func(t *testing.T) {
				want, err := os.ReadFile(j.path)
				if err != nil {
					t.Fatal(err)
				}
				p := NewResizePlan(im.w, im.h, j.c.box, j.c.dw, j.c.dh, f.interp, f.antialias, &s)
				got := make([]byte, j.c.dw*j.c.dh*im.c)
				if err := p.Resize(got, im.data, im.c, &s); err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got) {
					t.Fatalf("PIL output has %d bytes, ours %d", len(want), len(got))
				}
				mean, maxd := diffStats(got, want, j.c.dw, j.c.dh, im.c, 1)
				if mean > 0.4 || maxd > 10 {
					t.Errorf("outside DALI's tolerance: interior mean abs diff %.4f (<= 0.4), max %d (<= 10)", mean, maxd)
				}
				mean, maxd = diffStats(got, want, j.c.dw, j.c.dh, im.c, 0)
				t.Logf("all pixels: mean abs diff %.5f, max %d", mean, maxd)
				if mean > 0.01 || maxd > 1 {
					t.Errorf("not PIL-exact: mean abs diff %.4f (<= 0.01), max %d (<= 1)", mean, maxd)
				}
			})
		}
	}
}

// TestResizeNearestMatchesPIL checks INTERP_NN against PIL's NEAREST, which uses the
// same sample positions (floor of the pixel-centre coordinate). PIL steps its source
// coordinate incrementally, so a handful of samples that land within rounding error of
// a pixel edge may pick the neighbour: at most 0.5% of the pixels may differ.
func TestResizeNearestMatchesPIL(t *testing.T) {
	py := pythonWithPIL(t)
	w, h := 331, 257
	img := testImage(w, h, 3, 3)
	dir := t.TempDir()
	raw := filepath.Join(dir, "src.raw")
	if err := os.WriteFile(raw, img, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := pilCases(w, h)
	var spec []map[string]any
	for i, pc := range cases {
		spec = append(spec, map[string]any{"size": []int{pc.dw, pc.dh}, "box": pc.box[:], "filter": "NEAREST",
			"out": filepath.Join(dir, fmt.Sprintf("%d.raw", i))})
	}
	runPIL(t, py, map[string]any{"mode": "RGB", "w": w, "h": h, "raw": raw, "cases": spec})
	for i, pc := range cases {
		want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.raw", i)))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, pc.dw*pc.dh*3)
		if err := NewResizePlan(w, h, pc.box, pc.dw, pc.dh, InterpNN, true, nil).Resize(got, img, 3, nil); err != nil {
			t.Fatal(err)
		}
		diff := 0
		for k := 0; k < len(got); k += 3 {
			if got[k] != want[k] || got[k+1] != want[k+1] || got[k+2] != want[k+2] {
				diff++
			}
		}
		if frac := float64(diff) / float64(pc.dw*pc.dh); frac > 0.005 {
			t.Errorf("%s: %.2f%% of pixels differ from PIL NEAREST (<= 0.5%%)", pc.name, 100*frac)
		}
	}
}
