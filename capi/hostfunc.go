package main

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/ops/external"
)

// hostFunctions holds the functions registered with godali_host_function_register (C
// function pointers and contexts, never Go pointers) and the calls in progress, by id, so
// that godali_host_call_output finds its call.
type hostFunctions struct {
	mu       sync.Mutex
	nextFn   uint64
	fns      map[uint64]hostFunction
	nextCall uint64
	calls    map[uint64]*hostCall
}

// hostFunction keeps ctx as an integer: the caller's context is any value (Python passes
// small keys), and a Go pointer-typed variable holding it would trip the garbage
// collector's pointer checks.
type hostFunction struct {
	fn  C.godali_host_function_t
	ctx C.uintptr_t
}

type hostCall struct {
	c       *external.HostCall
	failMsg string
}

var hostFns = &hostFunctions{fns: map[uint64]hostFunction{}, calls: map[uint64]*hostCall{}}

func init() { external.SetHostFunctions(hostFns) }

func (h *hostFunctions) Known(id uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.fns[id]
	return ok
}

// hostExiting is set by godali_host_shutdown: the host program is going away (an
// interpreter at exit), so the library calls none of its functions any more.
var hostExiting atomic.Bool

// hostThreads records which OS threads are inside a host function, and for which
// pipeline: a call into that pipeline from there (godali_pipeline_next, destroy, ...)
// would wait for the batch the host function is computing, which waits for the call.
// The host function runs on the thread of the goroutine that calls it (locked to it),
// and the host's calls back into the library come on that same thread.
var hostThreads = struct {
	sync.Mutex
	active atomic.Int32 // host functions running now, in any pipeline
	m      map[int][]hostFrame
}{m: map[int][]hostFrame{}}

type hostFrame struct {
	eng  *engine.Pipeline
	node string
}

func enterHostFunction(tid int, eng *engine.Pipeline, node string) {
	hostThreads.Lock()
	hostThreads.m[tid] = append(hostThreads.m[tid], hostFrame{eng, node})
	hostThreads.active.Add(1)
	hostThreads.Unlock()
}

func leaveHostFunction(tid int) {
	hostThreads.Lock()
	if fs := hostThreads.m[tid]; len(fs) > 1 {
		hostThreads.m[tid] = fs[:len(fs)-1]
	} else {
		delete(hostThreads.m, tid)
	}
	hostThreads.active.Add(-1)
	hostThreads.Unlock()
}

// insideHostFunction is the node whose host function of pipeline eng the calling thread
// is running, if it is.
func insideHostFunction(eng *engine.Pipeline) (string, bool) {
	if hostThreads.active.Load() == 0 {
		return "", false
	}
	tid := unix.Gettid()
	hostThreads.Lock()
	defer hostThreads.Unlock()
	for _, f := range hostThreads.m[tid] {
		if f.eng == eng {
			return f.node, true
		}
	}
	return "", false
}

// errReentrant refuses a call into a pipeline from inside one of its host functions.
func errReentrant(node string) error {
	return engine.Errorf(engine.StatusState, "%s called from inside the host function of node %q (python_function) of the same pipeline: "+
		"it would wait for the batch that function is computing, which waits for the call (a deadlock); a host function may not "+
		"call into its own pipeline (only godali_host_call_*)", apiName(), node)
}

// apiName is the exported function the current call came through ("a godali call" when
// none is found).
func apiName() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if i := strings.Index(f.Function, ".godali_"); i >= 0 {
			name := f.Function[i+1:]
			if j := strings.IndexByte(name, '.'); j >= 0 {
				name = name[:j] // a closure inside it
			}
			return name
		}
		if !more {
			return "a godali call"
		}
	}
}

// pipelineHandle is eng's handle, 0 if it has none any more (destroyed).
func pipelineHandle(eng *engine.Pipeline) uint64 {
	pipelines.Lock()
	defer pipelines.Unlock()
	for h, p := range pipelines.m {
		if p.eng == eng {
			return h
		}
	}
	return 0
}

// Call describes the batch in C memory (the inputs are pool memory already, outside the
// Go heap), calls the function and forgets the call.
func (h *hostFunctions) Call(c *external.HostCall) error {
	if hostExiting.Load() {
		return engine.Errorf(engine.StatusState, "the host program is exiting (godali_host_shutdown): the host function of node %q is not called", c.Node)
	}
	h.mu.Lock()
	f, ok := h.fns[c.Function]
	h.nextCall++
	id := h.nextCall
	hc := &hostCall{c: c}
	if ok {
		h.calls[id] = hc
	}
	h.mu.Unlock()
	if !ok {
		return engine.Errorf(engine.StatusData, "host function %d is no longer registered", c.Function)
	}
	defer func() {
		h.mu.Lock()
		delete(h.calls, id)
		h.mu.Unlock()
	}()
	call, free, err := newCCall(id, c)
	if err != nil {
		return err
	}
	defer free()
	call.pipeline = C.godali_pipeline_t(pipelineHandle(c.Pipeline))
	// The function runs on this thread (locked to it), which is how a call it makes into
	// its own pipeline is recognised (insideHostFunction).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	enterHostFunction(tid, c.Pipeline, c.Node)
	rc := C.godali_call_host_function(f.fn, f.ctx, call)
	leaveHostFunction(tid)
	if rc != 0 {
		msg := hc.failMsg
		if msg == "" {
			msg = "the host function failed (returned non-zero without a message)"
		}
		return engine.Errorf(engine.StatusData, "%s", msg)
	}
	return nil
}

// newCCall lays the call out in one C allocation: the call, the DLTensors, their shapes
// and strides, and the node's name.
func newCCall(id uint64, c *external.HostCall) (*C.godali_host_call_t, func(), error) {
	nIn := len(c.In)
	dims := 0
	for _, in := range c.In {
		for _, t := range in {
			dims += 2 * len(t.Shape)
		}
	}
	callSize := C.size_t(unsafe.Sizeof(C.godali_host_call_t{}))
	tensorSize := C.size_t(unsafe.Sizeof(C.DLTensor{}))
	size := callSize + tensorSize*C.size_t(nIn*c.Samples) + 8*C.size_t(dims) + C.size_t(len(c.Node)+1)
	mem := C.calloc(1, size)
	if mem == nil {
		return nil, nil, engine.Errorf(engine.StatusOutOfMemory, "host function call: no memory for %d bytes", int(size))
	}
	call := (*C.godali_host_call_t)(mem)
	tensors := unsafe.Slice((*C.DLTensor)(unsafe.Add(mem, callSize)), nIn*c.Samples)
	ints := unsafe.Slice((*C.int64_t)(unsafe.Add(mem, callSize+tensorSize*C.size_t(nIn*c.Samples))), dims)
	name := unsafe.Slice((*byte)(unsafe.Add(mem, size-C.size_t(len(c.Node)+1))), len(c.Node)+1)
	copy(name, c.Node)
	for k, in := range c.In {
		for i, t := range in {
			dt := &tensors[k*c.Samples+i]
			nd := len(t.Shape)
			shape, strides := ints[:nd:nd], ints[nd:2*nd:2*nd]
			ints = ints[2*nd:]
			step := int64(1)
			for d := nd - 1; d >= 0; d-- {
				shape[d] = C.int64_t(t.Shape[d])
				strides[d] = C.int64_t(step)
				step *= int64(max(t.Shape[d], 1))
			}
			if len(t.Data) > 0 {
				dt.data = unsafe.Pointer(unsafe.SliceData(t.Data))
			}
			dt.device.device_type = C.kDLCPU
			dt.ndim = C.int32_t(nd)
			code, bits := t.DType.DLPack()
			dt.dtype.code, dt.dtype.bits, dt.dtype.lanes = C.uint8_t(code), C.uint8_t(bits), 1
			if nd > 0 {
				dt.shape, dt.strides = &shape[0], &strides[0]
			}
		}
	}
	call.call = C.uint64_t(id)
	call.node = (*C.char)(unsafe.Pointer(&name[0]))
	call.num_samples = C.int64_t(c.Samples)
	call.num_inputs = C.int32_t(nIn)
	call.num_outputs = C.int32_t(c.NumOutputs)
	if len(tensors) > 0 {
		call.inputs = &tensors[0]
	}
	call.epoch = C.int64_t(c.Epoch)
	call.iteration = C.int64_t(c.Iteration)
	return call, func() { C.free(mem) }, nil
}

func (h *hostFunctions) call(id C.uint64_t) (*hostCall, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hc, ok := h.calls[uint64(id)]
	if !ok {
		return nil, engine.Errorf(engine.StatusState, "host call %d is not in progress", uint64(id))
	}
	return hc, nil
}

//export godali_host_function_register
func godali_host_function_register(fn C.godali_host_function_t, ctx C.uintptr_t, out *C.uint64_t) C.int {
	return guard(func() error {
		if fn == nil {
			return errNull("fn")
		}
		if out == nil {
			return errNull("out")
		}
		hostFns.mu.Lock()
		hostFns.nextFn++
		id := hostFns.nextFn
		hostFns.fns[id] = hostFunction{fn: fn, ctx: ctx}
		hostFns.mu.Unlock()
		*out = C.uint64_t(id)
		return nil
	})
}

//export godali_host_function_unregister
func godali_host_function_unregister(id C.uint64_t) C.int {
	return guard(func() error {
		hostFns.mu.Lock()
		defer hostFns.mu.Unlock()
		if _, ok := hostFns.fns[uint64(id)]; !ok {
			return engine.Errorf(engine.StatusInvalidArgument, "host function %d is not registered", uint64(id))
		}
		delete(hostFns.fns, uint64(id))
		return nil
	})
}

//export godali_host_shutdown
func godali_host_shutdown() C.int {
	return guard(func() error {
		hostExiting.Store(true)
		return nil
	})
}

//export godali_host_call_output
func godali_host_call_output(id C.uint64_t, output C.int32_t, sample C.int64_t, t *C.DLTensor) C.int {
	return guard(func() error {
		if t == nil {
			return errNull("t")
		}
		hc, err := hostFns.call(id)
		if err != nil {
			return err
		}
		c := hc.c
		if output < 0 || int(output) >= c.NumOutputs {
			return engine.Errorf(engine.StatusInvalidArgument, "output %d out of range: the node has %d outputs", int(output), c.NumOutputs)
		}
		if sample < 0 || int64(sample) >= int64(c.Samples) {
			return engine.Errorf(engine.StatusInvalidArgument, "sample %d out of range: the batch has %d samples", int64(sample), c.Samples)
		}
		if t.device.device_type != C.kDLCPU && t.device.device_type != C.kDLCUDAHost {
			return engine.Errorf(engine.StatusInvalidArgument, "output %d sample %d: device type %d; godali's CPU python_function takes host memory (kDLCPU)", int(output), int64(sample), int(t.device.device_type))
		}
		dt, err := dtypeFromDL(t.dtype)
		if err != nil {
			return err
		}
		nd := int(t.ndim)
		if nd < 0 || nd > maxFeedDims {
			return engine.Errorf(engine.StatusInvalidArgument, "output %d sample %d: ndim %d out of range [0, %d] (at most %d dimensions per sample, %d with the batch's: numpy's limit)", int(output), int64(sample), nd, maxFeedDims, maxFeedDims, engine.MaxNDim)
		}
		var dims, strides []int64
		if nd > 0 {
			if t.shape == nil {
				return errNull("t->shape")
			}
			dims = unsafe.Slice((*int64)(unsafe.Pointer(t.shape)), nd)
			if t.strides != nil {
				strides = unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), nd)
			}
		}
		n, shape, err := sampleBytes(dt, dims)
		if err != nil {
			return err
		}
		if n > 0 && t.data == nil {
			return errNull("t->data")
		}
		dst, err := c.Output(int(output), int(sample), dt, shape)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		src := unsafe.Add(t.data, uintptr(t.byte_offset))
		return copyStrided(dst, src, shape, strides, dt.Size())
	})
}

//export godali_host_call_fail
func godali_host_call_fail(id C.uint64_t, msg *C.char, n C.size_t) C.int {
	return guard(func() error {
		if msg == nil {
			return errNull("msg")
		}
		hc, err := hostFns.call(id)
		if err != nil {
			return err
		}
		var s string
		if n == 0 {
			s = C.GoString(msg)
		} else {
			s = C.GoStringN(msg, C.int(min(n, 1<<20)))
		}
		hostFns.mu.Lock()
		hc.failMsg = s
		hostFns.mu.Unlock()
		return nil
	})
}

// copyStrided copies a host tensor with element strides (nil: compact) into dst, compact
// row-major.
func copyStrided(dst []byte, src unsafe.Pointer, shape []int, strides []int64, elem int) error {
	compact := true
	if strides != nil {
		step := int64(1)
		for d := len(shape) - 1; d >= 0; d-- {
			if strides[d] < 0 {
				return engine.Errorf(engine.StatusInvalidArgument, "negative stride %d in dimension %d; give a compact copy", strides[d], d)
			}
			if shape[d] > 1 && strides[d] != step {
				compact = false
			}
			step *= int64(shape[d])
		}
	}
	if compact {
		copy(dst, unsafe.Slice((*byte)(src), len(dst)))
		return nil
	}
	idx := make([]int, len(shape))
	last := len(shape) - 1
	inner := shape[last]
	innerStride := uintptr(strides[last]) * uintptr(elem)
	for off := 0; off < len(dst); off += inner * elem {
		base := uintptr(0)
		for d := 0; d < last; d++ {
			base += uintptr(idx[d]) * uintptr(strides[d]) * uintptr(elem)
		}
		for j := 0; j < inner; j++ {
			copy(dst[off+j*elem:off+(j+1)*elem], unsafe.Slice((*byte)(unsafe.Add(src, base+uintptr(j)*innerStride)), elem))
		}
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}
