package imaging

// Horizontal kernels for 3-channel images with a fixed tap count (axisPlan.fixed):
// fully unrolled, so that the only limit is the multiplier. The bodies differ only in
// their length. The unrolled kernels serve filters without negative weights (the
// triangle filter of INTERP_LINEAR and INTERP_TRIANGULAR), whose sums cannot leave
// 0..255 and need no clamping.

// hpass3Fixed dispatches on the tap count; it reports false when no kernel fits.
func hpass3Fixed[O hout](out []O, in []byte, taps []tap, w []int32, k int, nonNeg bool) bool {
	if !nonNeg {
		if k%4 != 0 {
			return false
		}
		hpass3x4n(out, in, taps, w, k)
		return true
	}
	switch k {
	case 1:
		hpass3x1(out, in, taps, w)
	case 2:
		hpass3x2(out, in, taps, w)
	case 3:
		hpass3x3(out, in, taps, w)
	case 4:
		hpass3x4(out, in, taps, w)
	case 5:
		hpass3x5(out, in, taps, w)
	case 6:
		hpass3x6(out, in, taps, w)
	case 7:
		hpass3x7(out, in, taps, w)
	case 8:
		hpass3x8(out, in, taps, w)
	default:
		if k%4 != 0 {
			return false
		}
		hpass3x4n(out, in, taps, w, k)
	}
	return true
}

func hpass3x1[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:1*len(taps)]
	for i, t := range taps {
		k := w[1*i : 1*i+1 : 1*i+1]
		p := in[3*int(t.start):]
		p = p[:3:3]
		s0 := fixedHalf + k[0]*int32(p[0])
		s1 := fixedHalf + k[0]*int32(p[1])
		s2 := fixedHalf + k[0]*int32(p[2])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x2[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:2*len(taps)]
	for i, t := range taps {
		k := w[2*i : 2*i+2 : 2*i+2]
		p := in[3*int(t.start):]
		p = p[:6:6]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x3[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:3*len(taps)]
	for i, t := range taps {
		k := w[3*i : 3*i+3 : 3*i+3]
		p := in[3*int(t.start):]
		p = p[:9:9]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x4[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:4*len(taps)]
	for i, t := range taps {
		k := w[4*i : 4*i+4 : 4*i+4]
		p := in[3*int(t.start):]
		p = p[:12:12]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6]) + k[3]*int32(p[9])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7]) + k[3]*int32(p[10])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8]) + k[3]*int32(p[11])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x5[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:5*len(taps)]
	for i, t := range taps {
		k := w[5*i : 5*i+5 : 5*i+5]
		p := in[3*int(t.start):]
		p = p[:15:15]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6]) + k[3]*int32(p[9]) + k[4]*int32(p[12])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7]) + k[3]*int32(p[10]) + k[4]*int32(p[13])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8]) + k[3]*int32(p[11]) + k[4]*int32(p[14])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x6[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:6*len(taps)]
	for i, t := range taps {
		k := w[6*i : 6*i+6 : 6*i+6]
		p := in[3*int(t.start):]
		p = p[:18:18]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6]) + k[3]*int32(p[9]) + k[4]*int32(p[12]) + k[5]*int32(p[15])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7]) + k[3]*int32(p[10]) + k[4]*int32(p[13]) + k[5]*int32(p[16])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8]) + k[3]*int32(p[11]) + k[4]*int32(p[14]) + k[5]*int32(p[17])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x7[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:7*len(taps)]
	for i, t := range taps {
		k := w[7*i : 7*i+7 : 7*i+7]
		p := in[3*int(t.start):]
		p = p[:21:21]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6]) + k[3]*int32(p[9]) + k[4]*int32(p[12]) + k[5]*int32(p[15]) + k[6]*int32(p[18])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7]) + k[3]*int32(p[10]) + k[4]*int32(p[13]) + k[5]*int32(p[16]) + k[6]*int32(p[19])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8]) + k[3]*int32(p[11]) + k[4]*int32(p[14]) + k[5]*int32(p[17]) + k[6]*int32(p[20])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

func hpass3x8[O hout](out []O, in []byte, taps []tap, w []int32) {
	out = out[:3*len(taps)]
	w = w[:8*len(taps)]
	for i, t := range taps {
		k := w[8*i : 8*i+8 : 8*i+8]
		p := in[3*int(t.start):]
		p = p[:24:24]
		s0 := fixedHalf + k[0]*int32(p[0]) + k[1]*int32(p[3]) + k[2]*int32(p[6]) + k[3]*int32(p[9]) + k[4]*int32(p[12]) + k[5]*int32(p[15]) + k[6]*int32(p[18]) + k[7]*int32(p[21])
		s1 := fixedHalf + k[0]*int32(p[1]) + k[1]*int32(p[4]) + k[2]*int32(p[7]) + k[3]*int32(p[10]) + k[4]*int32(p[13]) + k[5]*int32(p[16]) + k[6]*int32(p[19]) + k[7]*int32(p[22])
		s2 := fixedHalf + k[0]*int32(p[2]) + k[1]*int32(p[5]) + k[2]*int32(p[8]) + k[3]*int32(p[11]) + k[4]*int32(p[14]) + k[5]*int32(p[17]) + k[6]*int32(p[20]) + k[7]*int32(p[23])
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(uint32(s0)>>precisionBits), O(uint32(s1)>>precisionBits), O(uint32(s2)>>precisionBits)
	}
}

// hpass3x4n handles tap counts that are multiples of 4 (strong downscaling), four taps
// per loop iteration.
func hpass3x4n[O hout](out []O, in []byte, taps []tap, w []int32, n int) {
	out = out[:3*len(taps)]
	for i, t := range taps {
		k := w[n*i : n*i+n]
		p := in[3*int(t.start):]
		p = p[:3*n]
		s0, s1, s2 := int32(fixedHalf), int32(fixedHalf), int32(fixedHalf)
		for len(k) >= 4 && len(p) >= 12 {
			k0, k1, k2, k3 := k[0], k[1], k[2], k[3]
			s0 += k0*int32(p[0]) + k1*int32(p[3]) + k2*int32(p[6]) + k3*int32(p[9])
			s1 += k0*int32(p[1]) + k1*int32(p[4]) + k2*int32(p[7]) + k3*int32(p[10])
			s2 += k0*int32(p[2]) + k1*int32(p[5]) + k2*int32(p[8]) + k3*int32(p[11])
			k, p = k[4:], p[12:]
		}
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0], o[1], o[2] = O(clip8(s0)), O(clip8(s1)), O(clip8(s2))
	}
}
