package main

/*
#include "bridge.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/godali/godali/engine"
)

// exports maps the context of every DLPack tensor handed out to the memory it holds: a
// host lease, or a device reference. The deleter (bridge.c) calls godaliReleaseExport from
// whatever thread the consumer frees the tensor on, also after the pipeline is destroyed.
var exports = struct {
	sync.Mutex
	next uint64
	m    map[uint64]export
}{m: map[uint64]export{}}

type export struct {
	lease *engine.Lease
	dev   *engine.DeviceRef
}

func register(v engine.View) uint64 {
	exports.Lock()
	exports.next++
	id := exports.next
	exports.m[id] = export{lease: v.Lease, dev: v.Dev}
	exports.Unlock()
	if v.Dev != nil {
		v.Dev.Exported(1)
	} else {
		v.Lease.Pool().Exported(1)
	}
	return id
}

//export godaliReleaseExport
func godaliReleaseExport(ctx C.uint64_t) {
	exports.Lock()
	e, ok := exports.m[uint64(ctx)]
	delete(exports.m, uint64(ctx))
	exports.Unlock()
	switch {
	case !ok:
	case e.dev != nil:
		e.dev.Exported(-1)
		e.dev.Release() // after the work queued on the consumer's stream
	default:
		e.lease.Pool().Exported(-1)
		e.lease.Release()
	}
}

// How an export of GPU memory is ordered after the work that wrote it.
const (
	fenceHost   = -2 // wait on the host (the calls without a stream argument)
	fenceNone   = -1 // DLPack's -1: the consumer synchronises itself
	fenceLegacy = 1  // DLPack's 1: the legacy default stream
)

// fence orders the consumer after the batch's GPU work: its stream waits on the batch's
// event (stream > 0), or the host waits (fenceHost). Host memory needs nothing.
func fence(v engine.View, stream int64) error {
	if v.Dev == nil {
		return nil
	}
	if stream == fenceHost {
		return v.Dev.Sync()
	}
	return v.Dev.Wait(stream)
}

func deviceOf(v engine.View) (C.int32_t, C.int32_t) {
	if v.Dev != nil {
		return C.kDLCUDA, C.int32_t(v.DeviceID)
	}
	return C.kDLCPU, 0
}

func dataAddr(v engine.View) C.uintptr_t {
	if v.Dev != nil {
		return C.uintptr_t(v.DevPtr)
	}
	return C.uintptr_t(uintptr(v.Ptr))
}

// dropView gives back a view that was not handed out.
func dropView(v engine.View) {
	if v.Dev != nil {
		v.Dev.Release()
	} else {
		v.Lease.Release()
	}
}

// view resolves an output (sample < 0: the whole batch) to exported memory.
func (p *pipeline) view(index C.int, sample int64) (engine.View, error) {
	if err := p.checkIndex(index); err != nil {
		return engine.View{}, err
	}
	b, err := p.current()
	if err != nil {
		return engine.View{}, err
	}
	o := b.Output(int(index))
	if sample < 0 {
		return o.DenseView()
	}
	return o.SampleView(int(sample))
}

func shapePtr(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

func (p *pipeline) export(index C.int, sample, stream int64, out **C.DLManagedTensor) error {
	if out == nil {
		return errNull("out")
	}
	t, err := p.exportTensor(index, sample, stream, false)
	if err != nil {
		return err
	}
	*out = (*C.DLManagedTensor)(t)
	return nil
}

// exportTensor fences output index (sample < 0: the whole batch) for the consumer's
// stream and wraps it in a C-allocated DLManagedTensor, or DLManagedTensorVersioned,
// whose deleter returns the memory.
func (p *pipeline) exportTensor(index C.int, sample, stream int64, versioned bool) (unsafe.Pointer, error) {
	v, err := p.view(index, sample)
	if err != nil {
		return nil, err
	}
	if err := fence(v, stream); err != nil {
		dropView(v)
		return nil, err
	}
	id := register(v)
	code, bits := v.DType.DLPack()
	dt, di := deviceOf(v)
	var t unsafe.Pointer
	if versioned {
		t = unsafe.Pointer(C.godali_new_tensor_versioned(dataAddr(v), C.int(len(v.Shape)), shapePtr(v.Shape), C.uint8_t(code), C.uint8_t(bits), dt, di, C.uint64_t(id)))
	} else {
		t = unsafe.Pointer(C.godali_new_tensor(dataAddr(v), C.int(len(v.Shape)), shapePtr(v.Shape), C.uint8_t(code), C.uint8_t(bits), dt, di, C.uint64_t(id)))
	}
	if t == nil {
		godaliReleaseExport(C.uint64_t(id))
		return nil, engine.Errorf(engine.StatusInternal, "out of memory for a tensor descriptor")
	}
	return t, nil
}

func checkSample(sample C.int64_t) error {
	if sample < 0 {
		return engine.Errorf(engine.StatusInvalidArgument, "sample index %d must be >= 0", int64(sample))
	}
	return nil
}

func checkStream(stream C.int64_t) error {
	if stream == 0 || stream < -1 {
		return engine.Errorf(engine.StatusInvalidArgument, "stream %d: expected -1 (no synchronisation), 1 (legacy default stream), 2 (per-thread default stream) or a CUDA stream handle (DLPack rules; 0 is ambiguous)", int64(stream))
	}
	return nil
}

//export godali_pipeline_output
func godali_pipeline_output(h C.godali_pipeline_t, index C.int, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.export(index, -1, fenceHost, out) })
}

//export godali_pipeline_output_sample
func godali_pipeline_output_sample(h C.godali_pipeline_t, index C.int, sample C.int64_t, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if err := checkSample(sample); err != nil {
			return err
		}
		return p.export(index, int64(sample), fenceHost, out)
	})
}

//export godali_pipeline_output_cuda
func godali_pipeline_output_cuda(h C.godali_pipeline_t, index C.int, stream C.int64_t, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if err := checkStream(stream); err != nil {
			return err
		}
		return p.export(index, -1, int64(stream), out)
	})
}

//export godali_pipeline_output_sample_cuda
func godali_pipeline_output_sample_cuda(h C.godali_pipeline_t, index C.int, sample, stream C.int64_t, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if err := checkSample(sample); err != nil {
			return err
		}
		if err := checkStream(stream); err != nil {
			return err
		}
		return p.export(index, int64(sample), int64(stream), out)
	})
}

//export godali_tensor_stream_wait
func godali_tensor_stream_wait(t *C.DLManagedTensor, stream C.int64_t) C.int {
	return guard(func() error {
		if t == nil {
			return errNull("tensor")
		}
		if err := checkStream(stream); err != nil {
			return err
		}
		ctx := uint64(C.godali_tensor_context(t))
		exports.Lock()
		e, ok := exports.m[ctx]
		exports.Unlock()
		if ctx == 0 || !ok {
			return engine.Errorf(engine.StatusInvalidArgument, "the tensor was not made by godali_pipeline_output*, or its deleter already ran")
		}
		if e.dev == nil {
			return nil // host memory: nothing to order
		}
		return e.dev.Wait(int64(stream))
	})
}

//export godali_pipeline_output_versioned
func godali_pipeline_output_versioned(h C.godali_pipeline_t, index C.int, out **C.DLManagedTensorVersioned) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		t, err := p.exportTensor(index, -1, fenceHost, true)
		if err != nil {
			return err
		}
		*out = (*C.DLManagedTensorVersioned)(t)
		return nil
	})
}

func readerMeta(p *pipeline, name *C.char) (engine.ReaderMeta, error) {
	if name == nil {
		return engine.ReaderMeta{}, errNull("name")
	}
	return p.eng.ReaderMeta(C.GoString(name))
}

//export godali_pipeline_reader_meta
func godali_pipeline_reader_meta(h C.godali_pipeline_t, name *C.char, out *C.godali_reader_meta_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		m, err := readerMeta(p, name)
		if err != nil {
			return err
		}
		*out = C.godali_reader_meta_t{
			epoch_size: C.int64_t(m.EpochSize), epoch_size_padded: C.int64_t(m.EpochSizePadded),
			shard_size: C.int64_t(m.ShardSize), shard_id: C.int32_t(m.ShardID),
			number_of_shards: C.int32_t(m.NumShards),
			pad_last_batch:   boolInt(m.PadLastBatch), stick_to_shard: boolInt(m.StickToShard),
		}
		return nil
	})
}

func boolInt(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

//export godali_pipeline_set_epoch_reader
func godali_pipeline_set_epoch_reader(h C.godali_pipeline_t, name *C.char) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if name == nil {
			return errNull("name")
		}
		return p.eng.SetEpochReader(C.GoString(name))
	})
}

//export godali_pipeline_set_last_batch_policy
func godali_pipeline_set_last_batch_policy(h C.godali_pipeline_t, policy *C.char) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if policy == nil {
			return errNull("policy")
		}
		return p.eng.SetLastBatchPolicy(C.GoString(policy))
	})
}

//export godali_pipeline_epoch_batches
func godali_pipeline_epoch_batches(h C.godali_pipeline_t, out *C.int64_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		n, err := p.eng.EpochBatches()
		if err != nil {
			return err
		}
		*out = C.int64_t(n)
		return nil
	})
}

//export godali_pipeline_epoch_size
func godali_pipeline_epoch_size(h C.godali_pipeline_t, name *C.char, out *C.int64_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		m, err := readerMeta(p, name)
		if err != nil {
			return err
		}
		*out = C.int64_t(m.EpochSize)
		return nil
	})
}

func fillStats(out *C.godali_pool_stats_t, s engine.PoolStats) {
	*out = C.godali_pool_stats_t{
		allocations: C.int64_t(s.Allocations), releases: C.int64_t(s.Releases),
		acquires: C.int64_t(s.Acquires), returns: C.int64_t(s.Returns),
		outstanding: C.int64_t(s.Outstanding), reserved_bytes: C.int64_t(s.ReservedBytes),
		in_use_bytes: C.int64_t(s.InUseBytes), exported: C.int64_t(s.Exported),
	}
}

func checkDevice(dt C.int32_t) error {
	switch dt {
	case C.kDLCPU:
		return nil
	case C.kDLCUDA, C.kDLCUDAHost:
		if !engine.CUDAFlavour {
			return engine.ErrNoCUDA
		}
		return nil
	}
	return engine.Errorf(engine.StatusInvalidArgument, "device_type %d: expected kDLCPU (1), kDLCUDA (2) or kDLCUDAHost (3, the pinned pool)", int(dt))
}

//export godali_pipeline_pool_stats
func godali_pipeline_pool_stats(h C.godali_pipeline_t, deviceType C.int32_t, out *C.godali_pool_stats_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		if err := checkDevice(deviceType); err != nil {
			return err
		}
		var s engine.PoolStats
		var err error
		switch deviceType {
		case C.kDLCUDA:
			s, err = p.eng.DevicePoolStats()
		case C.kDLCUDAHost:
			s, err = p.eng.PinnedPoolStats()
		default:
			s = p.eng.Pool().Stats()
		}
		if err != nil {
			return err
		}
		fillStats(out, s)
		return nil
	})
}

//export godali_memory_stats
func godali_memory_stats(deviceType C.int32_t, out *C.godali_pool_stats_t) C.int {
	return guard(func() error {
		if out == nil {
			return errNull("out")
		}
		if err := checkDevice(deviceType); err != nil {
			return err
		}
		switch deviceType {
		case C.kDLCUDA:
			fillStats(out, engine.GlobalDeviceStats())
		case C.kDLCUDAHost:
			fillStats(out, engine.GlobalPinnedStats())
		default:
			fillStats(out, engine.GlobalHostStats())
		}
		return nil
	})
}
