package imaging

import (
	"math"
	"math/rand/v2"
)

// testImage is deterministic content with smooth gradients, sharp edges and noise, so
// that resampling errors show up in both flat and busy regions.
func testImage(w, h, c int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	img := make([]byte, w*h*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				v := 128 + 90*math.Sin(float64(x)*0.043*float64(ch+1)+float64(y)*0.027)
				if x > w/2 && ((x/7)+(y/5))%2 == 0 {
					v += 70
				}
				if y > h/2 && x < w/3 {
					v = float64((x*13 + y*7*(ch+1)) % 256)
				}
				v += float64(r.IntN(31) - 15)
				img[(y*w+x)*c+ch] = byte(math.Min(math.Max(math.Round(v), 0), 255))
			}
		}
	}
	return img
}

// diffStats compares two uint8 images restricted to the interior (border pixels
// excluded on each side), returning the mean and max absolute difference.
func diffStats(a, b []byte, w, h, c, border int) (mean float64, maxd int) {
	sum, n := 0, 0
	for y := border; y < h-border; y++ {
		for x := border; x < w-border; x++ {
			for ch := 0; ch < c; ch++ {
				i := (y*w+x)*c + ch
				d := int(a[i]) - int(b[i])
				if d < 0 {
					d = -d
				}
				sum += d
				n++
				maxd = max(maxd, d)
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), maxd
}
