package tfrecord

import (
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/godali/godali/formats"
)

// Kind is which list a Feature holds (the Feature message's oneof).
type Kind int

// Feature kinds.
const (
	KindNone  Kind = iota // a Feature with no list set
	KindBytes             // bytes_list
	KindFloat             // float_list
	KindInt64             // int64_list
)

func (k Kind) String() string {
	return [...]string{"empty", "bytes_list", "float_list", "int64_list"}[k]
}

// Feature is one tf.train.Feature. Bytes values alias the parsed buffer.
type Feature struct {
	Kind   Kind
	Bytes  [][]byte
	Floats []float32
	Int64s []int64
}

// Example is a parsed tf.train.Example: its features map.
type Example map[string]Feature

// Field numbers of tensorflow/core/example/{example,feature}.proto.
const (
	fieldExampleFeatures = 1 // Example.features
	fieldFeaturesMap     = 1 // Features.feature (map<string, Feature>)
	fieldMapKey          = 1
	fieldMapValue        = 2
	fieldListValue       = 1 // BytesList/FloatList/Int64List.value
)

// ParseExample decodes a serialized tf.train.Example. It follows protobuf's rules:
// unknown fields are skipped, a repeated sub-message is merged, a later map entry
// for a key replaces an earlier one, and a later oneof member replaces another.
// Repeated float and int64 values are read packed or not. The returned byte
// slices point into b.
func ParseExample(b []byte) (Example, error) {
	ex := Example{}
	err := eachField(b, "Example", func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != fieldExampleFeatures || typ != protowire.BytesType {
			return nil
		}
		return eachField(v, "Features", func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if num != fieldFeaturesMap || typ != protowire.BytesType {
				return nil
			}
			var key string
			var val [][]byte // the value's fragments: protobuf merges a repeated message field
			if err := eachField(v, "Features.feature entry", func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if typ != protowire.BytesType {
					return nil
				}
				switch num {
				case fieldMapKey:
					key = string(v)
				case fieldMapValue:
					// Parsing the fragments in turn is parsing their concatenation (a
					// message's fields never straddle two of them), without copying.
					val = append(val, v)
				}
				return nil
			}); err != nil {
				return err
			}
			f, err := parseFeature(val, key)
			if err != nil {
				return err
			}
			ex[key] = f
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ex, nil
}

// parseFeature decodes a Feature whose encoding is the concatenation of frags.
func parseFeature(frags [][]byte, name string) (Feature, error) {
	var f Feature
	for _, b := range frags {
		if err := f.merge(b, name); err != nil {
			return Feature{}, err
		}
	}
	return f, nil
}

// merge decodes b into f as protobuf merges a message into another: lists append, and
// a oneof member other than f's replaces it.
func (f *Feature) merge(b []byte, name string) error {
	return eachField(b, "Feature "+name, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType || num < 1 || num > 3 {
			return nil
		}
		k := Kind(num) // field numbers 1, 2, 3 are bytes_list, float_list, int64_list
		if f.Kind != k {
			*f = Feature{Kind: k}
		}
		return eachField(v, "Feature "+name+" "+k.String(), func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
			if num != fieldListValue {
				return nil
			}
			switch {
			case k == KindBytes && typ == protowire.BytesType:
				f.Bytes = append(f.Bytes, v)
			case k == KindFloat && typ == protowire.Fixed32Type:
				f.Floats = append(f.Floats, math.Float32frombits(uint32(x)))
			case k == KindFloat && typ == protowire.BytesType: // packed
				if len(v)%4 != 0 {
					return formats.Malformedf("tf.train.Example feature %q: packed float_list of %d bytes is not a multiple of 4", name, len(v))
				}
				f.Floats = slices.Grow(f.Floats, len(v)/4) // amortized: packed runs may be many
				for ; len(v) > 0; v = v[4:] {
					u, _ := protowire.ConsumeFixed32(v)
					f.Floats = append(f.Floats, math.Float32frombits(u))
				}
			case k == KindInt64 && typ == protowire.VarintType:
				f.Int64s = append(f.Int64s, int64(x))
			case k == KindInt64 && typ == protowire.BytesType: // packed
				for len(v) > 0 {
					u, n := protowire.ConsumeVarint(v)
					if n < 0 {
						return formats.Malformedf("tf.train.Example feature %q: packed int64_list: %v", name, protowire.ParseError(n))
					}
					f.Int64s = append(f.Int64s, int64(u))
					v = v[n:]
				}
			}
			return nil
		})
	})
}

// eachField calls fn for every field of the message b: its number, wire type, and
// its bytes (length-delimited) or its value (varint, fixed32, fixed64). Groups are
// skipped. Malformed encodings are reported naming what is being parsed.
func eachField(b []byte, what string, fn func(protowire.Number, protowire.Type, []byte, uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return formats.Malformedf("tf.train.Example: %s: %v", what, protowire.ParseError(n))
		}
		b = b[n:]
		var (
			v []byte
			x uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u uint32
			u, n = protowire.ConsumeFixed32(b)
			x = uint64(u)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return formats.Malformedf("tf.train.Example: %s field %d: %v", what, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
