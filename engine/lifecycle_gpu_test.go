//go:build cuda

package engine

// Life-cycle tests of the GPU stage: Reset with batches in flight, Close with exports
// held, ragged exports outliving their batch, on_error "skip" with device "mixed",
// checkpoints of mixed pipelines, and the pools after many epochs. They are meant to run
// on the GPU emulator with random stream delays over several seeds (tests/gpuemu).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godali/godali/internal/cuda/cudatest"
)

// lifeJSON decodes (device dec: "cpu" or "mixed"), resizes the shorter side to 70 and
// crops, mirrors and converts to float CHW (device ops: "cpu" or "gpu"). mean 0 and std
// 1 keep the float values in pixel units, so that CompareDecoded's tolerances apply.
func lifeJSON(root, dec, ops string, batch, depth int, extra string) string {
	return fmt.Sprintf(`{"batch_size": %d, "num_threads": 3, "device_id": 0, "seed": 17, "prefetch_queue_depth": %d %s,
	"ops": [
	 {"op": "readers.file", "name": "Reader", "outputs": ["jpegs", "labels"], "args": {"file_root": %q, "random_shuffle": true, "pad_last_batch": true}},
	 {"op": "decoders.image", "name": "decode", "device": %q, "inputs": ["jpegs"], "outputs": ["images"], "args": {"output_type": "RGB"}},
	 {"op": "resize", "name": "resize", "device": %q, "inputs": ["images"], "outputs": ["resized"], "args": {"resize_shorter": 70, "interp_type": "INTERP_LINEAR"}},
	 {"op": "random.coin_flip", "name": "coin", "outputs": ["mirror"], "args": {"probability": 0.5}},
	 {"op": "crop_mirror_normalize", "name": "cmn", "device": %[6]q, "inputs": ["resized"], "arg_inputs": {"mirror": "mirror"}, "outputs": ["out"],
	  "args": {"dtype": "FLOAT", "output_layout": "CHW", "crop": [64, 64], "mean": [0, 0, 0], "std": [1, 1, 1]}}],
	"outputs": ["out", "labels"]}`, batch, depth, extra, root, dec, ops)
}

// batchBytes is every sample of every output of b, concatenated per output (the GPU ones
// fetched to the host).
func batchBytes(t *testing.T, b *Batch) [][]byte {
	t.Helper()
	out := make([][]byte, b.NumOutputs())
	for k := range out {
		for i := 0; i < b.Size(); i++ {
			_, data := sampleBytes(t, b, k, i)
			out[k] = append(out[k], data...)
		}
	}
	return out
}

// epochOf runs Next until the end of the epoch and returns each batch's bytes.
func epochOf(t *testing.T, p *Pipeline) [][][]byte {
	t.Helper()
	var out [][][]byte
	eachBatch(t, p, func(b *Batch) { out = append(out, batchBytes(t, b)) })
	return out
}

// floatsAsPixels rounds float32 pixel values to bytes (for CompareDecoded).
func floatsAsPixels(b []byte) []byte {
	out := make([]byte, len(b)/4)
	for i := range out {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		out[i] = uint8(math.Max(0, math.Min(255, math.Round(float64(x)))))
	}
	return out
}

// sameEpochs compares two epochs bit for bit.
func sameEpochs(t *testing.T, label string, got, want [][][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches, want %d", label, len(got), len(want))
	}
	for i := range want {
		for k := range want[i] {
			if !bytes.Equal(got[i][k], want[i][k]) {
				t.Errorf("%s: batch %d output %d differs at byte %d of %d", label, i, k, firstDiffAt(got[i][k], want[i][k]), len(want[i][k]))
			}
		}
	}
}

// TestGPUResetMidEpochMatchesFresh: Reset while batches are in flight (decoded by workers,
// queued on the GPU stage), then a full epoch: bit for bit what a pipeline that ran the
// first epoch to its end gives in its second, and like the CPU pipeline's.
func TestGPUResetMidEpochMatchesFresh(t *testing.T) {
	root := writeDataset(t, 3, 6) // 18 images, batches of 4: 5 batches
	p := mustPipeline(t, lifeJSON(root, "mixed", "gpu", 4, 3, ""))
	fresh := mustPipeline(t, lifeJSON(root, "mixed", "gpu", 4, 3, ""))
	cpu := mustPipeline(t, lifeJSON(root, "cpu", "cpu", 4, 3, ""))
	for _, q := range []*Pipeline{fresh, cpu} {
		epochOf(t, q)
		if err := q.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	// Epoch 0: one batch taken, the others in flight; a second reset right after a Run.
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	want := epochOf(t, fresh)
	wantCPU := epochOf(t, cpu)
	got := epochOf(t, p)
	sameEpochs(t, "after a mid-epoch reset", got, want)
	for i := range wantCPU {
		cudatest.CompareDecoded(t, fmt.Sprintf("batch %d vs cpu", i), floatsAsPixels(got[i][0]), floatsAsPixels(wantCPU[i][0]))
		if !bytes.Equal(got[i][1], wantCPU[i][1]) {
			t.Errorf("batch %d: labels differ from the CPU pipeline's", i)
		}
	}
	// Again with a second reset before anything of the new epoch was taken, a Run in
	// between: it does nothing (a reset never skips an epoch), so p is at epoch 2 as a
	// pipeline reset once after epoch 1.
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Reset(); err != nil {
		t.Fatal(err)
	}
	sameEpochs(t, "after a reset of a running pipeline", epochOf(t, p), epochOf(t, fresh))
}

// exportDesc uploads decoded images (ragged, gathered or per sample) and resizes them to
// one size on the GPU (dense). The CPU flavour has an identity flip instead of the
// upload and the same operators on the CPU: uint8 results are bit-identical.
func exportDesc(root, device string, depth int) string {
	up := `{"op": "flip", "name": "up", "inputs": ["img"], "outputs": ["x"], "args": {"horizontal": 0, "vertical": 0}}`
	if device == "gpu" {
		up = `{"op": "_to_gpu", "name": "up", "device": "mixed", "inputs": ["img"], "outputs": ["x"]}`
	}
	return fmt.Sprintf(`{"batch_size": 4, "num_threads": 2, "device_id": 0, "seed": 5, "prefetch_queue_depth": %d, "ops": [
	{"op": "readers.file", "name": "R", "outputs": ["b", "l"], "args": {"file_root": %q, "pad_last_batch": true}},
	{"op": "decoders.image", "name": "dec", "inputs": ["b"], "outputs": ["img"], "args": {"output_type": "RGB"}},
	%s,
	{"op": "resize", "name": "rs", "device": %q, "inputs": ["x"], "outputs": ["rs"], "args": {"resize_x": 50, "resize_y": 30}}],
	"outputs": ["rs", "x"]}`, depth, root, up, device)
}

// TestGPUCloseWithExportsHeld: the consumer holds dense and per-sample exports of a
// batch while the pipeline is closed with more batches in flight. The exports must still
// hold the batch's bytes afterwards, and once released the pool has nothing outstanding.
func TestGPUCloseWithExportsHeld(t *testing.T) {
	root := writeDataset(t, 2, 6)
	for _, take := range []int{1, 2} {
		t.Run(fmt.Sprintf("batch%d", take), func(t *testing.T) {
			p, err := NewPipeline([]byte(exportDesc(root, "gpu", 3)))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Build(); err != nil {
				t.Fatal(err)
			}
			cpu := mustPipeline(t, exportDesc(root, "cpu", 3))
			var b, bc *Batch
			for i := 0; i < take; i++ {
				if b, err = p.Next(); err != nil {
					t.Fatal(err)
				}
				if bc, err = cpu.Next(); err != nil {
					t.Fatal(err)
				}
			}
			dense, err := b.Output(0).DenseView()
			if err != nil {
				t.Fatal(err)
			}
			var per []View
			for i := 0; i < b.Size(); i++ {
				v, err := b.Output(1).SampleView(i)
				if err != nil {
					t.Fatal(err)
				}
				per = append(per, v)
			}
			vc, _ := bc.Output(0).DenseView()
			wantDense := hostBytes(vc)
			var wantPer [][]byte
			for i := 0; i < bc.Size(); i++ {
				_, data := sampleBytes(t, bc, 1, i)
				wantPer = append(wantPer, data)
			}
			p.Close()
			if got := fetch(t, dense); !bytes.Equal(got, wantDense) {
				t.Errorf("dense export after Close differs at byte %d of %d", firstDiffAt(got, wantDense), len(got))
			}
			for i, v := range per {
				if got := fetch(t, v); !bytes.Equal(got, wantPer[i]) {
					t.Errorf("sample %d export after Close differs at byte %d of %d", i, firstDiffAt(got, wantPer[i]), len(got))
				}
			}
			st, _ := p.DevicePoolStats()
			pin, _ := p.PinnedPoolStats()
			t.Logf("after Close and release: device %+v, pinned %+v", st, pin)
			if st.Outstanding != 0 || pin.Outstanding != 0 {
				t.Errorf("outstanding blocks after Close: device %d, pinned %d", st.Outstanding, pin.Outstanding)
			}
		})
	}
}

// TestGPURaggedExportsOutliveTheBatch: ragged decoder outputs (decoders.image on
// "mixed", no resize) exported per sample, and the consumer reads them only after the
// next Next released their batch (and its arena went to the following batches).
func TestGPURaggedExportsOutliveTheBatch(t *testing.T) {
	files := decodableCorpus(t) // JPEGs (nvJPEG) and other formats (CPU decode and upload)
	gpu := mustPipeline(t, decodePipeline(files, "decoders.image", "mixed"))
	cpu := mustPipeline(t, decodePipeline(files, "decoders.image", "cpu"))
	var held []View
	var want [][]byte
	var names []string
	check := func() {
		for i, v := range held {
			got := fetch(t, v)
			cudatest.CompareDecoded(t, names[i], got, want[i])
		}
		held, want, names = nil, nil, nil
	}
	for {
		bg, errg := gpu.Next() // releases the batch whose exports are held
		check()
		bc, errc := cpu.Next()
		if errors.Is(errg, ErrEndOfEpoch) {
			if !errors.Is(errc, ErrEndOfEpoch) {
				t.Fatalf("cpu: %v", errc)
			}
			break
		}
		if errg != nil || errc != nil {
			t.Fatalf("mixed %v, cpu %v", errg, errc)
		}
		for i := 0; i < bg.Valid; i++ {
			v, err := bg.Output(0).SampleView(i)
			if err != nil {
				t.Fatal(err)
			}
			_, c := sampleBytes(t, bc, 0, i)
			if len(c) != int(v.DType.Size())*int(numel(v.Shape)) {
				t.Fatalf("%s: mixed shape %v, cpu %v", bc.Sources()[i].Path, v.Shape, bc.Output(0).SampleShape(i))
			}
			held, want, names = append(held, v), append(want, c), append(names, filepath.Base(bc.Sources()[i].Path))
		}
	}
	if st, _ := gpu.DevicePoolStats(); st.Exported != 0 {
		t.Errorf("%d exports alive", st.Exported)
	}
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestGPUSkipCorruptMixed: on_error "skip" with broken files decoded on device "mixed":
// the batches are those of the CPU pipeline (replacements included).
func TestGPUSkipCorruptMixed(t *testing.T) {
	root := writeDataset(t, 2, 6)
	bad := filepath.Join(root, "class00", "broken.JPEG")
	if err := os.WriteFile(bad, []byte("definitely not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(root, "class01", "img000.JPEG"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "class01", "zz_headeronly.JPEG"), good[:200], 0o644); err != nil {
		t.Fatal(err)
	}
	// nvJPEG refuses it and the CPU fallback reports libjpeg's error.
	if err := os.WriteFile(filepath.Join(root, "class01", "zz_truncated.JPEG"), good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	gpu := mustPipeline(t, lifeJSON(root, "mixed", "gpu", 4, 2, `, "on_error": "skip"`))
	cpu := mustPipeline(t, lifeJSON(root, "cpu", "cpu", 4, 2, `, "on_error": "skip"`))
	for epoch := 0; epoch < 2; epoch++ {
		var skippedG, skippedC int64
		for it := 0; ; it++ {
			bg, errg := gpu.Next()
			bc, errc := cpu.Next()
			if errors.Is(errg, ErrEndOfEpoch) || errors.Is(errc, ErrEndOfEpoch) {
				if !errors.Is(errg, ErrEndOfEpoch) || !errors.Is(errc, ErrEndOfEpoch) {
					t.Fatalf("epochs end apart: mixed %v, cpu %v", errg, errc)
				}
				break
			}
			if errg != nil || errc != nil {
				t.Fatalf("epoch %d batch %d: mixed %v, cpu %v", epoch, it, errg, errc)
			}
			skippedG += bg.Skipped
			skippedC += bc.Skipped
			if bg.Skipped != bc.Skipped {
				t.Errorf("epoch %d batch %d: mixed skipped %d (%v), cpu %d (%v)", epoch, it, bg.Skipped, bg.SkippedErrs, bc.Skipped, bc.SkippedErrs)
			}
			g, c := batchBytes(t, bg), batchBytes(t, bc)
			cudatest.CompareDecoded(t, fmt.Sprintf("epoch %d batch %d", epoch, it), floatsAsPixels(g[0]), floatsAsPixels(c[0]))
			if !bytes.Equal(g[1], c[1]) {
				t.Errorf("epoch %d batch %d: labels differ", epoch, it)
			}
		}
		if skippedG != 3 || skippedC != 3 {
			t.Errorf("epoch %d: skipped %d on mixed, %d on cpu, want 3", epoch, skippedG, skippedC)
		}
		if err := gpu.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := cpu.Reset(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUCheckpointRestoreMixed: a mixed pipeline checkpointed mid-epoch, restored into a
// new one: from its first Next on the restored pipeline gives bit for bit what the
// original gives (across the epoch's end and a Reset).
func TestGPUCheckpointRestoreMixed(t *testing.T) {
	root := writeDataset(t, 3, 5) // 15 images, batches of 4
	desc := lifeJSON(root, "mixed", "gpu", 4, 2, `, "enable_checkpointing": true`)
	p := mustPipeline(t, desc)
	for i := 0; i < 2; i++ {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	ck, err := p.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	run := func(q *Pipeline) [][][]byte {
		out := epochOf(t, q)
		if err := q.Reset(); err != nil {
			t.Fatal(err)
		}
		return append(out, epochOf(t, q)...)
	}
	want := run(p)
	q, err := NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	if err := q.Restore(ck); err != nil {
		t.Fatal(err)
	}
	if err := q.Build(); err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 {
		t.Fatalf("%d batches after the checkpoint, want 2 + 4", len(want))
	}
	sameEpochs(t, "restored", run(q), want)
}

// TestGPUResetCyclesDoNotLeak: many Run/Next/Reset cycles, each stopping at a different
// point of the epoch: the device and pinned pools stop growing, and after Close nothing is
// outstanding.
func TestGPUResetCyclesDoNotLeak(t *testing.T) {
	root := writeDataset(t, 2, 7) // 14 images, batches of 4
	// Without shuffling every epoch has the same batches: after the first full one the
	// arenas' estimates (the high-water marks of the batches) no longer grow.
	desc := strings.Replace(lifeJSON(root, "mixed", "gpu", 4, 3, ""), `"random_shuffle": true`, `"random_shuffle": false`, 1)
	p, err := NewPipeline([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cycle := func(n int) {
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			b, err := p.Next()
			if errors.Is(err, ErrEndOfEpoch) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				v, err := b.Output(0).DenseView()
				if err != nil {
					t.Fatal(err)
				}
				if err := v.Dev.Wait(1); err != nil {
					t.Fatal(err)
				}
				v.Dev.Release()
			}
		}
		if err := p.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	cycle(100) // a full epoch
	for i := 0; i < 6; i++ {
		cycle(i % 5)
	}
	dev0, _ := p.DevicePoolStats()
	pin0, _ := p.PinnedPoolStats()
	for i := 0; i < 30; i++ {
		cycle(i % 5)
	}
	dev1, _ := p.DevicePoolStats()
	pin1, _ := p.PinnedPoolStats()
	t.Logf("device pool after warm-up %+v, after 30 more cycles %+v", dev0, dev1)
	t.Logf("pinned pool after warm-up %+v, after 30 more cycles %+v", pin0, pin1)
	if dev1.ReservedBytes > dev0.ReservedBytes || pin1.ReservedBytes > pin0.ReservedBytes {
		t.Errorf("pools grew: device %d -> %d bytes, pinned %d -> %d bytes", dev0.ReservedBytes, dev1.ReservedBytes, pin0.ReservedBytes, pin1.ReservedBytes)
	}
	if dev1.Outstanding > dev0.Outstanding || pin1.Outstanding > pin0.Outstanding {
		t.Errorf("outstanding blocks grew: device %d -> %d, pinned %d -> %d", dev0.Outstanding, dev1.Outstanding, pin0.Outstanding, pin1.Outstanding)
	}
	p.Close()
	dev2, _ := p.DevicePoolStats()
	pin2, _ := p.PinnedPoolStats()
	t.Logf("after Close: device %+v, pinned %+v", dev2, pin2)
	if dev2.Outstanding != 0 || pin2.Outstanding != 0 || dev2.Exported != 0 {
		t.Errorf("after Close: device outstanding %d, exported %d, pinned outstanding %d", dev2.Outstanding, dev2.Exported, pin2.Outstanding)
	}
	if dev2.ReservedBytes != 0 || pin2.ReservedBytes != 0 {
		t.Errorf("after Close: device reserved %d bytes, pinned %d", dev2.ReservedBytes, pin2.ReservedBytes)
	}
}
