package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godali/godali/internal/cuda"
)

// A device (or pinned) allocation that CUDA refuses for lack of memory is
// GODALI_ERROR_OUT_OF_MEMORY, like a host one; other CUDA failures stay GODALI_ERROR_CUDA.
func TestCUDAOutOfMemoryIsOutOfMemory(t *testing.T) {
	oom := &cuda.Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}
	// As the device pool wraps it (internal/cuda/pool.go).
	wrapped := fmt.Errorf("device pool: allocating %d bytes: %w", 1<<30, oom)
	err := cudaError(`output "images": 1073741824 bytes`, wrapped)
	if StatusOf(err) != StatusOutOfMemory {
		t.Fatalf("status %d, want StatusOutOfMemory: %v", StatusOf(err), err)
	}
	for _, want := range []string{"out of memory", `output "images"`, "cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// The batch's error keeps the status (sampleFailure).
	if st := StatusOf(sampleFailure(&SampleError{Node: "dec", Err: err}, 0)); st != StatusOutOfMemory {
		t.Errorf("sample failure status %d", st)
	}
	other := &cuda.Error{Call: "cuLaunchKernel", Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}
	if st := StatusOf(cudaError("kernel", other)); st != StatusCUDA {
		t.Errorf("illegal address: status %d, want StatusCUDA", st)
	}
	nvml := &cuda.Error{Call: "nvml", Code: 2, Name: "NVML_ERROR"}
	if st := StatusOf(cudaError("affinity", nvml)); st != StatusCUDA {
		t.Errorf("NVML code 2: status %d, want StatusCUDA", st)
	}
	if cudaError("x", nil) != nil {
		t.Error("nil error wrapped")
	}
}
