package imaging

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// The AVX2 kernels must give the scalar kernels' results bit for bit (the scalar path
// is PIL-exact). Each test runs the same work with useAVX2 off and on.

func needAVX2(t *testing.T) {
	t.Helper()
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: the scalar kernels run alone")
	}
}

// withScalar runs f with the vector kernels switched off.
func withScalar(f func()) {
	useAVX2 = false
	defer func() { useAVX2 = true }()
	f()
}

// guarded returns n bytes that end at a page followed by an inaccessible page, so that
// a kernel reading past the end of its input faults instead of passing unnoticed.
func guarded(t *testing.T, n int) []byte {
	t.Helper()
	pg := syscall.Getpagesize()
	size := (n+pg-1)/pg*pg + pg
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := syscall.Mprotect(m[size-pg:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return m[size-pg-n : size-pg : size-pg]
}

// randomPixels fills b with noise, saturated runs or a mix, so that the cubic and
// Lanczos overshoots clamp on both sides.
// eachVector runs f with every vector kernel set this CPU has: with AVX-512 where
// there is one, and with AVX2 alone.
func eachVector(f func(set string)) {
	if useAVX512 {
		f("AVX-512")
		useAVX512 = false
		defer func() { useAVX512 = true }()
	}
	f("AVX2")
}

func randomPixels(r *rand.Rand, b []byte) {
	mode := r.IntN(3)
	for i := range b {
		switch mode {
		case 0:
			b[i] = byte(r.IntN(256))
		case 1:
			b[i] = byte(255 * ((i / 7) % 2))
		default:
			if r.IntN(4) == 0 {
				b[i] = byte(255 * r.IntN(2))
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
	}
}

func randomROI(r *rand.Rand, w, h int) [4]float64 {
	if r.IntN(3) == 0 {
		return FullROI(w, h)
	}
	x0, x1 := r.Float64()*float64(w), r.Float64()*float64(w)
	y0, y1 := r.Float64()*float64(h), r.Float64()*float64(h)
	if x0 == x1 {
		x1 = float64(w)
	}
	if y0 == y1 {
		y1 = float64(h)
	}
	return [4]float64{x0, y0, x1, y1}
}

var allInterps = []Interp{InterpNN, InterpLinear, InterpCubic, InterpLanczos3, InterpTriangular}

func TestResizeAVX2MatchesScalar(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(28, 1))
	var s Scratch
	for i := 0; i < 300; i++ {
		c := []int{3, 3, 3, 1, 4}[r.IntN(5)]
		w, h := 1+r.IntN(260), 1+r.IntN(120)
		dw, dh := 1+r.IntN(260), 1+r.IntN(120)
		if r.IntN(4) == 0 { // strong downscaling: many taps
			w, h, dw, dh = 200+r.IntN(1200), 20+r.IntN(300), 1+r.IntN(60), 1+r.IntN(30)
		}
		interp := allInterps[r.IntN(len(allInterps))]
		aa := r.IntN(4) != 0
		roi := randomROI(r, w, h)
		if i%6 == 0 { // rows kept: the horizontal pass writes the output bytes itself
			dh, roi = h, FullROI(w, h)
		}
		src := guarded(t, w*h*c)
		randomPixels(r, src)
		p := NewResizePlan(w, h, roi, dw, dh, interp, aa, nil)
		want := make([]byte, dw*dh*c)
		got := make([]byte, dw*dh*c)
		var errW, errG error
		withScalar(func() { errW = p.Resize(want, src, c, &s) })
		errG = p.Resize(got, src, c, &s)
		if (errW == nil) != (errG == nil) {
			t.Fatalf("case %d: errors differ: %v / %v", i, errW, errG)
		}
		if !bytes.Equal(want, got) {
			j := 0
			for want[j] == got[j] {
				j++
			}
			t.Fatalf("case %d: %dx%dx%d roi %v -> %dx%d %v aa=%v: byte %d is %d, scalar %d",
				i, w, h, c, roi, dw, dh, interp, aa, j, got[j], want[j])
		}
	}
}

func TestResizeCMNAVX2MatchesScalar(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(28, 2))
	var s Scratch
	for i := 0; i < 120; i++ {
		w, h := 1+r.IntN(400), 1+r.IntN(300)
		dw, dh := 1+r.IntN(300), 1+r.IntN(300)
		src := guarded(t, w*h*3)
		randomPixels(r, src)
		np := imagenetNorm
		np.Out = []DType{Float32, Float16, UInt8}[r.IntN(3)]
		np.CHW = r.IntN(2) == 0
		np.Mirror = r.IntN(2) == 0
		np.CropW, np.CropH = 1+r.IntN(dw), 1+r.IntN(dh)
		np.CropX, np.CropY = r.IntN(dw-np.CropW+1), r.IntN(dh-np.CropH+1)
		interp := allInterps[r.IntN(len(allInterps))]
		p := NewResizePlan(w, h, randomROI(r, w, h), dw, dh, interp, true, nil)
		want := make([]byte, np.OutBytes(3))
		got := make([]byte, np.OutBytes(3))
		withScalar(func() {
			if err := ResizeCropMirrorNormalize(want, src, w, h, 3, p, &np, &s); err != nil {
				t.Fatal(err)
			}
		})
		eachVector(func(set string) {
			clear(got)
			if err := ResizeCropMirrorNormalize(got, src, w, h, 3, p, &np, &s); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, got) {
				t.Fatalf("case %d (%s): %dx%d -> %dx%d %v crop %+v: results differ", i, set, w, h, dw, dh, interp, np)
			}
		})
	}
}

// The kernels alone, with weights no filter makes: negative, large, and tap counts
// from 1 to 64, over row lengths around the 16-element blocks.
func TestVectorKernelsMatchScalar(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(28, 3))
	for i := 0; i < 500; i++ {
		k := 1 + r.IntN(12)
		if r.IntN(5) == 0 {
			k = 1 + r.IntN(64)
		}
		n := 2 + r.IntN(70)
		inW := k + r.IntN(3*n)
		in := guarded(t, 3*inW)
		randomPixels(r, in)
		// The row's outputs are outputs i0.. of a plan: the pair kernel's table
		// (pairPlan) starts at the plan's first output, and an odd i0 leaves a lone
		// output before the pairs.
		i0 := r.IntN(3)
		allTaps := make([]tap, i0+n)
		allW := make([]int32, (i0+n)*k)
		lim := int32(fixedOne / k)
		for j := range allTaps {
			allTaps[j] = tap{start: int32(r.IntN(inW - k + 1)), n: int32(k), off: int32(j * k)}
			if r.IntN(4) == 0 { // the last pixels: the pair kernel's loads would pass the end
				allTaps[j].start = int32(inW - k - r.IntN(min(3, inW-k+1)))
			}
			for q := 0; q < k; q++ {
				allW[j*k+q] = r.Int32N(2*lim) - lim/2
			}
		}
		taps, w := allTaps[i0:], allW[i0*k:]
		var pp pairPlan
		pp.build(allW, allTaps, k, inW)
		want32, got32 := make([]uint32, 3*n), make([]uint32, 3*n)
		want8, got8 := make([]byte, 3*n), make([]byte, 3*n)
		hpass3Ref(want32, in, taps, w, k)
		hpass3Ref(want8, in, taps, w, k)
		if !hpass3Vec(got32, in, taps, w, &pp, i0, k) || !hpass3Vec(got8, in, taps, w, &pp, i0, k) {
			t.Fatalf("case %d: hpass3Vec declined %d pixels", i, n)
		}
		for j := range want32 {
			if want32[j] != got32[j] || want8[j] != got8[j] {
				t.Fatalf("case %d (k=%d, n=%d, i0=%d): horizontal element %d: %d/%d, scalar %d", i, k, n, i0, j, got32[j], got8[j], want32[j])
			}
		}

		in4 := guarded(t, 4*inW)
		randomPixels(r, in4)
		want4, got4 := make([]uint32, 4*n), make([]uint32, 4*n)
		want48, got48 := make([]byte, 4*n), make([]byte, 4*n)
		hpassRef(want4, in4, taps, w, k, 4)
		hpassRef(want48, in4, taps, w, k, 4)
		if !hpass4Vec(got4, in4, taps, w, w, k) || !hpass4Vec(got48, in4, taps, w, w, k) {
			t.Fatalf("case %d: hpass4Vec declined %d pixels", i, n)
		}
		for j := range want4 {
			if want4[j] != got4[j] || want48[j] != got48[j] {
				t.Fatalf("case %d (k=%d, n=%d): 4-channel element %d: %d/%d, scalar %d", i, k, n, j, got4[j], got48[j], want4[j])
			}
		}

		m := 1 + r.IntN(100)
		rows := make([]unsafe.Pointer, k)
		vals := make([][]uint32, k)
		for q := range rows {
			vals[q] = make([]uint32, m)
			for j := range vals[q] {
				vals[q][j] = uint32(r.IntN(256))
			}
			rows[q] = unsafe.Pointer(unsafe.SliceData(vals[q]))
		}
		vw := w[:k]
		got := make([]byte, m)
		vfiltVec(got, rows, vw)
		for j := range got {
			s := int32(fixedHalf)
			for q, wk := range vw {
				s += wk * int32(vals[q][j])
			}
			if got[j] != clip8(s) {
				t.Fatalf("case %d (k=%d, len %d): vertical element %d: %d, scalar %d", i, k, m, j, got[j], clip8(s))
			}
		}
	}
}

// The pair kernel must take the rows that plans make (not leave them to hrow3AVX2):
// every pair before the first whose loads would pass the row's end (pairPlan.run),
// for each tap count it serves, with the plan's own weights.
func TestPairKernelTakesPlanRows(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(28, 5))
	seen := map[int]bool{}
	took, all := 0, 0
	for i := 0; i < 400; i++ {
		inW, outW := 20+r.IntN(600), 12+r.IntN(300)
		interp := allInterps[1+r.IntN(len(allInterps)-1)]
		p := NewResizePlan(inW, 1, FullROI(inW, 1), outW, 1, interp, true, nil)
		k, pp := p.h.fixed, &p.h.pairs
		if p.h.kind != axisFilter || k < minPairTaps || k > maxPairTaps {
			continue
		}
		if pp.k != k {
			t.Fatalf("case %d: %d -> %d px, %v: no pair table for %d taps", i, inW, outW, interp, k)
		}
		seen[k] = true
		// run, from its definition: loads of 16 bytes from a pixel (31 for more than
		// 5 taps) inside the row, for both outputs of a pair (or the lone last one).
		span := 16
		if k > 5 {
			span = 31
		}
		fits := func(o int) bool { return o >= outW || 3*int(p.h.taps[o].start)+span <= 3*inW }
		pairs := (outW + 1) / 2
		for q, want := pairs-1, 0; q >= 0; q-- {
			if fits(2*q) && fits(2*q+1) {
				want++
			} else {
				want = 0
			}
			if int(pp.run[q]) != want {
				t.Fatalf("case %d: %d -> %d px, %v (k=%d): run[%d] = %d, want %d", i, inW, outW, interp, k, q, pp.run[q], want)
			}
		}
		in := guarded(t, 3*inW)
		randomPixels(r, in)
		x0 := r.IntN(outW/2) &^ 1
		taps := p.h.taps[x0:]
		n := len(taps)
		m := min((n-1)/2, int(pp.run[x0/2]))
		want, got := make([]uint32, 3*n), make([]uint32, 3*n)
		hpass3Ref(want, in, taps, p.h.w[x0*k:], k)
		if m > 0 {
			hpair3AVX2(unsafe.Pointer(&got[0]), &in[0], &pp.table[(x0/2)*(2+8*k)], k, m, false)
		}
		for j := 0; j < 6*m; j++ {
			if got[j] != want[j] {
				t.Fatalf("case %d: %d -> %d px, %v (k=%d): element %d is %d, scalar %d", i, inW, outW, interp, k, j, got[j], want[j])
			}
		}
		took, all = took+m, all+(n-1)/2
	}
	for k := minPairTaps; k <= maxPairTaps; k++ {
		if !seen[k] {
			t.Errorf("no plan had %d taps", k)
		}
	}
	if took < all*3/4 {
		t.Errorf("the pair kernel took %d of %d pairs", took, all)
	}
}

// hpass3Ref is the plain definition of the 3-channel horizontal pass.
func hpass3Ref[O hout](out []O, in []byte, taps []tap, w []int32, k int) {
	hpassRef(out, in, taps, w, k, 3)
}

// hpassRef is the plain definition of the horizontal pass over c channels.
func hpassRef[O hout](out []O, in []byte, taps []tap, w []int32, k, c int) {
	for i, t := range taps {
		for ch := 0; ch < c; ch++ {
			s := int32(fixedHalf)
			for q := 0; q < k; q++ {
				s += w[i*k+q] * int32(in[c*(int(t.start)+q)+ch])
			}
			out[c*i+ch] = O(clip8(s))
		}
	}
}

// crop_mirror_normalize to float32 and float16 CHW computes the tables' values with
// FMA (and F16C) where affineCoef proved them equal; the results must not change, for random parameters,
// sizes, windows (partly outside the image too) and mirroring.
func TestCMNFloatAVX2MatchesScalar(t *testing.T) {
	needAVX2(t)
	if !hasFMA {
		t.Skip("no FMA")
	}
	var nz normalizer[uint32]
	np := imagenetNorm
	nz.init(make([]uint32, np.CropW*np.CropH*3), 224, 224, 3, &np)
	if !nz.affine {
		t.Fatal("ImageNet's mean and std do not take the vector path")
	}
	var nz16 normalizer[uint16]
	np.Out = Float16
	nz16.init(make([]uint16, np.CropW*np.CropH*3), 224, 224, 3, &np)
	if hasF16C && !nz16.affine {
		t.Fatal("ImageNet's mean and std do not take the vector path to FLOAT16")
	}
	r := rand.New(rand.NewPCG(28, 4))
	vec := 0
	for i := 0; i < 300; i++ {
		w, h := 1+r.IntN(300), 1+r.IntN(40)
		src := guarded(t, w*h*3)
		randomPixels(r, src)
		np := imagenetNorm
		if i%3 != 0 {
			np.Mean = []float32{r.Float32() * 255, r.Float32() * 255, r.Float32() * 255}
			np.Std = []float32{0.01 + r.Float32()*100, 0.5 + r.Float32(), 1 + r.Float32()*300}
			np.Scale, np.Shift = 0.1+r.Float32()*3, r.Float32()*10-5
		}
		np.Mirror = r.IntN(2) == 0
		np.CropW, np.CropH = 1+r.IntN(w+10), 1+r.IntN(h)
		np.CropX, np.CropY = r.IntN(w+10)-5, r.IntN(h)
		if i%2 == 1 {
			np.Out = Float16
			if r.IntN(2) == 0 { // halves' subnormals and overflow to infinity
				np.Scale = []float32{1e-4, 1e-6, 300}[r.IntN(3)]
			}
			nz16.init(make([]uint16, np.CropW*np.CropH*3), w, h, 3, &np)
			if nz16.affine {
				vec++
			}
		} else {
			nz.init(make([]uint32, np.CropW*np.CropH*3), w, h, 3, &np)
			if nz.affine {
				vec++
			}
		}
		want := make([]byte, np.OutBytes(3))
		got := make([]byte, np.OutBytes(3))
		withScalar(func() {
			if err := CropMirrorNormalize(want, src, w, h, 3, &np); err != nil {
				t.Fatal(err)
			}
		})
		eachVector(func(set string) {
			clear(got)
			if err := CropMirrorNormalize(got, src, w, h, 3, &np); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, got) {
				t.Fatalf("case %d (%s): %dx%d crop %+v: results differ", i, set, w, h, np)
			}
		})
	}
	t.Logf("%d of 300 parameter sets took the vector path", vec)
	if vec < 100 {
		t.Errorf("only %d of 300 parameter sets took the vector path", vec)
	}
}

// BenchmarkResizeCMNVariants times the training pipeline's fused kernel with each
// kernel set this CPU has.
func BenchmarkResizeCMNVariants(b *testing.B) {
	src := testImage(500, 375, 3, 1)
	np := imagenetNorm
	dst := make([]byte, np.OutBytes(3))
	var s Scratch
	run := func(b *testing.B) {
		for b.Loop() {
			np.Mirror = !np.Mirror
			p := NewResizePlan(500, 375, FullROI(500, 375), 224, 224, InterpTriangular, true, &s)
			if err := ResizeCropMirrorNormalize(dst, src, 500, 375, 3, p, &np, &s); err != nil {
				b.Fatal(err)
			}
		}
	}
	has2 := useAVX2
	defer func() { useAVX2 = has2 }()
	useAVX2 = false
	b.Run("scalar", run)
	if has2 {
		useAVX2 = true
		b.Run("AVX2", run)
	}
}
