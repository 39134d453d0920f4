package math

import (
	"encoding/binary"
	gomath "math"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/internal/float16"
)

// Element access: each input is widened once into the computation's domain (float64,
// int64 or uint64); results are narrowed into the output type.

func loadFloat(dst []float64, t *engine.Tensor, compute engine.DType) {
	b := t.Data
	switch t.DType {
	case engine.Float32:
		for i := range dst {
			dst[i] = float64(gomath.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case engine.Float64:
		for i := range dst {
			dst[i] = gomath.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case engine.UInt8, engine.Bool:
		for i := range dst {
			dst[i] = float64(b[i])
		}
	default:
		sz := t.DType.Size()
		for i := range dst {
			dst[i] = engine.ReadScalar(b[i*sz:], t.DType)
		}
	}
	if !t.DType.IsFloat() || t.DType.Size() > compute.Size() {
		for i, v := range dst {
			dst[i] = roundTo(v, compute)
		}
	}
}

func loadInt(dst []int64, t *engine.Tensor) {
	b := t.Data
	switch t.DType {
	case engine.UInt8, engine.Bool:
		for i := range dst {
			dst[i] = int64(b[i])
		}
	case engine.Int8:
		for i := range dst {
			dst[i] = int64(int8(b[i]))
		}
	case engine.Int16:
		for i := range dst {
			dst[i] = int64(int16(binary.LittleEndian.Uint16(b[2*i:])))
		}
	case engine.UInt16:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case engine.Int32:
		for i := range dst {
			dst[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case engine.UInt32:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case engine.Int64, engine.UInt64:
		for i := range dst {
			dst[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
}

func loadUint(dst []uint64, t *engine.Tensor) {
	b := t.Data
	switch t.DType {
	case engine.UInt8, engine.Bool:
		for i := range dst {
			dst[i] = uint64(b[i])
		}
	case engine.UInt16:
		for i := range dst {
			dst[i] = uint64(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case engine.UInt32:
		for i := range dst {
			dst[i] = uint64(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case engine.UInt64:
		for i := range dst {
			dst[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	}
}

func storeFloat(t *engine.Tensor, src []float64) {
	b := t.Data
	switch t.DType {
	case engine.Float32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(b[4*i:], gomath.Float32bits(float32(v)))
		}
	case engine.Float64:
		for i, v := range src {
			binary.LittleEndian.PutUint64(b[8*i:], gomath.Float64bits(v))
		}
	case engine.Float16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(b[2*i:], float16.FromFloat32(float32(v)))
		}
	case engine.Bool:
		for i, v := range src {
			b[i] = 0
			if v != 0 {
				b[i] = 1
			}
		}
	}
}

// storeInts narrows integer results into t's element type (int64 and uint64 results
// share the two's-complement truncation).
func storeInts[T int64 | uint64](t *engine.Tensor, src []T) {
	b := t.Data
	switch t.DType {
	case engine.Int8, engine.UInt8:
		for i, v := range src {
			b[i] = byte(v)
		}
	case engine.Bool:
		for i, v := range src {
			b[i] = 0
			if v != 0 {
				b[i] = 1
			}
		}
	case engine.Int16, engine.UInt16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
		}
	case engine.Int32, engine.UInt32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		}
	case engine.Int64, engine.UInt64:
		for i, v := range src {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
	}
}
