//go:build cuda

package nvjpeg

import (
	"errors"
	"strings"
	"testing"
)

// TestLoad checks the dlopen binding against the installed libnvjpeg: every required
// symbol resolves and the version query works. It needs no GPU, so it also runs in CI
// with `go test -tags 'cuda nodevice' ./nvjpeg/` (nodevice leaves out the tests that
// link gorgonia.org/cu).
func TestLoad(t *testing.T) {
	lib, err := Load()
	if err != nil {
		if strings.Contains(err.Error(), "cannot load nvJPEG") {
			t.Skipf("no libnvjpeg on this host: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("loaded %s: nvJPEG %d.%d.%d", lib.Path, lib.Major, lib.Minor, lib.Patch)
	if lib.Major < 11 {
		t.Fatalf("nvJPEG %d.%d: expected 11 or later", lib.Major, lib.Minor)
	}
	again, err2 := Load()
	if again != lib || err2 != nil {
		t.Fatal("Load is not idempotent")
	}
	// Creating a handle needs a GPU; without one nvJPEG must fail with a status, not
	// crash.
	h, err := lib.NewPreferredHandle(true)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("handle creation failed without an nvJPEG status: %v", err)
		}
		t.Logf("no handle (expected without a GPU): %v", err)
		return
	}
	t.Logf("handle backend: %v", h.Backend())
	h.Close()
}

func TestCandidates(t *testing.T) {
	t.Setenv("GODALI_NVJPEG_LIBRARY", "")
	if c := Candidates(); len(c) != 3 || c[0] != "libnvjpeg.so.13" || c[2] != "libnvjpeg.so.11" {
		t.Fatalf("Candidates() = %v", c)
	}
	t.Setenv("GODALI_NVJPEG_LIBRARY", "/opt/x/libnvjpeg.so")
	if c := Candidates(); len(c) != 1 || c[0] != "/opt/x/libnvjpeg.so" {
		t.Fatalf("Candidates() with GODALI_NVJPEG_LIBRARY = %v", c)
	}
}

func TestROIArgs(t *testing.T) {
	if x, y, w, h := (ROI{}).args(); x != 0 || y != 0 || w != -1 || h != -1 {
		t.Fatal("the zero ROI must disable ROI decoding (0, 0, -1, -1)")
	}
	if x, y, w, h := (ROI{3, 4, 5, 6}).args(); x != 3 || y != 4 || w != 5 || h != 6 {
		t.Fatal("ROI args")
	}
}
