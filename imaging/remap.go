package imaging

import (
	"fmt"
	"math"
)

// Remap describes a per-pixel resampling: output pixel (x, y) shows the input at
// (MapX[y*w+x] + Shift, MapY[y*w+x] + Shift), in coordinates whose integers are pixel
// centres, sampled as OpenCV's remap with float maps samples (the point quantized to
// 1/32 of a pixel for InterpLinear and InterpCubic, rounded half to even for InterpNN;
// see Perspective). Shift -0.5 reads maps whose origin is the top-left corner of the first
// pixel (DALI's pixel_origin="corner").
type Remap struct {
	MapX, MapY []float32
	Shift      float64
	Interp     Interp
	Border     Border
	Fill       []float64
}

// RemapImage fills dst (dh x dw x c, the maps' shape) from src (h x w x c).
func RemapImage[T PerspectivePixel](p *Remap, dst []T, dw, dh int, src []T, w, h, c int) error {
	if dw < 0 || dh < 0 || len(dst) < dw*dh*c {
		return fmt.Errorf("remap: output of %d elements is not %dx%dx%d", len(dst), dh, dw, c)
	}
	if len(p.MapX) < dw*dh || len(p.MapY) < dw*dh {
		return fmt.Errorf("remap: maps of %d and %d elements do not cover %dx%d", len(p.MapX), len(p.MapY), dh, dw)
	}
	s, err := newWarpSampler[T, T](p.Interp, p.Border, p.Fill, src, w, h, c)
	if err != nil {
		return fmt.Errorf("remap: %w", err)
	}
	for i := 0; i < dw*dh; i++ {
		sx, sy := float64(p.MapX[i])+p.Shift, float64(p.MapY[i])+p.Shift
		var ix, iy int
		var tx, ty float64
		if p.Interp == InterpNN {
			ix, iy = clampShort(satInt(sx)), clampShort(satInt(sy))
		} else {
			ix, iy, tx, ty = quantizeTab(sx*perspTab, sy*perspTab)
		}
		if math.IsNaN(sx) || math.IsNaN(sy) { // reads nothing: the fill
			ix, iy, tx, ty = math.MinInt16, math.MinInt16, 0, 0
		}
		s.pixel(dst[i*c:(i+1)*c], ix, iy, tx, ty)
	}
	return nil
}
