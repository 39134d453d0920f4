package cuda

import "fmt"

// Stream is a CUstream handle. The zero value is the legacy default stream, as in the
// driver API; LegacyStream and PerThreadStream are the driver's special handles.
type Stream uintptr

// Event is a CUevent handle.
type Event uintptr

// Special stream handles of the CUDA driver API (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
// They equal the DLPack stream values 1 and 2, which is no accident: DLPack took them
// from CUDA.
const (
	LegacyStream    Stream = 1
	PerThreadStream Stream = 2
)

// ConsumerStream interprets the stream argument of DLPack's __dlpack__(stream=...) for a
// kDLCUDA tensor: 1 is the legacy default stream, 2 the per-thread default stream, a
// value above 2 a CUstream handle, and -1 asks for no synchronisation (wait reports
// false). 0 is ambiguous for CUDA and rejected, as the DLPack specification says;
// producers should map a Python None to 1 before calling.
func ConsumerStream(v int64) (s Stream, wait bool, err error) {
	switch {
	case v == -1:
		return 0, false, nil
	case v == 1:
		return LegacyStream, true, nil
	case v == 2:
		return PerThreadStream, true, nil
	case v > 2:
		return Stream(uintptr(v)), true, nil
	}
	return 0, false, fmt.Errorf("DLPack stream %d: expected -1 (no synchronisation), 1 (legacy default stream), 2 (per-thread default stream) or a CUDA stream handle", v)
}
