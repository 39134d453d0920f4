package engine

import "fmt"

// DType is an element type of a tensor. The values follow DLPack's type codes so that
// the C layer can describe tensors without a table.
type DType uint8

// Element types godali produces.
const (
	DTypeInvalid DType = iota
	UInt8
	Int8
	Int32
	Int64
	Float16
	Float32
	Float64
	Bool
	// Added for arithmetic (DALI's type promotions need every integer width); appended
	// so that the values above keep their meaning.
	UInt16
	Int16
	UInt32
	UInt64
)

var dtypeNames = map[DType]string{
	UInt8: "UINT8", Int8: "INT8", Int32: "INT32", Int64: "INT64",
	Float16: "FLOAT16", Float32: "FLOAT", Float64: "FLOAT64", Bool: "BOOL",
	UInt16: "UINT16", Int16: "INT16", UInt32: "UINT32", UInt64: "UINT64",
}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	switch d {
	case UInt8, Int8, Bool:
		return 1
	case Float16, UInt16, Int16:
		return 2
	case Int32, Float32, UInt32:
		return 4
	case Int64, Float64, UInt64:
		return 8
	}
	return 0
}

// DLPack returns the DLPack type code (kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBool=6) and
// the width in bits.
// DTypeFromDLPack is the type of a DLPack (code, bits) with one lane; ok=false for one
// godali does not have.
func DTypeFromDLPack(code, bits uint8) (DType, bool) {
	for d := range dtypeNames {
		if c, b := d.DLPack(); c == code && b == bits {
			return d, true
		}
	}
	return DTypeInvalid, false
}

func (d DType) DLPack() (code uint8, bits uint8) {
	switch d {
	case UInt8:
		return 1, 8
	case Int8:
		return 0, 8
	case Int32:
		return 0, 32
	case Int64:
		return 0, 64
	case Float16:
		return 2, 16
	case Float32:
		return 2, 32
	case Float64:
		return 2, 64
	case Bool:
		return 6, 8
	case UInt16:
		return 1, 16
	case Int16:
		return 0, 16
	case UInt32:
		return 1, 32
	case UInt64:
		return 1, 64
	}
	return 0, 0
}

// ParseDType accepts DALI's names ("FLOAT", "FLOAT16", "UINT8", ...), with or without a
// "types." or "DALIDataType." prefix.
func ParseDType(s string) (DType, error) {
	for _, p := range []string{"types.", "DALIDataType."} {
		if len(s) > len(p) && s[:len(p)] == p {
			s = s[len(p):]
		}
	}
	switch s {
	case "FLOAT32":
		return Float32, nil
	case "HALF":
		return Float16, nil
	}
	for d, n := range dtypeNames {
		if n == s {
			return d, nil
		}
	}
	return DTypeInvalid, fmt.Errorf("unknown dtype %q; valid: FLOAT, FLOAT16, FLOAT64, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, BOOL", s)
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float16 || d == Float32 || d == Float64 }

// IsSigned reports whether d is a signed integer type.
func (d DType) IsSigned() bool { return d == Int8 || d == Int16 || d == Int32 || d == Int64 }

// IsUnsigned reports whether d is an unsigned integer type (BOOL included, as DALI's
// type promotions treat it: an unsigned integer of one bit).
func (d DType) IsUnsigned() bool {
	return d == UInt8 || d == UInt16 || d == UInt32 || d == UInt64 || d == Bool
}

// Bits is the width DALI's type promotions use: 1 for BOOL, else the size in bits.
func (d DType) Bits() int {
	if d == Bool {
		return 1
	}
	return 8 * d.Size()
}
