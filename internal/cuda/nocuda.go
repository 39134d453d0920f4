//go:build !cuda

package cuda

import "unsafe"

// The CPU flavour's Device: every method reports ErrNoCUDA. It keeps callers that are
// compiled into both flavours free of build tags.

// DeviceCount reports ErrNoCUDA.
func DeviceCount() (int, error) { return 0, ErrNoCUDA }

// DriverVersion is 0 without CUDA.
func DriverVersion() int { return 0 }

// Device is a GPU; the CPU flavour cannot open one.
type Device struct{}

// Open reports ErrNoCUDA.
func Open(ordinal int) (*Device, error) { return nil, ErrNoCUDA }

// Close reports ErrNoCUDA.
func (d *Device) Close() error { return ErrNoCUDA }

// Ordinal is -1.
func (d *Device) Ordinal() int { return -1 }

// Name is "".
func (d *Device) Name() string { return "" }

// ComputeCapability is 0.0.
func (d *Device) ComputeCapability() (major, minor int) { return 0, 0 }

// TotalMemory is 0.
func (d *Device) TotalMemory() int64 { return 0 }

// Info reports ErrNoCUDA.
func (d *Device) Info() (Info, error) { return Info{}, ErrNoCUDA }

// NewStream reports ErrNoCUDA.
func (d *Device) NewStream() (Stream, error) { return 0, ErrNoCUDA }

// DestroyStream reports ErrNoCUDA.
func (d *Device) DestroyStream(s Stream) error { return ErrNoCUDA }

// Synchronize reports ErrNoCUDA.
func (d *Device) Synchronize(s Stream) error { return ErrNoCUDA }

// NewEvent reports ErrNoCUDA.
func (d *Device) NewEvent() (Event, error) { return 0, ErrNoCUDA }

// DestroyEvent reports ErrNoCUDA.
func (d *Device) DestroyEvent(e Event) error { return ErrNoCUDA }

// Record reports ErrNoCUDA.
func (d *Device) Record(e Event, s Stream) error { return ErrNoCUDA }

// Wait reports ErrNoCUDA.
func (d *Device) Wait(s Stream, e Event) error { return ErrNoCUDA }

// EventDone reports ErrNoCUDA.
func (d *Device) EventDone(e Event) (bool, error) { return false, ErrNoCUDA }

// EventSync reports ErrNoCUDA.
func (d *Device) EventSync(e Event) error { return ErrNoCUDA }

// ExportFence reports ErrNoCUDA.
func (d *Device) ExportFence(ours Stream, e Event, dlpackStream int64) error { return ErrNoCUDA }

// Alloc reports ErrNoCUDA.
func (d *Device) Alloc(n int) (uintptr, error) { return 0, ErrNoCUDA }

// Free reports ErrNoCUDA.
func (d *Device) Free(p uintptr) error { return ErrNoCUDA }

// CopyHtoD reports ErrNoCUDA.
func (d *Device) CopyHtoD(dst uintptr, src []byte) error { return ErrNoCUDA }

// CopyDtoH reports ErrNoCUDA.
func (d *Device) CopyDtoH(dst []byte, src uintptr) error { return ErrNoCUDA }

// CopyHtoDAsync reports ErrNoCUDA.
func (d *Device) CopyHtoDAsync(dst uintptr, src unsafe.Pointer, n int, s Stream) error {
	return ErrNoCUDA
}

// CopyDtoHAsync reports ErrNoCUDA.
func (d *Device) CopyDtoHAsync(dst unsafe.Pointer, src uintptr, n int, s Stream) error {
	return ErrNoCUDA
}

// CopyDtoDAsync reports ErrNoCUDA.
func (d *Device) CopyDtoDAsync(dst, src uintptr, n int, s Stream) error { return ErrNoCUDA }

// MemsetAsync reports ErrNoCUDA.
func (d *Device) MemsetAsync(dst uintptr, v byte, n int, s Stream) error { return ErrNoCUDA }

// Module is a loaded kernel image; the CPU flavour has none.
type Module struct{}

// LoadModule reports ErrNoCUDA.
func (d *Device) LoadModule(image []byte) (*Module, error) { return nil, ErrNoCUDA }

// Function reports ErrNoCUDA.
func (m *Module) Function(name string) (Function, error) { return 0, ErrNoCUDA }

// Unload reports ErrNoCUDA.
func (m *Module) Unload() error { return ErrNoCUDA }

// KernelArgs holds kernel arguments; the CPU flavour only records nothing.
type KernelArgs struct{}

// NewKernelArgs returns an argument block that cannot be launched.
func NewKernelArgs() *KernelArgs { return &KernelArgs{} }

// Free does nothing.
func (a *KernelArgs) Free() {}

// Reset does nothing.
func (a *KernelArgs) Reset() *KernelArgs { return a }

// Ptr does nothing.
func (a *KernelArgs) Ptr(v uintptr) *KernelArgs { return a }

// I32 does nothing.
func (a *KernelArgs) I32(v int32) *KernelArgs { return a }

// F32 does nothing.
func (a *KernelArgs) F32(v float32) *KernelArgs { return a }

// Launch reports ErrNoCUDA.
func (d *Device) Launch(f Function, grid, block Dim3, sharedMem int, s Stream, args *KernelArgs) error {
	return ErrNoCUDA
}

// NewDevicePool reports ErrNoCUDA.
func (d *Device) NewDevicePool() (*Pool, error) { return nil, ErrNoCUDA }

// NewPinnedPool reports ErrNoCUDA.
func (d *Device) NewPinnedPool() (*Pool, error) { return nil, ErrNoCUDA }
