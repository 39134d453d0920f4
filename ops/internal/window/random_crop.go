package window

import (
	"math"

	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// RandomCropArgs are the arguments of torchvision's RandomResizedCrop window choice.
var RandomCropArgs = []engine.ArgSpec{
	{Name: "random_area", Type: engine.ArgFloatList, Default: []float64{0.08, 1.0}, Doc: "range of the crop's area as a fraction of the image"},
	{Name: "random_aspect_ratio", Type: engine.ArgFloatList, Default: []float64{3.0 / 4, 4.0 / 3}, Doc: "range of the crop's width/height, drawn log-uniformly"},
	{Name: "num_attempts", Type: engine.ArgInt, Default: 10, Doc: "attempts to find a crop inside the image before falling back to a center crop"},
}

// RandomCrop is the RandomResizedCrop window choice.
type RandomCrop struct {
	AreaMin, AreaMax   float64
	RatioMin, RatioMax float64
	Attempts           int
	// DALI draws as DALI's RandomCropGenerator does (dali.go) rather than as
	// torchvision's RandomResizedCrop.get_params.
	DALI bool
}

// Window draws a crop of a w x h image: torchvision's algorithm, center crop as fallback
// (DALI's with rc.DALI).
func (rc *RandomCrop) Window(w, h int, rng *engine.RNG) codec.Rect {
	if rc.DALI {
		return rc.daliWindow(w, h, rng)
	}
	area := float64(w * h)
	logLo, logHi := math.Log(rc.RatioMin), math.Log(rc.RatioMax)
	for i := 0; i < rc.Attempts; i++ {
		target := area * rng.Uniform(rc.AreaMin, rc.AreaMax)
		ratio := math.Exp(rng.Uniform(logLo, logHi))
		cw, okW := engine.Extent(math.Sqrt(target*ratio), math.Round)
		ch, okH := engine.Extent(math.Sqrt(target/ratio), math.Round)
		if okW && okH && cw > 0 && ch > 0 && cw <= w && ch <= h {
			x := rng.Intn(w - cw + 1)
			y := rng.Intn(h - ch + 1)
			return codec.Rect{X: x, Y: y, W: cw, H: ch}
		}
	}
	return rc.Fallback(w, h)
}

// Fallback is the center crop Window takes after Attempts failed draws (with rc.DALI,
// the size of DALI's fallback window, placed in the centre here; Window places it at
// random).
func (rc *RandomCrop) Fallback(w, h int) codec.Rect {
	if rc.DALI {
		cw, ch := rc.daliFallback(w, h)
		return codec.Rect{X: (w - cw) / 2, Y: (h - ch) / 2, W: cw, H: ch}
	}
	inRatio := float64(w) / float64(h)
	cw, ch := w, h
	// Both are at most the image's side: inRatio < RatioMin makes cw / RatioMin < h.
	if inRatio < rc.RatioMin {
		ch, _ = engine.Extent(float64(cw)/rc.RatioMin, math.Round)
	} else if inRatio > rc.RatioMax {
		cw, _ = engine.Extent(float64(ch)*rc.RatioMax, math.Round)
	}
	cw, ch = max(1, min(cw, w)), max(1, min(ch, h))
	return codec.Rect{X: (w - cw) / 2, Y: (h - ch) / 2, W: cw, H: ch}
}

// MaxHeight is the tallest crop of width cw that a draw of Window may give a w x h image
// (0: none): torchvision's draw rounds sqrt(area*ratio) to cw and sqrt(area/ratio) to
// the height, so the height is at most (cw+0.5)/RatioMin and AreaMax*w*h/(cw-0.5),
// rounded, and the image's. The fallback window is not counted (Fallback). DALI's draws
// (rc.DALI) are the same sizes, those whose ratio is in range, so the bounds hold there
// too (but for 1-pixel sides raised from 0, which only shrink the window).
func (rc *RandomCrop) MaxHeight(cw, w, h int) int {
	if cw < 1 || cw > w {
		return 0
	}
	const eps = 1e-9
	byRatio := math.Floor((float64(cw)+0.5)/rc.RatioMin + 0.5 + eps)
	byArea := math.Floor(rc.AreaMax*float64(w)*float64(h)/(float64(cw)-0.5) + 0.5 + eps)
	return int(max(0, min(float64(h), byRatio, byArea)))
}

// MinHeight is the shortest crop of width cw that a draw of Window may give a w x h
// image: at least (cw-0.5)/RatioMax and AreaMin*w*h/(cw+0.5), rounded, and 1.
func (rc *RandomCrop) MinHeight(cw, w, h int) int {
	const eps = 1e-9
	byRatio := (float64(cw) - 0.5) / rc.RatioMax
	byArea := rc.AreaMin * float64(w) * float64(h) / (float64(cw) + 0.5)
	return int(max(1, math.Ceil(max(byRatio, byArea)-0.5-eps)))
}

// ParseRandomCrop checks RandomCropArgs.
func ParseRandomCrop(a *engine.Args) (*RandomCrop, error) {
	area, ratio := a.Floats("random_area"), a.Floats("random_aspect_ratio")
	if len(area) == 1 {
		area = []float64{area[0], area[0]}
	}
	if len(ratio) == 1 {
		ratio = []float64{ratio[0], ratio[0]}
	}
	if len(area) != 2 || area[0] <= 0 || area[0] > area[1] || area[1] > 1 {
		return nil, a.Errorf("random_area", "expected [min, max] with 0 < min <= max <= 1, got %v", a.Floats("random_area"))
	}
	if len(ratio) != 2 || ratio[0] <= 0 || ratio[0] > ratio[1] {
		return nil, a.Errorf("random_aspect_ratio", "expected [min, max] with 0 < min <= max, got %v", a.Floats("random_aspect_ratio"))
	}
	if a.Int("num_attempts") < 1 {
		return nil, a.Errorf("num_attempts", "must be >= 1, got %d", a.Int("num_attempts"))
	}
	return &RandomCrop{AreaMin: area[0], AreaMax: area[1], RatioMin: ratio[0], RatioMax: ratio[1], Attempts: a.Int("num_attempts")}, nil
}
