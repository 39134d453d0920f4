package caffe

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/godali/godali/formats"
)

// Datum is caffe.Datum. Data aliases the parsed bytes.
type Datum struct {
	Channels, Height, Width int32
	Data                    []byte
	HasData                 bool
	Label                   int32
	HasLabel                bool
	FloatData               []float32
	Encoded                 bool
	HasEncoded              bool
}

// IsEncoded follows DALI: data is an encoded image unless the encoded field is present
// and false.
func (d *Datum) IsEncoded() bool { return !d.HasEncoded || d.Encoded }

// ParseDatum parses a serialized caffe.Datum:
//
//	int32 channels = 1; int32 height = 2; int32 width = 3; bytes data = 4;
//	int32 label = 5; repeated float float_data = 6; bool encoded = 7;
func ParseDatum(b []byte) (Datum, error) {
	var d Datum
	err := walk(b, "caffe Datum", func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch num {
		case 1, 2, 3, 5, 7:
			if typ != protowire.VarintType {
				return wrongType("caffe Datum", num, typ)
			}
			switch num {
			case 1:
				d.Channels = int32(x)
			case 2:
				d.Height = int32(x)
			case 3:
				d.Width = int32(x)
			case 5:
				d.Label, d.HasLabel = int32(x), true
			case 7:
				d.Encoded, d.HasEncoded = x != 0, true
			}
		case 4:
			if typ != protowire.BytesType {
				return wrongType("caffe Datum", num, typ)
			}
			d.Data, d.HasData = v, true
		case 6:
			var err error
			if d.FloatData, err = appendFloats(d.FloatData, typ, v, x, "caffe Datum float_data"); err != nil {
				return err
			}
		}
		return nil
	})
	return d, err
}

// Caffe2 TensorProto data types.
const (
	Undefined = 0
	Float     = 1
	Int32     = 2
	Byte      = 3
	String    = 4
	Bool      = 5
	UInt8     = 6
	Int8      = 7
	UInt16    = 8
	Int16     = 9
	Int64     = 10
	Float16   = 12
	Double    = 13
)

// TensorProto is caffe2.TensorProto (the fields DALI reads). Byte slices alias the
// parsed bytes.
type TensorProto struct {
	Dims       []int64
	DataType   int32 // default Float
	FloatData  []float32
	Int32Data  []int32
	ByteData   []byte
	StringData [][]byte
	DoubleData []float64
	Int64Data  []int64
	Name       string
}

// ParseTensorProtos parses a serialized caffe2.TensorProtos (repeated TensorProto
// protos = 1):
//
//	repeated int64 dims = 1; DataType data_type = 2 [default FLOAT];
//	repeated float float_data = 3; repeated int32 int32_data = 4; bytes byte_data = 5;
//	repeated bytes string_data = 6; string name = 7; repeated double double_data = 9;
//	repeated int64 int64_data = 10;
func ParseTensorProtos(b []byte) ([]TensorProto, error) {
	var out []TensorProto
	err := walk(b, "caffe2 TensorProtos", func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		if typ != protowire.BytesType {
			return wrongType("caffe2 TensorProtos", num, typ)
		}
		t, err := ParseTensorProto(v)
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// ParseTensorProto parses one serialized caffe2.TensorProto.
func ParseTensorProto(b []byte) (TensorProto, error) {
	t := TensorProto{DataType: Float}
	const what = "caffe2 TensorProto"
	err := walk(b, what, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		var err error
		switch num {
		case 1:
			t.Dims, err = appendVarints(t.Dims, typ, v, x, what+" dims", func(u uint64) int64 { return int64(u) })
		case 2:
			if typ != protowire.VarintType {
				return wrongType(what, num, typ)
			}
			t.DataType = int32(x)
		case 3:
			t.FloatData, err = appendFloats(t.FloatData, typ, v, x, what+" float_data")
		case 4:
			t.Int32Data, err = appendVarints(t.Int32Data, typ, v, x, what+" int32_data", func(u uint64) int32 { return int32(u) })
		case 5:
			if typ != protowire.BytesType {
				return wrongType(what, num, typ)
			}
			t.ByteData = v
		case 6:
			if typ != protowire.BytesType {
				return wrongType(what, num, typ)
			}
			t.StringData = append(t.StringData, v)
		case 7:
			if typ != protowire.BytesType {
				return wrongType(what, num, typ)
			}
			t.Name = string(v)
		case 9:
			t.DoubleData, err = appendDoubles(t.DoubleData, typ, v, x, what+" double_data")
		case 10:
			t.Int64Data, err = appendVarints(t.Int64Data, typ, v, x, what+" int64_data", func(u uint64) int64 { return int64(u) })
		}
		return err
	})
	return t, err
}

// walk calls fn for every field of the message b: the bytes of a length-delimited
// field in v, the value of a varint or fixed field in x.
func walk(b []byte, what string, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return formats.Malformedf("%s: bad field tag at byte %d: %v", what, off, protowire.ParseError(n))
		}
		off += n
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b[off:])
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b[off:])
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b[off:])
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b[off:])
		default: // groups: skipped whole
			n = protowire.ConsumeFieldValue(num, typ, b[off:])
		}
		if n < 0 {
			return formats.Malformedf("%s: field %d at byte %d: %v", what, num, off, protowire.ParseError(n))
		}
		off += n
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

func wrongType(what string, num protowire.Number, typ protowire.Type) error {
	return formats.Malformedf("%s: field %d has wire type %d, not the one its type needs", what, num, typ)
}

// appendFloats reads a repeated float field: one fixed32 value, or a packed run.
func appendFloats(dst []float32, typ protowire.Type, v []byte, x uint64, what string) ([]float32, error) {
	switch typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(x))), nil
	case protowire.BytesType:
		if len(v)%4 != 0 {
			return nil, formats.Malformedf("%s: packed run of %d bytes is not a whole number of floats", what, len(v))
		}
		for len(v) > 0 {
			u, _ := protowire.ConsumeFixed32(v)
			dst = append(dst, math.Float32frombits(u))
			v = v[4:]
		}
		return dst, nil
	}
	return nil, formats.Malformedf("%s: wire type %d, want fixed32 or packed", what, typ)
}

func appendDoubles(dst []float64, typ protowire.Type, v []byte, x uint64, what string) ([]float64, error) {
	switch typ {
	case protowire.Fixed64Type:
		return append(dst, math.Float64frombits(x)), nil
	case protowire.BytesType:
		if len(v)%8 != 0 {
			return nil, formats.Malformedf("%s: packed run of %d bytes is not a whole number of doubles", what, len(v))
		}
		for len(v) > 0 {
			u, _ := protowire.ConsumeFixed64(v)
			dst = append(dst, math.Float64frombits(u))
			v = v[8:]
		}
		return dst, nil
	}
	return nil, formats.Malformedf("%s: wire type %d, want fixed64 or packed", what, typ)
}

// appendVarints reads a repeated integer field: one varint, or a packed run of them.
func appendVarints[T any](dst []T, typ protowire.Type, v []byte, x uint64, what string, conv func(uint64) T) ([]T, error) {
	switch typ {
	case protowire.VarintType:
		return append(dst, conv(x)), nil
	case protowire.BytesType:
		for len(v) > 0 {
			u, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return nil, formats.Malformedf("%s: packed run: %v", what, protowire.ParseError(n))
			}
			dst = append(dst, conv(u))
			v = v[n:]
		}
		return dst, nil
	}
	return nil, formats.Malformedf("%s: wire type %d, want varint or packed", what, typ)
}
