package imaging

import (
	"math"
	"sync"
)

// The 8-bit CIE L*a*b* encoding of sRGB (D65) pixels, as OpenCV's COLOR_RGB2Lab /
// COLOR_Lab2RGB for 8-bit images: L scaled to 0..255 (L * 255 / 100), a and b offset by
// 128. The inverse is computed in float64 (OpenCV's own uses fixed-point tables: results
// may differ from its by a level).

const (
	labXn, labZn = 0.950456, 1.088754
	labEps       = 0.008856
	labKappa     = 903.3
)

func srgbLinear(c float64) float64 {
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

func srgbGamma(c float64) float64 {
	if c <= 0.0031308 {
		return 12.92 * c
	}
	return 1.055*math.Pow(c, 1/2.4) - 0.055
}

func labF(t float64) float64 {
	if t > labEps {
		return math.Cbrt(t)
	}
	return 7.787*t + 16.0/116
}

// The forward conversion is OpenCV's integer one (RGB2Lab_b), whose L is what CLAHE's
// luminance mode equalizes: 12-bit XYZ coefficients (white-point normalized), an sRGB
// table of 255*8 steps and a cube-root table of 15 fractional bits.
const (
	labShift  = 12
	labShift2 = 15
	labCbrtN  = 256 * 3 / 2 * 8
)

var labTabs = sync.OnceValue(func() (t struct {
	gamma [256]int32
	cbrt  [labCbrtN]int32
	coef  [9]int32
}) {
	for i := range t.gamma {
		x := float32(i) * float32(1.0/255)
		g := float32(float64(x) / 12.92)
		if x > 0.04045 {
			g = float32(math.Pow((float64(x)+0.055)/1.055, 2.4))
		}
		t.gamma[i] = int32(math.RoundToEven(float64(float32(255*8) * g)))
	}
	for i := range t.cbrt {
		x := float64(float32(i) * float32(1.0/(255*8)))
		v := math.Cbrt(x)
		if x < 216.0/24389 {
			v = x*841/108 + 16.0/116
		}
		t.cbrt[i] = int32(math.RoundToEven(float64(1<<labShift2) * v))
	}
	m := [9]float64{0.412453, 0.357580, 0.180423, 0.212671, 0.715160, 0.072169, 0.019334, 0.119193, 0.950227}
	wp := [3]float64{labXn, 1, labZn}
	for i := range m {
		t.coef[i] = int32(math.RoundToEven(float64(1<<labShift) * m[i] / wp[i/3]))
	}
	return t
})

func descale(x int32, n uint) int32 { return (x + 1<<(n-1)) >> n }

// RGBToLab8 converts one 8-bit RGB pixel to 8-bit L*a*b*, as OpenCV's COLOR_RGB2Lab.
func RGBToLab8(r, g, b uint8) (l, a, bb uint8) {
	t := labTabs()
	R, G, B := t.gamma[r], t.gamma[g], t.gamma[b]
	c := &t.coef
	fx := t.cbrt[descale(R*c[0]+G*c[1]+B*c[2], labShift)]
	fy := t.cbrt[descale(R*c[3]+G*c[4]+B*c[5], labShift)]
	fz := t.cbrt[descale(R*c[6]+G*c[7]+B*c[8], labShift)]
	const lScale, lShift = (116*255 + 50) / 100, -((16*255*(1<<labShift2) + 50) / 100)
	L := descale(lScale*fy+lShift, labShift2)
	A := descale(500*(fx-fy)+128*(1<<labShift2), labShift2)
	Bb := descale(200*(fy-fz)+128*(1<<labShift2), labShift2)
	clamp := func(v int32) uint8 { return uint8(min(max(v, 0), 255)) }
	return clamp(L), clamp(A), clamp(Bb)
}

// Lab8ToRGB converts one 8-bit L*a*b* pixel back to 8-bit RGB.
func Lab8ToRGB(l, a, bb uint8) (r, g, b uint8) {
	L := float64(l) * 100 / 255
	var y, fy float64
	if L <= labEps*labKappa {
		y = L / labKappa
		fy = 7.787*y + 16.0/116
	} else {
		fy = (L + 16) / 116
		y = fy * fy * fy
	}
	inv := func(f float64) float64 {
		if f > 0.206893 {
			return f * f * f
		}
		return (f - 16.0/116) / 7.787
	}
	x := inv(fy+(float64(a)-128)/500) * labXn
	z := inv(fy-(float64(bb)-128)/200) * labZn
	R := 3.240479*x - 1.53715*y - 0.498535*z
	G := -0.969256*x + 1.875991*y + 0.041556*z
	B := 0.055648*x - 0.204043*y + 1.057311*z
	enc := func(c float64) uint8 { return sat8(255 * srgbGamma(min(max(c, 0), 1))) }
	return enc(R), enc(G), enc(B)
}

func sat8(v float64) uint8 { return uint8(min(max(math.RoundToEven(v), 0), 255)) }
