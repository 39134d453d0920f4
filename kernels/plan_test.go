package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/godali/godali/imaging"
)

func TestDescriptorSizes(t *testing.T) {
	// godali_kernels.h's sizes; kernels_cuda.go checks them against the C compiler.
	if s := unsafe.Sizeof(resizeDesc{}); s != 64 {
		t.Errorf("resizeDesc is %d bytes, godali_resize_desc 64", s)
	}
	if s := unsafe.Sizeof(cmnDesc{}); s != 72 {
		t.Errorf("cmnDesc is %d bytes, godali_cmn_desc 72", s)
	}
	if s := unsafe.Sizeof(cropDesc{}); s != 64 {
		t.Errorf("cropDesc is %d bytes, godali_crop_desc 64", s)
	}
	if s := unsafe.Sizeof(colorDesc{}); s != 88 {
		t.Errorf("colorDesc is %d bytes, godali_color_desc 88", s)
	}
	if s := unsafe.Sizeof(Tap{}); s != 12 {
		t.Errorf("Tap is %d bytes, 3 int32", s)
	}
}

func randImage(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	// Smooth gradients plus noise: exercises rounding without being pure noise.
	for i := range b {
		b[i] = byte(i*7/5 + r.IntN(40))
	}
	return b
}

type resizeCase struct {
	srcW, srcH, c, dstW, dstH, pad int
	roi                            [4]float64
	interp                         imaging.Interp
	aa                             bool
}

func (rc resizeCase) String() string {
	return fmt.Sprintf("%dx%dx%d->%dx%d roi %v %v aa=%v pad=%d", rc.srcW, rc.srcH, rc.c, rc.dstW, rc.dstH, rc.roi, rc.interp, rc.aa, rc.pad)
}

func randResizeCase(r *rand.Rand) resizeCase {
	rc := resizeCase{srcW: 1 + r.IntN(200), srcH: 1 + r.IntN(200), c: []int{1, 3, 3, 4, 2}[r.IntN(5)],
		interp: imaging.Interp(r.IntN(5)), aa: r.IntN(4) != 0}
	rc.dstW, rc.dstH = 1+r.IntN(220), 1+r.IntN(220)
	if r.IntN(5) == 0 {
		rc.dstW = rc.srcW // identity axis
	}
	if r.IntN(3) == 0 {
		rc.pad = r.IntN(9)
	}
	switch r.IntN(4) {
	case 0:
		rc.roi = imaging.FullROI(rc.srcW, rc.srcH)
	case 1: // random window, possibly leaving the image, possibly flipped
		x0, x1 := r.Float64()*float64(rc.srcW)*1.2-5, r.Float64()*float64(rc.srcW)*1.2-5
		y0, y1 := r.Float64()*float64(rc.srcH)*1.2-5, r.Float64()*float64(rc.srcH)*1.2-5
		if x0 == x1 {
			x1++
		}
		if y0 == y1 {
			y1++
		}
		rc.roi = [4]float64{x0, y0, x1, y1}
	case 2: // an integer crop window, as random resized crop plans it
		w, h := 1+r.IntN(rc.srcW), 1+r.IntN(rc.srcH)
		rc.roi = CropROI(r.IntN(rc.srcW-w+1), r.IntN(rc.srcH-h+1), w, h)
	default:
		rc.roi = [4]float64{float64(rc.srcW), 0, 0, float64(rc.srcH)} // mirrored
	}
	return rc
}

// TestResizeMatchesCPU plans batches of random resizes, runs the transcribed kernels and
// requires the CPU operator's output exactly.
func TestResizeMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var b ResizeBatch
	for batch := 0; batch < 60; batch++ {
		b.Reset()
		var m memory
		var cases []resizeCase
		var dsts, wants [][]byte
		for i := 0; i < 1+r.IntN(6); i++ {
			rc := randResizeCase(r)
			dense := randImage(r, rc.srcW*rc.srcH*rc.c)
			stride := rc.srcW*rc.c + rc.pad
			src := make([]byte, stride*rc.srcH)
			for y := 0; y < rc.srcH; y++ {
				copy(src[y*stride:], dense[y*rc.srcW*rc.c:(y+1)*rc.srcW*rc.c])
			}
			dst := make([]byte, rc.dstW*rc.dstH*rc.c)
			s := ResizeSample{Src: m.add(src), SrcW: rc.srcW, SrcH: rc.srcH, SrcStride: stride, Channels: rc.c,
				Dst: m.add(dst), DstW: rc.dstW, DstH: rc.dstH, ROI: rc.roi, Interp: rc.interp, Antialias: rc.aa}
			if r.IntN(2) == 0 && rc.roi == imaging.FullROI(rc.srcW, rc.srcH) {
				s.ROI = [4]float64{} // the zero ROI means the whole image
			}
			if err := b.Add(&s); err != nil {
				t.Fatalf("%v: %v", rc, err)
			}
			want := make([]byte, len(dst))
			p := imaging.NewResizePlan(rc.srcW, rc.srcH, rc.roi, rc.dstW, rc.dstH, rc.interp, rc.aa, nil)
			if err := p.Resize(want, dense, rc.c, nil); err != nil {
				t.Fatalf("%v: CPU: %v", rc, err)
			}
			cases, dsts, wants = append(cases, rc), append(dsts, dst), append(wants, want)
		}
		tmp := make([]byte, b.TmpBytes()+1)
		l := b.layout()
		buf := make([]byte, l.size)
		b.pack(buf, m.add(tmp))
		emulateResize(&m, buf, l, b.Len())
		for i := range cases {
			if !bytes.Equal(dsts[i], wants[i]) {
				t.Fatalf("batch %d sample %d (%v): GPU plan differs from the CPU operator (first diff at %d)", batch, i, cases[i], firstDiff(dsts[i], wants[i]))
			}
		}
	}
}

// TestResizeRN50Shapes covers the shapes of the ResNet-50 pipeline: random resized crop
// to 224x224 and the validation resize of the shorter side to 256.
func TestResizeRN50Shapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{500, 375}, {640, 480}, {333, 500}, {1024, 683}} {
		w, h := sz[0], sz[1]
		src := randImage(r, w*h*3)
		for _, rc := range []resizeCase{
			{srcW: w, srcH: h, c: 3, dstW: 224, dstH: 224, roi: CropROI(w/7, h/5, w/2, h/2), interp: imaging.InterpTriangular, aa: true},
			{srcW: w, srcH: h, c: 3, dstW: 256 * w / min(w, h), dstH: 256 * h / min(w, h), roi: imaging.FullROI(w, h), interp: imaging.InterpTriangular, aa: true},
			{srcW: w, srcH: h, c: 3, dstW: 224, dstH: 224, roi: CropROI(3, 4, 100, 90), interp: imaging.InterpLinear, aa: true},
		} {
			var b ResizeBatch
			var m memory
			dst := make([]byte, rc.dstW*rc.dstH*3)
			if err := b.Add(&ResizeSample{Src: m.add(src), SrcW: w, SrcH: h, Channels: 3, Dst: m.add(dst), DstW: rc.dstW, DstH: rc.dstH, ROI: rc.roi, Interp: rc.interp, Antialias: rc.aa}); err != nil {
				t.Fatal(err)
			}
			l := b.layout()
			buf := make([]byte, l.size)
			b.pack(buf, m.add(make([]byte, b.TmpBytes())))
			emulateResize(&m, buf, l, 1)
			want := make([]byte, len(dst))
			if err := imaging.NewResizePlan(w, h, rc.roi, rc.dstW, rc.dstH, rc.interp, rc.aa, nil).Resize(want, src, 3, nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, want) {
				t.Fatalf("%v: differs from the CPU operator", rc)
			}
		}
	}
}

func TestResizeRejectsBadSamples(t *testing.T) {
	var b ResizeBatch
	for _, s := range []ResizeSample{
		{SrcW: 0, SrcH: 5, Channels: 3, DstW: 2, DstH: 2},
		{SrcW: 5, SrcH: 5, Channels: 3, DstW: 0, DstH: 2},
		{SrcW: 5, SrcH: 5, Channels: 0, DstW: 2, DstH: 2},
		{SrcW: 5, SrcH: 5, Channels: 3, DstW: 2, DstH: 2, SrcStride: 14},
		{SrcW: 5, SrcH: 5, Channels: 3, DstW: 2, DstH: 2, Interp: 9},
		{SrcW: 5, SrcH: 5, Channels: 3, DstW: 2, DstH: 2, ROI: [4]float64{0, 0, 1e9, 5}},
	} {
		if err := b.Add(&s); err == nil {
			t.Errorf("Add(%+v) accepted", s)
		}
	}
	if b.Len() != 0 {
		t.Fatal("rejected samples were planned")
	}
}

func TestResizePlanningDoesNotAllocate(t *testing.T) {
	var b ResizeBatch
	s := ResizeSample{SrcW: 500, SrcH: 375, Channels: 3, DstW: 224, DstH: 224, ROI: CropROI(10, 20, 300, 200), Interp: imaging.InterpTriangular, Antialias: true}
	plan := func() {
		b.Reset()
		for i := 0; i < 64; i++ {
			_ = b.Add(&s)
		}
	}
	plan()
	if n := testing.AllocsPerRun(20, plan); n != 0 {
		t.Fatalf("planning a batch allocates %v times", n)
	}
}

func TestCMNMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var b CMNBatch
	for it := 0; it < 300; it++ {
		c := []int{1, 3, 3, 4}[r.IntN(4)]
		p := CMNParams{Scale: 1, Out: imaging.DType(r.IntN(4)), CHW: r.IntN(2) == 0, PadChannels: r.IntN(3) == 0}
		switch r.IntN(3) {
		case 0:
			p.Mean, p.Std = []float32{0.485 * 255, 0.456 * 255, 0.406 * 255, 120}[:c], []float32{0.229 * 255, 0.224 * 255, 0.225 * 255, 60}[:c]
		case 1:
			p.Mean, p.Std = []float32{float32(r.IntN(255))}, []float32{float32(1 + r.IntN(100))}
		}
		if r.IntN(4) == 0 {
			p.Scale, p.Shift = 1/64.0, float32(r.IntN(128))
		}
		if err := b.Reset(&p, c); err != nil {
			t.Fatal(err)
		}
		var m memory
		lutLen := 0
		type one struct {
			s         CMNSample
			dst, want []byte
		}
		var ss []one
		for i := 0; i < 1+r.IntN(4); i++ {
			w, h := 1+r.IntN(60), 1+r.IntN(60)
			src := randImage(r, w*h*c)
			cw, ch := 1+r.IntN(70), 1+r.IntN(70)
			x, y := r.IntN(w+20)-10-cw/4, r.IntN(h+20)-10-ch/4
			if r.IntN(2) == 0 && cw <= w && ch <= h { // inside, the common case
				x, y = r.IntN(w-cw+1), r.IntN(h-ch+1)
			}
			s := CMNSample{Src: m.add(src), W: w, H: h, CropX: x, CropY: y, CropW: cw, CropH: ch, Mirror: r.IntN(2) == 0}
			dst := make([]byte, b.OutBytes(cw, ch))
			for k := range dst {
				dst[k] = 0xEE // every byte must be written
			}
			s.Dst = m.add(dst)
			if err := b.Add(&s); err != nil {
				t.Fatal(err)
			}
			np := imaging.NormalizeParams{Mean: p.Mean, Std: p.Std, Scale: p.Scale, Shift: p.Shift, Out: p.Out, CHW: p.CHW,
				PadChannels: p.PadChannels, Mirror: s.Mirror, CropX: x, CropY: y, CropW: cw, CropH: ch}
			want := make([]byte, np.OutBytes(c))
			if err := imaging.CropMirrorNormalize(want, src, w, h, c, &np); err != nil {
				t.Fatal(err)
			}
			ss = append(ss, one{s, dst, want})
		}
		lutOff, size := b.layout()
		buf := make([]byte, size)
		base := m.add(buf)
		b.pack(buf, base)
		lutLen = len(b.lut)
		if lutOff+lutLen > size {
			t.Fatal("layout too small for the tables")
		}
		emulateCMN(&m, buf, b.Len())
		for i, o := range ss {
			if !bytes.Equal(o.dst, o.want) {
				t.Fatalf("iteration %d sample %d (%+v, params %+v, %d channels): differs from the CPU operator at byte %d", it, i, o.s, p, c, firstDiff(o.dst, o.want))
			}
		}
	}
}

func TestCMNRejects(t *testing.T) {
	var b CMNBatch
	if err := b.Add(&CMNSample{W: 1, H: 1, CropW: 1, CropH: 1}); err == nil {
		t.Error("Add before Reset accepted")
	}
	for _, p := range []CMNParams{
		{Out: imaging.Float32, Std: []float32{0}},
		{Out: imaging.Float32, Mean: []float32{1, 2}},
		{Out: imaging.DType(9)},
	} {
		if err := b.Reset(&p, 3); err == nil {
			t.Errorf("Reset(%+v) accepted", p)
		}
	}
	_ = b.Reset(&CMNParams{Out: imaging.Float32, Scale: 1}, 3)
	if err := b.Add(&CMNSample{W: 4, H: 4, CropW: 2, CropH: 2, Dst: 0x1002}); err == nil {
		t.Error("misaligned float output accepted")
	}
}

func TestCropAndFlipMatchCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var b CropBatch
	for it := 0; it < 200; it++ {
		b.Reset()
		var m memory
		w, h, c := 1+r.IntN(50), 1+r.IntN(50), []int{1, 3, 4}[r.IntN(3)]
		src := randImage(r, w*h*c)
		// A crop (window anywhere, fill outside) and a flip of the whole image.
		cw, ch := 1+r.IntN(60), 1+r.IntN(60)
		x, y := r.IntN(w+30)-15, r.IntN(h+30)-15
		fill := byte(r.IntN(256))
		crop := make([]byte, cw*ch*c)
		flip := make([]byte, w*h*c)
		fh, fv := r.IntN(2) == 0, r.IntN(2) == 0
		sa := m.add(src)
		if err := b.Add(&CropSample{Src: sa, W: w, H: h, Channels: c, Dst: m.add(crop), X: x, Y: y, CropW: cw, CropH: ch, Fill: fill}); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(&CropSample{Src: sa, W: w, H: h, Channels: c, Dst: m.add(flip), CropW: w, CropH: h, FlipH: fh, FlipV: fv}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, b.size())
		b.pack(buf)
		emulateCrop(&m, buf, b.Len())
		want := make([]byte, len(crop))
		if err := imaging.Crop(want, src, w, h, c, x, y, cw, ch, fill); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(crop, want) {
			t.Fatalf("crop %dx%d at (%d,%d) of %dx%dx%d differs from the CPU operator", cw, ch, x, y, w, h, c)
		}
		want = make([]byte, len(flip))
		if err := imaging.Flip(want, src, w, h, c, fh, fv); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(flip, want) {
			t.Fatalf("flip h=%v v=%v of %dx%dx%d differs from the CPU operator", fh, fv, w, h, c)
		}
	}
}

// randColorSample draws a brightness_contrast-like affine map or an hsv/color_twist
// matrix (from imaging.SetHSV with random arguments) and an output type.
func randColorSample(r *rand.Rand, w, h int) ColorSample {
	s := ColorSample{W: w, H: h, Channels: 3, Float: r.IntN(3) == 0}
	if r.IntN(2) == 0 {
		s.UseMatrix = true
		s.Matrix.SetHSV(r.Float64()*720-360, r.Float64()*2, 0.5+r.Float64(), r.Float64()*2, r.Float64()*2, []float64{0, 128}[r.IntN(2)])
		return s
	}
	s.Channels = []int{1, 3, 4}[r.IntN(3)]
	s.Scale, s.Offset = float32(r.Float64()*3), float32(r.Float64()*300-150)
	if r.IntN(4) == 0 { // exact halves: the rounding of ties
		s.Scale, s.Offset = 0.5, float32(r.IntN(5))-2.5
	}
	return s
}

// colorWant is the CPU operator's output for s on src.
func colorWant(t testing.TB, s *ColorSample, src []byte) []byte {
	t.Helper()
	out := imaging.UInt8
	if s.Float {
		out = imaging.Float32
	}
	want := make([]byte, s.W*s.H*s.Channels*out.Size())
	if s.UseMatrix {
		if err := s.Matrix.Apply(want, src, s.W*s.H, out); err != nil {
			t.Fatal(err)
		}
		return want
	}
	var tab imaging.AffineTable
	if err := tab.Init(s.Scale, s.Offset, out); err != nil {
		t.Fatal(err)
	}
	if err := tab.Apply(want, src); err != nil {
		t.Fatal(err)
	}
	return want
}

func TestColorMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var b ColorBatch
	for it := 0; it < 200; it++ {
		b.Reset()
		var m memory
		var srcs, dsts [][]byte
		var samples []ColorSample
		for k := 0; k < 1+r.IntN(4); k++ {
			s := randColorSample(r, 1+r.IntN(40), 1+r.IntN(40))
			src := randImage(r, s.W*s.H*s.Channels)
			dst := make([]byte, s.W*s.H*s.Channels*map[bool]int{false: 1, true: 4}[s.Float])
			s.Src, s.Dst = m.add(src), m.add(dst)
			if err := b.Add(&s); err != nil {
				t.Fatal(err)
			}
			srcs, dsts, samples = append(srcs, src), append(dsts, dst), append(samples, s)
		}
		buf := make([]byte, b.size())
		b.pack(buf)
		emulateColor(&m, buf, b.Len())
		for k := range samples {
			if want := colorWant(t, &samples[k], srcs[k]); !bytes.Equal(dsts[k], want) {
				t.Fatalf("sample %d (%+v) differs from the CPU operator at byte %d", k, samples[k], firstDiff(dsts[k], want))
			}
		}
	}
	if err := b.Add(&ColorSample{W: 2, H: 2, Channels: 4, UseMatrix: true}); err == nil {
		t.Error("a 4-channel matrix sample was accepted")
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}
