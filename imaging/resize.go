package imaging

import (
	"fmt"
	"unsafe"
)

// Resize resamples src (SrcW x SrcH, c interleaved uint8 channels) into dst
// (DstW x DstH x c) according to p. s provides the intermediate buffers; with a nil s
// they are allocated for this call.
func (p *ResizePlan) Resize(dst, src []byte, c int, s *Scratch) error {
	return p.ResizeStrided(dst, src, c, p.SrcW*c, s)
}

// ResizeStrided is Resize of a source whose rows start stride bytes apart (stride >=
// SrcW*c): a window of a larger image, resampled as an image of its own (PIL's crop then
// resize: the filters never read outside it).
func (p *ResizePlan) ResizeStrided(dst, src []byte, c, stride int, s *Scratch) error {
	if err := p.checkSource(src, c); err != nil {
		return err
	}
	if stride < p.SrcW*c {
		return fmt.Errorf("resize: source stride %d is less than a row of %dx%d bytes", stride, p.SrcW, c)
	}
	if want := (p.SrcH-1)*stride + p.SrcW*c; len(src) < want {
		return fmt.Errorf("resize: input buffer has %d bytes, expected %d (%d rows %d bytes apart)", len(src), want, p.SrcH, stride)
	}
	ds := p.DstW * c
	if len(dst) < ds*p.DstH {
		return fmt.Errorf("resize: output buffer has %d bytes, expected %d (%dx%dx%d)", len(dst), ds*p.DstH, p.DstW, p.DstH, c)
	}
	if s == nil {
		s = new(Scratch)
	}
	var r region
	r.begin(p, src, c, stride, 0, p.DstW, 0, p.DstH, s)
	for y := 0; y < p.DstH; y++ {
		r.row(y, dst[y*ds:(y+1)*ds], s)
	}
	return nil
}

func (p *ResizePlan) checkSource(src []byte, c int) error {
	if p.err != nil {
		return p.err
	}
	if c < 1 || c > 64 {
		return fmt.Errorf("resize: %d channels: expected 1..64", c)
	}
	if want := p.SrcW * p.SrcH * c; len(src) < want {
		return fmt.Errorf("resize: input buffer has %d bytes, expected %d (%dx%dx%d)", len(src), want, p.SrcW, p.SrcH, c)
	}
	return nil
}

// region resamples the output columns [x0, x1) of the output rows requested through
// row, in PIL's order: horizontal pass first, its result rounded to uint8, then the
// vertical pass. Horizontally resampled rows are produced on demand into a small ring
// (a few rows, so it stays in L1) as the vertical filter slides down (or up, for a
// flipped ROI); each source row is resampled once.
type region struct {
	p         *ResizePlan
	c         int
	src       []byte
	srcStride int // bytes from one source row to the next
	srcRow    int // bytes of a source row (SrcW*c)
	x0        int
	rowLen    int // (x1-x0)*c

	// Vertical pass over bytes (horizontal identity, or the big-endian fallback): row
	// r starts at vOff + r*vStride in vbuf.
	vbuf    []byte
	vOff    int
	vStride int

	// Vertical pass over the ring. A ring row holds rowLen uint32 elements; the
	// vertical kernels read them in pairs as uint64 so that one multiplication
	// weighs two elements.
	ring   []uint64
	ring32 []uint32
	tags   []int32 // source row held by each ring slot, -1 if none
	words  int     // uint64 words per ring row
	mask   int     // ring slots - 1
	inRing bool
}

// pairedVertical enables the ring and the paired vertical kernels; their lane order
// assumes a little-endian machine. Tests switch it off to cover the fallback.
var pairedVertical = littleEndian

func (r *region) begin(p *ResizePlan, src []byte, c, stride, x0, x1, y0, y1 int, s *Scratch) {
	*r = region{p: p, c: c, src: src, srcStride: stride, srcRow: p.SrcW * c, x0: x0, rowLen: (x1 - x0) * c}
	if p.v.kind != axisFilter || y0 >= y1 {
		return
	}
	if p.h.kind == axisIdentity {
		r.vbuf, r.vOff, r.vStride = src, x0*c, r.srcStride
		return
	}
	taps := p.v.taps[y0:y1]
	if pairedVertical {
		n := 1
		for _, t := range taps {
			n = max(n, int(t.n))
		}
		slots := 1
		for slots < n {
			slots *= 2
		}
		r.inRing, r.mask, r.words = true, slots-1, (r.rowLen+1)/2
		s.ring = grow(s.ring, slots*r.words)
		s.tags = grow(s.tags, slots)
		for i := range s.tags {
			s.tags[i] = -1
		}
		r.ring, r.tags = s.ring, s.tags
		r.ring32 = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(r.ring))), 2*len(r.ring))
		return
	}
	// Fallback: resample every source row under the requested rows' filters up front.
	rA, rB := int(taps[0].start), 0
	for _, t := range taps {
		rA = min(rA, int(t.start))
		rB = max(rB, int(t.start+t.n))
	}
	s.tmp = grow(s.tmp, (rB-rA)*r.rowLen)
	for y := rA; y < rB; y++ {
		o := (y - rA) * r.rowLen
		hpass(s.tmp[o:o+r.rowLen], r.line(y), &p.h, x0, x1, c)
	}
	r.vbuf, r.vOff, r.vStride = s.tmp, -rA*r.rowLen, r.rowLen
}

// row writes output row y (columns x0..x1) to out, which has rowLen bytes.
func (r *region) row(y int, out []byte, s *Scratch) {
	p := r.p
	switch {
	case p.v.kind == axisIdentity:
		r.hrow(out, r.line(y))
	case p.v.kind == axisNearest:
		sy := int(p.v.idx[y])
		r.hrow(out, r.line(sy))
	case r.inRing:
		r.vring(out, p.v.taps[y], p.v.w, s)
	default:
		r.vrow(out, p.v.taps[y], p.v.w, s)
	}
}

// line is source row y.
func (r *region) line(y int) []byte {
	o := y * r.srcStride
	return r.src[o : o+r.srcRow]
}

// hrow resamples one source row horizontally straight into out.
func (r *region) hrow(out, in []byte) {
	p, c := r.p, r.c
	n := len(out) / c
	switch p.h.kind {
	case axisIdentity:
		copy(out, in[r.x0*c:r.x0*c+len(out)])
	case axisNearest:
		gather(out, in, p.h.idx[r.x0:r.x0+n], c)
	default:
		hpass(out, in, &p.h, r.x0, r.x0+n, c)
	}
}

// ringLine returns source row y resampled horizontally, computing it if the ring
// does not hold it.
func (r *region) ringLine(y int) []uint64 {
	slot := y & r.mask
	if int(r.tags[slot]) != y {
		p := r.p
		n := r.rowLen / r.c
		o := slot * 2 * r.words
		hpass(r.ring32[o:o+r.rowLen], r.line(y), &p.h, r.x0, r.x0+n, r.c)
		r.tags[slot] = int32(y)
	}
	return r.ring[slot*r.words : (slot+1)*r.words : (slot+1)*r.words]
}

// vring runs the vertical filter over ring rows, two elements per multiplication.
func (r *region) vring(out []byte, t tap, w []int32, s *Scratch) {
	k := w[t.off : t.off+t.n]
	st := int(t.start)
	if useAVX2 && len(out) >= 16 && len(k) <= maxVecTaps {
		// The row pointers go on the stack, which Go zeroes first: a small array for
		// the common tap counts keeps that cheap.
		if len(k) <= 8 {
			var rows [8]unsafe.Pointer
			r.vfilt(out, rows[:len(k)], st, k)
		} else {
			var rows [maxVecTaps]unsafe.Pointer
			r.vfilt(out, rows[:len(k)], st, k)
		}
		return
	}
	if r.p.v.nonNeg {
		switch len(k) {
		case 2:
			vpairPos2(out, r.ringLine(st), r.ringLine(st+1), uint64(k[0]), uint64(k[1]))
			return
		case 3:
			vpairPos3(out, r.ringLine(st), r.ringLine(st+1), r.ringLine(st+2), uint64(k[0]), uint64(k[1]), uint64(k[2]))
			return
		case 4:
			vpairPos4(out, r.ringLine(st), r.ringLine(st+1), r.ringLine(st+2), r.ringLine(st+3),
				uint64(k[0]), uint64(k[1]), uint64(k[2]), uint64(k[3]))
			return
		}
	}
	switch len(k) {
	case 1:
		vpair2(out, r.ringLine(st), r.ringLine(st), int64(k[0]), 0)
	case 2:
		vpair2(out, r.ringLine(st), r.ringLine(st+1), int64(k[0]), int64(k[1]))
	case 3:
		vpair3(out, r.ringLine(st), r.ringLine(st+1), r.ringLine(st+2), int64(k[0]), int64(k[1]), int64(k[2]))
	case 4:
		vpair4(out, r.ringLine(st), r.ringLine(st+1), r.ringLine(st+2), r.ringLine(st+3),
			int64(k[0]), int64(k[1]), int64(k[2]), int64(k[3]))
	default:
		// Rows are fetched one at a time here; in the cases above all n rows are
		// held at once, which is safe because the ring has at least n slots and
		// consecutive rows fall in distinct slots.
		s.acc64 = grow(s.acc64, r.words)
		acc := s.acc64
		for i := range acc {
			acc[i] = pairHalf
		}
		for i, wk := range k {
			vpairAcc(acc, r.ringLine(st+i), int64(wk))
		}
		unpairAll(out, acc)
	}
}

// vfilt runs vfiltVec over ring rows st.. (len(rows) of them, all held at once, as in
// the unrolled cases of vring), using rows for their pointers.
func (r *region) vfilt(out []byte, rows []unsafe.Pointer, st int, k []int32) {
	for i := range rows {
		rows[i] = unsafe.Pointer(unsafe.SliceData(r.ringLine(st + i)))
	}
	vfiltVec(out, rows, k)
}

// Paired lanes: a uint64 word holds element 2j in bits 0..31 and element 2j+1 in bits
// 32..63. Weighted sums stay exact in int64: the low lane's sum fits in an int32, so
// it is the word's low 32 bits read as signed, and the high lane's sum is what remains
// after subtracting it. Negative weights (cubic, Lanczos) are fine.
const pairHalf = fixedHalf | fixedHalf<<32

func unpair(acc int64) (lo, hi byte) {
	l := int32(acc)
	return clip8(l), clip8(int32((acc - int64(l)) >> 32))
}

func vpair2(out []byte, r0, r1 []uint64, w0, w1 int64) {
	n := len(out) / 2
	r0, r1 = r0[:(len(out)+1)/2], r1[:(len(out)+1)/2]
	for j := 0; j < n; j++ {
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = unpair(pairHalf + w0*int64(r0[j]) + w1*int64(r1[j]))
	}
	if len(out)&1 != 0 {
		out[len(out)-1], _ = unpair(pairHalf + w0*int64(r0[n]) + w1*int64(r1[n]))
	}
}

func vpair3(out []byte, r0, r1, r2 []uint64, w0, w1, w2 int64) {
	n := len(out) / 2
	m := (len(out) + 1) / 2
	r0, r1, r2 = r0[:m], r1[:m], r2[:m]
	for j := 0; j < n; j++ {
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = unpair(pairHalf + w0*int64(r0[j]) + w1*int64(r1[j]) + w2*int64(r2[j]))
	}
	if len(out)&1 != 0 {
		out[len(out)-1], _ = unpair(pairHalf + w0*int64(r0[n]) + w1*int64(r1[n]) + w2*int64(r2[n]))
	}
}

func vpair4(out []byte, r0, r1, r2, r3 []uint64, w0, w1, w2, w3 int64) {
	n := len(out) / 2
	m := (len(out) + 1) / 2
	r0, r1, r2, r3 = r0[:m], r1[:m], r2[:m], r3[:m]
	for j := 0; j < n; j++ {
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = unpair(pairHalf + w0*int64(r0[j]) + w1*int64(r1[j]) + w2*int64(r2[j]) + w3*int64(r3[j]))
	}
	if len(out)&1 != 0 {
		out[len(out)-1], _ = unpair(pairHalf + w0*int64(r0[n]) + w1*int64(r1[n]) + w2*int64(r2[n]) + w3*int64(r3[n]))
	}
}

// With non-negative weights each lane's sum lies in 0 .. 255.5*2^22, so the lanes
// never borrow from each other and the results need no clamping.
func vpairPos2(out []byte, r0, r1 []uint64, w0, w1 uint64) {
	n := len(out) / 2
	m := (len(out) + 1) / 2
	r0, r1 = r0[:m], r1[:m]
	for j := 0; j < n; j++ {
		a := pairHalf + w0*r0[j] + w1*r1[j]
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = byte(uint32(a)>>precisionBits), byte(a>>(32+precisionBits))
	}
	if len(out)&1 != 0 {
		out[len(out)-1] = byte(uint32(pairHalf+w0*r0[n]+w1*r1[n]) >> precisionBits)
	}
}

func vpairPos3(out []byte, r0, r1, r2 []uint64, w0, w1, w2 uint64) {
	n := len(out) / 2
	m := (len(out) + 1) / 2
	r0, r1, r2 = r0[:m], r1[:m], r2[:m]
	for j := 0; j < n; j++ {
		a := pairHalf + w0*r0[j] + w1*r1[j] + w2*r2[j]
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = byte(uint32(a)>>precisionBits), byte(a>>(32+precisionBits))
	}
	if len(out)&1 != 0 {
		out[len(out)-1] = byte(uint32(pairHalf+w0*r0[n]+w1*r1[n]+w2*r2[n]) >> precisionBits)
	}
}

func vpairPos4(out []byte, r0, r1, r2, r3 []uint64, w0, w1, w2, w3 uint64) {
	n := len(out) / 2
	m := (len(out) + 1) / 2
	r0, r1, r2, r3 = r0[:m], r1[:m], r2[:m], r3[:m]
	for j := 0; j < n; j++ {
		a := pairHalf + w0*r0[j] + w1*r1[j] + w2*r2[j] + w3*r3[j]
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = byte(uint32(a)>>precisionBits), byte(a>>(32+precisionBits))
	}
	if len(out)&1 != 0 {
		out[len(out)-1] = byte(uint32(pairHalf+w0*r0[n]+w1*r1[n]+w2*r2[n]+w3*r3[n]) >> precisionBits)
	}
}

func vpairAcc(acc []int64, r0 []uint64, w0 int64) {
	r0 = r0[:len(acc)]
	for j := range acc {
		acc[j] += w0 * int64(r0[j])
	}
}

func unpairAll(out []byte, acc []int64) {
	n := len(out) / 2
	acc = acc[:(len(out)+1)/2]
	for j := 0; j < n; j++ {
		o := out[2*j : 2*j+2 : 2*j+2]
		o[0], o[1] = unpair(acc[j])
	}
	if len(out)&1 != 0 {
		out[len(out)-1], _ = unpair(acc[n])
	}
}

func (r *region) vline(start int) []byte {
	o := r.vOff + start*r.vStride
	return r.vbuf[o : o+r.rowLen : o+r.rowLen]
}

// vrow runs the vertical filter for one output row over bytes. The weighted rows are
// summed in one sweep for up to four taps (the common case: downscaling by less than
// 2 with a triangle filter), which keeps the sums in registers.
func (r *region) vrow(out []byte, t tap, w []int32, s *Scratch) {
	k := w[t.off : t.off+t.n]
	st := int(t.start)
	switch len(k) {
	case 1:
		if k[0] == fixedOne {
			copy(out, r.vline(st))
			return
		}
		vsum2(out, r.vline(st), r.vline(st), k[0], 0)
	case 2:
		vsum2(out, r.vline(st), r.vline(st+1), k[0], k[1])
	case 3:
		vsum3(out, r.vline(st), r.vline(st+1), r.vline(st+2), k[0], k[1], k[2])
	case 4:
		vsum4(out, r.vline(st), r.vline(st+1), r.vline(st+2), r.vline(st+3), k[0], k[1], k[2], k[3])
	default:
		s.acc = grow(s.acc, len(out))
		acc := s.acc
		vacc4(acc, r.vline(st), r.vline(st+1), r.vline(st+2), r.vline(st+3), k[0], k[1], k[2], k[3])
		for i := 4; i < len(k)-1; i++ {
			vacc1(acc, r.vline(st+i), k[i])
		}
		vfinal(out, acc, r.vline(st+len(k)-1), k[len(k)-1])
	}
}

func clip8(v int32) byte {
	v >>= precisionBits
	if uint32(v) > 255 {
		if v < 0 {
			return 0
		}
		return 255
	}
	return byte(v)
}

func vsum2(out, r0, r1 []byte, w0, w1 int32) {
	r0, r1 = r0[:len(out)], r1[:len(out)]
	for j := range out {
		out[j] = clip8(fixedHalf + w0*int32(r0[j]) + w1*int32(r1[j]))
	}
}

func vsum3(out, r0, r1, r2 []byte, w0, w1, w2 int32) {
	r0, r1, r2 = r0[:len(out)], r1[:len(out)], r2[:len(out)]
	for j := range out {
		out[j] = clip8(fixedHalf + w0*int32(r0[j]) + w1*int32(r1[j]) + w2*int32(r2[j]))
	}
}

func vsum4(out, r0, r1, r2, r3 []byte, w0, w1, w2, w3 int32) {
	r0, r1, r2, r3 = r0[:len(out)], r1[:len(out)], r2[:len(out)], r3[:len(out)]
	for j := range out {
		out[j] = clip8(fixedHalf + w0*int32(r0[j]) + w1*int32(r1[j]) + w2*int32(r2[j]) + w3*int32(r3[j]))
	}
}

func vacc4(acc []int32, r0, r1, r2, r3 []byte, w0, w1, w2, w3 int32) {
	r0, r1, r2, r3 = r0[:len(acc)], r1[:len(acc)], r2[:len(acc)], r3[:len(acc)]
	for j := range acc {
		acc[j] = fixedHalf + w0*int32(r0[j]) + w1*int32(r1[j]) + w2*int32(r2[j]) + w3*int32(r3[j])
	}
}

func vacc1(acc []int32, r0 []byte, w0 int32) {
	r0 = r0[:len(acc)]
	for j := range acc {
		acc[j] += w0 * int32(r0[j])
	}
}

func vfinal(out []byte, acc []int32, r0 []byte, w0 int32) {
	acc, r0 = acc[:len(out)], r0[:len(out)]
	for j := range out {
		out[j] = clip8(acc[j] + w0*int32(r0[j]))
	}
}

// hout is where the horizontal pass writes: bytes for final output, uint32 elements
// for the ring that feeds the paired vertical kernels.
type hout interface{ ~uint8 | ~uint32 }

// hpass convolves one source row with the horizontal taps of outputs [x0, x1) of axis
// a; out has (x1-x0)*c elements.
func hpass[O hout](out []O, in []byte, a *axisPlan, x0, x1, c int) {
	taps, w, fixed := a.taps[x0:x1], a.w, a.fixed
	switch c {
	case 3:
		if fixed > 0 && len(taps) > 0 {
			// The fixed-count kernels index weights from the first tap's offset.
			off := int(taps[0].off)
			if hpass3Vec(out, in, taps, w[off:], &a.pairs, x0, fixed) || hpass3Fixed(out, in, taps, w[off:], fixed, a.nonNeg) {
				return
			}
		}
		hpass3(out, in, taps, w)
	case 1:
		hpass1(out, in, taps, w)
	case 4:
		if fixed > 0 && len(taps) > 0 && hpass4Vec(out, in, taps, w[taps[0].off:], w, fixed) {
			return
		}
		hpass4(out, in, taps, w)
	default:
		hpassN(out, in, taps, w, c)
	}
}

func hpass3[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	for i, t := range taps {
		k := w[t.off : t.off+t.n]
		p := in[3*t.start : 3*(t.start+t.n)]
		s0, s1, s2 := int32(fixedHalf), int32(fixedHalf), int32(fixedHalf)
		for len(k) > 0 && len(p) >= 3 {
			wk := k[0]
			s0 += wk * int32(p[0])
			s1 += wk * int32(p[1])
			s2 += wk * int32(p[2])
			k, p = k[1:], p[3:]
		}
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(clip8(s0)), O(clip8(s1)), O(clip8(s2))
	}
}

func hpass1[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:len(taps)]
	for i, t := range taps {
		k := w[t.off : t.off+t.n]
		p := in[t.start : t.start+t.n]
		p = p[:len(k)]
		s := int32(fixedHalf)
		for j, wk := range k {
			s += wk * int32(p[j])
		}
		out[i] = O(clip8(s))
	}
}

func hpass4[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:4*len(taps)]
	for i, t := range taps {
		k := w[t.off : t.off+t.n]
		p := in[4*t.start : 4*(t.start+t.n)]
		s0, s1, s2, s3 := int32(fixedHalf), int32(fixedHalf), int32(fixedHalf), int32(fixedHalf)
		for len(k) > 0 && len(p) >= 4 {
			wk := k[0]
			s0 += wk * int32(p[0])
			s1 += wk * int32(p[1])
			s2 += wk * int32(p[2])
			s3 += wk * int32(p[3])
			k, p = k[1:], p[4:]
		}
		o := out[4*i : 4*i+4 : 4*i+4]
		o[0], o[1], o[2], o[3] = O(clip8(s0)), O(clip8(s1)), O(clip8(s2)), O(clip8(s3))
	}
}

func hpassN[O hout](out []O, in []byte, taps []tap, w []int32, c int) {
	for i, t := range taps {
		k := w[t.off : t.off+t.n]
		base := int(t.start) * c
		for ch := 0; ch < c; ch++ {
			s := int32(fixedHalf)
			for j, wk := range k {
				s += wk * int32(in[base+j*c+ch])
			}
			out[i*c+ch] = O(clip8(s))
		}
	}
}

// gather copies the source pixels idx[i] of one row to out (nearest neighbour).
func gather(out, in []byte, idx []int32, c int) {
	switch c {
	case 3:
		out = out[:3*len(idx)]
		for i, x := range idx {
			q := in[3*x : 3*x+3 : 3*x+3]
			o := out[3*i : 3*i+3 : 3*i+3]
			o[0], o[1], o[2] = q[0], q[1], q[2]
		}
	case 1:
		out = out[:len(idx)]
		for i, x := range idx {
			out[i] = in[x]
		}
	default:
		for i, x := range idx {
			copy(out[i*c:(i+1)*c], in[int(x)*c:(int(x)+1)*c])
		}
	}
}
