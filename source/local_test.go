package source

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// tree writes a small directory tree: two classes (one reached through a link), files at
// several depths, a link to a file and a link to a directory inside a class.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, n int) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/x.jpg", 10)
	write("a/sub/y.jpg", 3000)
	write("a/b.txt", 0)
	write("other/z.jpg", 5)
	for _, l := range [][2]string{{"other", "linked"}, {"a/x.jpg", "a/link.jpg"}, {"other", "a/dirlink"}} {
		if err := os.Symlink(filepath.Join(root, l[0]), filepath.Join(root, l[1])); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	return root
}

func TestLocalOpenReadsAsOS(t *testing.T) {
	root := tree(t)
	for _, rel := range []string{"a/x.jpg", "a/sub/y.jpg", "a/b.txt", "a/link.jpg"} {
		p := filepath.Join(root, rel)
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Local{}.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if f.Size() != int64(len(want)) {
			t.Errorf("%s: Size %d, want %d", rel, f.Size(), len(want))
		}
		got := make([]byte, len(want))
		if n, err := f.ReadAt(got, 0); n != len(want) || err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: ReadAt = %d, %v; bytes equal %v", rel, n, err, bytes.Equal(got, want))
		}
		// Past the end: what there is, then io.EOF, as io.ReaderAt requires.
		if len(want) > 4 {
			tail := make([]byte, 8)
			n, err := f.ReadAt(tail, int64(len(want)-4))
			if n != 4 || err != io.EOF || !bytes.Equal(tail[:4], want[len(want)-4:]) {
				t.Errorf("%s: ReadAt past the end = %d, %v", rel, n, err)
			}
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: Close: %v", rel, err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: second Close: %v", rel, err)
		}
		if n, err := (Local{}).Stat(p); n != int64(len(want)) || err != nil {
			t.Errorf("%s: Stat = %d, %v", rel, n, err)
		}
	}
}

func TestLocalErrorsNameThePath(t *testing.T) {
	root := tree(t)
	missing := filepath.Join(root, "a/missing.jpg")
	_, err := Local{}.Open(missing)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %#v", err)
	}
	if _, err := (Local{}).Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(missing) = %v", err)
	}
	dir := filepath.Join(root, "a")
	for name, err := range map[string]error{
		"Open": func() error { _, err := Local{}.Open(dir); return err }(),
		"Stat": func() error { _, err := Local{}.Stat(dir); return err }(),
	} {
		if !errors.As(err, &pe) || pe.Path != dir || !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s(directory) = %v, want ErrNotRegular naming %s", name, err, dir)
		}
	}
	if _, err := (Local{}).List(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List(missing) = %v", err)
	}
	if err := (Local{}).Walk(missing, func(string) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Walk(missing) = %v", err)
	}
}

func TestLocalListAndWalk(t *testing.T) {
	root := tree(t)
	got, err := Local{}.List(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"a", true}, {"linked", true}, {"other", true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	got, err = Local{}.List(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	want = []Entry{{"b.txt", false}, {"dirlink", true}, {"link.jpg", false}, {"sub", true}, {"x.jpg", false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List(a) = %v, want %v", got, want)
	}

	// Walk: every file below, following links to directories (torchvision's
	// os.walk(followlinks=True) and DALI list what a linked class directory holds).
	var files []string
	if err := (Local{}).Walk(filepath.Join(root, "a"), func(p string) error {
		rel, _ := filepath.Rel(root, p)
		files = append(files, rel)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"a/b.txt", "a/dirlink/z.jpg", "a/link.jpg", "a/sub/y.jpg", "a/x.jpg"}
	if !reflect.DeepEqual(files, wantFiles) || !sort.StringsAreSorted(files) {
		t.Errorf("Walk = %v, want %v", files, wantFiles)
	}
	stop := errors.New("stop")
	n := 0
	if err := (Local{}).Walk(root, func(string) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Walk with a failing fn = %v after %d calls, want stop after 1", err, n)
	}
}

func TestReadFile(t *testing.T) {
	root := tree(t)
	p := filepath.Join(root, "a/sub/y.jpg")
	want, _ := os.ReadFile(p)
	got, err := ReadFile(Local{}, p, 0)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("ReadFile: %v, equal %v", err, bytes.Equal(got, want))
	}
	if got, err := ReadFile(Local{}, p, int64(len(want))); err != nil || !bytes.Equal(got, want) {
		t.Errorf("ReadFile at its limit: %v", err)
	}
	_, err = ReadFile(Local{}, p, int64(len(want))-1)
	var pe *fs.PathError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.Path != p {
		t.Errorf("ReadFile over its limit = %v, want ErrTooLarge naming the path", err)
	}
	if _, err := ReadFile(Local{}, filepath.Join(root, "nope"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v", err)
	}
}
