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
	"unsafe"

	"github.com/godali/godali/engine"
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

type pipeline struct {
	eng   *engine.Pipeline
	names []*C.char // output names, freed on destroy
}

func lookup(h C.godali_pipeline_t) (*pipeline, error) {
	if h == 0 {
		return nil, engine.Errorf(engine.StatusInvalidHandle, "null pipeline handle")
	}
	pipelines.Lock()
	defer pipelines.Unlock()
	p, ok := pipelines.m[uint64(h)]
	if !ok {
		return nil, engine.Errorf(engine.StatusInvalidHandle, "pipeline handle %d is not valid (destroyed, or never created)", uint64(h))
	}
	return p, nil
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
	if err == nil {
		C.godali_clear_error()
		return 0
	}
	setError(err.Error())
	return C.int(engine.StatusOf(err))
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
			b, err = json.Marshal(map[string]any{"version": version, "flavour": flavour, "operators": engine.Schemas()})
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

//export godali_pipeline_create
func godali_pipeline_create(desc *C.char, n C.size_t, out *C.godali_pipeline_t) C.int {
	return guard(func() error {
		if desc == nil {
			return errNull("json")
		}
		if out == nil {
			return errNull("out")
		}
		var b []byte
		if n == 0 {
			b = []byte(C.GoString(desc))
		} else {
			b = C.GoBytes(unsafe.Pointer(desc), C.int(n))
		}
		eng, err := engine.NewPipeline(b)
		if err != nil {
			return err
		}
		p := &pipeline{eng: eng}
		for _, name := range eng.OutputNames() {
			p.names = append(p.names, C.CString(name))
		}
		pipelines.Lock()
		pipelines.next++
		h := pipelines.next
		pipelines.m[h] = p
		pipelines.Unlock()
		*out = C.godali_pipeline_t(h)
		return nil
	})
}

func withPipeline(h C.godali_pipeline_t, fn func(p *pipeline) error) C.int {
	return guard(func() error {
		p, err := lookup(h)
		if err != nil {
			return err
		}
		return fn(p)
	})
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

//export godali_pipeline_reset
func godali_pipeline_reset(h C.godali_pipeline_t) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.eng.Reset() })
}

//export godali_pipeline_destroy
func godali_pipeline_destroy(h C.godali_pipeline_t) C.int {
	return guard(func() error {
		p, err := lookup(h)
		if err != nil {
			return err
		}
		pipelines.Lock()
		delete(pipelines.m, uint64(h))
		pipelines.Unlock()
		p.eng.Close()
		for _, s := range p.names {
			C.free(unsafe.Pointer(s))
		}
		return nil
	})
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
		out.batch_size = C.int64_t(b.Size())
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

//export godali_pipeline_restore
func godali_pipeline_restore(h C.godali_pipeline_t, doc *C.char, n C.size_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if doc == nil {
			return errNull("checkpoint")
		}
		var b []byte
		if n == 0 {
			b = []byte(C.GoString(doc))
		} else {
			b = C.GoBytes(unsafe.Pointer(doc), C.int(n))
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
