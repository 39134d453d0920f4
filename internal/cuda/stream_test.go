package cuda

import (
	"reflect"
	"testing"
)

func TestConsumerStream(t *testing.T) {
	for _, c := range []struct {
		v    int64
		s    Stream
		wait bool
		ok   bool
	}{
		{-1, 0, false, true},
		{1, LegacyStream, true, true},
		{2, PerThreadStream, true, true},
		{0x7f0012345678, Stream(0x7f0012345678), true, true},
		{0, 0, false, false},
		{-2, 0, false, false},
	} {
		s, wait, err := ConsumerStream(c.v)
		if (err == nil) != c.ok || s != c.s || wait != c.wait {
			t.Errorf("ConsumerStream(%d) = %v, %v, %v; want %v, %v, ok=%v", c.v, s, wait, err, c.s, c.wait, c.ok)
		}
	}
}

func TestMaskCPUs(t *testing.T) {
	got := maskCPUs([]uint{0b1011, 0, 1 << 63, 1})
	want := []int{0, 1, 3, 191, 192}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("maskCPUs = %v, want %v", got, want)
	}
}

func TestWorkerCPUs(t *testing.T) {
	got := WorkerCPUs(5, []int{7, 3}, []int{0, 1, 2})
	if want := []int{7, 3, 0, 1, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkerCPUs = %v, want %v", got, want)
	}
	got = WorkerCPUs(3, nil, []int{4})
	if want := []int{4, 4, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkerCPUs = %v, want %v", got, want)
	}
	got = WorkerCPUs(2, nil, nil)
	if want := []int{-1, -1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkerCPUs = %v, want %v", got, want)
	}
}

func TestErrors(t *testing.T) {
	e := &Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory", What: "device pool"}
	if e.Error() != "device pool: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" {
		t.Fatal(e.Error())
	}
	if !IsOutOfMemory(e) || IsOutOfMemory(ErrNoCUDA) {
		t.Fatal("IsOutOfMemory")
	}
}
