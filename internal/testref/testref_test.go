package testref

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recorder stands for a testing.T: it records how Missing ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }

func TestMissingSkipsByDefaultAndFailsWhenStrict(t *testing.T) {
	t.Setenv(StrictEnv, "")
	r := &recorder{}
	Missing(r, "PIL for %s", "/usr/bin/python3")
	if r.failed != "" || !strings.Contains(r.skipped, "PIL for /usr/bin/python3") {
		t.Fatalf("not strict: skipped %q, failed %q", r.skipped, r.failed)
	}
	for _, v := range []string{"0", ""} {
		t.Setenv(StrictEnv, v)
		if Strict() {
			t.Errorf("%s=%q counts as strict", StrictEnv, v)
		}
	}
	t.Setenv(StrictEnv, "1")
	r = &recorder{}
	Missing(r, "ffmpeg")
	if r.skipped != "" || !strings.Contains(r.failed, StrictEnv+"=1") || !strings.Contains(r.failed, "ffmpeg") {
		t.Fatalf("strict: skipped %q, failed %q", r.skipped, r.failed)
	}
}

// A test that skips on a missing reference by itself bypasses the switch: every such
// skip in the module goes through Missing.
func TestNoReferenceSkipsBypassMissing(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	skip := regexp.MustCompile(`\.Skipf?\(.*(?i:ffmpeg|PIL|python|corpus|not installed|not loadable|reference)`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "python" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "testref.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if skip.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: skips on a missing reference without testref.Missing: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
