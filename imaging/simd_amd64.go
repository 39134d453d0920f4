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
func hpair3AVX2(out unsafe.Pointer, in *byte, pt *int32, k, pairs int, bytesOut bool)

//go:noescape
func hrow4AVX2(out unsafe.Pointer, in *byte, taps *tap, w *int32, k, n, limit int, bytesOut bool) int

//go:noescape
func vfiltAVX2(out *byte, n int, rows *unsafe.Pointer, w *int32, k int)

// Tap counts of the pair kernel hpair3AVX2: one 16-byte load per output holds 5 pixels,
// two hold 10.
const minPairTaps, maxPairTaps = 2, 8

// build lays out, for hpair3AVX2, the n outputs of a plan with k taps each (taps[i],
// weights w[k*i:]) over rows of inSize 3-channel pixels; it leaves pp empty where that
// kernel does not run (no AVX2, another tap count).
func (pp *pairPlan) build(w []int32, taps []tap, k, inSize int) {
	pp.k, pp.rowLen = 0, 3*inSize
	pp.table, pp.run = pp.table[:0], pp.run[:0]
	if !useAVX2 || k < minPairTaps || k > maxPairTaps || len(taps) < 2 {
		return
	}
	// A pair's loads: 16 bytes from each output's first pixel, 31 for more than 5 taps.
	last := 3*inSize - 16
	if k > 5 {
		last = 3*inSize - 31
	}
	n := len(taps)
	pairs := (n + 1) / 2
	pp.k = k
	pp.table = grow(pp.table, pairs*(2+8*k))
	pp.run = grow(pp.run, pairs+1)
	pp.run[pairs] = 0
	for p := pairs - 1; p >= 0; p-- {
		a, b := 2*p, 2*p+1
		if b == n { // a lone last output: its partner repeats its pixels with zero weights
			b = a
		}
		oa, ob := 3*int(taps[a].start), 3*int(taps[b].start)
		e := pp.table[p*(2+8*k) : (p+1)*(2+8*k)]
		e[0], e[1] = int32(oa), int32(ob)
		wa, wb := w[k*a:k*a+k], w[k*b:k*b+k]
		for j, v := range wa {
			u := wb[j]
			if b == a {
				u = 0
			}
			q := e[2+8*j : 2+8*j+8 : 2+8*j+8]
			q[0], q[1], q[2], q[3] = v, v, v, v
			q[4], q[5], q[6], q[7] = u, u, u, u
		}
		pp.run[p] = 0
		if oa <= last && ob <= last {
			pp.run[p] = pp.run[p+1] + 1
		}
	}
}

// hpass3Vec is hpass3Fixed (3 channels, k taps for every output, weights w[k*i:])
// with AVX2. taps[0] is output i0 of the plan whose pair table is pp. The pairs of
// outputs whose loads stay inside in go through hpair3AVX2, the outputs before and
// after them through hrow3AVX2, which takes one or two at a time, and the last ones,
// whose stores or loads would pass the ends, through the scalar kernel. It reports
// false when it did nothing.
func hpass3Vec[O hout](out []O, in []byte, taps []tap, w []int32, pp *pairPlan, i0, k int) bool {
	n := len(taps)
	if !useAVX2 || n < 2 || k < 1 || len(in) < 3 || len(w) < n*k {
		return false
	}
	out = out[:3*n]
	var z O
	bytesOut := unsafe.Sizeof(z) == 1
	i := 0
	if pp.k == k && len(in) >= pp.rowLen {
		// The pairs start at an even output of the plan; an odd first one goes alone.
		lead := i0 & 1
		p0 := (i0 + lead) / 2
		pairs := (n - 1 - lead) / 2 // the last output is never in a pair: stores pass it
		if pairs > 0 && p0+pairs < len(pp.run) {
			pairs = min(pairs, int(pp.run[p0]))
			if lead == 1 && pairs > 0 {
				i = hrow3AVX2(unsafe.Pointer(unsafe.SliceData(out)), unsafe.SliceData(in), unsafe.SliceData(taps),
					unsafe.SliceData(w), k, 1, len(in)-2, bytesOut)
			}
			if i == lead && pairs > 0 {
				hpair3AVX2(unsafe.Pointer(&out[3*i]), unsafe.SliceData(in), &pp.table[p0*(2+8*k)], k, pairs, bytesOut)
				i += 2 * pairs
			}
		}
	}
	if i < n-1 {
		i += hrow3AVX2(unsafe.Pointer(&out[3*i]), unsafe.SliceData(in), &taps[i], &w[k*i], k, n-1-i, len(in)-2, bytesOut)
	}
	for ; i < n; i++ {
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
	// useAVX512 selects chw3f32AVX512 (8 pixels per group) over chw3f32AVX2; tests
	// switch it off to cover the AVX2 kernel on this machine too.
	useAVX512 = cpu.X86.HasAVX512F
)

//go:noescape
func chw3f32AVX512(d0, d1, d2 unsafe.Pointer, px *byte, groups int, coef *[6]float64, mirror, half bool)

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
// (affineCoef checked them): groups of four pixels with AVX2 and FMA, or eight with
// AVX-512, the few whose loads would pass the row's end through the tables. It reports
// false when it did nothing.
func chw3F32Vec[T uint16 | uint32](d0, d1, d2 []T, px []byte, t0, t1, t2 *[256]T, coef *[6]float64, mirror bool) bool {
	n := len(d0)
	var z T
	half := unsafe.Sizeof(z) == 2
	if !useAVX2 || !hasFMA || n < 8 || half && !hasF16C {
		return false
	}
	d1, d2, px = d1[:n], d2[:n], px[:3*n]
	// A group is G pixels, 3*G bytes apart, whose loads read span bytes.
	wide := useAVX512 && n >= 16
	G, span := 4, 16
	if wide {
		G, span = 8, 28
	}
	if !mirror {
		g := (3*n-span)/(3*G) + 1 // groups whose loads stay in px
		chw3f32(wide, unsafe.Pointer(&d0[0]), unsafe.Pointer(&d1[0]), unsafe.Pointer(&d2[0]), &px[0], g, coef, false, half)
		k := G * g
		chw3(d0[k:], d1[k:], d2[k:], px[3*k:], t0, t1, t2, false)
		return true
	}
	// Output k shows input pixel n-1-k; the group of outputs k..k+G-1 loads from input
	// pixel n-G-k on, reading 4 bytes past pixel n-1-k: inside px from k = 2 on.
	const k0 = 2
	g := (n-G-k0)/G + 1
	chw3f32(wide, unsafe.Pointer(&d0[k0]), unsafe.Pointer(&d1[k0]), unsafe.Pointer(&d2[k0]), &px[3*(n-G-k0)], g, coef, true, half)
	chw3(d0[:k0], d1[:k0], d2[:k0], px[3*(n-k0):], t0, t1, t2, true)
	k := k0 + G*g
	chw3(d0[k:], d1[k:], d2[k:], px[:3*(n-k)], t0, t1, t2, true)
	return true
}

// chw3f32 calls chw3f32AVX512 (wide) or chw3f32AVX2 directly: through a func value
// the arguments would escape (//go:noescape does not pass through it).
func chw3f32(wide bool, d0, d1, d2 unsafe.Pointer, px *byte, groups int, coef *[6]float64, mirror, half bool) {
	if wide {
		chw3f32AVX512(d0, d1, d2, px, groups, coef, mirror, half)
	} else {
		chw3f32AVX2(d0, d1, d2, px, groups, coef, mirror, half)
	}
}
