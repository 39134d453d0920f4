//go:build cuda

// Package cudatest lets a GPU test binary skip cleanly on a host without a usable GPU.
//
// gorgonia.org/cu calls cuInit in its package init and os.Exit(1)s when it fails, before
// any test (or TestMain) can run. A test file that imports this package for its side
// effect gets a probe that runs first: Go initialises packages in import-path order among
// those whose dependencies are ready, this package needs only fmt and os (which cu needs
// too), and "github.com/godali/..." sorts before "gorgonia.org/cu". When libcuda.so.1
// is missing, cuInit(0) fails or no device is visible, the probe prints why and ends the
// binary with status 0, so `go test -tags cuda` reports the package as ok, with the
// message in -v output. Set GODALI_REQUIRE_GPU=1 (the GPU machine does) to make that a
// failure instead.
package cudatest

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>

// probe checks the driver the way a loader of libgodali_cuda.so must: through
// libcuda.so.1 directly, without initialising anything else. Returns the device count,
// or a negative code with a message in msg.
static int probe(char *msg, int len) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(msg, len, "cannot load libcuda.so.1: %s", dlerror());
		return -1;
	}
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
	if (!init || !count) {
		snprintf(msg, len, "libcuda.so.1 lacks cuInit or cuDeviceGetCount");
		return -1;
	}
	int r = init(0);
	if (r != 0) {
		snprintf(msg, len, "cuInit(0) returned %d (100: no device, 35: driver too old, 999: unknown)", r);
		return -1;
	}
	int n = 0;
	r = count(&n);
	if (r != 0) {
		snprintf(msg, len, "cuDeviceGetCount returned %d", r);
		return -1;
	}
	if (n < 1) snprintf(msg, len, "no CUDA device visible (CUDA_VISIBLE_DEVICES?)");
	return n;
}
*/
import "C"

import (
	"fmt"
	"os"
)

// Devices is the number of CUDA devices the probe found.
var Devices int

func init() {
	var msg [256]C.char
	n := int(C.probe(&msg[0], C.int(len(msg))))
	if n > 0 {
		Devices = n
		return
	}
	why := C.GoString(&msg[0])
	if os.Getenv("GODALI_REQUIRE_GPU") == "1" {
		fmt.Fprintf(os.Stderr, "FAIL: GODALI_REQUIRE_GPU=1 but no usable GPU: %s\n", why)
		os.Exit(1)
	}
	fmt.Printf("SKIP: no usable GPU (%s): GPU tests of %s not run\n", why, os.Args[0])
	os.Exit(0)
}
