package tfrecord

import (
	"errors"
	"reflect"
	"testing"

	"github.com/godali/godali/formats"
)

func mustSpec(t *testing.T, f func() (FeatureSpec, error)) FeatureSpec {
	t.Helper()
	s, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFeatureSpecs(t *testing.T) {
	ex := Example{
		"label": {Kind: KindInt64, Int64s: []int64{1, 2, 3, 4, 5, 6}},
		"box":   {Kind: KindFloat, Floats: []float32{1, 2, 3, 4, 5, 6, 7, 8}},
		"img":   {Kind: KindBytes, Bytes: [][]byte{[]byte("jpeg")}},
		"two":   {Kind: KindBytes, Bytes: [][]byte{[]byte("a"), []byte("b")}},
		"none":  {},
	}
	cases := []struct {
		name string
		spec FeatureSpec
		err  error
		feat string
		want Tensor
		bad  bool
	}{
		{name: "fixed int", feat: "label", want: Tensor{DType: Int64, Shape: []int64{2, 3}, Int64s: []int64{1, 2, 3, 4, 5, 6}}},
		{name: "fixed int wrong count", feat: "label", bad: true},
		{name: "fixed missing", feat: "absent", want: Tensor{DType: Float32, Shape: []int64{3}, Floats: []float32{-1, -1, -1}}},
		{name: "fixed empty feature", feat: "none", want: Tensor{DType: Int64, Shape: []int64{1}, Int64s: []int64{7}}},
		{name: "fixed wrong kind", feat: "box", bad: true},
		{name: "fixed string", feat: "img", want: Tensor{DType: String, Shape: []int64{4}, Bytes: []byte("jpeg")}},
		{name: "fixed string missing", feat: "absent", want: Tensor{DType: String, Shape: []int64{3}, Bytes: []byte("def")}},
		{name: "two strings", feat: "two", bad: true},
		{name: "varlen float", feat: "box", want: Tensor{DType: Float32, Shape: []int64{8}, Floats: []float32{1, 2, 3, 4, 5, 6, 7, 8}}},
		{name: "varlen partial", feat: "box", want: Tensor{DType: Float32, Shape: []int64{2, 4}, Floats: []float32{1, 2, 3, 4, 5, 6, 7, 8}}},
		{name: "varlen partial mismatch", feat: "box", bad: true},
		{name: "varlen missing", feat: "absent", want: Tensor{DType: Int64, Shape: []int64{0}, Int64s: []int64{}}},
	}
	specs := map[string]func() (FeatureSpec, error){
		"fixed int":               func() (FeatureSpec, error) { return FixedLenFeature([]int64{2, 3}, Int64, 0) },
		"fixed int wrong count":   func() (FeatureSpec, error) { return FixedLenFeature([]int64{4}, Int64, 0) },
		"fixed missing":           func() (FeatureSpec, error) { return FixedLenFeature([]int64{3}, Float32, -1.0) },
		"fixed empty feature":     func() (FeatureSpec, error) { return FixedLenFeature(nil, Int64, 7) },
		"fixed wrong kind":        func() (FeatureSpec, error) { return FixedLenFeature([]int64{8}, Int64, 0) },
		"fixed string":            func() (FeatureSpec, error) { return FixedLenFeature(nil, String, "") },
		"fixed string missing":    func() (FeatureSpec, error) { return FixedLenFeature([]int64{1}, String, "def") },
		"two strings":             func() (FeatureSpec, error) { return VarLenFeature(String, "") },
		"varlen float":            func() (FeatureSpec, error) { return VarLenFeature(Float32, 0.0) },
		"varlen partial":          func() (FeatureSpec, error) { return VarLenFeature(Float32, 0.0, 4) },
		"varlen partial mismatch": func() (FeatureSpec, error) { return VarLenFeature(Float32, 0.0, 3) },
		"varlen missing":          func() (FeatureSpec, error) { return VarLenFeature(Int64, 0) },
	}
	for _, c := range cases {
		s := mustSpec(t, specs[c.name])
		got, err := s.Extract(ex, c.feat)
		if c.bad {
			if !errors.Is(err, formats.ErrMalformed) {
				t.Errorf("%s: err = %v, want ErrMalformed", c.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestFeatureSpecArguments(t *testing.T) {
	for name, f := range map[string]func() (FeatureSpec, error){
		"string shape":      func() (FeatureSpec, error) { return FixedLenFeature([]int64{2}, String, "") },
		"negative shape":    func() (FeatureSpec, error) { return FixedLenFeature([]int64{-1}, Int64, 0) },
		"huge shape":        func() (FeatureSpec, error) { return FixedLenFeature([]int64{1 << 20, 1 << 20}, Int64, 0) },
		"int default float": func() (FeatureSpec, error) { return FixedLenFeature(nil, Int64, 1.5) },
		"float default str": func() (FeatureSpec, error) { return VarLenFeature(Float32, "x") },
		"bad dtype":         func() (FeatureSpec, error) { return VarLenFeature(DType(9), 0) },
		"zero partial":      func() (FeatureSpec, error) { return VarLenFeature(Int64, 0, 0) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
