package tfrecord

import (
	"fmt"

	"github.com/godali/godali/formats"
)

// DType is the element type of a feature spec (DALI's tfrec.int64, tfrec.float32,
// tfrec.string).
type DType int

// Feature spec types.
const (
	Int64 DType = iota + 1
	Float32
	String
)

func (d DType) String() string {
	switch d {
	case Int64:
		return "int64"
	case Float32:
		return "float32"
	case String:
		return "string"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

func (d DType) kind() Kind {
	return [...]Kind{Int64: KindInt64, Float32: KindFloat, String: KindBytes}[d]
}

// FeatureSpec says how to turn one feature of an Example into a tensor, as DALI's
// tfrec.FixedLenFeature and tfrec.VarLenFeature do.
type FeatureSpec struct {
	DType  DType
	VarLen bool
	// Shape of a fixed-length feature; empty means one element (shape [1]).
	Shape []int64
	// PartialShape of a variable-length feature: its trailing dimensions, the first
	// one being inferred from the number of values. Empty means a 1-D result.
	PartialShape []int64
	// Default fills a missing fixed-length feature.
	DefaultInt64  int64
	DefaultFloat  float32
	DefaultString []byte
}

// FixedLenFeature is DALI's tfrec.FixedLenFeature(shape, dtype, default_value):
// the feature must hold exactly volume(shape) values (one byte string for String,
// whose shape must have volume 1); a missing one is filled with def, which must be
// an integer for Int64, a number for Float32 and a string or []byte for String.
func FixedLenFeature(shape []int64, dtype DType, def any) (FeatureSpec, error) {
	s := FeatureSpec{DType: dtype, Shape: append([]int64(nil), shape...)}
	vol := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && vol > (1<<62)/d) {
			return FeatureSpec{}, fmt.Errorf("FixedLenFeature: shape %v: extents must be non-negative and the volume must fit in int64", shape)
		}
		vol *= d
	}
	if vol > 1<<31 {
		return FeatureSpec{}, fmt.Errorf("FixedLenFeature: shape %v holds more than 2^31 values", shape)
	}
	if dtype == String && vol != 1 {
		return FeatureSpec{}, fmt.Errorf("FixedLenFeature: a string feature holds one byte string, so shape %v must have volume 1", shape)
	}
	return s, s.setDefault(def)
}

// VarLenFeature is DALI's tfrec.VarLenFeature(dtype, default_value): a 1-D tensor
// of however many values the feature holds; with partialShape, the values form
// [n, partialShape...]. A missing feature gives an empty tensor (def is accepted
// for DALI's signature and type-checked). A String feature must hold one value.
func VarLenFeature(dtype DType, def any, partialShape ...int64) (FeatureSpec, error) {
	s := FeatureSpec{DType: dtype, VarLen: true, PartialShape: append([]int64(nil), partialShape...)}
	for _, d := range partialShape {
		if d <= 0 || d > 1<<31 {
			return FeatureSpec{}, fmt.Errorf("VarLenFeature: partial shape %v: extents must be positive", partialShape)
		}
	}
	if dtype == String && len(partialShape) > 0 {
		return FeatureSpec{}, fmt.Errorf("VarLenFeature: a string feature takes no partial shape")
	}
	return s, s.setDefault(def)
}

func (s *FeatureSpec) setDefault(def any) error {
	bad := func() error {
		return fmt.Errorf("feature spec: default value %v (%T) does not suit dtype %v", def, def, s.DType)
	}
	switch s.DType {
	case Int64:
		switch v := def.(type) {
		case int:
			s.DefaultInt64 = int64(v)
		case int64:
			s.DefaultInt64 = v
		case int32:
			s.DefaultInt64 = int64(v)
		default:
			return bad()
		}
	case Float32:
		switch v := def.(type) {
		case float32:
			s.DefaultFloat = v
		case float64:
			s.DefaultFloat = float32(v)
		case int:
			s.DefaultFloat = float32(v)
		default:
			return bad()
		}
	case String:
		switch v := def.(type) {
		case string:
			s.DefaultString = []byte(v)
		case []byte:
			s.DefaultString = append([]byte(nil), v...)
		default:
			return bad()
		}
	default:
		return fmt.Errorf("feature spec: unknown dtype %v (want int64, float32 or string)", s.DType)
	}
	return nil
}

// Tensor is a feature extracted by a spec. Exactly one of the slices is set, per
// DType; a String tensor is its bytes, of shape [len].
type Tensor struct {
	DType  DType
	Shape  []int64
	Int64s []int64
	Floats []float32
	Bytes  []byte
}

// Extract applies the spec to the feature name of ex. Errors wrap
// formats.ErrMalformed and name the feature and what was expected.
func (s FeatureSpec) Extract(ex Example, name string) (Tensor, error) {
	t := Tensor{DType: s.DType}
	f, ok := ex[name]
	if ok && f.Kind != s.DType.kind() && !(f.Kind == KindNone) {
		return t, formats.Malformedf("feature %q: holds a %v, the spec wants %v", name, f.Kind, s.DType)
	}
	n := 0
	if ok {
		n = [...]int{len(f.Bytes), len(f.Bytes), len(f.Floats), len(f.Int64s)}[s.DType.kind()]
	}
	if s.DType == String {
		switch {
		case n == 1:
			t.Bytes = f.Bytes[0]
		case n == 0 && !s.VarLen:
			t.Bytes = s.DefaultString
		case n == 0:
		default:
			return t, formats.Malformedf("feature %q: %d byte strings, the spec wants one (tensors of strings are not supported)", name, n)
		}
		t.Shape = []int64{int64(len(t.Bytes))}
		return t, nil
	}
	if !s.VarLen {
		shape := s.Shape
		if len(shape) == 0 {
			shape = []int64{1}
		}
		vol := int64(1)
		for _, d := range shape {
			vol *= d
		}
		t.Shape = append([]int64(nil), shape...)
		if n == 0 && vol != 0 {
			// Missing: the default, broadcast. vol is bounded by the spec, not the data.
			switch s.DType {
			case Int64:
				t.Int64s = make([]int64, vol)
				for i := range t.Int64s {
					t.Int64s[i] = s.DefaultInt64
				}
			case Float32:
				t.Floats = make([]float32, vol)
				for i := range t.Floats {
					t.Floats[i] = s.DefaultFloat
				}
			}
			return t, nil
		}
		if int64(n) != vol {
			return t, formats.Malformedf("feature %q: %d values, the fixed-length spec of shape %v wants %d", name, n, shape, vol)
		}
	} else {
		m := int64(1)
		for _, d := range s.PartialShape {
			m *= d
		}
		if int64(n)%m != 0 {
			return t, formats.Malformedf("feature %q: %d values do not fill a whole number of the partial shape %v", name, n, s.PartialShape)
		}
		t.Shape = append([]int64{int64(n) / m}, s.PartialShape...)
	}
	switch s.DType {
	case Int64:
		t.Int64s = f.Int64s
		if t.Int64s == nil {
			t.Int64s = []int64{}
		}
	case Float32:
		t.Floats = f.Floats
		if t.Floats == nil {
			t.Floats = []float32{}
		}
	}
	return t, nil
}
