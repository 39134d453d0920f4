package engine

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Go runs a package's init functions file by file in file name order, and
// RegisterBackend panics for a schema not registered yet: a backend registered in a
// file that sorts before its schema's file (hsv's gpu backend in color_twist_gpu.go,
// its schema in hsv.go) panics when the library loads, in the flavour that has that
// file. This test reads the operator packages' source in both flavours, so the CPU
// machines catch what only a CUDA build would show. Names given as literals are
// checked; a backend registered through a variable is not.
func TestBackendsRegisteredAfterTheirSchemas(t *testing.T) {
	root, err := filepath.Abs("../ops")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tags := range [][]string{nil, {"cuda"}} {
		ctx := build.Default
		ctx.BuildTags = tags
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			p, err := ctx.ImportDir(filepath.Join(root, d.Name()), 0)
			if err != nil {
				continue // no Go files in this flavour
			}
			files := append(append([]string{}, p.GoFiles...), p.CgoFiles...)
			sort.Strings(files)
			schemaAt := map[string]int{} // name -> index of the file registering it
			type backend struct {
				name string
				file int
			}
			var backends []backend
			for i, f := range files {
				fset := token.NewFileSet()
				af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				ast.Inspect(af, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok || len(call.Args) == 0 {
						return true
					}
					switch sel.Sel.Name {
					case "RegisterSchema":
						lit, ok := call.Args[0].(*ast.UnaryExpr)
						if !ok {
							return true
						}
						cl, ok := lit.X.(*ast.CompositeLit)
						if !ok {
							return true
						}
						for _, e := range cl.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
									if bl, ok := kv.Value.(*ast.BasicLit); ok {
										name, _ := strconv.Unquote(bl.Value)
										schemaAt[name] = i
									}
								}
							}
						}
					case "RegisterBackend":
						if bl, ok := call.Args[0].(*ast.BasicLit); ok {
							name, _ := strconv.Unquote(bl.Value)
							backends = append(backends, backend{name, i})
						}
					}
					return true
				})
			}
			for _, b := range backends {
				s, ok := schemaAt[b.name]
				if !ok {
					continue // a schema registered under a computed name
				}
				checked++
				if s > b.file {
					t.Errorf("tags %v: ops/%s/%s registers a backend of %q, whose schema is in %s, a file whose init runs later (the load panics): move the backend to %s_gpu.go",
						tags, d.Name(), files[b.file], b.name, files[s], strings.TrimSuffix(files[s], ".go"))
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d backend registrations: is the parse still finding them?", checked)
	}
}
