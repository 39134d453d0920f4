package npydtype

import (
	"fmt"

	"github.com/godali/godali/engine"
	"github.com/godali/godali/formats/npy"
)

type npyKindSize struct {
	kind byte
	size int
}

// npyTypes maps a numpy dtype's kind and element size to godali's element type (bool
// is mapped whatever its size).
var npyTypes = map[npyKindSize]engine.DType{
	{'u', 1}: engine.UInt8, {'u', 2}: engine.UInt16, {'u', 4}: engine.UInt32, {'u', 8}: engine.UInt64,
	{'i', 1}: engine.Int8, {'i', 2}: engine.Int16, {'i', 4}: engine.Int32, {'i', 8}: engine.Int64,
	{'f', 2}: engine.Float16, {'f', 4}: engine.Float32, {'f', 8}: engine.Float64,
}

// Of maps a numpy dtype to godali's element types.
func Of(d npy.DType) (engine.DType, error) {
	if d.Kind == 'b' {
		return engine.Bool, nil
	}
	if t, ok := npyTypes[npyKindSize{d.Kind, d.Size}]; ok {
		return t, nil
	}
	return 0, fmt.Errorf("numpy dtype %s has no godali tensor type (supported: bool, uint8/16/32/64, int8/16/32/64, float16/32/64)", d)
}
