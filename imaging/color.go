package imaging

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Point-wise color kernels: brightness_contrast (one affine map of every channel value,
// applied through a 256-entry table) and hsv/color_twist (a 3x3 matrix plus an offset
// on RGB pixels). Both compute in float32, as DALI does, and convert the way DALI's
// ConvertSat does: round half away from zero, then saturate. Every product and sum is
// rounded to float32 on its own (explicit conversions forbid the compiler to fuse them
// into FMAs, which Go may do on arm64 and others), left to right, so that the results do
// not depend on the platform and the GPU kernel (kernels.cu's godali_color, which uses
// __fmul_rn/__fadd_rn in the same order) reproduces them bit for bit.

// SatU8 converts a float32 result to uint8 as DALI's ConvertSat: rounded to nearest
// (halves away from zero) and clamped to [0, 255]; NaN becomes 0.
func SatU8(v float32) byte {
	switch {
	case v >= 254.5:
		return 255
	case v > 0: // also false for NaN
		// In float64 v + 0.5 is exact (in float32 0.49999997 + 0.5 would round up to 1),
		// and truncation is floor for positive values.
		return byte(float64(v) + 0.5)
	}
	return 0
}

// AffineTable holds one affine map of the 256 values of a uint8 channel, converted to
// the output type.
type AffineTable struct {
	u8  [256]byte
	f32 [256]float32
	out DType
}

// Init fills the table with v*scale + offset (float32), for out UInt8 or Float32.
func (t *AffineTable) Init(scale, offset float32, out DType) error {
	if out != UInt8 && out != Float32 {
		return fmt.Errorf("affine table: output type %v: expected UINT8 or FLOAT", out)
	}
	t.out = out
	for v := range t.f32 {
		f := float32(float32(v)*scale) + offset // no FMA
		t.f32[v] = f
		t.u8[v] = SatU8(f)
	}
	return nil
}

// Apply maps every byte of src through the table into dst, which holds len(src)
// elements of the table's output type.
func (t *AffineTable) Apply(dst, src []byte) error {
	if len(dst) < len(src)*t.out.Size() {
		return fmt.Errorf("affine table: output has %d bytes, expected %d", len(dst), len(src)*t.out.Size())
	}
	if t.out == UInt8 {
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = t.u8[v]
		}
		return nil
	}
	dst = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(t.f32[v]))
	}
	return nil
}

// ColorMatrix is an affine transform of RGB pixels: out = M * in + Off, in float32.
type ColorMatrix struct {
	M   [3][3]float32
	Off [3]float32
}

// The RGB <-> YIQ (NTSC) matrices DALI's hsv and color_twist use; the inverse is the
// published rounded one, not the exact inverse of the forward matrix, as in DALI.
var (
	rgbToYIQ = [3][3]float64{{0.299, 0.587, 0.114}, {0.596, -0.274, -0.321}, {0.211, -0.523, 0.311}}
	yiqToRGB = [3][3]float64{{1, 0.956, 0.621}, {1, -0.272, -0.647}, {1, -1.107, 1.705}}
)

func mul3(a, b [3][3]float64) [3][3]float64 {
	var c [3][3]float64
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 3; k++ {
				c[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return c
}

// SetHSV sets m to DALI's hsv approximation: the RGB pixel goes to YIQ, its chroma
// (I, Q) is rotated by hue degrees and scaled by saturation, all three components are
// scaled by value, and the result goes back to RGB. Then, for color_twist, the result
// is scaled by contrast around halfRange (128 for uint8 input) and multiplied by
// brightness: out = brightness * (contrast * (M * in) + halfRange * (1 - contrast)).
func (m *ColorMatrix) SetHSV(hue, saturation, value, brightness, contrast, halfRange float64) {
	h := hue * math.Pi / 180
	c, s := math.Cos(h), math.Sin(h)
	// Hue rotation and saturation in the IQ plane, value on every component.
	hsv := [3][3]float64{
		{value, 0, 0},
		{0, c * saturation * value, s * saturation * value},
		{0, -s * saturation * value, c * saturation * value},
	}
	t := mul3(yiqToRGB, mul3(hsv, rgbToYIQ))
	k := brightness * contrast
	off := float32((halfRange - halfRange*contrast) * brightness)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			m.M[i][j] = float32(k * t[i][j])
		}
		m.Off[i] = off
	}
}

// Apply transforms the pixels RGB pixels of src (3 bytes each) into dst: out UInt8
// (rounded and saturated) or Float32 (little endian).
func (m *ColorMatrix) Apply(dst, src []byte, pixels int, out DType) error {
	if len(src) < 3*pixels {
		return fmt.Errorf("color matrix: input has %d bytes, expected %d", len(src), 3*pixels)
	}
	if out != UInt8 && out != Float32 {
		return fmt.Errorf("color matrix: output type %v: expected UINT8 or FLOAT", out)
	}
	if len(dst) < 3*pixels*out.Size() {
		return fmt.Errorf("color matrix: output has %d bytes, expected %d", len(dst), 3*pixels*out.Size())
	}
	m00, m01, m02 := m.M[0][0], m.M[0][1], m.M[0][2]
	m10, m11, m12 := m.M[1][0], m.M[1][1], m.M[1][2]
	m20, m21, m22 := m.M[2][0], m.M[2][1], m.M[2][2]
	o0, o1, o2 := m.Off[0], m.Off[1], m.Off[2]
	src = src[:3*pixels]
	if out == UInt8 {
		dst = dst[:3*pixels]
		for i := 0; i+2 < len(src); i += 3 {
			r, g, b := float32(src[i]), float32(src[i+1]), float32(src[i+2])
			d := dst[i : i+3 : i+3]
			d[0] = SatU8(dot3(m00, m01, m02, o0, r, g, b))
			d[1] = SatU8(dot3(m10, m11, m12, o1, r, g, b))
			d[2] = SatU8(dot3(m20, m21, m22, o2, r, g, b))
		}
		return nil
	}
	dst = dst[:12*pixels]
	for i := 0; i+2 < len(src); i += 3 {
		r, g, b := float32(src[i]), float32(src[i+1]), float32(src[i+2])
		d := dst[4*i : 4*i+12 : 4*i+12]
		binary.LittleEndian.PutUint32(d[0:], math.Float32bits(dot3(m00, m01, m02, o0, r, g, b)))
		binary.LittleEndian.PutUint32(d[4:], math.Float32bits(dot3(m10, m11, m12, o1, r, g, b)))
		binary.LittleEndian.PutUint32(d[8:], math.Float32bits(dot3(m20, m21, m22, o2, r, g, b)))
	}
	return nil
}

// dot3 is ((a*r + b*g) + c*b2) + off with every operation rounded to float32 (no FMA):
// the order and rounding godali_color reproduces.
func dot3(a, b, c, off, r, g, b2 float32) float32 {
	s := float32(a*r) + float32(b*g)
	s = float32(s) + float32(c*b2)
	return float32(s) + off
}

// ITU-R BT.601's limited-range coefficients, exact (65.481/255, ...), in float32: DALI
// 2.4's CPU color_space_conversion and decoders compute with these (measured against
// DALI 2.4's fn.color_space_conversion on 262144 random pixels: all Y values and all but
// 20 of the 524288 Cb/Cr values identical; the rounded 0.257, 0.504, ... of DALI's
// kernel sources differ on 2-3% of them).
const (
	ycbcrYR, ycbcrYG, ycbcrYB    = float32(65.481 / 255), float32(128.553 / 255), float32(24.966 / 255)
	ycbcrCbR, ycbcrCbG, ycbcrCbB = float32(-37.797 / 255), float32(-74.203 / 255), float32(112.0 / 255)
	ycbcrCrR, ycbcrCrG, ycbcrCrB = float32(112.0 / 255), float32(-93.786 / 255), float32(-18.214 / 255)
)

// RGBToYCbCr601 is ITU-R BT.601's limited-range YCbCr of r, g, b (DALI's
// color_space_conversion and its decoders' output_type YCbCr): Y = (65.481 R + 128.553 G
// + 24.966 B) / 255 + off16, Cb and Cr likewise around off128, in float32 (off16, off128:
// 16 and 128 for 0..255 values, 0.0625 and 0.5 for 0..1). Grey has no chroma: exactly
// off128, not the coefficients' rounding of it.
func RGBToYCbCr601(r, g, b, off16, off128 float32) (y, cb, cr float32) {
	y = float32(float32(float32(ycbcrYR*r)+float32(ycbcrYG*g))+float32(ycbcrYB*b)) + off16
	if r == g && g == b {
		return y, off128, off128
	}
	cb = float32(float32(float32(ycbcrCbR*r)+float32(ycbcrCbG*g))+float32(ycbcrCbB*b)) + off128
	cr = float32(float32(float32(ycbcrCrR*r)+float32(ycbcrCrG*g))+float32(ycbcrCrB*b)) + off128
	return y, cb, cr
}

// RGBToYCbCr601U8 converts HWC RGB uint8 pixels in place to YCbCr (RGBToYCbCr601, rounded
// and saturated as color_space_conversion's uint8 output).
func RGBToYCbCr601U8(px []byte) {
	for i := 0; i+2 < len(px); i += 3 {
		y, cb, cr := RGBToYCbCr601(float32(px[i]), float32(px[i+1]), float32(px[i+2]), 16, 128)
		px[i], px[i+1], px[i+2] = SatU8(y), SatU8(cb), SatU8(cr)
	}
}
