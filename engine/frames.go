package engine

import (
	"fmt"
	"math"
)

// MaxFrame bounds the integer arguments that count or number video frames and sequence
// elements (sequence_length, stride, step, start_frame) and the last frame a sequence
// reaches, start + (sequence_length-1)*stride: 2^31-1, the int32 of the readers'
// sequence records and of DALI's frame numbers. Larger values overflowed the arithmetic
// they feed (readers.sequence(stride=2**62) failed with an internal error, a video was
// called truncated or corrupt); they are argument errors at build.
const MaxFrame = math.MaxInt32

// CheckFrameArgs checks, at build, that each named integer argument is at most MaxFrame
// (each operator checks the lower bound its semantics need).
func (a *Args) CheckFrameArgs(names ...string) error {
	for _, n := range names {
		if v := a.Int(n); v > MaxFrame {
			return a.Errorf(n, "%d is more than %d frames (2^31-1)", v, MaxFrame)
		}
	}
	return nil
}

// FrameSpan is the last frame of count frames taken every stride frames from start,
// start + (count-1)*stride; ok=false when a value is negative (count < 1) or the frame is
// past MaxFrame.
func FrameSpan(start, count, stride int) (int, bool) {
	if start < 0 || count < 1 || stride < 0 {
		return 0, false
	}
	n, ok := mulSize(count-1, stride)
	if !ok || n > MaxFrame || start > MaxFrame-n {
		return 0, false
	}
	return start + n, true
}

// CheckFrameSpan checks, at build, that the sequence of count frames every stride frames
// from start ends by MaxFrame (FrameSpan); args names the arguments that set them (e.g.
// "start_frame", "sequence_length", "stride").
func (a *Args) CheckFrameSpan(start, count, stride int, args ...string) error {
	if _, ok := FrameSpan(start, count, stride); ok {
		return nil
	}
	names := ""
	for i, n := range args {
		if i > 0 {
			names += ", "
		}
		names += fmt.Sprintf("%q", n)
	}
	return Errorf(StatusInvalidPipeline, "%s: arguments %s: %d frames every %d frames from frame %d go past frame %d (2^31-1)",
		a.Where(), names, count, stride, start, MaxFrame)
}
