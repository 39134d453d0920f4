package imaging

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/godali/godali/internal/float16"
)

// DType is the element type of crop_mirror_normalize's output.
type DType int

// Output element types; the zero value is DALI's default, FLOAT.
const (
	Float32 DType = iota
	Float16
	UInt8
	Int8
)

var dtypeNames = [...]string{Float32: "FLOAT", Float16: "FLOAT16", UInt8: "UINT8", Int8: "INT8"}

// String returns DALI's name for the type ("FLOAT", "FLOAT16", "UINT8", "INT8").
func (d DType) String() string {
	if d >= 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Size is the element size in bytes, 0 for an unknown type.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float16:
		return 2
	case UInt8, Int8:
		return 1
	}
	return 0
}

// ParseDType accepts DALI's names, with or without a "types." or "DALIDataType." prefix
// and in any case; "FLOAT32" and "HALF" are accepted as aliases.
func ParseDType(s string) (DType, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if i := strings.LastIndexByte(u, '.'); i >= 0 {
		u = u[i+1:]
	}
	switch u {
	case "FLOAT", "FLOAT32":
		return Float32, nil
	case "FLOAT16", "HALF":
		return Float16, nil
	case "UINT8":
		return UInt8, nil
	case "INT8":
		return Int8, nil
	}
	return 0, fmt.Errorf("dtype %q: expected FLOAT, FLOAT16, UINT8 or INT8", s)
}

// NormalizeParams describe crop_mirror_normalize:
// out = (in - Mean[c]) / Std[c] * Scale + Shift, computed in float64 and rounded to
// float32; FLOAT16 rounds that to half (nearest, ties to even), as DALI converts its
// float results; integer types round the float64 value half away from zero and
// saturate.
type NormalizeParams struct {
	// Mean and Std hold one value per channel, or one value for all channels; empty
	// means 0 and 1 (DALI's defaults).
	Mean, Std []float32
	// Scale and Shift apply after normalisation. Set Scale to 1 for DALI's default; the
	// zero value really multiplies by 0.
	Scale, Shift float32
	Out          DType
	// CHW selects planar output; otherwise HWC.
	CHW bool
	// PadChannels pads the channel count to the next power of two with zeros (DALI's
	// pad_output).
	PadChannels bool
	// Mirror flips the output window horizontally.
	Mirror bool
	// CropX, CropY, CropW, CropH is the window in the input image. It may extend past
	// the image: those output pixels are 0 (DALI's out_of_bounds_policy "pad" with
	// fill value 0).
	CropX, CropY, CropW, CropH int
}

// OutChannels is the number of output channels for c input channels.
func (np *NormalizeParams) OutChannels(c int) int {
	if np.PadChannels && c > 0 {
		return 1 << bits.Len(uint(c-1))
	}
	return c
}

// OutBytes is the size of the output buffer for c input channels.
func (np *NormalizeParams) OutBytes(c int) int {
	return np.CropW * np.CropH * np.OutChannels(c) * np.Out.Size()
}

// Check validates the parameters for a w x h x c input and a dst of dstLen bytes.
func (np *NormalizeParams) Check(w, h, c, dstLen int) error {
	if np.Out.Size() == 0 {
		return fmt.Errorf("crop_mirror_normalize: dtype %v: expected FLOAT, FLOAT16, UINT8 or INT8", np.Out)
	}
	if w < 1 || h < 1 || w > maxDim || h > maxDim || c < 1 || c > 64 {
		return fmt.Errorf("crop_mirror_normalize: input shape %dx%dx%d: expected 1..%d per side and 1..64 channels", w, h, c, maxDim)
	}
	if np.CropW < 1 || np.CropH < 1 || np.CropW > maxDim || np.CropH > maxDim {
		return fmt.Errorf("crop_mirror_normalize: crop %dx%d: expected 1..%d per side", np.CropW, np.CropH, maxDim)
	}
	if abs(np.CropX) > maxDim || abs(np.CropY) > maxDim {
		return fmt.Errorf("crop_mirror_normalize: crop position (%d, %d): expected within +-%d", np.CropX, np.CropY, maxDim)
	}
	if n := len(np.Mean); n > 1 && n != c {
		return fmt.Errorf("crop_mirror_normalize: mean has %d values: expected 1 or %d (one per channel)", n, c)
	}
	if n := len(np.Std); n > 1 && n != c {
		return fmt.Errorf("crop_mirror_normalize: std has %d values: expected 1 or %d (one per channel)", n, c)
	}
	for _, v := range np.Mean {
		if !finite(v) {
			return fmt.Errorf("crop_mirror_normalize: mean %v: expected finite values", np.Mean)
		}
	}
	for _, v := range np.Std {
		if !finite(v) || v == 0 {
			return fmt.Errorf("crop_mirror_normalize: std %v: expected finite non-zero values", np.Std)
		}
	}
	if !finite(np.Scale) || !finite(np.Shift) {
		return fmt.Errorf("crop_mirror_normalize: scale %v, shift %v: expected finite values", np.Scale, np.Shift)
	}
	if want := np.OutBytes(c); dstLen < want {
		return fmt.Errorf("crop_mirror_normalize: output buffer has %d bytes, expected %d (%dx%dx%d %v)", dstLen, want, np.CropW, np.CropH, np.OutChannels(c), np.Out)
	}
	return nil
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// CropMirrorNormalize crops, optionally mirrors and normalises a w x h x c uint8 HWC
// image into dst (np.OutBytes(c) bytes, layout and type from np). It does not allocate
// for images of up to 4 channels.
func CropMirrorNormalize(dst []byte, src []byte, w, h, c int, np *NormalizeParams) error {
	if err := np.Check(w, h, c, len(dst)); err != nil {
		return err
	}
	if len(src) < w*h*c {
		return fmt.Errorf("crop_mirror_normalize: input buffer has %d bytes, expected %d (%dx%dx%d)", len(src), w*h*c, w, h, c)
	}
	if err := checkAlign(dst, np.Out); err != nil {
		return err
	}
	switch np.Out.Size() {
	case 4:
		cmn(asElems[uint32](dst), src, w, h, c, np)
	case 2:
		cmn(asElems[uint16](dst), src, w, h, c, np)
	default:
		cmn(dst, src, w, h, c, np)
	}
	return nil
}

func cmn[T elem](dst []T, src []byte, w, h, c int, np *NormalizeParams) {
	var nz normalizer[T]
	nz.init(dst, w, h, c, np)
	stride := w * c
	for oy := nz.yA; oy < nz.yB; oy++ {
		sy := np.CropY + oy
		nz.writeRow(oy, src[sy*stride+nz.cxA*c:sy*stride+nz.cxB*c])
	}
}

// elem is the storage type of one output element: the normaliser writes bit patterns
// from tables, so float32 output is written as uint32 and float16 as uint16.
type elem interface{ ~uint8 | ~uint16 | ~uint32 }

// normalizer writes output rows of the crop window from rows of input pixels, through
// per-channel 256-entry tables that map a uint8 value to the output element's bits.
type normalizer[T elem] struct {
	luts      [4][256]T // channels 0..3
	extra     [][256]T  // channels 4.. (allocated: such images are rare)
	dst       []T
	c, cout   int
	w         int // output width (CropW)
	plane     int // CropW*CropH: elements per CHW plane
	chw       bool
	mirror    bool
	cxA, cxB  int // input columns inside both the image and the window
	yA, yB    int // output rows whose input row is inside the image
	ox0       int // output column written from the first in-bounds input pixel (after mirroring)
	hasPixels bool
	// affine: the float32 (float16) tables of channels 0..2 hold float32(fma(v, coef[ch],
	// coef[3+ch])) (rounded to half) for every v, so that vector code may compute them
	// (affineCoef).
	affine bool
	coef   [6]float64
}

// init fills the tables and zeroes the parts of dst that the rows will not write. The
// tables live inside the normalizer, which callers keep on their stack.
func (nz *normalizer[T]) init(dst []T, w, h, c int, np *NormalizeParams) {
	cout := np.OutChannels(c)
	nz.dst, nz.c, nz.cout, nz.w = dst[:np.CropW*np.CropH*cout], c, cout, np.CropW
	nz.plane, nz.chw, nz.mirror = np.CropW*np.CropH, np.CHW, np.Mirror
	if c > len(nz.luts) {
		nz.extra = make([][256]T, c-len(nz.luts))
	}
	for ch := 0; ch < c; ch++ {
		fillLUT(nz.lut(ch), MeanStd(np.Mean, ch, 0), MeanStd(np.Std, ch, 1), float64(np.Scale), float64(np.Shift), np.Out)
	}
	if c == 3 && np.CHW && (np.Out == Float32 || np.Out == Float16 && hasF16C) && useAVX2 && hasFMA && littleEndian {
		nz.affine = nz.affineCoef(np)
	}
	nz.cxA, nz.cxB = max(np.CropX, 0), min(np.CropX+np.CropW, w)
	nz.yA, nz.yB = max(-np.CropY, 0), min(h-np.CropY, np.CropH)
	if nz.cxA >= nz.cxB || nz.yA >= nz.yB {
		nz.yA, nz.yB = 0, 0
		clear(nz.dst)
		return
	}
	if np.Mirror {
		nz.ox0 = np.CropX + np.CropW - nz.cxB
	} else {
		nz.ox0 = nz.cxA - np.CropX
	}
	inside := nz.cxB-nz.cxA == np.CropW && nz.yB-nz.yA == np.CropH
	switch {
	case !inside:
		clear(nz.dst)
	case nz.chw && cout > c:
		clear(nz.dst[c*nz.plane:])
	}
}

// affineCoef sets coef to the affine map v*a + b (one fused multiply-add in float64,
// rounded to float32) of channels 0..2 and reports whether it gives the float32
// tables' values for all 256 inputs. The tables round (v - mean) / std * scale +
// shift; the two differ only where that value lies within a few float64 ulps of a
// float32 rounding boundary, which the exhaustive check catches (the tables then
// stay in use).
// For FLOAT16 the check converts the fused values with the instruction the kernel
// uses (F16C's, round to nearest even) and compares the halves with the tables'.
func (nz *normalizer[T]) affineCoef(np *NormalizeParams) bool {
	var f32 [256]float32
	var f16 [256]uint16
	for ch := 0; ch < 3; ch++ {
		mean, std := MeanStd(np.Mean, ch, 0), MeanStd(np.Std, ch, 1)
		a := float64(np.Scale) / std
		b := float64(np.Shift) - mean*a
		lut := nz.lut(ch)
		for v := range lut {
			f := float32(math.FMA(float64(v), a, b))
			switch np.Out {
			case Float32:
				if uint32(lut[v]) != math.Float32bits(f) {
					return false
				}
			case Float16:
				f32[v] = f
			default:
				return false
			}
		}
		if np.Out == Float16 {
			halfBits(&f16, &f32)
			for v := range lut {
				if uint32(lut[v]) != uint32(f16[v]) {
					return false
				}
			}
		}
		nz.coef[ch], nz.coef[3+ch] = a, b
	}
	return true
}

// fillLUT tabulates the output bits of every uint8 input value of one channel, stored
// so that a native store writes them little-endian.
func fillLUT[T elem](lut *[256]T, mean, std, scale, shift float64, out DType) {
	for v := range lut {
		b := NormalizedBits(v, mean, std, scale, shift, out)
		if !littleEndian {
			switch out {
			case Float32:
				b = bits.ReverseBytes32(b)
			case Float16:
				b = uint32(bits.ReverseBytes16(uint16(b)))
			}
		}
		lut[v] = T(b)
	}
}

// NormalizedBits is crop_mirror_normalize's output for input value v of a channel with
// that channel's mean and std: the element's bits (float32, IEEE half, uint8 or int8)
// in the low bits of the result. Other backends (the GPU kernels) tabulate it to
// produce the very same values.
func NormalizedBits(v int, mean, std, scale, shift float64, out DType) uint32 {
	f := (float64(v)-mean)/std*scale + shift
	switch out {
	case Float32:
		return math.Float32bits(float32(f))
	case Float16:
		return uint32(float16.FromFloat32(float32(f)))
	case UInt8:
		return uint32(math.Min(math.Max(math.Round(f), 0), 255))
	case Int8:
		return uint32(uint8(int8(math.Min(math.Max(math.Round(f), -128), 127))))
	}
	return 0
}

// MeanStd returns channel ch's value of a per-channel list (one value applies to all,
// none means def), as crop_mirror_normalize reads mean and std.
func MeanStd(v []float32, ch int, def float64) float64 {
	switch len(v) {
	case 0:
		return def
	case 1:
		return float64(v[0])
	}
	return float64(v[ch])
}

func (nz *normalizer[T]) lut(ch int) *[256]T {
	if ch < len(nz.luts) {
		return &nz.luts[ch]
	}
	return &nz.extra[ch-len(nz.luts)]
}

// writeRow writes output row oy from px, the input pixels of columns cxA..cxB of the
// corresponding input row.
func (nz *normalizer[T]) writeRow(oy int, px []byte) {
	c, cout := nz.c, nz.cout
	n := len(px) / c
	first := oy*nz.w + nz.ox0
	if nz.chw {
		if c == 3 {
			d0 := nz.dst[first : first+n]
			d1 := nz.dst[nz.plane+first : nz.plane+first+n]
			d2 := nz.dst[2*nz.plane+first : 2*nz.plane+first+n]
			if nz.affine {
				switch l := any(&nz.luts).(type) {
				case *[4][256]uint32:
					if chw3F32Vec(any(d0).([]uint32), any(d1).([]uint32), any(d2).([]uint32), px, &l[0], &l[1], &l[2], &nz.coef, nz.mirror) {
						return
					}
				case *[4][256]uint16:
					if chw3F32Vec(any(d0).([]uint16), any(d1).([]uint16), any(d2).([]uint16), px, &l[0], &l[1], &l[2], &nz.coef, nz.mirror) {
						return
					}
				}
			}
			chw3(d0, d1, d2, px, &nz.luts[0], &nz.luts[1], &nz.luts[2], nz.mirror)
			return
		}
		for ch := 0; ch < c; ch++ {
			d := nz.dst[ch*nz.plane+first : ch*nz.plane+first+n]
			chwPlane(d, px, ch, c, nz.lut(ch), nz.mirror)
		}
		return
	}
	d := nz.dst[first*cout : (first+n)*cout]
	switch {
	case c == 3 && cout == 3:
		hwc3(d, px, &nz.luts[0], &nz.luts[1], &nz.luts[2], nz.mirror)
	case c == 3 && cout == 4:
		hwc3pad(d, px, &nz.luts[0], &nz.luts[1], &nz.luts[2], nz.mirror)
	default:
		hwcN(d, px, c, cout, &nz.luts, nz.extra, nz.mirror)
	}
}

func chw3[T elem](d0, d1, d2 []T, px []byte, t0, t1, t2 *[256]T, mirror bool) {
	// Slices of length 256 indexed by a byte need neither bounds nor nil checks
	// inside the loop; array pointers would be nil-checked on every access.
	l0, l1, l2 := t0[:], t1[:], t2[:]
	n := len(d0)
	d1, d2, px = d1[:n], d2[:n], px[:3*n]
	if !mirror {
		for k := range d0 {
			q := px[3*k : 3*k+3 : 3*k+3]
			d0[k], d1[k], d2[k] = l0[q[0]], l1[q[1]], l2[q[2]]
		}
		return
	}
	for k := range d0 {
		j := n - 1 - k
		q := px[3*j : 3*j+3 : 3*j+3]
		d0[k], d1[k], d2[k] = l0[q[0]], l1[q[1]], l2[q[2]]
	}
}

func chwPlane[T elem](d []T, px []byte, ch, c int, t *[256]T, mirror bool) {
	l := t[:]
	n := len(d)
	for k := range d {
		j := k
		if mirror {
			j = n - 1 - k
		}
		d[k] = l[px[j*c+ch]]
	}
}

func hwc3[T elem](d []T, px []byte, t0, t1, t2 *[256]T, mirror bool) {
	l0, l1, l2 := t0[:], t1[:], t2[:]
	n := len(d) / 3
	px = px[:3*n]
	for k := 0; k < n; k++ {
		j := k
		if mirror {
			j = n - 1 - k
		}
		q := px[3*j : 3*j+3 : 3*j+3]
		o := d[3*k : 3*k+3 : 3*k+3]
		o[0], o[1], o[2] = l0[q[0]], l1[q[1]], l2[q[2]]
	}
}

func hwc3pad[T elem](d []T, px []byte, t0, t1, t2 *[256]T, mirror bool) {
	l0, l1, l2 := t0[:], t1[:], t2[:]
	n := len(d) / 4
	px = px[:3*n]
	for k := 0; k < n; k++ {
		j := k
		if mirror {
			j = n - 1 - k
		}
		q := px[3*j : 3*j+3 : 3*j+3]
		o := d[4*k : 4*k+4 : 4*k+4]
		o[0], o[1], o[2], o[3] = l0[q[0]], l1[q[1]], l2[q[2]], 0
	}
}

func hwcN[T elem](d []T, px []byte, c, cout int, luts *[4][256]T, extra [][256]T, mirror bool) {
	n := len(d) / cout
	for k := 0; k < n; k++ {
		j := k
		if mirror {
			j = n - 1 - k
		}
		q := px[j*c : j*c+c]
		o := d[k*cout : k*cout+cout]
		for ch, v := range q {
			if ch < len(luts) {
				o[ch] = luts[ch][v]
			} else {
				o[ch] = extra[ch-len(luts)][v]
			}
		}
		clear(o[c:])
	}
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func checkAlign(dst []byte, t DType) error {
	if len(dst) == 0 {
		return nil
	}
	if a := t.Size(); uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%uintptr(a) != 0 {
		return fmt.Errorf("crop_mirror_normalize: output buffer is not aligned to %d bytes (dtype %v)", a, t)
	}
	return nil
}

// asElems views b as a slice of T (b must be aligned for T).
func asElems[T elem](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}
