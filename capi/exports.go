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

// exports maps the context of every DLPack tensor handed out to the lease it holds. The
// deleter (bridge.c) calls godaliReleaseExport from whatever thread the consumer frees
// the tensor on, also after the pipeline is destroyed.
var exports = struct {
	sync.Mutex
	next uint64
	m    map[uint64]*engine.Lease
}{m: map[uint64]*engine.Lease{}}

func register(l *engine.Lease) uint64 {
	exports.Lock()
	exports.next++
	id := exports.next
	exports.m[id] = l
	exports.Unlock()
	l.Pool().Exported(1)
	return id
}

//export godaliReleaseExport
func godaliReleaseExport(ctx C.uint64_t) {
	exports.Lock()
	l, ok := exports.m[uint64(ctx)]
	delete(exports.m, uint64(ctx))
	exports.Unlock()
	if ok {
		l.Pool().Exported(-1)
		l.Release()
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

func (p *pipeline) export(index C.int, sample int64, out **C.DLManagedTensor) error {
	if out == nil {
		return errNull("out")
	}
	v, err := p.view(index, sample)
	if err != nil {
		return err
	}
	id := register(v.Lease)
	code, bits := v.DType.DLPack()
	t := C.godali_new_tensor(v.Ptr, C.int(len(v.Shape)), shapePtr(v.Shape), C.uint8_t(code), C.uint8_t(bits), C.kDLCPU, 0, C.uint64_t(id))
	if t == nil {
		godaliReleaseExport(C.uint64_t(id))
		return engine.Errorf(engine.StatusInternal, "out of memory for a tensor descriptor")
	}
	*out = t
	return nil
}

//export godali_pipeline_output
func godali_pipeline_output(h C.godali_pipeline_t, index C.int, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error { return p.export(index, -1, out) })
}

//export godali_pipeline_output_sample
func godali_pipeline_output_sample(h C.godali_pipeline_t, index C.int, sample C.int64_t, out **C.DLManagedTensor) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if sample < 0 {
			return engine.Errorf(engine.StatusInvalidArgument, "sample index %d must be >= 0", int64(sample))
		}
		return p.export(index, int64(sample), out)
	})
}

//export godali_pipeline_output_versioned
func godali_pipeline_output_versioned(h C.godali_pipeline_t, index C.int, out **C.DLManagedTensorVersioned) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if out == nil {
			return errNull("out")
		}
		v, err := p.view(index, -1)
		if err != nil {
			return err
		}
		id := register(v.Lease)
		code, bits := v.DType.DLPack()
		t := C.godali_new_tensor_versioned(v.Ptr, C.int(len(v.Shape)), shapePtr(v.Shape), C.uint8_t(code), C.uint8_t(bits), C.kDLCPU, 0, C.uint64_t(id))
		if t == nil {
			godaliReleaseExport(C.uint64_t(id))
			return engine.Errorf(engine.StatusInternal, "out of memory for a tensor descriptor")
		}
		*out = t
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
	case C.kDLCUDA:
		if !engine.CUDAFlavour {
			return engine.ErrNoCUDA
		}
		return nil
	}
	return engine.Errorf(engine.StatusInvalidArgument, "device_type %d: expected kDLCPU (1) or kDLCUDA (2)", int(dt))
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
		if deviceType == C.kDLCUDA {
			s, err := p.eng.DevicePoolStats()
			if err != nil {
				return err
			}
			fillStats(out, s)
			return nil
		}
		fillStats(out, p.eng.Pool().Stats())
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
		if deviceType == C.kDLCUDA {
			fillStats(out, engine.GlobalDeviceStats())
			return nil
		}
		fillStats(out, engine.GlobalHostStats())
		return nil
	})
}
