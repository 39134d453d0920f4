package readers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/godali/godali/source"
)

// TestSymlinkedClassDirectories (issue 9, case 6): class directories and subdirectories
// that are symlinks are followed (torchvision's os.walk(followlinks=True), DALI), and a
// symlink to an ancestor does not loop.
func TestSymlinkedClassDirectories(t *testing.T) {
	store := t.TempDir()
	for _, p := range []string{"cats/a.jpg", "cats/deep/b.jpg", "dogs/c.jpg", "more/d.jpg"} {
		full := filepath.Join(store, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("not decoded here"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(store, "cats"), filepath.Join(root, "cat")))                   // symlinked class
	must(os.MkdirAll(filepath.Join(root, "dog"), 0o755))                                         // real class ...
	must(os.Symlink(filepath.Join(store, "dogs", "c.jpg"), filepath.Join(root, "dog", "c.jpg"))) // ... with a symlinked file
	must(os.Symlink(filepath.Join(store, "more"), filepath.Join(root, "dog", "more")))           // ... and subdirectory
	must(os.Symlink("..", filepath.Join(root, "dog", "loop")))                                   // ... and a loop to root
	must(os.Symlink(".", filepath.Join(store, "cats", "deep", "self")))                          // a loop to itself

	refs, err := scanImageFolder(source.Local{}, root, []string{"*.jpg"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		rel, _ := filepath.Rel(root, r.Path)
		got = append(got, fmt.Sprintf("%d %s", r.Label, rel))
	}
	// dog/loop is root itself: its classes are listed once more below it (as os.walk
	// lists them), but root is not entered a second time from there.
	want := []string{"0 cat/a.jpg", "0 cat/deep/b.jpg", "1 dog/c.jpg", "1 dog/loop/cat/a.jpg", "1 dog/loop/cat/deep/b.jpg", "1 dog/more/d.jpg"}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// dir_filters (DALI): only the matching subdirectories are classes, numbered in sorted
// order among themselves; case follows case_sensitive_filter.
func TestScanImageFolderDirFilters(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"apple/x.jpg", "Avocado/y.jpg", "banana/z.jpg", "apricot/w.JPG"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list := func(dirs []string, cs bool) string {
		refs, err := scanImageFolder(source.Local{}, root, []string{"*.jpg"}, dirs, cs)
		if err != nil {
			return "error: " + err.Error()
		}
		var got []string
		for _, r := range refs {
			rel, _ := filepath.Rel(root, r.Path)
			got = append(got, fmt.Sprintf("%d %s", r.Label, rel))
		}
		return strings.Join(got, ", ")
	}
	if got, want := list([]string{"a*"}, false), "0 Avocado/y.jpg, 1 apple/x.jpg, 2 apricot/w.JPG"; got != want {
		t.Errorf("case-insensitive: got %q, want %q", got, want)
	}
	if got, want := list([]string{"a*"}, true), "0 apple/x.jpg"; got != want {
		t.Errorf("case-sensitive: got %q, want %q", got, want)
	}
	if got := list([]string{"zz*"}, false); !strings.Contains(got, "dir_filters") {
		t.Errorf("no matching directory: got %q, want an error naming dir_filters", got)
	}
}
