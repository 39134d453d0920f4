// Package cuda is godali's one binding to the CUDA driver: devices and their primary
// contexts, streams, events, modules and kernel launches, a device memory pool and a
// pinned host pool, and NVML facts about a device (name, memory, the CPUs near it).
//
// # Build flavours
//
// The GPU code sits in files with the cuda build tag. Without the tag (the CPU flavour,
// libgodali.so) the same API exists and returns ErrNoCUDA, so callers compile either way.
// The pool bookkeeping, the DLPack stream rules and the preallocation arithmetic are
// plain Go shared by both flavours and tested without a GPU.
//
// # Loading order: probe first
//
// gorgonia.org/cu calls cuInit(0) in its package init and calls os.Exit(1) when that
// fails. Every binary that links this package with the cuda tag therefore terminates at
// start-up on a host without a usable GPU (no driver, no device, CUDA_VISIBLE_DEVICES="").
// For the c-shared library that happens inside dlopen: loading libgodali_cuda.so on such
// a host kills the host process. Whoever loads the CUDA flavour must first check, without
// loading it, that libcuda.so.1's cuInit(0) returns 0 and cuDeviceGetCount reports at
// least one device, and load libgodali.so otherwise (the Python package does this; C
// users see docs/cuda.md). Only one Go shared library may live in a process: never
// load both flavours.
//
// Test binaries follow the same rule: GPU tests import internal/cuda/cudatest, which
// probes the driver before gorgonia.org/cu initialises and ends the binary with a skip
// message when there is no device.
//
// # Contexts and threads
//
// godali uses each device's primary context, the one the CUDA runtime (and so PyTorch and
// nvJPEG) uses, so device pointers and streams are shared with them without peer
// mappings. gorgonia.org/cu serves initialisation and device queries; the calls on the
// hot path go through small C wrappers that push the primary context, make the call and
// pop it again inside one cgo call. They therefore work from any goroutine or thread
// (DLPack deleters run on the consumer's threads) without runtime.LockOSThread, and a
// kernel launch copies its arguments into C memory owned by a KernelArgs instead of
// allocating per call.
//
// # NVML
//
// github.com/NVIDIA/go-nvml resolves NVML at nvml.Init with dlopen and leaves its
// symbols undefined in the library until then; symbols newer than the installed driver
// stay undefined. Load libgodali_cuda.so with RTLD_LAZY (the default for programs linked
// against it; ctypes needs an explicit dlopen) or loading fails on older drivers.
package cuda
