package caffe

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/godali/godali/formats"
	"github.com/godali/godali/internal/pyref"
)

type refMessage struct {
	Kind   string          `json:"kind"`
	B64    []byte          `json:"b64"`
	Fields json.RawMessage `json:"fields"`
}

func refMessages(t testing.TB) []refMessage {
	script := pyref.ReadFile(t, "testdata/caffe_ref.py")
	out := pyref.Run(t, []string{"google.protobuf"}, string(script), "messages")
	var msgs []refMessage
	if err := json.Unmarshal(out, &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestAgainstProtobuf parses Datum and TensorProtos messages serialized by the protobuf
// package (message classes built at run time from descriptors) and compares every field.
func TestAgainstProtobuf(t *testing.T) {
	msgs := refMessages(t)
	nd, np := 0, 0
	for i, m := range msgs {
		switch m.Kind {
		case "datum":
			nd++
			var f struct {
				Data                    *string
				Label                   *int32
				Channels, Height, Width int32
				Encoded                 *bool
				FloatData               []float64 `json:"float_data"`
			}
			if err := json.Unmarshal(m.Fields, &f); err != nil {
				t.Fatal(err)
			}
			d, err := ParseDatum(m.B64)
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if d.HasData != (f.Data != nil) || d.HasLabel != (f.Label != nil) || d.HasEncoded != (f.Encoded != nil) {
				t.Errorf("message %d: presence data/label/encoded %v %v %v, want %v %v %v", i, d.HasData, d.HasLabel, d.HasEncoded, f.Data != nil, f.Label != nil, f.Encoded != nil)
			}
			if f.Data != nil {
				want, _ := base64.StdEncoding.DecodeString(*f.Data)
				if !bytes.Equal(d.Data, want) {
					t.Errorf("message %d: data differs", i)
				}
			}
			if f.Label != nil && d.Label != *f.Label {
				t.Errorf("message %d: label %d, want %d", i, d.Label, *f.Label)
			}
			if f.Encoded != nil && d.Encoded != *f.Encoded {
				t.Errorf("message %d: encoded %v, want %v", i, d.Encoded, *f.Encoded)
			}
			if d.Channels != f.Channels || d.Height != f.Height || d.Width != f.Width {
				t.Errorf("message %d: CHW %d %d %d, want %d %d %d", i, d.Channels, d.Height, d.Width, f.Channels, f.Height, f.Width)
			}
			if !reflect.DeepEqual(floats32(f.FloatData), d.FloatData) {
				t.Errorf("message %d: float_data %v, want %v", i, d.FloatData, f.FloatData)
			}
		case "protos":
			np++
			var fl []struct {
				DataType   int32 `json:"data_type"`
				Dims       []int64
				StringData [][]byte  `json:"string_data"`
				ByteData   []byte    `json:"byte_data"`
				Int32Data  []int32   `json:"int32_data"`
				FloatData  []float64 `json:"float_data"`
				Int64Data  []int64   `json:"int64_data"`
				DoubleData []float64 `json:"double_data"`
				Name       string
			}
			if err := json.Unmarshal(m.Fields, &fl); err != nil {
				t.Fatal(err)
			}
			ts, err := ParseTensorProtos(m.B64)
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if len(ts) != len(fl) {
				t.Fatalf("message %d: %d protos, want %d", i, len(ts), len(fl))
			}
			for j, f := range fl {
				g := ts[j]
				if g.DataType != f.DataType || !eqInts(g.Dims, f.Dims) || g.Name != f.Name ||
					!reflect.DeepEqual(nonNil(g.StringData), nonNil(f.StringData)) || !bytes.Equal(g.ByteData, f.ByteData) ||
					!eqInts(g.Int32Data, f.Int32Data) || !eqInts(g.Int64Data, f.Int64Data) ||
					!reflect.DeepEqual(floats32(f.FloatData), g.FloatData) || !eqInts(g.DoubleData, f.DoubleData) {
					t.Errorf("message %d proto %d: got %+v, want %+v", i, j, g, f)
				}
			}
		}
	}
	if nd == 0 || np == 0 {
		t.Fatalf("reference produced %d datums and %d TensorProtos", nd, np)
	}
}

func floats32(v []float64) []float32 {
	if len(v) == 0 {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func eqInts[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func nonNil(v [][]byte) [][]byte {
	if v == nil {
		return [][]byte{}
	}
	return v
}

// TestUnpackedAndDefaults: repeated numbers written one by one (not packed) are read
// as packed ones are, data_type defaults to FLOAT, unknown fields are skipped.
func TestUnpackedAndDefaults(t *testing.T) {
	// TensorProto{float_data: 1.5 (unpacked), int32_data: 7, 8 (unpacked), field 99 varint 5}
	b := []byte{
		0x1d, 0, 0, 0xc0, 0x3f, // field 3, fixed32 1.5
		0x20, 7, 0x20, 8, // field 4 varint, twice
		0x98, 0x06, 5, // field 99 varint: unknown
	}
	tp, err := ParseTensorProto(b)
	if err != nil {
		t.Fatal(err)
	}
	if tp.DataType != Float || !reflect.DeepEqual(tp.FloatData, []float32{1.5}) || !reflect.DeepEqual(tp.Int32Data, []int32{7, 8}) {
		t.Errorf("got %+v", tp)
	}
}

// TestMalformed: truncated or mistyped messages are errors wrapping ErrMalformed.
func TestMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"truncated bytes":   {0x22, 10, 1, 2},   // Datum.data announces 10 bytes
		"truncated varint":  {0x28, 0x80},       // Datum.label
		"wrong wire type":   {0x2a, 1, 0},       // Datum.label as bytes
		"bad packed floats": {0x32, 3, 1, 2, 3}, // Datum.float_data packed, 3 bytes
		"field zero":        {0x00, 1},
	} {
		if _, err := ParseDatum(b); !errors.Is(err, formats.ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ParseTensorProtos([]byte{0x0a, 3, 0x10}); !errors.Is(err, formats.ErrMalformed) {
		t.Errorf("truncated nested TensorProto: err %v", err)
	}
}
