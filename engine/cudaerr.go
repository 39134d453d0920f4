package engine

import "github.com/godali/godali/internal/cuda"

// cudaError gives a failed CUDA call its status: GODALI_ERROR_OUT_OF_MEMORY when the
// device (or pinned host memory) ran out, as for host memory, so that a caller can
// tell "too big for this GPU" from a broken device; GODALI_ERROR_CUDA otherwise. The
// message keeps the CUDA call and result name.
func cudaError(what string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*Error); ok {
		return err
	}
	st := StatusCUDA
	if cuda.IsOutOfMemory(err) {
		st = StatusOutOfMemory
		what = "out of memory: " + what
	}
	return &Error{Status: st, Msg: what, Err: err}
}
