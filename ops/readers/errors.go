package readers

import (
	"fmt"
	"os"

	"github.com/godali/godali/engine"
)

// A reader's errors before it reads a sample (its factory, Open, Infer) name the node
// and the operator (a.Where()); they are plain engine errors, since no sample is at
// fault. A sample's errors come from a.DataErrorf / a.ArgDataErrorf. Messages may hold
// URLs: engine.Error and engine.SampleError redact them when printed.

// argPathErrorf is the error for a path that argument arg names and that cannot be used:
// the caller's argument, not a bad sample (StatusInvalidArgument):
// `node "r" (op): argument "arg": "path" <message>`.
func argPathErrorf(a *engine.Args, arg, path, format string, args ...any) error {
	return engine.Errorf(engine.StatusInvalidArgument, "%s: argument %q: %q %s", a.Where(), arg, path, fmt.Sprintf(format, args...))
}

// unreadable is argPathErrorf for a path that cannot be read (err says why).
func unreadable(a *engine.Args, arg, path string, err error) error {
	return argPathErrorf(a, arg, path, "cannot be read: %v", err)
}

// listErrorf is the error for a data set that cannot be listed or typed (a malformed
// index, list or header: StatusData), naming the node and the operator.
func listErrorf(a *engine.Args, format string, args ...any) error {
	return engine.Errorf(engine.StatusData, "%s: %s", a.Where(), fmt.Sprintf(format, args...))
}

// checkDir fails with argPathErrorf when the local directory dir, which argument arg
// names, cannot be read or is not a directory.
func checkDir(a *engine.Args, arg, dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return unreadable(a, arg, dir, err)
	case !st.IsDir():
		return argPathErrorf(a, arg, dir, "is not a directory")
	}
	return nil
}
