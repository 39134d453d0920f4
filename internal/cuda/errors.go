package cuda

import (
	"errors"
	"fmt"
)

// NoCUDAError is the type of ErrNoCUDA.
type NoCUDAError struct{}

func (NoCUDAError) Error() string {
	return "godali was built without CUDA (CPU flavour, libgodali.so): GPU work needs libgodali_cuda.so, built with the cuda tag"
}

// ErrNoCUDA is returned by every GPU entry point of the CPU flavour.
var ErrNoCUDA error = NoCUDAError{}

// Error is a failed CUDA driver or NVML call.
type Error struct {
	Call string // the API function, e.g. "cuMemAlloc"
	Code int    // CUresult or nvmlReturn_t
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Desc string // the driver's description
	What string // what godali was doing, e.g. "device pool: 8 MiB block"
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s failed: %s (%d)", e.Call, e.Name, e.Code)
	if e.Desc != "" {
		msg += ": " + e.Desc
	}
	if e.What != "" {
		msg = e.What + ": " + msg
	}
	return msg
}

// CUDA driver result codes that callers act on.
const (
	resultSuccess     = 0
	resultOutOfMemory = 2
	resultNotReady    = 600
)

// IsOutOfMemory reports whether err is a CUDA out-of-memory failure.
func IsOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == resultOutOfMemory && e.Call != "nvml"
}
