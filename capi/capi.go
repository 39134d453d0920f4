// Command capi is the C ABI of godali (include/godali.h), built with
// -buildmode=c-shared into libgodali.so. It is a thin layer: handles, status codes,
// per-thread error messages and DLPack export over package engine.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/source"
)

const version = "0.1.0"

func main() {}

// pipelines maps handles to pipelines. Handles are never reused, so a destroyed handle
// is always recognised.
var pipelines = struct {
	sync.Mutex
	next uint64
	m    map[uint64]*pipeline
}{m: map[uint64]*pipeline{}}

// pipeline is one handle's state. mu serialises every exported call on the handle, so
// that threads sharing a pipeline take turns instead of racing over its current batch;
// destroy takes it too, so it waits for the calls in flight, and sets destroyed, which
// the calls that were already waiting for mu see.
type pipeline struct {
	mu        sync.Mutex
	destroyed bool
	eng       *engine.Pipeline
	names     []*C.char // output names, freed on destroy
}

func errHandle(h uint64) error {
	if h == 0 {
		return engine.Errorf(engine.StatusInvalidHandle, "null pipeline handle")
	}
	return engine.Errorf(engine.StatusInvalidHandle, "pipeline handle %d is not valid (destroyed, or never created)", h)
}

// addPipeline gives eng a new handle.
func addPipeline(eng *engine.Pipeline) uint64 {
	p := &pipeline{eng: eng}
	for _, name := range eng.OutputNames() {
		p.names = append(p.names, C.CString(name))
	}
	pipelines.Lock()
	defer pipelines.Unlock()
	pipelines.next++
	h := pipelines.next
	pipelines.m[h] = p
	return h
}

// usePipeline runs fn with handle h's pipeline locked. A handle destroyed before or
// while this call waited for the lock is GODALI_ERROR_INVALID_HANDLE.
func usePipeline(h uint64, fn func(p *pipeline) error) error {
	pipelines.Lock()
	p, ok := pipelines.m[h]
	pipelines.Unlock()
	if !ok {
		return errHandle(h)
	}
	if node, inside := insideHostFunction(p.eng); inside {
		return errReentrant(node) // before the lock, which a waiting caller may hold
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return errHandle(h)
	}
	return fn(p)
}

// destroyPipeline removes handle h once the calls in flight on it have returned, then
// stops its pipeline and frees what the handle held.
func destroyPipeline(h uint64) error {
	return usePipeline(h, func(p *pipeline) error {
		pipelines.Lock()
		delete(pipelines.m, h)
		pipelines.Unlock()
		p.destroyed = true
		p.eng.Close()
		for _, s := range p.names {
			C.free(unsafe.Pointer(s))
		}
		p.names = nil
		return nil
	})
}

// guard runs fn, turns its error or panic into a status and the thread's last error.
func guard(fn func() error) (status C.int) {
	defer func() {
		if r := recover(); r != nil {
			setError(fmt.Sprintf("godali internal error: %v\n%s", r, debug.Stack()))
			status = C.int(engine.StatusInternal)
		}
	}()
	err := fn()
	st := engine.StatusOf(err)
	if st >= engine.StatusOK {
		// Success and GODALI_END_OF_EPOCH are not failures: godali_last_error is "".
		C.godali_clear_error()
		return C.int(st)
	}
	// Every message the host sees: no URL password, signature or token in it, whatever
	// layer wrote it.
	setError(source.Redact(err.Error()))
	return C.int(st)
}

func setError(msg string) {
	if msg == "" {
		C.godali_clear_error()
		return
	}
	C.godali_set_error((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

func errNull(name string) error {
	return engine.Errorf(engine.StatusInvalidArgument, "argument %s must not be NULL", name)
}

//export godali_version
func godali_version(major, minor, patch *C.int) C.int {
	return guard(func() error {
		if major != nil {
			*major = C.GODALI_VERSION_MAJOR
		}
		if minor != nil {
			*minor = C.GODALI_VERSION_MINOR
		}
		if patch != nil {
			*patch = C.GODALI_VERSION_PATCH
		}
		return nil
	})
}

var flavourName = func() *C.char {
	if engine.CUDAFlavour {
		return C.CString("cuda")
	}
	return C.CString("cpu")
}()

//export godali_flavour
func godali_flavour(out **C.char) C.int {
	return guard(func() error {
		if out == nil {
			return errNull("out")
		}
		*out = flavourName
		return nil
	})
}

var schemasOnce sync.Once
var schemasJSON *C.char

//export godali_operator_schemas
func godali_operator_schemas(out **C.char) C.int {
	return guard(func() error {
		if out == nil {
			return errNull("out_json")
		}
		var err error
		schemasOnce.Do(func() {
			flavour := "cpu"
			if engine.CUDAFlavour {
				flavour = "cuda"
			}
			var b []byte
			b, err = json.Marshal(map[string]any{"version": version, "flavour": flavour, "operators": engine.Schemas(), "aliases": engine.Aliases()})
			if err == nil {
				schemasJSON = C.CString(string(b)) // static: lives until unload
			}
		})
		if err != nil {
			return err
		}
		*out = schemasJSON
		return nil
	})
}

//export godali_check_node
func godali_check_node(desc *C.char, n C.size_t) C.int {
	return guard(func() error {
		if desc == nil {
			return errNull("json")
		}
		b, err := documentBytes("json", desc, n)
		if err != nil {
			return err
		}
		var node engine.NodeSpec
		if err := json.Unmarshal(b, &node); err != nil {
			return engine.Errorf(engine.StatusInvalidArgument, "node: not a JSON object of a pipeline's \"ops\": %v", err)
		}
		return engine.CheckNode(node)
	})
}

//export godali_pipeline_create
func godali_pipeline_create(desc *C.char, n C.size_t, out *C.godali_pipeline_t) C.int {
	return guard(func() error {
		if desc == nil {
			return errNull("json")
		}
		if out == nil {
			return errNull("out")
		}
		b, err := documentBytes("json", desc, n)
		if err != nil {
			return err
		}
		syncEnviron() // the variables the engine reads, as the host has them now
		eng, err := engine.NewPipeline(b)
		if err != nil {
			return err
		}
		*out = C.godali_pipeline_t(addPipeline(eng))
		return nil
	})
}

// maxDocumentBytes bounds the length of a pipeline description or checkpoint passed in:
// a larger size_t is a caller's bug (an uninitialised or negative length), not a document.
const maxDocumentBytes = 1 << 30

// documentBytes copies the n bytes at ptr (n 0: a NUL-terminated string), taking the
// whole size_t: a length is never truncated to a C int.
func documentBytes(name string, ptr *C.char, n C.size_t) ([]byte, error) {
	if n == 0 {
		return []byte(C.GoString(ptr)), nil
	}
	if uint64(n) > maxDocumentBytes {
		return nil, engine.Errorf(engine.StatusInvalidArgument, "%s length %d: expected at most %d bytes (or 0 for a NUL-terminated string)", name, uint64(n), maxDocumentBytes)
	}
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(ptr)), int(n))...), nil
}

func withPipeline(h C.godali_pipeline_t, fn func(p *pipeline) error) C.int {
	return guard(func() error { return usePipeline(uint64(h), fn) })
}

//export godali_pipeline_build
func godali_pipeline_build(h C.godali_pipeline_t) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.eng.Build() })
}

//export godali_pipeline_run
func godali_pipeline_run(h C.godali_pipeline_t) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.eng.Run() })
}

//export godali_pipeline_next
func godali_pipeline_next(h C.godali_pipeline_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		_, err := p.eng.Next()
		return err
	})
}

//export godali_pipeline_wait
func godali_pipeline_wait(h C.godali_pipeline_t, timeoutMs C.int64_t, ready *C.int) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if ready == nil {
			return errNull("ready")
		}
		if timeoutMs < 0 || timeoutMs > maxWaitMs {
			return engine.Errorf(engine.StatusInvalidArgument, "timeout_ms %d: expected 0 to %d", int64(timeoutMs), maxWaitMs)
		}
		ok, err := p.eng.WaitReady(time.Duration(timeoutMs) * time.Millisecond)
		*ready = 0
		if ok {
			*ready = 1
		}
		return err
	})
}

// maxWaitMs bounds godali_pipeline_wait's timeout: one minute; a host polls it.
const maxWaitMs = 60000

// interrupter is what godali_pipeline_interrupt asks of the engine: that its operators'
// blocking I/O returns now.
type interrupter interface{ Interrupt() }

//export godali_pipeline_interrupt
func godali_pipeline_interrupt(h C.godali_pipeline_t) C.int {
	return guard(func() error {
		// No per-handle lock: the call to interrupt may be the one holding it.
		pipelines.Lock()
		p, ok := pipelines.m[uint64(h)]
		pipelines.Unlock()
		if !ok {
			return errHandle(uint64(h))
		}
		if it, ok := any(p.eng).(interrupter); ok {
			it.Interrupt()
		}
		return nil
	})
}

//export godali_pipeline_reset
func godali_pipeline_reset(h C.godali_pipeline_t) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.eng.Reset() })
}

//export godali_pipeline_destroy
func godali_pipeline_destroy(h C.godali_pipeline_t) C.int {
	return guard(func() error { return destroyPipeline(uint64(h)) })
}

//export godali_live_pipelines
func godali_live_pipelines(out *C.int64_t) C.int {
	return guard(func() error {
		if out == nil {
			return errNull("out")
		}
		pipelines.Lock()
		*out = C.int64_t(len(pipelines.m))
		pipelines.Unlock()
		return nil
	})
}

//export godali_pipeline_num_outputs
func godali_pipeline_num_outputs(h C.godali_pipeline_t, out *C.int) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		*out = C.int(len(p.names))
		return nil
	})
}

func (p *pipeline) checkIndex(i C.int) error {
	if i < 0 || int(i) >= len(p.names) {
		return engine.Errorf(engine.StatusInvalidArgument, "output index %d out of range: the pipeline has %d outputs", int(i), len(p.names))
	}
	return nil
}

//export godali_pipeline_output_name
func godali_pipeline_output_name(h C.godali_pipeline_t, index C.int, out **C.char) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		if err := p.checkIndex(index); err != nil {
			return err
		}
		*out = p.names[index]
		return nil
	})
}

func (p *pipeline) current() (*engine.Batch, error) {
	b := p.eng.Current()
	if b == nil {
		return nil, engine.Errorf(engine.StatusState, "no current batch: call godali_pipeline_next first (after the end of an epoch, reset)")
	}
	return b, nil
}

//export godali_pipeline_batch_info
func godali_pipeline_batch_info(h C.godali_pipeline_t, out *C.godali_batch_info_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		b, err := p.current()
		if err != nil {
			return err
		}
		*out = C.godali_batch_info_t{}
		out.batch_size = C.int64_t(b.Exposed())
		out.valid = C.int64_t(b.Valid)
		out.epoch = C.int64_t(b.Epoch)
		out.iteration = C.int64_t(b.Iteration)
		if b.Last {
			out.last_in_epoch = 1
		}
		out.skipped = C.int64_t(b.Skipped)
		return nil
	})
}

//export godali_pipeline_skipped
func godali_pipeline_skipped(h C.godali_pipeline_t, out **C.char, n *C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out_json")
		}
		b, err := p.current()
		if err != nil {
			return err
		}
		skips := b.Skips
		if skips == nil {
			skips = []engine.Skip{}
		}
		doc, err := json.Marshal(skips)
		if err != nil {
			return err
		}
		*out = C.CString(string(doc)) // NUL-terminated; the caller frees it with godali_free
		if n != nil {
			*n = C.size_t(len(doc))
		}
		return nil
	})
}

//export godali_pipeline_set_profiling
func godali_pipeline_set_profiling(h C.godali_pipeline_t, on C.int) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.eng.SetProfiling(on != 0) })
}

//export godali_pipeline_profile
func godali_pipeline_profile(h C.godali_pipeline_t, out **C.char, n *C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out_json")
		}
		doc, err := json.Marshal(p.eng.Profile())
		if err != nil {
			return err
		}
		*out = C.CString(string(doc)) // NUL-terminated; the caller frees it with godali_free
		if n != nil {
			*n = C.size_t(len(doc))
		}
		return nil
	})
}

//export godali_pipeline_output_info
func godali_pipeline_output_info(h C.godali_pipeline_t, index C.int, out *C.godali_output_info_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		if err := p.checkIndex(index); err != nil {
			return err
		}
		b, err := p.current()
		if err != nil {
			return err
		}
		o := b.Output(int(index))
		*out = C.godali_output_info_t{}
		if o.Uniform() {
			out.uniform = 1
		}
		out.ndim = C.int32_t(len(o.SampleShape(0)))
		out.device_type = C.kDLCPU
		if o.OnGPU {
			out.device_type = C.kDLCUDA
			out.device_id = C.int32_t(o.DeviceID)
		}
		code, bits := o.Meta.DType.DLPack()
		out.dtype.code = C.uint8_t(code)
		out.dtype.bits = C.uint8_t(bits)
		out.dtype.lanes = 1
		out.num_samples = C.int64_t(o.NumSamples())
		lay := o.Layout()
		for i := 0; i < len(lay) && i < C.GODALI_MAX_LAYOUT-1; i++ { // the graph bounds it
			out.layout[i] = C.char(lay[i])
		}
		return nil
	})
}

//export godali_pipeline_checkpoint
func godali_pipeline_checkpoint(h C.godali_pipeline_t, out **C.char, n *C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		doc, err := p.eng.Checkpoint()
		if err != nil {
			return err
		}
		*out = C.CString(string(doc)) // NUL-terminated; the caller frees it with godali_free
		if n != nil {
			*n = C.size_t(len(doc))
		}
		return nil
	})
}

//export godali_pipeline_tuning
func godali_pipeline_tuning(h C.godali_pipeline_t, out **C.char, n *C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		doc := p.eng.TuningJSON()
		*out = C.CString(string(doc)) // NUL-terminated; the caller frees it with godali_free
		if n != nil {
			*n = C.size_t(len(doc))
		}
		return nil
	})
}

//export godali_pipeline_memory_plan
func godali_pipeline_memory_plan(h C.godali_pipeline_t, out **C.char, n *C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		doc := p.eng.MemoryPlanJSON(time.Minute) // the header scans end first
		*out = C.CString(string(doc))            // the caller frees it with godali_free
		if n != nil {
			*n = C.size_t(len(doc))
		}
		return nil
	})
}

//export godali_pipeline_restore
func godali_pipeline_restore(h C.godali_pipeline_t, doc *C.char, n C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if doc == nil {
			return errNull("checkpoint")
		}
		b, err := documentBytes("checkpoint", doc, n)
		if err != nil {
			return err
		}
		return p.eng.Restore(b)
	})
}

//export godali_free
func godali_free(ptr unsafe.Pointer) C.int {
	return guard(func() error {
		C.free(ptr)
		return nil
	})
}
