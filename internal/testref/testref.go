// Package testref is how a test says that an independent reference it compares against
// (PIL, numpy, FFmpeg, a Python package, a test server, the image corpus) is not
// installed. By default the test is skipped with the reason; with
// GODALI_STRICT_REFERENCES=1 (set by `make test` and CI, where scripts/setup.sh has
// installed every reference) it fails instead, so that a broken setup cannot turn the
// reference comparisons into silent skips.
package testref

import (
	"fmt"
	"os"
	"testing"
)

// StrictEnv names the switch that turns a missing reference into a failure.
const StrictEnv = "GODALI_STRICT_REFERENCES"

// Strict reports whether a missing reference fails the test (StrictEnv set and not "0").
func Strict() bool {
	v := os.Getenv(StrictEnv)
	return v != "" && v != "0"
}

// Missing ends t because a reference is absent: a skip naming it, or under Strict a
// failure naming it and the switch.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("reference missing (%s=1 makes this a failure): %s", StrictEnv, msg)
		return
	}
	t.Skip("reference missing: " + msg)
}

// Long skips t under `go test -short` (make check's edit loop): a test that runs for
// seconds (a Python reference importing a large package, a sweep over many sizes).
// `make test` runs it. why says what makes it long.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("long (" + why + "): -short skips it; make test runs it")
	}
}
