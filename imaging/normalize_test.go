package imaging

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/godali/godali/internal/float16"
)

// refCMN is a direct float64 transcription of crop_mirror_normalize. It returns the
// unrounded output values in output order, and which of them are padding (exact 0).
func refCMN(src []byte, w, h, c int, np *NormalizeParams) (vals []float64, pad []bool) {
	cout := c
	if np.PadChannels {
		for cout&(cout-1) != 0 {
			cout++
		}
	}
	n := np.CropW * np.CropH * cout
	vals, pad = make([]float64, n), make([]bool, n)
	pick := func(v []float32, ch int, def float64) float64 {
		switch len(v) {
		case 0:
			return def
		case 1:
			return float64(v[0])
		}
		return float64(v[ch])
	}
	for oy := 0; oy < np.CropH; oy++ {
		for ox := 0; ox < np.CropW; ox++ {
			sx := np.CropX + ox
			if np.Mirror {
				sx = np.CropX + np.CropW - 1 - ox
			}
			sy := np.CropY + oy
			for ch := 0; ch < cout; ch++ {
				var i int
				if np.CHW {
					i = (ch*np.CropH+oy)*np.CropW + ox
				} else {
					i = (oy*np.CropW+ox)*cout + ch
				}
				if ch >= c || sx < 0 || sy < 0 || sx >= w || sy >= h {
					pad[i] = true
					continue
				}
				in := float64(src[(sy*w+sx)*c+ch])
				vals[i] = (in-pick(np.Mean, ch, 0))/pick(np.Std, ch, 1)*float64(np.Scale) + float64(np.Shift)
			}
		}
	}
	return vals, pad
}

// decodeOut reads the output elements back as float64.
func decodeOut(b []byte, t DType) []float64 {
	n := len(b) / t.Size()
	out := make([]float64, n)
	for i := range out {
		switch t {
		case Float32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case Float16:
			out[i] = float64(float16.ToFloat32(binary.LittleEndian.Uint16(b[2*i:])))
		case UInt8:
			out[i] = float64(b[i])
		case Int8:
			out[i] = float64(int8(b[i]))
		}
	}
	return out
}

// checkCMN compares an output with the reference using DALI's tolerances: 1e-5 for
// float32 (relative to the magnitude above 1), half a float16 ulp (plus float32
// rounding) for float16, and mean 0.3 / max 0.6 against the saturated unrounded value
// for integer outputs. Padding must be exactly 0.
func checkCMN(t *testing.T, name string, got []byte, vals []float64, pad []bool, typ DType) {
	t.Helper()
	g := decodeOut(got, typ)
	if len(g) != len(vals) {
		t.Fatalf("%s: %d output elements, want %d", name, len(g), len(vals))
	}
	sum, worst := 0.0, 0.0
	for i, v := range g {
		if pad[i] {
			if v != 0 || math.Signbit(v) {
				t.Fatalf("%s: padding element %d is %v, want 0", name, i, v)
			}
			continue
		}
		ref := vals[i]
		d := math.Abs(v - ref)
		switch typ {
		case Float32:
			if d > 1e-5*math.Max(1, math.Abs(ref)) {
				t.Fatalf("%s: element %d = %v, want %v (diff %g > 1e-5)", name, i, v, ref, d)
			}
		case Float16:
			ulp := math.Max(math.Ldexp(1, math.Ilogb(math.Abs(ref))-10), math.Ldexp(1, -24))
			if d > ulp/2*(1+1e-6)+1e-7*math.Abs(ref) {
				t.Fatalf("%s: element %d = %v, want %v (diff %g > half ulp %g)", name, i, v, ref, d, ulp/2)
			}
		default:
			lo, hi := 0.0, 255.0
			if typ == Int8 {
				lo, hi = -128, 127
			}
			d = math.Abs(v - math.Min(math.Max(ref, lo), hi))
			sum += d
			worst = math.Max(worst, d)
		}
	}
	if typ == UInt8 || typ == Int8 {
		if mean := sum / float64(len(g)); mean > 0.3 || worst > 0.6 {
			t.Fatalf("%s: mean abs error %.3f (<= 0.3), max %.3f (<= 0.6)", name, mean, worst)
		}
	}
}

type cmnCase struct {
	name string
	np   NormalizeParams
}

// cmnCases spans every option for a w x h x c input.
func cmnCases(w, h, c int, r *rand.Rand) []cmnCase {
	windows := []struct {
		name         string
		x, y, cw, ch int
	}{
		{"inside", w / 5, h / 7, w / 2, h / 2},
		{"whole", 0, 0, w, h},
		{"left_top_out", -7, -3, w / 2, h / 2},
		{"right_bottom_out", w - 10, h - 5, 25, 17},
		{"larger", -4, -6, w + 9, h + 13},
		{"fully_out", w + 3, 0, 10, 10},
	}
	perCh := func(lo, hi float32) []float32 {
		v := make([]float32, c)
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float32()
		}
		return v
	}
	norms := []struct {
		name string
		np   NormalizeParams
		typs []DType
	}{
		{"imagenet", NormalizeParams{Mean: perCh(100, 130), Std: perCh(55, 60), Scale: 1}, []DType{Float32, Float16}},
		{"scalar_scale_shift", NormalizeParams{Mean: []float32{127.5}, Std: []float32{2}, Scale: 3, Shift: -1.25}, []DType{Float32, Float16, Int8}},
		{"defaults", NormalizeParams{Scale: 1}, []DType{Float32, Float16, UInt8}},
		{"int8_centered", NormalizeParams{Mean: []float32{128}, Scale: 1}, []DType{Int8}},
		{"uint8_contrast", NormalizeParams{Mean: perCh(20, 60), Std: perCh(0.5, 1.5), Scale: 0.7, Shift: 30}, []DType{UInt8, Int8}},
		{"big_values", NormalizeParams{Std: []float32{0.01}, Scale: 1, Shift: 5}, []DType{Float32, Float16}},
	}
	var out []cmnCase
	for _, win := range windows {
		for _, nm := range norms {
			for _, typ := range nm.typs {
				for _, chw := range []bool{false, true} {
					for _, mirror := range []bool{false, true} {
						for _, padc := range []bool{false, true} {
							np := nm.np
							np.Out, np.CHW, np.Mirror, np.PadChannels = typ, chw, mirror, padc
							np.CropX, np.CropY, np.CropW, np.CropH = win.x, win.y, win.cw, win.ch
							out = append(out, cmnCase{fmt.Sprintf("c%d/%s/%s/%v/chw=%v/mirror=%v/pad=%v", c, win.name, nm.name, typ, chw, mirror, padc), np})
						}
					}
				}
			}
		}
	}
	return out
}

func TestCropMirrorNormalizeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []int{1, 2, 3, 4, 5} {
		const w, h = 61, 47
		src := testImage(w, h, c, uint64(c))
		for _, tc := range cmnCases(w, h, c, r) {
			got := make([]byte, tc.np.OutBytes(c))
			for i := range got {
				got[i] = 0xa5 // every element must be written
			}
			if err := CropMirrorNormalize(got, src, w, h, c, &tc.np); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			vals, pad := refCMN(src, w, h, c, &tc.np)
			checkCMN(t, tc.name, got, vals, pad, tc.np.Out)
		}
	}
}

func TestCropMirrorNormalizeRejectsBadArguments(t *testing.T) {
	src := make([]byte, 8*8*3)
	good := NormalizeParams{Mean: []float32{1, 2, 3}, Std: []float32{1, 2, 3}, Scale: 1, CropW: 4, CropH: 4}
	dst := make([]byte, 1024)
	if err := CropMirrorNormalize(dst, src, 8, 8, 3, &good); err != nil {
		t.Fatalf("valid parameters rejected: %v", err)
	}
	bad := map[string]func(np *NormalizeParams){
		"zero std":        func(np *NormalizeParams) { np.Std = []float32{1, 0, 1} },
		"mean length":     func(np *NormalizeParams) { np.Mean = []float32{1, 2} },
		"std length":      func(np *NormalizeParams) { np.Std = []float32{1, 2, 3, 4} },
		"NaN mean":        func(np *NormalizeParams) { np.Mean = []float32{float32(math.NaN())} },
		"infinite scale":  func(np *NormalizeParams) { np.Scale = float32(math.Inf(1)) },
		"empty crop":      func(np *NormalizeParams) { np.CropW = 0 },
		"unknown dtype":   func(np *NormalizeParams) { np.Out = DType(9) },
		"output too long": func(np *NormalizeParams) { np.CropW, np.CropH = 100, 100 },
	}
	for name, mutate := range bad {
		np := good
		mutate(&np)
		if err := CropMirrorNormalize(dst, src, 8, 8, 3, &np); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := CropMirrorNormalize(dst, src[:100], 8, 8, 3, &good); err == nil {
		t.Error("short input accepted")
	}
	if err := CropMirrorNormalize(dst[1:], src, 8, 8, 3, &good); err == nil {
		t.Error("misaligned float32 output accepted")
	}
}

func TestParseDType(t *testing.T) {
	for _, d := range []DType{Float32, Float16, UInt8, Int8} {
		if got, err := ParseDType("types." + d.String()); err != nil || got != d {
			t.Errorf("ParseDType(types.%v) = %v, %v", d, got, err)
		}
	}
	if _, err := ParseDType("FLOAT64"); err == nil {
		t.Error("FLOAT64 accepted")
	}
}
