//go:build cuda

package cuda

import (
	"bytes"
	"strings"
	"testing"

	_ "github.com/godali/godali/internal/cuda/cudatest" // skips this binary without a GPU
)

func openDevice(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func TestDeviceBasics(t *testing.T) {
	d := openDevice(t)
	major, minor := d.ComputeCapability()
	t.Logf("device 0: %s, sm_%d%d, %d MiB, driver %d", d.Name(), major, minor, d.TotalMemory()>>20, DriverVersion())
	if d.Name() == "" || major < 3 || d.TotalMemory() <= 0 {
		t.Fatalf("implausible device: %q sm_%d%d %d bytes", d.Name(), major, minor, d.TotalMemory())
	}
	d2, err := Open(0)
	if err != nil || d2 != d {
		t.Fatalf("second Open: %p, %v; want the same device", d2, err)
	}
	d2.Close()
	if _, err := Open(1 << 20); err == nil || !strings.Contains(err.Error(), "device_id") {
		t.Fatalf("Open of a missing ordinal: %v", err)
	}
}

func TestNVMLInfo(t *testing.T) {
	d := openDevice(t)
	info, err := d.Info()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVML: %+v", info)
	if info.Name == "" || info.TotalMemory == 0 || info.FreeMemory > info.TotalMemory {
		t.Fatalf("implausible NVML info %+v", info)
	}
	// cuDeviceTotalMem and NVML count slightly differently (reserved memory); within 5%.
	if diff := float64(info.TotalMemory) - float64(d.TotalMemory()); diff > 0.05*float64(info.TotalMemory) || -diff > 0.05*float64(info.TotalMemory) {
		t.Errorf("NVML total %d vs CUDA %d", info.TotalMemory, d.TotalMemory())
	}
	if len(info.CPUAffinity) == 0 {
		t.Error("no CPU near the GPU according to NVML")
	}
}

func TestCopiesAndEvents(t *testing.T) {
	d := openDevice(t)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	ev, err := d.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyEvent(ev)
	pinned, err := d.NewPinnedPool()
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	dev, err := d.NewDevicePool()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()

	const n = 3 << 20
	src, _ := pinned.Get(n, s)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i * 7)
	}
	dst, _ := dev.Get(n, s)
	back, _ := pinned.Get(n, s)
	if err := d.CopyHtoDAsync(dst.Ptr(), src.HostPtr(), n, s); err != nil {
		t.Fatal(err)
	}
	if err := d.MemsetAsync(dst.Ptr(), 0xAB, 16, s); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoHAsync(back.HostPtr(), dst.Ptr(), n, s); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(ev, s); err != nil {
		t.Fatal(err)
	}
	if err := d.EventSync(ev); err != nil {
		t.Fatal(err)
	}
	if done, err := d.EventDone(ev); !done || err != nil {
		t.Fatalf("EventDone after EventSync: %v, %v", done, err)
	}
	want := append(bytes.Repeat([]byte{0xAB}, 16), src.Bytes()[16:]...)
	if !bytes.Equal(back.Bytes(), want) {
		t.Fatal("round trip through device memory changed the data")
	}
	// Synchronous copies from Go memory.
	goBuf := []byte("godali")
	if err := d.CopyHtoD(dst.Ptr(), goBuf); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(goBuf))
	if err := d.CopyDtoH(out, dst.Ptr()); err != nil || string(out) != "godali" {
		t.Fatalf("sync copy: %q, %v", out, err)
	}
	for _, b := range []*Block{src, dst, back} {
		if err := b.ReleaseAfter(s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExportFence(t *testing.T) {
	d := openDevice(t)
	ours, _ := d.NewStream()
	theirs, _ := d.NewStream()
	defer d.DestroyStream(ours)
	defer d.DestroyStream(theirs)
	ev, _ := d.NewEvent()
	defer d.DestroyEvent(ev)
	for _, v := range []int64{-1, 1, 2, int64(theirs)} {
		if err := d.ExportFence(ours, ev, v); err != nil {
			t.Fatalf("stream %d: %v", v, err)
		}
	}
	if err := d.ExportFence(ours, ev, 0); err == nil {
		t.Fatal("DLPack stream 0 accepted")
	}
	if err := d.Synchronize(theirs); err != nil {
		t.Fatal(err)
	}
}

// TestDevicePoolNoAllocationsAfterWarmup runs a decode-like loop: per batch, ragged
// per-sample blocks and one dense output block, released after work on the stream.
func TestDevicePoolNoAllocationsAfterWarmup(t *testing.T) {
	d := openDevice(t)
	s, _ := d.NewStream()
	defer d.DestroyStream(s)
	p, _ := d.NewDevicePool()
	const batch = 32
	r := DecodeReservation(500, 375, 3, batch, 2)
	if err := r.Apply(p); err != nil {
		t.Fatal(err)
	}
	warm := p.Stats().Allocations
	held := make([]*Block, 0, batch+1)
	for it := 0; it < 50; it++ {
		held = held[:0]
		for i := 0; i < batch; i++ {
			w, h := 200+(it*31+i*17)%300, 150+(it*13+i*7)%225
			b, err := p.Get(w*h*3, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.MemsetAsync(b.Ptr(), byte(i), b.Size(), s); err != nil {
				t.Fatal(err)
			}
			held = append(held, b)
		}
		out, err := p.Get(batch*3*224*224*4, s)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, out)
		for _, b := range held {
			if err := b.ReleaseAfter(s); err != nil {
				t.Fatal(err)
			}
		}
		if it == 1 {
			warm = p.Stats().Allocations
		}
	}
	if err := d.Synchronize(s); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	t.Logf("device pool after 50 batches: %+v", st)
	if st.Allocations != warm {
		t.Fatalf("%d allocations after warm-up (%d during)", st.Allocations-warm, warm)
	}
	p.Close()
	if st := p.Stats(); st.ReservedBytes != 0 || st.Releases != st.Allocations {
		t.Fatalf("after Close: %+v", st)
	}
}
