package caffe

import (
	"testing"

	"github.com/godali/godali/internal/pyref"
)

// FuzzParse feeds arbitrary bytes to both parsers: errors are fine, panics are not, and
// whatever they return aliases the input without reaching past it.
func FuzzParse(f *testing.F) {
	for _, m := range refMessagesOrNil(f) {
		f.Add(m.B64)
	}
	f.Add([]byte{0x22, 2, 0xff, 0xd8, 0x28, 3, 0x38, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := ParseDatum(b); err == nil && len(d.Data) > len(b) {
			t.Fatalf("data of %d bytes from a %d-byte message", len(d.Data), len(b))
		}
		if ts, err := ParseTensorProtos(b); err == nil {
			for _, tp := range ts {
				if len(tp.ByteData) > len(b) {
					t.Fatalf("byte_data past the message")
				}
			}
		}
	})
}

func refMessagesOrNil(f *testing.F) []refMessage {
	if pyrefMissing() {
		return nil
	}
	return refMessages(f)
}

func pyrefMissing() bool {
	_, err := pyref.Output([]string{"google.protobuf"}, "pass")
	return err != nil
}
