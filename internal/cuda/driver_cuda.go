//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Every wrapper pushes the primary context, makes its call and pops the context inside
// one cgo call, so Go callers need no LockOSThread. Handles cross as uintptr_t: Go sees
// them as integers, never as Go or C pointers.

static CUresult gd_push(uintptr_t c) { return cuCtxPushCurrent((CUcontext)c); }
static void gd_pop(void) { CUcontext o; cuCtxPopCurrent(&o); }

#define GD_WITH_CTX(c, call) do { CUresult r_ = gd_push(c); if (r_ != CUDA_SUCCESS) return r_; r_ = (call); gd_pop(); return r_; } while (0)

static CUresult gd_retain(int ordinal, uintptr_t *ctx) {
	CUdevice d;
	CUcontext c;
	CUresult r = cuDeviceGet(&d, ordinal);
	if (r != CUDA_SUCCESS) return r;
	r = cuDevicePrimaryCtxRetain(&c, d);
	if (r == CUDA_SUCCESS) *ctx = (uintptr_t)c;
	return r;
}

static CUresult gd_release(int ordinal) {
	CUdevice d;
	CUresult r = cuDeviceGet(&d, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return cuDevicePrimaryCtxRelease(d);
}

static CUresult gd_pci_bus_id(int ordinal, char *buf, int len) {
	CUdevice d;
	CUresult r = cuDeviceGet(&d, ordinal);
	if (r != CUDA_SUCCESS) return r;
	return cuDeviceGetPCIBusId(buf, len, d);
}

static CUresult gd_stream_create(uintptr_t c, uintptr_t *s) {
	CUstream st;
	CUresult r = gd_push(c);
	if (r != CUDA_SUCCESS) return r;
	r = cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
	gd_pop();
	if (r == CUDA_SUCCESS) *s = (uintptr_t)st;
	return r;
}
static CUresult gd_stream_destroy(uintptr_t c, uintptr_t s) { GD_WITH_CTX(c, cuStreamDestroy((CUstream)s)); }
static CUresult gd_stream_sync(uintptr_t c, uintptr_t s) { GD_WITH_CTX(c, cuStreamSynchronize((CUstream)s)); }

static CUresult gd_event_create(uintptr_t c, uintptr_t *e) {
	CUevent ev;
	CUresult r = gd_push(c);
	if (r != CUDA_SUCCESS) return r;
	r = cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
	gd_pop();
	if (r == CUDA_SUCCESS) *e = (uintptr_t)ev;
	return r;
}
static CUresult gd_event_destroy(uintptr_t c, uintptr_t e) { GD_WITH_CTX(c, cuEventDestroy((CUevent)e)); }
static CUresult gd_event_record(uintptr_t c, uintptr_t e, uintptr_t s) { GD_WITH_CTX(c, cuEventRecord((CUevent)e, (CUstream)s)); }
static CUresult gd_stream_wait(uintptr_t c, uintptr_t s, uintptr_t e) { GD_WITH_CTX(c, cuStreamWaitEvent((CUstream)s, (CUevent)e, 0)); }
static CUresult gd_event_query(uintptr_t c, uintptr_t e) { GD_WITH_CTX(c, cuEventQuery((CUevent)e)); }
static CUresult gd_event_sync(uintptr_t c, uintptr_t e) { GD_WITH_CTX(c, cuEventSynchronize((CUevent)e)); }

static CUresult gd_alloc(uintptr_t c, size_t n, uintptr_t *p) {
	CUdeviceptr d;
	CUresult r = gd_push(c);
	if (r != CUDA_SUCCESS) return r;
	r = cuMemAlloc(&d, n);
	gd_pop();
	if (r == CUDA_SUCCESS) *p = (uintptr_t)d;
	return r;
}
static CUresult gd_free(uintptr_t c, uintptr_t p) { GD_WITH_CTX(c, cuMemFree((CUdeviceptr)p)); }

static CUresult gd_host_alloc(uintptr_t c, size_t n, void **p) {
	// Portable: usable from every context; device-mapped: kernels may read it directly.
	GD_WITH_CTX(c, cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
}
static CUresult gd_host_free(uintptr_t c, uintptr_t p) { GD_WITH_CTX(c, cuMemFreeHost((void *)p)); }

static CUresult gd_htod(uintptr_t c, uintptr_t dst, const void *src, size_t n) { GD_WITH_CTX(c, cuMemcpyHtoD((CUdeviceptr)dst, src, n)); }
static CUresult gd_dtoh(uintptr_t c, void *dst, uintptr_t src, size_t n) { GD_WITH_CTX(c, cuMemcpyDtoH(dst, (CUdeviceptr)src, n)); }
static CUresult gd_htod_async(uintptr_t c, uintptr_t dst, const void *src, size_t n, uintptr_t s) {
	GD_WITH_CTX(c, cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, (CUstream)s));
}
static CUresult gd_dtoh_async(uintptr_t c, void *dst, uintptr_t src, size_t n, uintptr_t s) {
	GD_WITH_CTX(c, cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, (CUstream)s));
}
static CUresult gd_dtod_async(uintptr_t c, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	GD_WITH_CTX(c, cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, (CUstream)s));
}
static CUresult gd_memset_async(uintptr_t c, uintptr_t dst, unsigned char v, size_t n, uintptr_t s) {
	GD_WITH_CTX(c, cuMemsetD8Async((CUdeviceptr)dst, v, n, (CUstream)s));
}

static CUresult gd_module_load(uintptr_t c, const void *image, uintptr_t *mod) {
	CUmodule m;
	CUresult r = gd_push(c);
	if (r != CUDA_SUCCESS) return r;
	r = cuModuleLoadData(&m, image);
	gd_pop();
	if (r == CUDA_SUCCESS) *mod = (uintptr_t)m;
	return r;
}
static CUresult gd_module_unload(uintptr_t c, uintptr_t mod) { GD_WITH_CTX(c, cuModuleUnload((CUmodule)mod)); }
static CUresult gd_module_function(uintptr_t c, uintptr_t mod, const char *name, uintptr_t *fn) {
	CUfunction f;
	CUresult r = gd_push(c);
	if (r != CUDA_SUCCESS) return r;
	r = cuModuleGetFunction(&f, (CUmodule)mod, name);
	gd_pop();
	if (r == CUDA_SUCCESS) *fn = (uintptr_t)f;
	return r;
}

static CUresult gd_launch(uintptr_t c, uintptr_t fn, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shmem, uintptr_t s, void **params) {
	GD_WITH_CTX(c, cuLaunchKernel((CUfunction)fn, gx, gy, gz, bx, by, bz, shmem, (CUstream)s, params, NULL));
}

static void gd_error(CUresult r, const char **name, const char **desc) {
	if (cuGetErrorName(r, name) != CUDA_SUCCESS) *name = "CUDA_ERROR_UNKNOWN";
	if (cuGetErrorString(r, desc) != CUDA_SUCCESS) *desc = "";
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// check turns a CUresult into an *Error.
func check(call string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	var name, desc *C.char
	C.gd_error(r, &name, &desc)
	return &Error{Call: call, Code: int(r), Name: C.GoString(name), Desc: C.GoString(desc)}
}

// DeviceCount returns the number of CUDA devices the process can see.
func DeviceCount() (int, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return 0, fmt.Errorf("cuDeviceGetCount: %w", err)
	}
	return n, nil
}

// DriverVersion is the CUDA version the driver supports, e.g. 12040 for 12.4.
func DriverVersion() int { return cu.Version() }

// Device is one GPU with its retained primary context. Open returns the same *Device for
// the same ordinal until every Open is matched by Close.
type Device struct {
	ordinal int
	ctx     C.uintptr_t
	name    string
	cc      [2]int
	total   int64
	refs    int // guarded by devices.mu
}

var devices struct {
	mu sync.Mutex
	m  map[int]*Device
}

// Open retains device ordinal's primary context (device_id in a pipeline).
func Open(ordinal int) (*Device, error) {
	devices.mu.Lock()
	defer devices.mu.Unlock()
	if d := devices.m[ordinal]; d != nil {
		d.refs++
		return d, nil
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("device_id %d: expected 0..%d (%d CUDA devices visible)", ordinal, n-1, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuDeviceGet(%d): %w", ordinal, err)
	}
	d := &Device{ordinal: ordinal, refs: 1}
	if d.name, err = dev.Name(); err != nil {
		return nil, fmt.Errorf("device %d: name: %w", ordinal, err)
	}
	if d.total, err = dev.TotalMem(); err != nil {
		return nil, fmt.Errorf("device %d: total memory: %w", ordinal, err)
	}
	if d.cc[0], err = dev.Attribute(cu.ComputeCapabilityMajor); err != nil {
		return nil, fmt.Errorf("device %d: compute capability: %w", ordinal, err)
	}
	if d.cc[1], err = dev.Attribute(cu.ComputeCapabilityMinor); err != nil {
		return nil, fmt.Errorf("device %d: compute capability: %w", ordinal, err)
	}
	if err := check("cuDevicePrimaryCtxRetain", C.gd_retain(C.int(ordinal), &d.ctx)); err != nil {
		return nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	if devices.m == nil {
		devices.m = map[int]*Device{}
	}
	devices.m[ordinal] = d
	return d, nil
}

// Close drops one Open. The last one releases the primary context; pools, streams and
// modules of the device must be closed first.
func (d *Device) Close() error {
	devices.mu.Lock()
	defer devices.mu.Unlock()
	d.refs--
	if d.refs > 0 {
		return nil
	}
	delete(devices.m, d.ordinal)
	return check("cuDevicePrimaryCtxRelease", C.gd_release(C.int(d.ordinal)))
}

// Context is the device's primary context (a CUcontext), for C libraries that take one
// (NVDEC pushes it around its calls).
func (d *Device) Context() uintptr { return uintptr(d.ctx) }

// Ordinal is the device's CUDA ordinal (DLPack device_id).
func (d *Device) Ordinal() int { return d.ordinal }

// Name is the device's product name.
func (d *Device) Name() string { return d.name }

// ComputeCapability is the SM version, e.g. 9, 0 for Hopper.
func (d *Device) ComputeCapability() (major, minor int) { return d.cc[0], d.cc[1] }

// TotalMemory is the device memory in bytes.
func (d *Device) TotalMemory() int64 { return d.total }

// NewStream creates a non-blocking stream: it does not synchronise with the legacy
// default stream, on which PyTorch and other libraries may be busy.
func (d *Device) NewStream() (Stream, error) {
	var s C.uintptr_t
	if err := check("cuStreamCreate", C.gd_stream_create(d.ctx, &s)); err != nil {
		return 0, err
	}
	return Stream(s), nil
}

// DestroyStream destroys a stream created by NewStream; queued work still completes.
func (d *Device) DestroyStream(s Stream) error {
	return check("cuStreamDestroy", C.gd_stream_destroy(d.ctx, C.uintptr_t(s)))
}

// Synchronize waits on the host until the work queued on s is done. Not for the hot
// path: it exists for tests, shutdown and error recovery.
func (d *Device) Synchronize(s Stream) error {
	return check("cuStreamSynchronize", C.gd_stream_sync(d.ctx, C.uintptr_t(s)))
}

// NewEvent creates an event without timing, the cheap kind used for ordering.
func (d *Device) NewEvent() (Event, error) {
	var e C.uintptr_t
	if err := check("cuEventCreate", C.gd_event_create(d.ctx, &e)); err != nil {
		return 0, err
	}
	return Event(e), nil
}

// DestroyEvent destroys an event.
func (d *Device) DestroyEvent(e Event) error {
	return check("cuEventDestroy", C.gd_event_destroy(d.ctx, C.uintptr_t(e)))
}

// Record marks the current end of stream s's work in e.
func (d *Device) Record(e Event, s Stream) error {
	return check("cuEventRecord", C.gd_event_record(d.ctx, C.uintptr_t(e), C.uintptr_t(s)))
}

// Wait makes later work on s wait for the work recorded in e, without blocking the host.
func (d *Device) Wait(s Stream, e Event) error {
	return check("cuStreamWaitEvent", C.gd_stream_wait(d.ctx, C.uintptr_t(s), C.uintptr_t(e)))
}

// EventDone reports whether the work recorded in e has completed.
func (d *Device) EventDone(e Event) (bool, error) {
	r := C.gd_event_query(d.ctx, C.uintptr_t(e))
	if r == C.CUDA_ERROR_NOT_READY {
		return false, nil
	}
	if err := check("cuEventQuery", r); err != nil {
		return false, err
	}
	return true, nil
}

// EventSync waits on the host for the work recorded in e.
func (d *Device) EventSync(e Event) error {
	return check("cuEventSynchronize", C.gd_event_sync(d.ctx, C.uintptr_t(e)))
}

// ExportFence hands a tensor written on stream ours to a DLPack consumer: e is recorded
// on ours and, unless the consumer asked for no synchronisation (-1), the consumer's
// stream waits for it. The host never waits.
func (d *Device) ExportFence(ours Stream, e Event, dlpackStream int64) error {
	consumer, wait, err := ConsumerStream(dlpackStream)
	if err != nil {
		return err
	}
	if err := d.Record(e, ours); err != nil {
		return err
	}
	if !wait {
		return nil
	}
	return d.Wait(consumer, e)
}

// Alloc obtains n bytes of device memory with cuMemAlloc. Pools call it; other code
// should use a Pool.
func (d *Device) Alloc(n int) (uintptr, error) {
	var p C.uintptr_t
	if err := check("cuMemAlloc", C.gd_alloc(d.ctx, C.size_t(n), &p)); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

// Free gives memory from Alloc back to the driver.
func (d *Device) Free(p uintptr) error {
	return check("cuMemFree", C.gd_free(d.ctx, C.uintptr_t(p)))
}

// CopyHtoD copies src to device address dst and waits for the copy. src may be Go memory.
func (d *Device) CopyHtoD(dst uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.gd_htod(d.ctx, C.uintptr_t(dst), unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src))))
}

// CopyDtoH copies len(dst) bytes from device address src and waits for the copy.
func (d *Device) CopyDtoH(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.gd_dtoh(d.ctx, unsafe.Pointer(unsafe.SliceData(dst)), C.uintptr_t(src), C.size_t(len(dst))))
}

// CopyHtoDAsync queues a copy of n bytes from host memory src to dst on s. src must stay
// valid until the copy is done and must not be Go memory: use a pinned block (the copy is
// only asynchronous from pinned memory) or other memory Go does not manage.
func (d *Device) CopyHtoDAsync(dst uintptr, src unsafe.Pointer, n int, s Stream) error {
	return check("cuMemcpyHtoDAsync", C.gd_htod_async(d.ctx, C.uintptr_t(dst), src, C.size_t(n), C.uintptr_t(s)))
}

// CopyDtoHAsync queues a copy of n bytes from src to host memory dst on s; dst as for
// CopyHtoDAsync.
func (d *Device) CopyDtoHAsync(dst unsafe.Pointer, src uintptr, n int, s Stream) error {
	return check("cuMemcpyDtoHAsync", C.gd_dtoh_async(d.ctx, dst, C.uintptr_t(src), C.size_t(n), C.uintptr_t(s)))
}

// CopyDtoDAsync queues a device-to-device copy of n bytes on s.
func (d *Device) CopyDtoDAsync(dst, src uintptr, n int, s Stream) error {
	return check("cuMemcpyDtoDAsync", C.gd_dtod_async(d.ctx, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.uintptr_t(s)))
}

// MemsetAsync queues setting n bytes at dst to v on s.
func (d *Device) MemsetAsync(dst uintptr, v byte, n int, s Stream) error {
	return check("cuMemsetD8Async", C.gd_memset_async(d.ctx, C.uintptr_t(dst), C.uchar(v), C.size_t(n), C.uintptr_t(s)))
}

// Module is a loaded fatbin, cubin or PTX image.
type Module struct {
	dev   *Device
	mod   C.uintptr_t
	image unsafe.Pointer // C copy of the image, kept for the module's lifetime
}

// LoadModule loads a module image (cuModuleLoadData) into the device's primary context.
// The driver picks the SASS for the device's architecture from a fatbin, or JIT-compiles
// its PTX for newer GPUs.
func (d *Device) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("load module: empty image")
	}
	m := &Module{dev: d, image: C.CBytes(image)}
	if err := check("cuModuleLoadData", C.gd_module_load(d.ctx, m.image, &m.mod)); err != nil {
		C.free(m.image)
		return nil, err
	}
	return m, nil
}

// Function looks up a kernel by its (extern "C") name.
func (m *Module) Function(name string) (Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.uintptr_t
	if err := check("cuModuleGetFunction", C.gd_module_function(m.dev.ctx, m.mod, cs, &f)); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return Function(f), nil
}

// Unload unloads the module; its functions become invalid.
func (m *Module) Unload() error {
	if m.mod == 0 {
		return nil
	}
	err := check("cuModuleUnload", C.gd_module_unload(m.dev.ctx, m.mod))
	m.mod = 0
	C.free(m.image)
	m.image = nil
	return err
}

// maxKernelArgs and kernelArgBytes bound a KernelArgs: godali's kernels take a few
// pointers and scalars.
const (
	maxKernelArgs  = 32
	kernelArgBytes = 8 * maxKernelArgs
)

// KernelArgs holds a kernel's arguments in C memory, where cuLaunchKernel may read them
// (a Go pointer array handed to C must not point into Go memory). One per launching
// goroutine, reused for every launch: launches do not allocate. Not safe for concurrent
// use.
type KernelArgs struct {
	vals unsafe.Pointer // kernelArgBytes of argument values
	ptrs unsafe.Pointer // maxKernelArgs pointers into vals
	n    int
	off  uintptr
	err  error
}

// NewKernelArgs allocates an argument block; Free releases it.
func NewKernelArgs() *KernelArgs {
	return &KernelArgs{vals: C.calloc(1, kernelArgBytes), ptrs: C.calloc(maxKernelArgs, C.size_t(unsafe.Sizeof(uintptr(0))))}
}

// Free releases the C memory.
func (a *KernelArgs) Free() {
	C.free(a.vals)
	C.free(a.ptrs)
	a.vals, a.ptrs = nil, nil
}

// Reset forgets the arguments of the previous launch.
func (a *KernelArgs) Reset() *KernelArgs {
	a.n, a.off, a.err = 0, 0, nil
	return a
}

// slot reserves size bytes aligned to size for the next argument and returns them.
func (a *KernelArgs) slot(size uintptr) unsafe.Pointer {
	off := (a.off + size - 1) &^ (size - 1)
	if a.n >= maxKernelArgs || off+size > kernelArgBytes {
		if a.err == nil {
			a.err = fmt.Errorf("kernel arguments: more than %d arguments or %d bytes", maxKernelArgs, kernelArgBytes)
		}
		return nil
	}
	p := unsafe.Add(a.vals, off)
	*(*unsafe.Pointer)(unsafe.Add(a.ptrs, uintptr(a.n)*unsafe.Sizeof(uintptr(0)))) = p
	a.n++
	a.off = off + size
	return p
}

// Ptr appends a device pointer (or a 64-bit handle).
func (a *KernelArgs) Ptr(v uintptr) *KernelArgs {
	if p := a.slot(8); p != nil {
		*(*uint64)(p) = uint64(v)
	}
	return a
}

// I32 appends an int.
func (a *KernelArgs) I32(v int32) *KernelArgs {
	if p := a.slot(4); p != nil {
		*(*int32)(p) = v
	}
	return a
}

// F32 appends a float.
func (a *KernelArgs) F32(v float32) *KernelArgs {
	if p := a.slot(4); p != nil {
		*(*float32)(p) = v
	}
	return a
}

// Launch queues kernel f on stream s with the arguments in args.
func (d *Device) Launch(f Function, grid, block Dim3, sharedMem int, s Stream, args *KernelArgs) error {
	if args.err != nil {
		return args.err
	}
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 {
		return nil // nothing to do; the driver would reject an empty grid
	}
	return check("cuLaunchKernel", C.gd_launch(d.ctx, C.uintptr_t(f),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMem), C.uintptr_t(s), (*unsafe.Pointer)(args.ptrs)))
}

// pciBusID is the device's PCI address as NVML expects it.
func (d *Device) pciBusID() (string, error) {
	var buf [32]C.char
	if err := check("cuDeviceGetPCIBusId", C.gd_pci_bus_id(C.int(d.ordinal), &buf[0], C.int(len(buf)))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// deviceBacking serves device pools.
type deviceBacking struct{ d *Device }

func (b deviceBacking) kind() Kind { return KindDevice }
func (b deviceBacking) alloc(n int) (uintptr, []byte, error) {
	p, err := b.d.Alloc(n)
	return p, nil, err
}
func (b deviceBacking) free(p uintptr) error           { return b.d.Free(p) }
func (b deviceBacking) newEvent() (Event, error)       { return b.d.NewEvent() }
func (b deviceBacking) destroyEvent(e Event)           { _ = b.d.DestroyEvent(e) }
func (b deviceBacking) record(e Event, s Stream) error { return b.d.Record(e, s) }
func (b deviceBacking) reuse(e Event, s Stream) error  { return b.d.Wait(s, e) }
func (b deviceBacking) hostSync(e Event) error         { return b.d.EventSync(e) }
func (b deviceBacking) drained()                       { _ = b.d.Close() }

// pinnedBacking serves pinned host pools.
type pinnedBacking struct{ d *Device }

func (b pinnedBacking) kind() Kind { return KindPinned }
func (b pinnedBacking) alloc(n int) (uintptr, []byte, error) {
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", C.gd_host_alloc(b.d.ctx, C.size_t(n), &p)); err != nil {
		return 0, nil, err
	}
	return uintptr(p), unsafe.Slice((*byte)(p), n), nil
}
func (b pinnedBacking) free(p uintptr) error {
	return check("cuMemFreeHost", C.gd_host_free(b.d.ctx, C.uintptr_t(p)))
}
func (b pinnedBacking) newEvent() (Event, error)       { return b.d.NewEvent() }
func (b pinnedBacking) destroyEvent(e Event)           { _ = b.d.DestroyEvent(e) }
func (b pinnedBacking) record(e Event, s Stream) error { return b.d.Record(e, s) }
func (b pinnedBacking) reuse(e Event, _ Stream) error  { return b.d.EventSync(e) }
func (b pinnedBacking) hostSync(e Event) error         { return b.d.EventSync(e) }
func (b pinnedBacking) drained()                       { _ = b.d.Close() }

// retain adds a hold on the device like Open does.
func (d *Device) retain() {
	devices.mu.Lock()
	d.refs++
	devices.mu.Unlock()
}

// NewDevicePool returns an empty pool of the device's memory. The pool holds the device
// open until it is closed and its last block has come back.
func (d *Device) NewDevicePool() (*Pool, error) {
	d.retain()
	return newPool(deviceBacking{d}), nil
}

// NewPinnedPool returns an empty pool of pinned host memory, portable across contexts
// and mapped into the device's address space; it holds the device open like a device
// pool.
func (d *Device) NewPinnedPool() (*Pool, error) {
	d.retain()
	return newPool(pinnedBacking{d}), nil
}
