package main

/*
extern char **environ;

static char **godali_environ(void) { return environ; }
*/
import "C"

import (
	"os"
	"strings"
	"sync"
	"unsafe"
)

// Go's runtime in a shared library reads the environment the process started with (the
// strings after argv on its initial stack), not the C library's environ: a variable
// the host set before loading the library (Python's os.environ["GODALI_AFFINITY_MASK"],
// a launcher's setenv) or after it would be invisible to os.Getenv. syncEnviron gives
// Go the environment as it is now: at load and at every pipeline's creation, where the
// engine reads its variables.

var environMu sync.Mutex

func init() { syncEnviron() }

// syncEnviron sets Go's environment to C's environ: changed and new variables set,
// variables the host removed unset.
func syncEnviron() {
	environMu.Lock()
	defer environMu.Unlock()
	cur := map[string]string{}
	if env := C.godali_environ(); env != nil {
		n := 0
		for p := env; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
			n++
		}
		for _, s := range unsafe.Slice(env, n) {
			if k, v, ok := strings.Cut(C.GoString(s), "="); ok && k != "" {
				cur[k] = v
			}
		}
	}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			if _, keep := cur[k]; !keep {
				os.Unsetenv(k)
			}
		}
	}
	for k, v := range cur {
		if old, ok := os.LookupEnv(k); !ok || old != v {
			os.Setenv(k, v)
		}
	}
}
