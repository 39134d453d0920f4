package image

import (
	"math"

	"github.com/godali/godali/engine"
)

// _tv_color_jitter: torchvision's ColorJitter on PIL images, bit for bit (godali.torch's
// translation of it). PIL's ImageEnhance blends in float32 and truncates:
// out = (uint8)(d + f * (in - d)), clamped when f > 1, with the degenerate image d black
// (brightness), the grey int(mean(L) + 0.5) (contrast) or each pixel's L (saturation),
// L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. Hue goes through PIL's uint8 HSV:
// H += uint8(hue * 255) with wrap-around, then back to RGB.

func init() {
	engine.RegisterSchema(&engine.Schema{
		Name: "_tv_color_jitter",
		Doc: "Internal operator of godali.torch: torchvision's ColorJitter on HWC uint8 RGB images " +
			"exactly as torchvision's PIL path computes it (ImageEnhance.Brightness, Contrast, Color " +
			"and adjust_hue's uint8 HSV shift). Each factor is drawn uniformly from its [lo, hi] range " +
			"(an adjustment whose range is not given is skipped) and the four are applied in a random " +
			"order per sample (torchvision's randperm(4)), or in order when given.",
		MinInputs: 1, MaxInputs: 1, Outputs: []string{"images"}, InputLayouts: hwc, InputDtypes: u8, InputDoc: fromDecoder,
		Args: []engine.ArgSpec{
			{Name: "brightness", Type: engine.ArgFloatList, Doc: "[lo, hi] of the brightness factor (>= 0)"},
			{Name: "contrast", Type: engine.ArgFloatList, Doc: "[lo, hi] of the contrast factor (>= 0)"},
			{Name: "saturation", Type: engine.ArgFloatList, Doc: "[lo, hi] of the saturation factor (>= 0)"},
			{Name: "hue", Type: engine.ArgFloatList, Doc: "[lo, hi] of the hue shift, in fractions of the colour wheel (within [-0.5, 0.5])"},
			{Name: "order", Type: engine.ArgIntList, Doc: "fixed order of the adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue; a permutation of 0..3); default a random permutation per sample"},
		},
	})
	engine.RegisterBackend("_tv_color_jitter", "cpu", newTVColorJitter)
}

type tvColorJitterOp struct {
	args   *engine.Args
	ranges [4][2]float64
	given  [4]bool
	order  []int
}

func newTVColorJitter(a *engine.Args) (engine.Operator, error) {
	o := &tvColorJitterOp{args: a}
	for i, n := range []string{"brightness", "contrast", "saturation", "hue"} {
		if !a.GivenConstant(n) {
			continue
		}
		r := a.Floats(n)
		lo, hi := 0.0, 0.0
		if len(r) == 2 {
			lo, hi = r[0], r[1]
		}
		min, max := 0.0, math.Inf(1)
		if i == 3 {
			min, max = -0.5, 0.5
		}
		if len(r) != 2 || !(lo >= min && hi >= lo && hi <= max) || math.IsInf(hi, 1) {
			return nil, a.Errorf(n, "expected [lo, hi] with %g <= lo <= hi <= %g, got %v", min, max, r)
		}
		o.ranges[i], o.given[i] = [2]float64{lo, hi}, true
	}
	if a.Given("order") {
		seen := [4]bool{}
		for _, v := range a.Ints("order") {
			if v < 0 || v > 3 || seen[v] {
				return nil, a.Errorf("order", "expected a permutation of 0, 1, 2, 3, got %v", a.Ints("order"))
			}
			seen[v] = true
			o.order = append(o.order, int(v))
		}
		if len(o.order) != 4 {
			return nil, a.Errorf("order", "expected a permutation of 0, 1, 2, 3, got %v", a.Ints("order"))
		}
	}
	return o, nil
}

func (o *tvColorJitterOp) Infer(in []engine.TensorMeta) ([]engine.TensorMeta, error) {
	return inferRGB(o.args, in[0])
}

func (o *tvColorJitterOp) Setup(ws *engine.Workspace) error {
	return setupRGB(o.args, ws)
}

func (o *tvColorJitterOp) Run(ws *engine.Workspace) error {
	in, out := ws.In[0], ws.Out[0]
	n := in.Shape[0] * in.Shape[1] * 3
	pix := out.Data[:n]
	copy(pix, in.Data[:n])
	r := ws.RNG
	order := [4]int{0, 1, 2, 3}
	if o.order != nil {
		copy(order[:], o.order)
	} else {
		for i := 3; i > 0; i-- { // Fisher-Yates: a uniform permutation
			j := r.Intn(i + 1)
			order[i], order[j] = order[j], order[i]
		}
	}
	var f [4]float64
	for i := range f {
		if o.given[i] {
			f[i] = r.Uniform(o.ranges[i][0], o.ranges[i][1])
			if o.ranges[i][0] == o.ranges[i][1] {
				f[i] = o.ranges[i][0]
			}
		}
	}
	for _, k := range order {
		if !o.given[k] {
			continue
		}
		switch k {
		case 0:
			pilBlendConst(pix, 0, float32(f[0]))
		case 1:
			pilBlendConst(pix, pilMeanL(pix), float32(f[1]))
		case 2:
			pilBlendL(pix, float32(f[2]))
		case 3:
			pilHueShift(pix, f[3])
		}
	}
	return nil
}

// pilL is PIL's RGB to L conversion.
func pilL(r, g, b byte) int32 {
	return (int32(r)*19595 + int32(g)*38470 + int32(b)*7471 + 0x8000) >> 16
}

// pilMeanL is ImageEnhance.Contrast's grey: int(mean of the L image + 0.5).
func pilMeanL(pix []byte) int32 {
	var sum int64
	for i := 0; i+2 < len(pix); i += 3 {
		sum += int64(pilL(pix[i], pix[i+1], pix[i+2]))
	}
	if len(pix) < 3 {
		return 0
	}
	return int32(float64(sum)/float64(len(pix)/3) + 0.5)
}

// pilBlend is PIL's ImagingBlend of one value: d + alpha * (v - d) in float32, truncated
// (clamped first when alpha is outside [0, 1]).
func pilBlend(d, v int32, alpha float32) byte {
	t := float32(d) + float32(alpha*float32(v-d))
	if alpha >= 0 && alpha <= 1 {
		return byte(int32(t))
	}
	if t <= 0 {
		return 0
	}
	if t >= 255 {
		return 255
	}
	return byte(int32(t))
}

func pilBlendConst(pix []byte, d int32, alpha float32) {
	for i, v := range pix {
		pix[i] = pilBlend(d, int32(v), alpha)
	}
}

func pilBlendL(pix []byte, alpha float32) {
	for i := 0; i+2 < len(pix); i += 3 {
		l := pilL(pix[i], pix[i+1], pix[i+2])
		pix[i] = pilBlend(l, int32(pix[i]), alpha)
		pix[i+1] = pilBlend(l, int32(pix[i+1]), alpha)
		pix[i+2] = pilBlend(l, int32(pix[i+2]), alpha)
	}
}

func clip8(v int) byte {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v)
}

// pilRGBToHSV is PIL's RGB to HSV conversion (floats where PIL has floats, doubles where
// C promotes to double).
func pilRGBToHSV(r, g, b byte) (byte, byte, byte) {
	maxc, minc := r, r
	if g > maxc {
		maxc = g
	}
	if b > maxc {
		maxc = b
	}
	if g < minc {
		minc = g
	}
	if b < minc {
		minc = b
	}
	if maxc == minc {
		return 0, 0, maxc
	}
	cr := float32(maxc - minc)
	s := cr / float32(maxc)
	rc := float32(maxc-r) / cr
	gc := float32(maxc-g) / cr
	bc := float32(maxc-b) / cr
	var h float32
	switch {
	case r == maxc:
		h = bc - gc
	case g == maxc:
		h = float32(2.0 + float64(rc) - float64(bc))
	default:
		h = float32(4.0 + float64(gc) - float64(rc))
	}
	h = float32(math.Mod(float64(h)/6.0+1.0, 1.0))
	return clip8(int(float64(h) * 255.0)), clip8(int(float64(s) * 255.0)), maxc
}

// pilHSVToRGB is PIL's HSV to RGB conversion.
func pilHSVToRGB(h, s, v byte) (byte, byte, byte) {
	if s == 0 {
		return v, v, v
	}
	hh := float64(float32(h)) * 6.0 / 255.0
	i := int(math.Floor(hh))
	f := float32(hh - float64(float32(i)))
	fs := float32(float64(float32(s)) / 255.0)
	fv := float64(float32(v))
	p := clip8(int(math.Round(fv * (1.0 - float64(fs)))))
	q := clip8(int(math.Round(fv * (1.0 - float64(fs*f)))))
	t := clip8(int(math.Round(fv * (1.0 - float64(fs)*(1.0-float64(f))))))
	switch i % 6 {
	case 0:
		return v, t, p
	case 1:
		return q, v, p
	case 2:
		return p, v, t
	case 3:
		return p, q, v
	case 4:
		return t, p, v
	}
	return v, p, q
}

// pilHueShift is torchvision's adjust_hue on a PIL image: H += uint8(hue * 255) in PIL's
// uint8 HSV (numpy's float to uint8 cast truncates towards zero, then wraps).
func pilHueShift(pix []byte, hue float64) {
	shift := byte(int(hue * 255))
	for i := 0; i+2 < len(pix); i += 3 {
		h, s, v := pilRGBToHSV(pix[i], pix[i+1], pix[i+2])
		pix[i], pix[i+1], pix[i+2] = pilHSVToRGB(h+shift, s, v)
	}
}
