package engine

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// The engine schedules; it imports no operator and no kernel (docs/STYLE: capi -> ops ->
// engine, leaves below). Checked in both flavours, over the engine's imports within the
// module, transitively.
func TestEngineImportsNoOperatorOrKernel(t *testing.T) {
	const module = "github.com/godali/godali/"
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tags := range [][]string{nil, {"cuda"}} {
		ctx := build.Default
		ctx.BuildTags = tags
		seen := map[string]bool{}
		var walk func(rel, from string)
		walk = func(rel, from string) {
			if seen[rel] {
				return
			}
			seen[rel] = true
			for _, banned := range []string{"kernels", "ops", "capi", "nvjpeg", "codec"} {
				if rel == banned || strings.HasPrefix(rel, banned+"/") {
					t.Errorf("tags %v: engine imports %s (through %s)", tags, module+rel, from)
				}
			}
			p, err := ctx.ImportDir(filepath.Join(root, rel), 0)
			if err != nil {
				t.Fatalf("tags %v: %s: %v", tags, rel, err)
			}
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module) {
					walk(strings.TrimPrefix(imp, module), rel)
				}
			}
		}
		walk("engine", "")
		if !seen["imaging"] {
			t.Errorf("tags %v: the walk missed imaging (engine/pool.go imports it): %v", tags, seen)
		}
	}
}
