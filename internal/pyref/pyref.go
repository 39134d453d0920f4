// Package pyref runs the independent Python writers and readers the format tests
// compare against (tarfile, webdataset, tfrecord, numpy, mxnet).
package pyref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/internal/testref"
)

// Python is the interpreter the references run under: $GODALI_PYTHON (the Makefile sets
// it to its PYTHON), else the project's venv that scripts/setup.sh makes ($GODALI_VENV,
// by default /usr/local/lib/godali-venv: Debian's python3 and packages and the pinned
// PyPI ones), else Debian's /usr/bin/python3.
func Python() string {
	if p := os.Getenv("GODALI_PYTHON"); p != "" {
		return p
	}
	venv := os.Getenv("GODALI_VENV")
	if venv == "" {
		venv = "/usr/local/lib/godali-venv"
	}
	if p := filepath.Join(venv, "bin", "python"); isFile(p) {
		return p
	}
	return "/usr/bin/python3"
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// MXNetDir is where scripts/setup.sh installs the mxnet wheel, apart from the
// system packages because it pins an old numpy.
const MXNetDir = "/usr/local/lib/godali-mxnet"

// ErrMissing is wrapped by Output's error when the interpreter or a module is absent.
var ErrMissing = errors.New("python reference not installed (run scripts/setup.sh)")

// Output runs script with args under Python and returns its standard output. The
// error wraps ErrMissing when the interpreter or one of modules is not installed.
func Output(modules []string, script string, args ...string) ([]byte, error) {
	py := Python()
	if _, err := exec.LookPath(py); err != nil {
		return nil, fmt.Errorf("%s: %w", py, ErrMissing)
	}
	env := os.Environ()
	if st, err := os.Stat(MXNetDir); err == nil && st.IsDir() {
		pp := MXNetDir
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += ":" + old
		}
		env = append(env, "PYTHONPATH="+pp)
	}
	for _, m := range modules {
		cmd := exec.Command(py, "-c", prelude+"import "+m)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("python package %q for %s (%s): %w", m, py, lastLine(out), ErrMissing)
		}
	}
	cmd := exec.Command(py, append([]string{"-c", prelude + script}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("python reference failed: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// Run is Output for tests: a missing interpreter or package skips the test with a
// message naming it; any other failure fails the test with the script's stderr.
func Run(t testing.TB, modules []string, script string, args ...string) []byte {
	t.Helper()
	out, err := Output(modules, script, args...)
	if errors.Is(err, ErrMissing) {
		testref.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// prelude restores numpy aliases that mxnet 1.9 still uses and numpy 1.24 removed.
const prelude = "try:\n    import numpy as _np\n    if not hasattr(_np, 'bool'): _np.bool = bool\nexcept ImportError:\n    pass\n"

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// RunJSON is Run with the script's standard output decoded as JSON into v.
func RunJSON(t testing.TB, v any, modules []string, script string, args ...string) {
	t.Helper()
	if err := json.Unmarshal(Run(t, modules, script, args...), v); err != nil {
		t.Fatalf("reference script's output is not the JSON expected: %v", err)
	}
}

// ReadFile reads a file a reference script wrote, failing the test when it cannot.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
