package engine

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The module's layers (../shared/docs/STYLE.md, "Shape of the tree"), as an allow-list
// of which packages may import which, checked over every package of the module in both
// flavours (without and with the cuda tag), on the packages' own files (tests may import
// helpers and other layers freely). A new package needs a rule here, so adding one is a
// decision about where it sits.
//
// A rule's key is a package (relative to the module) or a pattern ending in "/..." (the
// package and those below it); the most specific key applies. Its value lists what the package may import within the
// module, in the same notation.
var layerRules = map[string][]string{
	// The exported C layer: the one package main of the library; nothing imports it.
	"capi": {"engine", "ops/...", "source/..."},
	// Tools: formats and sources, never the pipeline.
	"cmd/...": {"formats/...", "source/...", "codec"},
	// Operators bind the engine to the leaves. A family does not reach into another
	// (shared parsers go to ops/internal); ops/all gathers the families.
	"ops":              {},
	"ops/all":          {"ops/...", "engine"}, // and the aliases of operators across families
	"ops/...":          {"engine", "imaging", "codec/...", "formats/...", "source/...", "kernels", "nvjpeg", "nvdec", "internal/cuda", "internal/float16", "ops/internal/..."},
	"ops/internal/...": {"engine", "kernels", "imaging", "codec", "internal/cuda"}, // codec: the window rectangle
	// The engine schedules: no operator, kernel or codec.
	"engine": {"internal/cuda", "internal/poolstats", "internal/float16", "source"},
	// Leaves.
	"imaging":                    {"internal/float16"},
	"codec":                      {},
	"codec/video":                {},
	"codec/lz4":                  {}, // pure Go, a leaf
	"formats":                    {},
	"formats/...":                {"formats"},
	"source":                     {},
	"source/remote":              {"source"},
	"source/remote/...":          {"source", "source/remote", "source/remote/internal/..."},
	"source/remote/internal/...": {},
	"kernels":                    {"internal/cuda", "imaging"}, // imaging: the filter weights the kernels apply
	"nvjpeg":                     {"internal/cuda"},
	"nvdec":                      {"internal/cuda", "codec/video"}, // codec/video: FFmpeg's demuxer feeds NVDEC
	"internal/cuda":              {"internal/poolstats"},
	"internal/cuda/cudatest":     {"internal/cuda"},
	"internal/float16":           {},
	"internal/poolstats":         {},
	// Test helpers: imported by _test.go files only (testOnly).
	"internal/pyref":     {"internal/testref"},
	"internal/testref":   {},
	"internal/videotest": {"internal/testref"},
}

// knownLayerExceptions are today's imports that break the rules, each with the issue
// that is to remove it (issue 25, items 3 and 6). Removing one from the code makes the
// test ask for its removal here.
var knownLayerExceptions = map[string]string{
	"nvjpeg -> codec":  "EXIF orientation parsing (issue 25 item 6: a leaf of its own)",
	"nvdec -> kernels": "NV12->RGB conversion kernels (issue 25 item 6: the operator should bind them)",
}

// testOnly are packages that only _test.go files may import.
var testOnly = []string{"internal/pyref", "internal/testref", "internal/videotest", "internal/cuda/cudatest"}

// mainPackages are the module's package main: the library and its tools.
var mainPackages = map[string]string{
	"capi":                                "the C ABI (the library itself)",
	"cmd/godali-index":                    "the index tool",
	"source/remote/cmd/godali-faultproxy": "test/bench tool (issue 25 item 6: out of the library tree)",
	"source/remote/fetchbench":            "bench tool (issue 25 item 6: out of the library tree)",
}

// cgoPackages are the packages allowed to `import "C"` (STYLE: cgo lives in few places).
var cgoPackages = []string{"capi", "codec", "codec/video", "internal/cuda", "internal/cuda/cudatest", "kernels", "nvdec", "nvjpeg"}

const module = "github.com/godali/godali/"

// matchLayer reports whether rel is named by pattern ("x", or "x/..." for x and the
// packages below it, as the go command reads it).
func matchLayer(pattern, rel string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == p || strings.HasPrefix(rel, p+"/")
	}
	return pattern == rel
}

// ruleFor returns the most specific rule key naming rel.
func ruleFor(rel string) (string, bool) {
	best := ""
	for k := range layerRules {
		if matchLayer(k, rel) && (best == "" || len(strings.TrimSuffix(k, "/...")) > len(strings.TrimSuffix(best, "/...")) ||
			(len(strings.TrimSuffix(k, "/...")) == len(strings.TrimSuffix(best, "/...")) && !strings.HasSuffix(k, "/..."))) {
			best = k
		}
	}
	return best, best != ""
}

type modulePackage struct {
	rel     string
	name    string
	imports map[string]bool // within the module, relative
	cgo     bool
}

// modulePackages reads every package of the module with these build tags.
func modulePackages(t *testing.T, root string, tags []string) []modulePackage {
	ctx := build.Default
	ctx.BuildTags = tags
	var out []modulePackage
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		n := d.Name()
		if path != root && (n == "testdata" || n == "build" || n == "python" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
			return filepath.SkipDir
		}
		p, err := ctx.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		mp := modulePackage{rel: filepath.ToSlash(rel), name: p.Name, imports: map[string]bool{}, cgo: len(p.CgoFiles) > 0}
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module); ok {
				mp.imports[r] = true
			}
		}
		out = append(out, mp)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestModuleLayers checks every package's imports within the module against layerRules
// (with knownLayerExceptions), that test helpers stay out of non-test code, and which
// packages are main or use cgo.
func TestModuleLayers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	usedExceptions := map[string]bool{}
	for _, tags := range [][]string{nil, {"cuda"}} {
		pkgs := modulePackages(t, root, tags)
		if len(pkgs) < 30 {
			t.Fatalf("tags %v: found only %d packages under %s", tags, len(pkgs), root)
		}
		for _, p := range pkgs {
			key, ok := ruleFor(p.rel)
			if !ok {
				t.Errorf("tags %v: package %s has no layer rule: add one to layerRules", tags, p.rel)
				continue
			}
			for imp := range p.imports {
				allowed := false
				for _, a := range layerRules[key] {
					allowed = allowed || matchLayer(a, imp)
				}
				edge := p.rel + " -> " + imp
				if _, known := knownLayerExceptions[edge]; known {
					usedExceptions[edge] = true
					continue
				}
				if !allowed {
					t.Errorf("tags %v: %s imports %s, which its layer (%q) does not allow (STYLE.md)", tags, p.rel, imp, key)
				}
				for _, h := range testOnly {
					if imp == h && !contains(testOnly, p.rel) {
						t.Errorf("tags %v: %s imports the test helper %s outside its tests", tags, p.rel, imp)
					}
				}
				if _, isMain := mainPackages[imp]; isMain {
					t.Errorf("tags %v: %s imports package main %s", tags, p.rel, imp)
				}
			}
			if _, want := mainPackages[p.rel]; (p.name == "main") != want {
				t.Errorf("tags %v: package %s is %q: mainPackages lists the module's package main", tags, p.rel, p.name)
			}
			if p.cgo && !contains(cgoPackages, p.rel) {
				t.Errorf("tags %v: %s uses cgo, which STYLE keeps to %v", tags, p.rel, cgoPackages)
			}
		}
	}
	for edge, why := range knownLayerExceptions {
		if !usedExceptions[edge] {
			t.Errorf("known exception %q (%s) no longer happens: remove it from knownLayerExceptions", edge, why)
		}
	}
}

// The engine schedules; it imports no operator, kernel or codec, transitively, in either
// flavour (float16 conversion is the leaf internal/float16, not imaging).
func TestEngineImportsNoOperatorOrKernel(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tags := range [][]string{nil, {"cuda"}} {
		byRel := map[string]modulePackage{}
		for _, p := range modulePackages(t, root, tags) {
			byRel[p.rel] = p
		}
		seen := map[string]string{}
		var walk func(rel, from string)
		walk = func(rel, from string) {
			if _, ok := seen[rel]; ok {
				return
			}
			seen[rel] = from
			for imp := range byRel[rel].imports {
				walk(imp, rel)
			}
		}
		walk("engine", "")
		var reached []string
		for rel := range seen {
			reached = append(reached, rel)
			for _, banned := range []string{"kernels", "ops", "capi", "nvjpeg", "nvdec", "codec", "imaging"} {
				if matchLayer(banned+"/...", rel) {
					t.Errorf("tags %v: engine imports %s (through %s)", tags, rel, seen[rel])
				}
			}
		}
		sort.Strings(reached)
		if !contains(reached, "internal/float16") {
			t.Errorf("tags %v: the walk missed internal/float16 (engine/pool.go imports it): %v", tags, reached)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// allowedEdge reports whether layerRules let from import to.
func allowedEdge(from, to string) bool {
	key, ok := ruleFor(from)
	if !ok {
		return false
	}
	for _, a := range layerRules[key] {
		if matchLayer(a, to) {
			return true
		}
	}
	return false
}

// The rules refuse what STYLE forbids (so TestModuleLayers can fail) and allow the usual
// edges.
func TestLayerRulesRefuseSidewaysAndUpwardImports(t *testing.T) {
	for _, e := range []struct {
		from, to string
		ok       bool
	}{
		{"engine", "ops/image", false}, {"engine", "imaging", false}, {"engine", "kernels", false},
		{"ops/image", "ops/math", false}, {"ops/image", "capi", false}, {"imaging", "engine", false},
		{"codec", "imaging", false}, {"formats/tar", "source", false}, {"kernels", "ops/image", false},
		{"source/remote", "engine", false}, {"new/package", "engine", false},
		{"ops/image", "engine", true}, {"ops/image", "ops/internal/gpukernels", true},
		{"ops/all", "ops/image", true}, {"ops/readers", "formats/tar", true}, {"ops", "engine", false},
		{"capi", "ops/all", true}, {"formats/tar", "formats", true}, {"engine", "internal/float16", true},
	} {
		if got := allowedEdge(e.from, e.to); got != e.ok {
			t.Errorf("%s -> %s: allowed %v, want %v", e.from, e.to, got, e.ok)
		}
	}
}
