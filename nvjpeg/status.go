package nvjpeg

import (
	"errors"
	"fmt"
)

// Status is an nvjpegStatus_t.
type Status int

// nvJPEG status codes (nvjpeg.h).
const (
	StatusSuccess                    Status = 0
	StatusNotInitialized             Status = 1
	StatusInvalidParameter           Status = 2
	StatusBadJPEG                    Status = 3
	StatusJPEGNotSupported           Status = 4
	StatusAllocatorFailure           Status = 5
	StatusExecutionFailed            Status = 6
	StatusArchMismatch               Status = 7
	StatusInternalError              Status = 8
	StatusImplementationNotSupported Status = 9
	StatusIncompleteBitstream        Status = 10
	statusUnavailable                Status = -1 // the loaded library lacks the function
)

var statusText = map[Status][2]string{
	StatusSuccess:                    {"NVJPEG_STATUS_SUCCESS", "success"},
	StatusNotInitialized:             {"NVJPEG_STATUS_NOT_INITIALIZED", "the library handle was not initialised"},
	StatusInvalidParameter:           {"NVJPEG_STATUS_INVALID_PARAMETER", "wrong parameter passed to the library"},
	StatusBadJPEG:                    {"NVJPEG_STATUS_BAD_JPEG", "cannot parse the JPEG stream"},
	StatusJPEGNotSupported:           {"NVJPEG_STATUS_JPEG_NOT_SUPPORTED", "the JPEG stream uses a feature this decoder does not support"},
	StatusAllocatorFailure:           {"NVJPEG_STATUS_ALLOCATOR_FAILURE", "a memory allocation failed"},
	StatusExecutionFailed:            {"NVJPEG_STATUS_EXECUTION_FAILED", "a GPU kernel or copy failed"},
	StatusArchMismatch:               {"NVJPEG_STATUS_ARCH_MISMATCH", "the GPU does not support this backend"},
	StatusInternalError:              {"NVJPEG_STATUS_INTERNAL_ERROR", "internal error in nvJPEG"},
	StatusImplementationNotSupported: {"NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED", "not supported by this backend"},
	StatusIncompleteBitstream:        {"NVJPEG_STATUS_INCOMPLETE_BITSTREAM", "the JPEG stream is truncated"},
	statusUnavailable:                {"GODALI_NVJPEG_UNAVAILABLE", "the loaded nvJPEG library lacks this function"},
}

// Name is the status's nvjpeg.h name.
func (s Status) Name() string {
	if t, ok := statusText[s]; ok {
		return t[0]
	}
	return fmt.Sprintf("NVJPEG_STATUS(%d)", int(s))
}

// Error is a failed nvJPEG call.
type Error struct {
	Call   string // e.g. "nvjpegDecodeBatched"
	Status Status
}

func (e *Error) Error() string {
	desc := "unknown status"
	if t, ok := statusText[e.Status]; ok {
		desc = t[1]
	}
	return fmt.Sprintf("%s failed: %s (%d): %s", e.Call, e.Status.Name(), int(e.Status), desc)
}

// Is makes errors.Is(err, ErrUnavailable) and errors.Is(err, ErrBadJPEG) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.Status == statusUnavailable
	case ErrBadJPEG:
		return e.Status == StatusBadJPEG || e.Status == StatusIncompleteBitstream
	case ErrNotSupported:
		return e.Status == StatusJPEGNotSupported || e.Status == StatusImplementationNotSupported || e.Status == StatusArchMismatch
	}
	return false
}

// Sentinel errors to test nvJPEG failures against with errors.Is.
var (
	// ErrUnavailable: the loaded libnvjpeg lacks the function (an older CUDA).
	ErrUnavailable = errors.New("nvjpeg: function not available in the loaded library")
	// ErrBadJPEG: the stream is corrupt or truncated; the CPU decoder will not do better.
	ErrBadJPEG = errors.New("nvjpeg: corrupt or truncated JPEG")
	// ErrNotSupported: this decoder cannot decode the stream; another route may.
	ErrNotSupported = errors.New("nvjpeg: stream not supported by this decoder")
)

func statusErr(call string, s Status) error {
	if s == StatusSuccess {
		return nil
	}
	return &Error{Call: call, Status: s}
}
