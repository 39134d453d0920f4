package video

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "gdvideo.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// ErrNoFFmpeg is wrapped by Load's error when FFmpeg's libraries cannot be used.
var ErrNoFFmpeg = errors.New("video decoding needs FFmpeg's libraries")

// LibDirEnv names the environment variable that points at a directory holding FFmpeg's
// libraries (e.g. PyAV's av.libs); the Python package sets it when PyAV's wheel is
// installed. It is read with C's getenv, so a value set after the process started counts.
const LibDirEnv = "GODALI_FFMPEG_LIBDIR"

var (
	loadOnce sync.Once
	loadErr  error
)

// libNames are the library stems in gdv_load's order.
var libNames = [C.GDV_NLIBS]string{"libavutil", "libavcodec", "libavformat", "libswscale"}

// Sonames returns the sonames the package was built for, in load order.
func Sonames() []string {
	out := make([]string, C.GDV_NLIBS)
	for i := range out {
		out[i] = C.GoString(C.gdv_soname(C.int(i)))
	}
	return out
}

// Load opens FFmpeg's libraries once; later calls return the first call's result. The
// error names what is missing and how to get it.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

func load() error {
	if dir := getenv(LibDirEnv); dir != "" {
		if err := loadFrom(dir); err != nil {
			return fmt.Errorf("%w: %s=%s: %v. %s", ErrNoFFmpeg, LibDirEnv, dir, err, Hint())
		}
		return nil
	}
	err := loadFrom("")
	if err == nil {
		return nil
	}
	msgs := []string{err.Error()}
	for _, dir := range filepath.SplitList(getenv(pyavDirsEnv)) {
		if dir == "" {
			continue
		}
		e := loadFrom(dir)
		if e == nil {
			return nil
		}
		msgs = append(msgs, dir+": "+e.Error())
	}
	return fmt.Errorf("%w: %s. %s", ErrNoFFmpeg, strings.Join(msgs, "; "), Hint())
}

// pyavDirsEnv lists directories tried after the system's libraries: the Python package
// puts PyAV's av.libs there when PyAV's wheel is installed.
const pyavDirsEnv = "GODALI_FFMPEG_PYAV_DIRS"

// getenv reads the process's current environment (C's, which Python's os.environ
// writes to), not the copy Go took when the library was loaded.
func getenv(name string) string {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.GoString(C.getenv(cname))
}

// loadFrom loads the libraries from dir, or by soname (the dynamic linker's search)
// when dir is "".
func loadFrom(dir string) error {
	var cpaths [C.GDV_NLIBS]*C.char
	if dir != "" {
		for i, so := range Sonames() {
			p, err := findLib(dir, libNames[i], so)
			if err != nil {
				return err
			}
			cpaths[i] = C.CString(p)
			defer C.free(unsafe.Pointer(cpaths[i]))
		}
	}
	var buf [512]C.char
	if C.gdv_load(&cpaths[0], &buf[0], C.int(len(buf))) != 0 {
		return errors.New(C.GoString(&buf[0]))
	}
	return nil
}

// findLib finds a library in dir: its soname, or a name PyAV's wheels give it
// (libavcodec-<hash>.so.59.37.100) with the same major version.
func findLib(dir, stem, soname string) (string, error) {
	exact := filepath.Join(dir, soname)
	if _, err := os.Stat(exact); err == nil {
		return exact, nil
	}
	major := soname[strings.LastIndex(soname, ".so.")+len(".so."):]
	matches, _ := filepath.Glob(filepath.Join(dir, stem+"-*.so."+major+"*"))
	sort.Strings(matches)
	for _, m := range matches {
		rest := m[strings.LastIndex(m, ".so.")+len(".so."):]
		if rest == major || strings.HasPrefix(rest, major+".") {
			return m, nil
		}
	}
	return "", fmt.Errorf("no %s (or %s-*.so.%s) there", soname, stem, major)
}

// Hint is the one-line answer to "how do I get video".
func Hint() string {
	return fmt.Sprintf("godali's video operators need FFmpeg 5.1's shared libraries (%s): "+
		"`apt install libavformat59 libswscale6` on Debian 12; elsewhere any FFmpeg 5.1 shared build "+
		"(e.g. conda-forge's ffmpeg=5.1), with %s set to the directory holding them",
		strings.Join(Sonames(), ", "), LibDirEnv)
}

func ffErr(code C.int) string {
	var buf [128]C.char
	C.gdv_strerror(code, &buf[0], C.int(len(buf)))
	return C.GoString(&buf[0])
}
