package image

import (
	"fmt"
	"math"
	"strconv"

	"github.com/godali/godali/imaging"
)

// The augmentations of godali.auto_aug (DALI's nvidia.dali.auto_aug.augmentations), on
// one HWC uint8 image, in place. Each takes the augmentation's parameter: the magnitude
// already mapped by the augmentation's mag_to_param. Formulas follow DALI's definitions:
// warps are DALI's warp_affine with inverse_map=False (the matrix maps input to output
// points) about the top-left corner, enhance operations blend with a degenerate image as
// PIL's ImageEnhance does, and uint8 results round half away from zero and saturate.

// augImage is an image and the worker's scratch buffer.
type augImage struct {
	pix     []byte // h x w x c
	w, h, c int
	scratch []byte // at least len(pix) once grown
	// pil: torchvision's BILINEAR warps, which PIL computes (Warp.PIL, and PIL's own
	// matrices for the shears and rotations: pilShear, pilRotate).
	pil bool
}

func (im *augImage) scratchBuf() []byte {
	if cap(im.scratch) < len(im.pix) {
		im.scratch = make([]byte, len(im.pix))
	}
	return im.scratch[:len(im.pix)]
}

// warpFwd applies the forward affine map (input point -> output point) m, keeping the size.
func (im *augImage) warpFwd(m [2][3]float64, interp imaging.Interp, useFill bool, fill byte) error {
	det := m[0][0]*m[1][1] - m[0][1]*m[1][0]
	if det == 0 || math.IsNaN(det) || math.IsInf(det, 0) {
		return fmt.Errorf("the affine transform %v is not invertible", m)
	}
	a, b, c, d := m[1][1]/det, -m[0][1]/det, -m[1][0]/det, m[0][0]/det
	tx, ty := m[0][2], m[1][2]
	wp := imaging.Warp{
		M:      [2][3]float64{{a, b, -(a*tx + b*ty)}, {c, d, -(c*tx + d*ty)}},
		Interp: interp, UseFill: useFill, Fill: fill,
	}
	return im.warp(&wp)
}

func (im *augImage) warp(wp *imaging.Warp) error {
	wp.PIL = im.pil
	dst := im.scratchBuf()
	if err := wp.Apply(dst, im.w, im.h, im.pix, im.w, im.h, im.c); err != nil {
		return err
	}
	copy(im.pix, dst)
	return nil
}

// Python's math.radians and math.degrees factors, computed in float64 as C computes
// them (Go's constant arithmetic would round the exact quotient instead).
var (
	pyPi       float64 = math.Pi
	pyDegToRad         = pyPi / 180.0
	pyRadToDeg         = 180.0 / pyPi
)

// pilShear shears as torchvision's F.affine(shear=[degrees(atan(m)), 0], center=[0, 0])
// (x: true) or shear=[0, degrees(atan(m))] (x: false) does on a PIL image: the matrix
// its _get_inverse_affine_matrix computes, handed to PIL.
func (im *augImage) pilShear(m float64, x bool, interp imaging.Interp, useFill bool, fill byte) error {
	s := float64(math.Atan(m)*pyRadToDeg) * pyDegToRad
	var a, b, c, d float64
	if x { // rot 0, shear (s, 0): a = 1, b = -tan(s), c = 0, d = 1
		a, b, c, d = 1, -math.Tan(s), 0, 1
	} else { // shear (0, s): a = cos(-s)/cos(s), b = -sin(0), c = sin(-s)/cos(s), d = cos(0)
		a, b, c, d = math.Cos(-s)/math.Cos(s), -0.0, math.Sin(-s)/math.Cos(s), 1
	}
	wp := imaging.Warp{M: [2][3]float64{{d, -b, 0}, {-c, a, 0}}, Interp: interp,
		UseFill: useFill, Fill: fill}
	return im.warp(&wp)
}

// pilRotate is PIL's Image.rotate(deg) (torchvision's F.rotate of a PIL image): the
// angle taken modulo 360, cos and sin rounded to 15 decimals, about (w/2, h/2).
func (im *augImage) pilRotate(deg float64, interp imaging.Interp, useFill bool, fill byte) error {
	deg = math.Mod(deg, 360)
	if deg < 0 {
		deg += 360
	}
	ang := -(deg * pyDegToRad)
	r15 := func(v float64) float64 {
		f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 15, 64), 64)
		return f
	}
	a, b, d, e := r15(math.Cos(ang)), r15(math.Sin(ang)), r15(-math.Sin(ang)), r15(math.Cos(ang))
	cx, cy := float64(im.w)/2, float64(im.h)/2
	c := float64(a*-cx) + float64(b*-cy) + 0.0
	f := float64(d*-cx) + float64(e*-cy) + 0.0
	wp := imaging.Warp{M: [2][3]float64{{a, b, c + cx}, {d, e, f + cy}}, Interp: interp,
		UseFill: useFill, Fill: fill}
	return im.warp(&wp)
}

// rotate turns the image counter-clockwise by deg degrees about its centre, keeping
// its size (DALI's rotate with keep_size=True).
func (im *augImage) rotate(deg float64, interp imaging.Interp, useFill bool, fill byte) error {
	rad := deg * math.Pi / 180
	cs, sn := math.Cos(rad), math.Sin(rad)
	cx, cy := float64(im.w)/2, float64(im.h)/2
	wp := imaging.Warp{
		M: [2][3]float64{
			{cs, -sn, cx - cs*cx + sn*cy},
			{sn, cs, cy - sn*cx - cs*cy},
		},
		Interp: interp, UseFill: useFill, Fill: fill,
	}
	return im.warp(&wp)
}

// affine sets every value to sat(v*scale + offset), in float32 (DALI's brightness).
func (im *augImage) affine(scale, offset float32) {
	var lut [256]byte
	for i := range lut {
		lut[i] = imaging.SatU8(float32(i)*scale + offset)
	}
	im.lut(&lut)
}

func (im *augImage) lut(lut *[256]byte) {
	for i, v := range im.pix {
		im.pix[i] = lut[v]
	}
}

// contrast blends with the image's weighted mean (PIL's ImageEnhance.Contrast as DALI's
// auto_aug contrast computes it): center = sum_c(mean_c * w_c) with the Rec.601 luma
// weights, out = center + (x - center) * factor.
func (im *augImage) contrast(factor float32) {
	n := im.w * im.h
	if n == 0 {
		return
	}
	var sums [4]uint64
	sumc := make([]uint64, 0, 4)
	if im.c <= 4 {
		sumc = sums[:im.c]
	} else {
		sumc = make([]uint64, im.c)
	}
	for i := 0; i < n; i++ {
		px := im.pix[i*im.c : i*im.c+im.c]
		for ch, v := range px {
			sumc[ch] += uint64(v)
		}
	}
	weights := []float32{0.299, 0.587, 0.114}
	var center float32
	for ch, s := range sumc {
		mean := float32(float64(s) / float64(n))
		wgt := float32(1) / float32(im.c)
		if im.c == 3 {
			wgt = weights[ch]
		}
		center += mean * wgt
	}
	var lut [256]byte
	for i := range lut {
		lut[i] = imaging.SatU8(center + (float32(i)-center)*factor)
	}
	im.lut(&lut)
}

// saturation scales the chroma in YIQ space (DALI's fn.saturation), 3 channels only.
func (im *augImage) saturation(factor float64) error {
	if im.c != 3 {
		return fmt.Errorf("color (saturation) needs 3-channel images, got %d channels", im.c)
	}
	var cm imaging.ColorMatrix
	cm.SetHSV(0, factor, 1, 1, 1, 0)
	dst := im.scratchBuf()
	if err := cm.Apply(dst, im.pix, im.w*im.h, imaging.UInt8); err != nil {
		return err
	}
	copy(im.pix, dst)
	return nil
}

// sharpnessKernel is -m*blur + (1+m)*identity, blur = [[1,1,1],[1,5,1],[1,1,1]]/13.
func sharpnessKernel(m float32) [3][3]float32 {
	var k [3][3]float32
	for y := 0; y < 3; y++ {
		for x := 0; x < 3; x++ {
			b := float32(1)
			if x == 1 && y == 1 {
				b = 5
			}
			k[y][x] = -m * b / 13
		}
	}
	k[1][1] += 1 + m
	return k
}

// sharpness is the 3x3 filter -m*blur + (1+m)*identity, blur = [[1,1,1],[1,5,1],[1,1,1]]/13,
// with reflect-101 borders (DALI's experimental.filter default), in float32.
func (im *augImage) sharpness(m float32) {
	k := sharpnessKernel(m)
	src := im.scratchBuf()
	copy(src, im.pix)
	w, h, c := im.w, im.h, im.c
	refl := imaging.Reflect101
	// Rows and columns reflected once per row / pixel; each value is the same float32
	// sum, in the same order (rows top to bottom, columns left to right), as a plain 3x3
	// loop (TestSharpnessRowsMatchPlainLoop).
	stride := w * c
	for y := 0; y < h; y++ {
		rows := [3][]byte{src[refl(y-1, h)*stride:][:stride], src[y*stride:][:stride], src[refl(y+1, h)*stride:][:stride]}
		out := im.pix[y*stride:][:stride]
		for x := 0; x < w; x++ {
			x0, x1, x2 := refl(x-1, w)*c, x*c, refl(x+1, w)*c
			for ch := 0; ch < c; ch++ {
				var acc float32
				for dy := 0; dy < 3; dy++ {
					r, kr := rows[dy], &k[dy]
					acc += kr[0] * float32(r[x0+ch])
					acc += kr[1] * float32(r[x1+ch])
					acc += kr[2] * float32(r[x2+ch])
				}
				out[x1+ch] = imaging.SatU8(acc)
			}
		}
	}
}

// posterize keeps the bits of mask.
func (im *augImage) posterize(mask byte) {
	for i, v := range im.pix {
		im.pix[i] = v & mask
	}
}

// solarize inverts the values >= threshold (through a table: no branch per value).
func (im *augImage) solarize(threshold float64) {
	var lut [256]byte
	for i := range lut {
		lut[i] = byte(i)
		if float64(i) >= threshold {
			lut[i] = 255 - byte(i)
		}
	}
	im.lut(&lut)
}

// solarizeAdd adds shift to the values below 128.
func (im *augImage) solarizeAdd(shift byte) {
	var lut [256]byte
	for i := range lut {
		lut[i] = byte(i)
		if i < 128 {
			lut[i] = byte(i) + shift
		}
	}
	im.lut(&lut)
}

func (im *augImage) invert() {
	for i, v := range im.pix {
		im.pix[i] = 255 - v
	}
}

// equalize equalizes each channel's histogram as OpenCV's equalizeHist does (DALI's
// experimental.equalize): lut[v] = round(cdf'(v) * 255 / (n - hist[first])), where cdf'
// excludes the first occupied level, in float32, ties to even.
func (im *augImage) equalize() {
	for ch := 0; ch < im.c; ch++ {
		equalizePlane(im.pix, ch, im.c, im.w*im.h)
	}
}

// equalizePlane equalizes the n values pix[base], pix[base+stride], ... (one channel of
// one image) in place, as equalize describes.
func equalizePlane(pix []byte, base, stride, n int) {
	if n == 0 {
		return
	}
	var hist [256]int
	for i, k := base, 0; k < n; i, k = i+stride, k+1 {
		hist[pix[i]]++
	}
	first := 0
	for first < 256 && hist[first] == 0 {
		first++
	}
	if hist[first] == n {
		return // a single level: unchanged
	}
	scale := float32(255) / float32(n-hist[first])
	var lut [256]byte
	sum := 0
	for v := first + 1; v < 256; v++ {
		sum += hist[v]
		r := math.RoundToEven(float64(float32(sum) * scale))
		lut[v] = byte(min(max(r, 0), 255))
	}
	for i, k := base, 0; k < n; i, k = i+stride, k+1 {
		pix[i] = lut[pix[i]]
	}
}

// autoContrast stretches each channel to [0, 255]: (x - lo) * (255 / (hi - lo)), float32;
// channels with a single level are unchanged.
func (im *augImage) autoContrast() {
	for ch := 0; ch < im.c; ch++ {
		lo, hi := byte(255), byte(0)
		for i := ch; i < len(im.pix); i += im.c {
			lo, hi = min(lo, im.pix[i]), max(hi, im.pix[i])
		}
		if hi <= lo {
			continue
		}
		scale := float32(255) / float32(hi-lo)
		for i := ch; i < len(im.pix); i += im.c {
			im.pix[i] = imaging.SatU8(float32(im.pix[i]-lo) * scale)
		}
	}
}

// posterMask is DALI's poster_mask_uint8: the magnitude rounded (half to even, as numpy)
// and clamped to [1, 8] bits kept.
func posterMask(mag float64) byte {
	bits := math.RoundToEven(mag)
	if bits <= 0 || math.IsNaN(bits) {
		bits = 1
	} else if bits > 8 {
		bits = 8
	}
	removed := 8 - int(bits)
	return byte(0xff ^ (1<<removed - 1))
}

// pilSharpness is ImageEnhance.Sharpness: blend with ImageFilter.SMOOTH (the 3x3 kernel
// [[1,1,1],[1,5,1],[1,1,1]]/13 in float32, rounded half up, the border pixels kept;
// images under 3x3 are their own degenerate) by factor, truncated.
func (im *augImage) pilSharpness(factor float32) {
	w, h, c := im.w, im.h, im.c
	if w < 3 || h < 3 {
		return // blend of an image with itself
	}
	deg := im.scratchBuf()
	copy(deg, im.pix)
	k1, k5 := float32(1)/13, float32(5)/13
	src := im.pix
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			for ch := 0; ch < c; ch++ {
				at := func(yy, xx int) float32 { return float32(src[(yy*w+xx)*c+ch]) }
				row := func(yy int, mid float32) float32 {
					return at(yy, x-1)*k1 + at(yy, x)*mid + at(yy, x+1)*k1
				}
				ss := float32(0)
				ss += row(y+1, k1)
				ss += row(y, k5)
				ss += row(y-1, k1)
				var v byte
				switch {
				case ss <= 0:
					v = 0
				case ss >= 255:
					v = 255
				default:
					v = byte(ss + 0.5)
				}
				deg[(y*w+x)*c+ch] = v
			}
		}
	}
	for i, v := range im.pix {
		im.pix[i] = pilBlend(int32(deg[i]), int32(v), factor)
	}
}

// pilAutoContrast is ImageOps.autocontrast (no cutoff): per channel,
// int(v * scale + offset) with scale = 255 / (hi - lo), offset = -lo * scale, in float64.
func (im *augImage) pilAutoContrast() {
	for ch := 0; ch < im.c; ch++ {
		lo, hi := 255, 0
		for i := ch; i < len(im.pix); i += im.c {
			lo, hi = min(lo, int(im.pix[i])), max(hi, int(im.pix[i]))
		}
		if hi <= lo {
			continue
		}
		scale := 255.0 / float64(hi-lo)
		offset := -float64(lo) * scale
		var lut [256]byte
		for v := range lut {
			lut[v] = clip8(int(float64(v)*scale + offset))
		}
		for i := ch; i < len(im.pix); i += im.c {
			im.pix[i] = lut[im.pix[i]]
		}
	}
}

// pilEqualize is ImageOps.equalize: per channel, step = (n - count of the highest
// occupied level) // 255 and lut[v] = (step // 2 + count below v) // step; channels with
// one level or step 0 are unchanged.
func (im *augImage) pilEqualize() {
	for ch := 0; ch < im.c; ch++ {
		var hist [256]int
		for i := ch; i < len(im.pix); i += im.c {
			hist[im.pix[i]]++
		}
		levels, total, last := 0, 0, 0
		for _, n := range hist {
			if n > 0 {
				levels++
				total += n
				last = n
			}
		}
		if levels <= 1 {
			continue
		}
		step := (total - last) / 255
		if step == 0 {
			continue
		}
		var lut [256]byte
		n := step / 2
		for v := range lut {
			lut[v] = clip8(n / step)
			n += hist[v]
		}
		for i := ch; i < len(im.pix); i += im.c {
			im.pix[i] = lut[im.pix[i]]
		}
	}
}
