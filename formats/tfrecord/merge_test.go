package tfrecord

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// exampleOf encodes an Example with one feature "x" whose values are given as frags
// Feature messages (protobuf merges them: their lists append): the first holds a
// bytes_list of values[0], values[frags], ..., the second values[1], ..., and so on.
func exampleOf(values [][]byte, frags int) []byte {
	parts := make([][]byte, frags)
	for i, v := range values {
		var list []byte
		list = protowire.AppendTag(list, 1, protowire.BytesType)
		list = protowire.AppendBytes(list, v)
		var feat []byte
		feat = protowire.AppendTag(feat, 1, protowire.BytesType) // bytes_list
		feat = protowire.AppendBytes(feat, list)
		parts[i%frags] = append(parts[i%frags], feat...)
	}
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "x")
	for _, p := range parts {
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, p)
	}
	var feats []byte
	feats = protowire.AppendTag(feats, 1, protowire.BytesType)
	feats = protowire.AppendBytes(feats, entry)
	var ex []byte
	ex = protowire.AppendTag(ex, 1, protowire.BytesType)
	return protowire.AppendBytes(ex, feats)
}

func allocsOf(t *testing.T, b []byte) (Example, uint64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ex, err := ParseExample(b)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	return ex, m1.TotalAlloc - m0.TotalAlloc
}

// A value split into many fragments (one Feature message per value, which protobuf
// merges) parses to the same Example as the merged one, with allocations of the same
// order: merging used to copy the merged bytes at every fragment, quadratic in the
// value's size (800 KB took 20 s).
func TestParseExampleFragmentsLinear(t *testing.T) {
	for _, n := range []int{12500, 100000} { // ~100 KB and ~800 KB of values
		values := make([][]byte, n)
		for i := range values {
			values[i] = []byte(fmt.Sprintf("v%06d", i))
		}
		merged, mergedAlloc := allocsOf(t, exampleOf(values, 1))
		frag, fragAlloc := allocsOf(t, exampleOf(values, n))
		if !reflect.DeepEqual(merged, frag) || len(frag["x"].Bytes) != n {
			t.Fatalf("%d fragments: %d values, want the merged Example's %d", n, len(frag["x"].Bytes), len(merged["x"].Bytes))
		}
		t.Logf("%d values: merged %d bytes allocated, one fragment per value %d", n, mergedAlloc, fragAlloc)
		if fragAlloc > 4*mergedAlloc+1<<16 {
			t.Fatalf("%d fragments allocated %d bytes, the merged value %d", n, fragAlloc, mergedAlloc)
		}
	}
}

// packedExample encodes feature "f" as n float_list fragments of 4 packed floats each
// and returns the floats.
func packedExample(n int) ([]byte, []float32) {
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "f")
	want := make([]float32, 0, 4*n)
	for i := 0; i < n; i++ {
		var packed []byte
		for j := 0; j < 4; j++ {
			v := float32(4*i + j)
			want = append(want, v)
			packed = protowire.AppendFixed32(packed, math.Float32bits(v))
		}
		var list []byte
		list = protowire.AppendTag(list, 1, protowire.BytesType)
		list = protowire.AppendBytes(list, packed)
		var feat []byte
		feat = protowire.AppendTag(feat, 2, protowire.BytesType) // float_list
		feat = protowire.AppendBytes(feat, list)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, feat)
	}
	var feats []byte
	feats = protowire.AppendTag(feats, 1, protowire.BytesType)
	feats = protowire.AppendBytes(feats, entry)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, feats), want
}

// Many packed float_list fragments of one feature: the floats grow amortized, so 8
// times the fragments allocate about 8 times the bytes (growing them to the exact size
// at every fragment copied them all each time: 64 times).
func TestParseExamplePackedFragmentsLinear(t *testing.T) {
	var allocs []uint64
	for _, n := range []int{6250, 50000} {
		b, want := packedExample(n)
		ex, alloc := allocsOf(t, b)
		if !reflect.DeepEqual(ex["f"].Floats, want) {
			t.Fatalf("floats differ from the %d written", len(want))
		}
		allocs = append(allocs, alloc)
	}
	t.Logf("6250 and 50000 packed fragments: %d and %d bytes allocated", allocs[0], allocs[1])
	if allocs[1] > 12*allocs[0] {
		t.Fatalf("8 times the fragments allocated %.1f times the bytes", float64(allocs[1])/float64(allocs[0]))
	}
}
