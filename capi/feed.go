package main

/*
#include "bridge.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/godali/godali/engine"
)

// maxFeedDims bounds ndim of a fed sample or a host function's output: a sample of the
// pipeline's, with at most engine.MaxSampleNDim dimensions (GODALI_MAX_SAMPLE_NDIM).
const maxFeedDims = engine.MaxSampleNDim

// The header's constant is the engine's: this fails to compile when they differ.
var _ = [1]struct{}{}[C.GODALI_MAX_SAMPLE_NDIM-maxFeedDims]

// deleterOf wraps the caller's deleter into a release called exactly once. The caller's
// ctx is opaque (Python passes integer keys): it is kept as an integer, never in a Go
// pointer, since the Go runtime throws on small integers it finds in pointer slots.
func deleterOf(d C.godali_deleter_t, ctx unsafe.Pointer) func() {
	if d == nil {
		return nil
	}
	c := C.uintptr_t(uintptr(ctx))
	return func() {
		if !hostExiting.Load() { // an exiting host's memory: nothing to give back
			C.godali_call_deleter(d, c)
		}
	}
}

func dtypeFromDL(t C.DLDataType) (engine.DType, error) {
	if t.lanes == 1 {
		if d, ok := engine.DTypeFromDLPack(uint8(t.code), uint8(t.bits)); ok {
			return d, nil
		}
	}
	return engine.DTypeInvalid, engine.Errorf(engine.StatusInvalidArgument, "dtype {code %d, bits %d, lanes %d} is not one godali takes (bool, uint8/16/32/64, int8/16/32/64, float16, float32, float64; one lane)", int(t.code), int(t.bits), int(t.lanes))
}

// sampleBytes is the size of a sample of shape dims, checked (negative sizes, overflow).
func sampleBytes(d engine.DType, dims []int64) (int, []int, error) {
	shape := make([]int, len(dims))
	for i, v := range dims {
		if v < 0 || v > math.MaxInt32*int64(math.MaxInt32) {
			return 0, nil, engine.Errorf(engine.StatusInvalidArgument, "shape %v has a negative or too large size", dims)
		}
		shape[i] = int(v)
	}
	n, ok := engine.SampleBytes(d, shape)
	if !ok {
		return 0, nil, engine.Errorf(engine.StatusInvalidArgument, "shape %v is too large", dims)
	}
	return n, shape, nil
}

type feedArgs struct {
	h       C.godali_pipeline_t
	name    *C.char
	dtype   C.DLDataType
	ndim    C.int
	layout  *C.char
	flags   C.uint32_t
	deleter C.godali_deleter_t
	ctx     unsafe.Pointer
}

// feed checks the common arguments, builds the samples with fill and queues them. The
// deleter runs exactly once whatever happens (also for an invalid handle).
func (a feedArgs) feed(fill func(d engine.DType, ndim int, f *engine.Feed) error) C.int {
	release := deleterOf(a.deleter, a.ctx)
	f := &engine.Feed{Release: release}
	queued := false
	defer func() {
		if !queued && release != nil {
			release()
		}
	}()
	return guard(func() error {
		if a.name == nil {
			return errNull("name")
		}
		if a.flags&^C.GODALI_FEED_COPY != 0 {
			return engine.Errorf(engine.StatusInvalidArgument, "flags %#x: unknown bits (valid: GODALI_FEED_COPY)", uint32(a.flags))
		}
		if a.ndim < 0 || a.ndim > maxFeedDims {
			return engine.Errorf(engine.StatusInvalidArgument, "ndim %d: expected 0 to %d (at most %d dimensions per sample, %d with the batch's: numpy's limit)", int(a.ndim), maxFeedDims, maxFeedDims, engine.MaxNDim)
		}
		d, err := dtypeFromDL(a.dtype)
		if err != nil {
			return err
		}
		f.DType = d
		if a.layout != nil {
			f.Layout = C.GoString(a.layout)
		}
		f.Copy = a.flags&C.GODALI_FEED_COPY != 0
		if err := fill(d, int(a.ndim), f); err != nil {
			return err
		}
		name := C.GoString(a.name)
		return usePipeline(uint64(a.h), func(p *pipeline) error {
			queued = true // from here on the engine owns the release, on success and error
			return p.eng.FeedInput(name, f)
		})
	})
}

//export godali_pipeline_feed_input
func godali_pipeline_feed_input(h C.godali_pipeline_t, name *C.char, data unsafe.Pointer, dtype C.DLDataType,
	ndim C.int, shape *C.int64_t, layout *C.char, flags C.uint32_t, deleter C.godali_deleter_t, ctx unsafe.Pointer) C.int {
	a := feedArgs{h: h, name: name, dtype: dtype, ndim: ndim, layout: layout, flags: flags, deleter: deleter, ctx: ctx}
	return a.feed(func(d engine.DType, ndim int, f *engine.Feed) error {
		if shape == nil {
			return errNull("shape")
		}
		dims := unsafe.Slice((*int64)(unsafe.Pointer(shape)), ndim+1)
		n := dims[0]
		if n < 0 || n > engine.MaxBatchSize {
			return engine.Errorf(engine.StatusInvalidArgument, "shape[0] (samples) is %d: expected 0 to %d", n, engine.MaxBatchSize)
		}
		per, sshape, err := sampleBytes(d, dims[1:])
		if err != nil {
			return err
		}
		if data == nil && per > 0 && n > 0 {
			return errNull("data")
		}
		for i := int64(0); i < n; i++ {
			var b []byte
			if per > 0 {
				b = unsafe.Slice((*byte)(unsafe.Add(data, int(i)*per)), per)
			}
			f.Samples = append(f.Samples, engine.FeedSample{Data: b, Shape: sshape})
		}
		return nil
	})
}

//export godali_pipeline_feed_input_ragged
func godali_pipeline_feed_input_ragged(h C.godali_pipeline_t, name *C.char, numSamples C.int64_t, data *unsafe.Pointer,
	dtype C.DLDataType, ndim C.int, shapes *C.int64_t, layout *C.char, flags C.uint32_t, deleter C.godali_deleter_t, ctx unsafe.Pointer) C.int {
	a := feedArgs{h: h, name: name, dtype: dtype, ndim: ndim, layout: layout, flags: flags, deleter: deleter, ctx: ctx}
	return a.feed(func(d engine.DType, ndim int, f *engine.Feed) error {
		n := int64(numSamples)
		if n < 0 || n > engine.MaxBatchSize {
			return engine.Errorf(engine.StatusInvalidArgument, "num_samples is %d: expected 0 to %d", n, engine.MaxBatchSize)
		}
		if n == 0 {
			return nil
		}
		if data == nil {
			return errNull("data")
		}
		if shapes == nil && ndim > 0 {
			return errNull("shapes")
		}
		ptrs := unsafe.Slice(data, n)
		var all []int64
		if ndim > 0 {
			all = unsafe.Slice((*int64)(unsafe.Pointer(shapes)), int(n)*ndim)
		}
		for i := 0; i < int(n); i++ {
			per, sshape, err := sampleBytes(d, all[i*ndim:(i+1)*ndim])
			if err != nil {
				return engine.Errorf(engine.StatusInvalidArgument, "sample %d: %v", i, err)
			}
			var b []byte
			if per > 0 {
				if ptrs[i] == nil {
					return engine.Errorf(engine.StatusInvalidArgument, "data[%d] is NULL for a sample of %d bytes", i, per)
				}
				b = unsafe.Slice((*byte)(ptrs[i]), per)
			}
			f.Samples = append(f.Samples, engine.FeedSample{Data: b, Shape: sshape})
		}
		return nil
	})
}

//export godali_pipeline_feed_end_of_epoch
func godali_pipeline_feed_end_of_epoch(h C.godali_pipeline_t, name *C.char) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if name == nil {
			return errNull("name")
		}
		return p.eng.FeedEndOfEpoch(C.GoString(name))
	})
}

//export godali_pipeline_feed_drop
func godali_pipeline_feed_drop(h C.godali_pipeline_t, name *C.char, dropped *C.int64_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if name == nil {
			return errNull("name")
		}
		n, err := p.eng.DropFeeds(C.GoString(name))
		if err == nil && dropped != nil {
			*dropped = C.int64_t(n)
		}
		return err
	})
}

//export godali_pipeline_feed_queued
func godali_pipeline_feed_queued(h C.godali_pipeline_t, name *C.char, out *C.int64_t) C.int {
	return withPipeline(h, func(p *pipeline) error {
		if name == nil {
			return errNull("name")
		}
		if out == nil {
			return errNull("out")
		}
		n, err := p.eng.QueuedFeeds(C.GoString(name))
		if err == nil {
			*out = C.int64_t(n)
		}
		return err
	})
}
