//go:build cuda

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/godali/godali/imaging"
	"github.com/godali/godali/internal/cuda"
	_ "github.com/godali/godali/internal/cuda/cudatest" // skips this binary without a GPU
)

type gpu struct {
	dev          *cuda.Device
	stream       cuda.Stream
	devp, pinned *cuda.Pool
	m            *Module
	r            *Runner
}

func newGPU(t testing.TB) *gpu {
	t.Helper()
	dev, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	g := &gpu{dev: dev}
	if g.stream, err = dev.NewStream(); err != nil {
		t.Fatal(err)
	}
	g.devp, _ = dev.NewDevicePool()
	g.pinned, _ = dev.NewPinnedPool()
	if g.m, err = Load(dev); err != nil {
		t.Fatal(err)
	}
	g.r = g.m.NewRunner(g.stream, g.devp, g.pinned)
	t.Cleanup(func() {
		_ = dev.Synchronize(g.stream)
		g.r.Close()
		_ = g.m.Close()
		g.devp.Close()
		g.pinned.Close()
		_ = dev.DestroyStream(g.stream)
		_ = dev.Close()
	})
	return g
}

// put copies b to a fresh device block. The caller releases it; a block left out keeps
// the pool (and the device) open after Close, which only frees idle blocks.
func (g *gpu) put(t testing.TB, b []byte) *cuda.Block {
	blk, err := g.devp.Get(len(b), g.stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.dev.CopyHtoD(blk.Ptr(), b); err != nil {
		t.Fatal(err)
	}
	return blk
}

func (g *gpu) alloc(t testing.TB, n int) *cuda.Block {
	blk, err := g.devp.Get(n, g.stream)
	if err != nil {
		t.Fatal(err)
	}
	return blk
}

func (g *gpu) get(t testing.TB, blk *cuda.Block, n int) []byte {
	if err := g.dev.Synchronize(g.stream); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	if err := g.dev.CopyDtoH(out, blk.Ptr()); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGPUResizeMatchesCPU(t *testing.T) {
	g := newGPU(t)
	r := rand.New(rand.NewPCG(11, 12))
	for batch := 0; batch < 40; batch++ {
		var samples []ResizeSample
		var outs []*cuda.Block
		var wants [][]byte
		var cases []resizeCase
		var ins []*cuda.Block
		for i := 0; i < 1+r.IntN(8); i++ {
			rc := randResizeCase(r)
			rc.pad = 0
			src := randImage(r, rc.srcW*rc.srcH*rc.c)
			in := g.put(t, src)
			out := g.alloc(t, rc.dstW*rc.dstH*rc.c)
			samples = append(samples, ResizeSample{Src: in.Ptr(), SrcW: rc.srcW, SrcH: rc.srcH, Channels: rc.c,
				Dst: out.Ptr(), DstW: rc.dstW, DstH: rc.dstH, ROI: rc.roi, Interp: rc.interp, Antialias: rc.aa})
			want := make([]byte, rc.dstW*rc.dstH*rc.c)
			if err := imaging.NewResizePlan(rc.srcW, rc.srcH, rc.roi, rc.dstW, rc.dstH, rc.interp, rc.aa, nil).Resize(want, src, rc.c, nil); err != nil {
				t.Fatal(err)
			}
			ins, outs, wants, cases = append(ins, in), append(outs, out), append(wants, want), append(cases, rc)
		}
		if err := g.r.Resize(samples); err != nil {
			t.Fatal(err)
		}
		for i := range outs {
			if got := g.get(t, outs[i], len(wants[i])); !bytes.Equal(got, wants[i]) {
				t.Fatalf("batch %d sample %d (%v): GPU differs from the CPU operator at byte %d", batch, i, cases[i], firstDiff(got, wants[i]))
			}
		}
		for _, b := range append(ins, outs...) {
			_ = b.ReleaseAfter(g.stream)
		}
	}
}

func TestGPUCMNMatchesCPU(t *testing.T) {
	g := newGPU(t)
	r := rand.New(rand.NewPCG(13, 14))
	for it := 0; it < 100; it++ {
		c := []int{1, 3, 3, 4}[r.IntN(4)]
		p := CMNParams{Scale: 1, Out: imaging.DType(r.IntN(4)), CHW: r.IntN(2) == 0, PadChannels: r.IntN(3) == 0,
			Mean: []float32{0.485 * 255, 0.456 * 255, 0.406 * 255, 100}[:c], Std: []float32{0.229 * 255, 0.224 * 255, 0.225 * 255, 50}[:c]}
		var b CMNBatch
		_ = b.Reset(&p, c)
		var samples []CMNSample
		var outs, ins []*cuda.Block
		var wants [][]byte
		for i := 0; i < 1+r.IntN(5); i++ {
			w, h := 1+r.IntN(300), 1+r.IntN(300)
			src := randImage(r, w*h*c)
			cw, ch := 1+r.IntN(w+10), 1+r.IntN(h+10)
			x, y := r.IntN(w+8)-4-cw/8, r.IntN(h+8)-4-ch/8
			in := g.put(t, src)
			out := g.alloc(t, b.OutBytes(cw, ch))
			_ = g.dev.MemsetAsync(out.Ptr(), 0xEE, b.OutBytes(cw, ch), g.stream) // every byte must be written
			s := CMNSample{Src: in.Ptr(), W: w, H: h, Dst: out.Ptr(), CropX: x, CropY: y, CropW: cw, CropH: ch, Mirror: r.IntN(2) == 0}
			np := imaging.NormalizeParams{Mean: p.Mean, Std: p.Std, Scale: p.Scale, Out: p.Out, CHW: p.CHW, PadChannels: p.PadChannels,
				Mirror: s.Mirror, CropX: x, CropY: y, CropW: cw, CropH: ch}
			want := make([]byte, np.OutBytes(c))
			if err := imaging.CropMirrorNormalize(want, src, w, h, c, &np); err != nil {
				t.Fatal(err)
			}
			samples, ins, outs, wants = append(samples, s), append(ins, in), append(outs, out), append(wants, want)
		}
		if err := g.r.CropMirrorNormalize(&p, c, samples); err != nil {
			t.Fatal(err)
		}
		for i := range outs {
			if got := g.get(t, outs[i], len(wants[i])); !bytes.Equal(got, wants[i]) {
				t.Fatalf("iteration %d sample %d (%+v, %v): GPU differs from the CPU operator at byte %d", it, i, samples[i], p.Out, firstDiff(got, wants[i]))
			}
		}
		for _, b := range append(ins, outs...) {
			_ = b.ReleaseAfter(g.stream)
		}
	}
}

func TestGPUCropFlipMatchCPU(t *testing.T) {
	g := newGPU(t)
	r := rand.New(rand.NewPCG(15, 16))
	for it := 0; it < 100; it++ {
		w, h, c := 1+r.IntN(200), 1+r.IntN(200), []int{1, 3, 4}[r.IntN(3)]
		src := randImage(r, w*h*c)
		in := g.put(t, src)
		cw, ch := 1+r.IntN(220), 1+r.IntN(220)
		x, y := r.IntN(w+40)-20, r.IntN(h+40)-20
		fh, fv := r.IntN(2) == 0, r.IntN(2) == 0
		crop, flip := g.alloc(t, cw*ch*c), g.alloc(t, w*h*c)
		err := g.r.Crop([]CropSample{
			{Src: in.Ptr(), W: w, H: h, Channels: c, Dst: crop.Ptr(), X: x, Y: y, CropW: cw, CropH: ch, Fill: 7},
			{Src: in.Ptr(), W: w, H: h, Channels: c, Dst: flip.Ptr(), CropW: w, CropH: h, FlipH: fh, FlipV: fv},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, cw*ch*c)
		_ = imaging.Crop(want, src, w, h, c, x, y, cw, ch, 7)
		if got := g.get(t, crop, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("crop %dx%d at (%d,%d) of %dx%dx%d differs", cw, ch, x, y, w, h, c)
		}
		want = make([]byte, w*h*c)
		_ = imaging.Flip(want, src, w, h, c, fh, fv)
		if got := g.get(t, flip, len(want)); !bytes.Equal(got, want) {
			t.Fatalf("flip h=%v v=%v of %dx%dx%d differs", fh, fv, w, h, c)
		}
		for _, b := range []*cuda.Block{in, crop, flip} {
			_ = b.ReleaseAfter(g.stream)
		}
	}
}

// TestGPUColorMatchesCPU runs godali_color on batches of random images, affine maps
// (brightness_contrast) and YIQ matrices (hsv, color_twist), to uint8 and float32:
// both bit for bit with imaging.
func TestGPUColorMatchesCPU(t *testing.T) {
	g := newGPU(t)
	r := rand.New(rand.NewPCG(17, 18))
	for it := 0; it < 40; it++ {
		var samples []ColorSample
		var srcs [][]byte
		var blocks []*cuda.Block
		for k := 0; k < 1+r.IntN(6); k++ {
			s := randColorSample(r, 1+r.IntN(150), 1+r.IntN(150))
			src := randImage(r, s.W*s.H*s.Channels)
			in := g.put(t, src)
			n := s.W * s.H * s.Channels
			if s.Float {
				n *= 4
			}
			out := g.alloc(t, n)
			s.Src, s.Dst = in.Ptr(), out.Ptr()
			samples, srcs, blocks = append(samples, s), append(srcs, src), append(blocks, in, out)
		}
		if err := g.r.Color(samples); err != nil {
			t.Fatal(err)
		}
		for k := range samples {
			want := colorWant(t, &samples[k], srcs[k])
			if got := g.get(t, blocks[2*k+1], len(want)); !bytes.Equal(got, want) {
				t.Fatalf("sample %d (%+v) differs at byte %d", k, samples[k], firstDiff(got, want))
			}
		}
		for _, b := range blocks {
			_ = b.ReleaseAfter(g.stream)
		}
	}
}

// rn50Batch prepares the ResNet-50 training shapes: batch decoded images of 500x375 with
// random crops resized to 224x224, then CMN to float CHW.
func rn50Batch(t testing.TB, g *gpu, batch int) ([]ResizeSample, []CMNSample, *CMNParams) {
	r := rand.New(rand.NewPCG(17, 18))
	rs := make([]ResizeSample, batch)
	cs := make([]CMNSample, batch)
	resized := g.alloc(t, batch*224*224*3)
	out := g.alloc(t, batch*3*224*224*4)
	for i := range rs {
		in := g.put(t, randImage(r, 500*375*3))
		w, h := 100+r.IntN(400), 100+r.IntN(275)
		rs[i] = ResizeSample{Src: in.Ptr(), SrcW: 500, SrcH: 375, Channels: 3, Dst: resized.Ptr() + uintptr(i*224*224*3),
			DstW: 224, DstH: 224, ROI: CropROI(r.IntN(500-w+1), r.IntN(375-h+1), w, h), Interp: imaging.InterpTriangular, Antialias: true}
		cs[i] = CMNSample{Src: rs[i].Dst, W: 224, H: 224, Dst: out.Ptr() + uintptr(i*3*224*224*4), CropW: 224, CropH: 224, Mirror: i%2 == 0}
	}
	p := &CMNParams{Mean: []float32{0.485 * 255, 0.456 * 255, 0.406 * 255}, Std: []float32{0.229 * 255, 0.224 * 255, 0.225 * 255},
		Scale: 1, Out: imaging.Float32, CHW: true}
	return rs, cs, p
}

// TestGPUSteadyStateDoesNotAllocate: after the first batch, running the same work
// neither calls cuMemAlloc/cuMemHostAlloc (pool statistics) nor allocates Go memory.
func TestGPUSteadyStateDoesNotAllocate(t *testing.T) {
	g := newGPU(t)
	rs, cs, p := rn50Batch(t, g, 64)
	step := func() {
		if err := g.r.Resize(rs); err != nil {
			t.Fatal(err)
		}
		if err := g.r.CropMirrorNormalize(p, 3, cs); err != nil {
			t.Fatal(err)
		}
	}
	step()
	step()
	dev0, pin0 := g.devp.Stats().Allocations, g.pinned.Stats().Allocations
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("a batch allocates %v Go objects", n)
	}
	if err := g.dev.Synchronize(g.stream); err != nil {
		t.Fatal(err)
	}
	if d, pn := g.devp.Stats().Allocations-dev0, g.pinned.Stats().Allocations-pin0; d != 0 || pn != 0 {
		t.Fatalf("%d device and %d pinned allocations after warm-up", d, pn)
	}
}

func BenchmarkGPURN50ResizeCMN(b *testing.B) {
	g := newGPU(b)
	const batch = 256
	rs, cs, p := rn50Batch(b, g, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.r.Resize(rs); err != nil {
			b.Fatal(err)
		}
		if err := g.r.CropMirrorNormalize(p, 3, cs); err != nil {
			b.Fatal(err)
		}
	}
	if err := g.dev.Synchronize(g.stream); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "images/s")
}
