package imaging

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useAVX2 selects the AVX2 kernels of simd_amd64.s for the fixed-point resample; the
// scalar kernels stay the reference (simd_test.go compares them bit for bit). Tests
// switch it off to cover the scalar path on this machine too.
var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func hrow3AVX2(out unsafe.Pointer, in *byte, taps *tap, w *int32, k, n, limit int, bytesOut bool) int

//go:noescape
func hrow4AVX2(out unsafe.Pointer, in *byte, taps *tap, w *int32, k, n, limit int, bytesOut bool) int

//go:noescape
func vfiltAVX2(out *byte, n int, rows *unsafe.Pointer, w *int32, k int)

// hpass3Vec is hpass3Fixed (3 channels, k taps for every output, weights w[k*i:])
// with AVX2: the pixels whose loads stay inside in, all but the last, go through the
// vector kernel, the rest through the scalar one. It reports false when it did nothing.
func hpass3Vec[O hout](out []O, in []byte, taps []tap, w []int32, k int) bool {
	n := len(taps)
	if !useAVX2 || n < 2 || k < 1 || len(in) < 3 || len(w) < n*k {
		return false
	}
	out = out[:3*n]
	var z O
	m := hrow3AVX2(unsafe.Pointer(unsafe.SliceData(out)), unsafe.SliceData(in), unsafe.SliceData(taps),
		unsafe.SliceData(w), k, n-1, len(in)-2, unsafe.Sizeof(z) == 1)
	for i := m; i < n; i++ {
		p := in[3*int(taps[i].start):]
		p = p[:3*k]
		s0, s1, s2 := int32(fixedHalf), int32(fixedHalf), int32(fixedHalf)
		for j, wk := range w[k*i : k*i+k] {
			s0 += wk * int32(p[3*j])
			s1 += wk * int32(p[3*j+1])
			s2 += wk * int32(p[3*j+2])
		}
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(clip8(s0)), O(clip8(s1)), O(clip8(s2))
	}
	return true
}

// hpass4Vec is hpass4 for a plan with k taps for every output (weights w[k*i:] from
// the first tap's), with AVX2; outputs whose taps a kernel could not read go through
// hpass4, which takes the weights wAll that the taps' offsets index. It reports false
// when it did nothing.
func hpass4Vec[O hout](out []O, in []byte, taps []tap, w, wAll []int32, k int) bool {
	n := len(taps)
	if !useAVX2 || n < 1 || k < 1 || len(w) < n*k {
		return false
	}
	out = out[:4*n]
	var z O
	m := hrow4AVX2(unsafe.Pointer(unsafe.SliceData(out)), unsafe.SliceData(in), unsafe.SliceData(taps),
		unsafe.SliceData(w), k, n, len(in), unsafe.Sizeof(z) == 1)
	if m < n {
		hpass4(out[4*m:], in, taps[m:], wAll)
	}
	return true
}

// maxVecTaps bounds the vertical taps that vfiltVec takes (a row pointer each, on the
// stack).
const maxVecTaps = 64

// vfiltVec writes out[j] = clip8(fixedHalf + sum_i w[i]*rows[i][j]) for the ring rows
// rows (uint32 elements, at least len(out) each); len(rows) == len(w) <= maxVecTaps.
func vfiltVec(out []byte, rows []unsafe.Pointer, w []int32) {
	n16 := len(out) &^ 15
	if n16 > 0 {
		vfiltAVX2(unsafe.SliceData(out), n16, unsafe.SliceData(rows), unsafe.SliceData(w), len(w))
	}
	for j := n16; j < len(out); j++ {
		s := int32(fixedHalf)
		for i, wk := range w {
			s += wk * int32(*(*uint32)(unsafe.Add(rows[i], 4*j)))
		}
		out[j] = clip8(s)
	}
}

var (
	hasFMA  = cpu.X86.HasFMA
	hasF16C = cpu.X86.HasF16C
)

//go:noescape
func chw3f32AVX2(d0, d1, d2 unsafe.Pointer, px *byte, groups int, coef *[6]float64, mirror, half bool)

//go:noescape
func cvtps2phAVX(dst *uint16, src *float32, n int)

// halfBits converts src to IEEE half with the instruction chw3f32AVX2 uses.
func halfBits(dst *[256]uint16, src *[256]float32) {
	cvtps2phAVX(&dst[0], &src[0], len(src))
}

// chw3F32Vec is chw3 for float32 (T uint32) or float16 (T uint16) output whose tables
// hold float32(fma(v, coef[ch], coef[3+ch])) for every v, rounded to half for float16
// (affineCoef checked them): four pixels at a time with AVX2 and FMA, the few whose
// 16-byte loads would pass the row's end through the tables. It reports false when it
// did nothing.
func chw3F32Vec[T uint16 | uint32](d0, d1, d2 []T, px []byte, t0, t1, t2 *[256]T, coef *[6]float64, mirror bool) bool {
	n := len(d0)
	var z T
	half := unsafe.Sizeof(z) == 2
	if !useAVX2 || !hasFMA || n < 8 || half && !hasF16C {
		return false
	}
	d1, d2, px = d1[:n], d2[:n], px[:3*n]
	if !mirror {
		g := (3*n-16)/12 + 1 // groups whose loads (12 bytes apart, 16 each) stay in px
		chw3f32AVX2(unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0]), unsafe.Pointer(&d2[0]), &px[0], g, coef, false, half)
		k := 4 * g
		chw3(d0[k:], d1[k:], d2[k:], px[3*k:], t0, t1, t2, false)
		return true
	}
	// Output k shows input pixel n-1-k; the group of outputs k..k+3 loads 16 bytes at
	// input pixel n-4-k, inside px from k = 2 on.
	const k0 = 2
	g := (n-4-k0)/4 + 1
	chw3f32AVX2(unsafe.Pointer(&d0[k0]), unsafe.Pointer(&d1[k0]), unsafe.Pointer(&d2[k0]), &px[3*(n-4-k0)], g, coef, true, half)
	chw3(d0[:k0], d1[:k0], d2[:k0], px[3*(n-k0):], t0, t1, t2, true)
	k := k0 + 4*g
	chw3(d0[k:], d1[k:], d2[k:], px[:3*(n-k)], t0, t1, t2, true)
	return true
}
