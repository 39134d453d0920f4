package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/godali/godali/source"
)

// Status classifies an error for the C ABI; its values are godali_status_t's.
type Status int

// Statuses, mirroring include/godali.h.
const (
	StatusOK              Status = 0
	StatusEndOfEpoch      Status = 1
	StatusInvalidArgument Status = -1
	StatusInvalidHandle   Status = -2
	StatusInvalidPipeline Status = -3
	StatusData            Status = -4
	StatusState           Status = -5
	StatusNoCUDA          Status = -6
	StatusCUDA            Status = -7
	StatusOutOfMemory     Status = -8
	StatusInternal        Status = -100
)

// Error is an error with a status for the C ABI.
type Error struct {
	Status Status
	Msg    string
	Err    error
}

// Error is the message without the secrets URLs in it may carry (source.Redact):
// readers' arguments and paths are URLs with passwords or presigned signatures.
func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return source.Redact(e.Err.Error())
	}
	if e.Err != nil {
		return source.Redact(e.Msg + ": " + e.Err.Error())
	}
	return source.Redact(e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with the given status.
func Errorf(s Status, format string, args ...any) error {
	return &Error{Status: s, Msg: fmt.Sprintf(format, args...)}
}

// errOutOfMemory is the failure to obtain memory from the system: a status of its own, a
// plain message naming what was asked for.
func errOutOfMemory(what string, n int, err error) error {
	return &Error{Status: StatusOutOfMemory, Msg: fmt.Sprintf("out of memory: %s: %d bytes (%.1f GiB) could not be allocated (%v)", what, n, float64(n)/(1<<30), err)}
}

// ErrEndOfEpoch is returned by Next after the last batch of an epoch.
var ErrEndOfEpoch = &Error{Status: StatusEndOfEpoch, Msg: "end of epoch"}

// ErrNoCUDA is returned when GPU work is requested from a build without CUDA.
var ErrNoCUDA = &Error{Status: StatusNoCUDA, Msg: "this is the CPU flavour of godali (libgodali.so); GPU operators need libgodali_cuda.so"}

// StatusOf classifies err; nil is StatusOK, unclassified errors are internal.
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return StatusInternal
}

// SampleError is a failure of one sample, naming its source file.
type SampleError struct {
	Source string // file the sample came from, "" if none
	Node   string // node that failed
	Err    error
}

func (e *SampleError) Error() string {
	msg := e.Err.Error()
	// An operator's message made with Args' helpers names the node already.
	if node := fmt.Sprintf("node %q", e.Node); e.Node != "" && !strings.HasPrefix(msg, node) {
		msg = node + ": " + msg
	}
	if e.Source != "" { // a URL's password or signature is not shown
		msg = e.Source + ": " + msg
	}
	return source.Redact(msg)
}

func (e *SampleError) Unwrap() error { return e.Err }
