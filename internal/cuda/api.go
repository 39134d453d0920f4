package cuda

import "unsafe"

// Dim3 is a CUDA grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Info is what NVML says about a device.
type Info struct {
	Name        string
	PCIBusID    string
	TotalMemory uint64 // bytes
	FreeMemory  uint64
	UsedMemory  uint64
	// CPUAffinity lists the CPUs close to the device (nvmlDeviceGetCpuAffinity), where
	// worker threads that feed it should run.
	CPUAffinity []int
}

// deviceAPI is the method set both flavours of Device implement; the assertions next to
// each Device keep the CUDA file and its CPU twin in step.
type deviceAPI interface {
	Close() error
	Ordinal() int
	Name() string
	ComputeCapability() (major, minor int)
	TotalMemory() int64
	Info() (Info, error)

	NewStream() (Stream, error)
	DestroyStream(s Stream) error
	Synchronize(s Stream) error
	NewEvent() (Event, error)
	DestroyEvent(e Event) error
	Record(e Event, s Stream) error
	Wait(s Stream, e Event) error
	EventDone(e Event) (bool, error)
	EventSync(e Event) error
	ExportFence(ours Stream, e Event, dlpackStream int64) error

	Alloc(n int) (uintptr, error)
	Free(p uintptr) error
	CopyHtoD(dst uintptr, src []byte) error
	CopyDtoH(dst []byte, src uintptr) error
	CopyHtoDAsync(dst uintptr, src unsafe.Pointer, n int, s Stream) error
	CopyDtoHAsync(dst unsafe.Pointer, src uintptr, n int, s Stream) error
	CopyDtoDAsync(dst, src uintptr, n int, s Stream) error
	MemsetAsync(dst uintptr, v byte, n int, s Stream) error

	LoadModule(image []byte) (*Module, error)
	Launch(f Function, grid, block Dim3, sharedMem int, s Stream, args *KernelArgs) error

	NewDevicePool() (*Pool, error)
	NewPinnedPool() (*Pool, error)
}

var _ deviceAPI = (*Device)(nil)

// Function is a CUfunction handle of a loaded Module.
type Function uintptr
