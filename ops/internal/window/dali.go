package window

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// DALI's RandomCropGenerator (decoders.image_random_crop without like_pil), as DALI 2.4
// draws: sizes as torchvision's (area and log-uniform aspect ratio, sides rounded), but
// a draw counts only when its rounded sides' ratio is in range too; images too wide or
// too tall for any draw take their fallback at once; the fallback is the image clamped
// to the ratio range (sides truncated), shrunk to the largest area allowed; and every
// window, the fallback too, is placed at random. Sizes are computed in float32 as DALI
// computes them (tests/compat/decsweep.py compares the fallback sizes with DALI's).
func (rc *RandomCrop) daliWindow(w, h int, rng *engine.RNG) codec.Rect {
	cw, ch, ok := rc.daliDraw(w, h, rng)
	if !ok {
		cw, ch = rc.daliFallback(w, h)
	}
	return codec.Rect{X: rng.Intn(w - cw + 1), Y: rng.Intn(h - ch + 1), W: cw, H: ch}
}

// daliLimits are DALI's widest and tallest windows for the ratio range (at least 1).
func (rc *RandomCrop) daliLimits(w, h int) (maxW, maxH int) {
	maxW = max(1, int(float32(h)*float32(rc.RatioMax)))
	maxH = max(1, int(float32(w)*(1/float32(rc.RatioMin))))
	return maxW, maxH
}

// daliDraw makes up to Attempts draws; ok is false when none fits (or none can).
func (rc *RandomCrop) daliDraw(w, h int, rng *engine.RNG) (cw, ch int, ok bool) {
	maxW, maxH := rc.daliLimits(w, h)
	minArea := float32(w*h) * float32(rc.AreaMin)
	if float32(h*maxW) < minArea || float32(w*maxH) < minArea {
		return 0, 0, false // too wide or too tall for any draw
	}
	area := float32(w * h)
	lo, hi := float32(rc.RatioMin), float32(rc.RatioMax)
	logLo, logHi := math.Log(rc.RatioMin), math.Log(rc.RatioMax)
	for i := 0; i < rc.Attempts; i++ {
		target := area * float32(rng.Uniform(rc.AreaMin, rc.AreaMax))
		ratio := float32(math.Exp(rng.Uniform(logLo, logHi)))
		cw = max(1, int(roundf(sqrtf(target*ratio))))
		ch = max(1, int(roundf(sqrtf(target/ratio))))
		if r := float32(cw) / float32(ch); cw <= w && ch <= h && r >= lo && r <= hi {
			return cw, ch, true
		}
	}
	return 0, 0, false
}

// daliFallback is DALI's window after failed draws: the image clamped to the ratio
// range, shrunk (keeping its ratio, sides truncated) to at most AreaMax of the image.
func (rc *RandomCrop) daliFallback(w, h int) (cw, ch int) {
	maxW, maxH := rc.daliLimits(w, h)
	minArea := float32(w*h) * float32(rc.AreaMin)
	if float32(h*maxW) < minArea {
		return maxW, h // too wide: no shrinking
	}
	if float32(w*maxH) < minArea {
		return w, maxH // too tall
	}
	ratio := float32(w) / float32(h)
	cw, ch = w, h
	if ratio > float32(rc.RatioMax) {
		cw = maxW
	} else if ratio < float32(rc.RatioMin) {
		ch = maxH
	}
	maxArea := float32(rc.AreaMax) * float32(w*h)
	scale := min(1, maxArea/float32(cw*ch))
	s := sqrtf(scale)
	return max(1, int(float32(cw)*s)), max(1, int(float32(ch)*s))
}

func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// roundf rounds halves away from zero, as C's roundf.
func roundf(x float32) float32 { return float32(math.Round(float64(x))) }
