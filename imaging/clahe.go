package imaging

import "math"

// CLAHE is OpenCV's contrast limited adaptive histogram equalization of 8-bit planes
// (cv::createCLAHE(clipLimit, (TilesX, TilesY)).apply; DALI's CPU clahe calls it). The
// plane is cut into TilesX x TilesY tiles; when its size is not a multiple of the grid,
// the tiles cover the plane extended by reflect-101 by TilesY - h%TilesY rows and TilesX -
// w%TilesX columns (a whole tile row or column more along an axis already a multiple, as
// OpenCV's). Each tile's 256-bin histogram is clipped at max(int(ClipLimit * tile area /
// 256), 1) (no clipping with ClipLimit <= 0), the excess spread over the bins, and its
// cumulative sum scaled to 0..255 is the tile's table; a pixel blends the tables of the
// four nearest tile centres bilinearly, in float32 as OpenCV, rounded half to even.
type CLAHE struct {
	TilesX, TilesY int
	ClipLimit      float64
	lut            []uint8 // TilesY*TilesX tables of 256
	hist           [256]int32
	xa             []float32
	ind1, ind2     []int
}

// Apply equalizes the h x w plane src (row stride stride elements, the plane's values at
// every step-th byte: step 1 for a grey plane, c for one channel of HWC) into dst, laid
// out alike.
func (p *CLAHE) Apply(dst, src []uint8, h, w, stride, step int) {
	if h <= 0 || w <= 0 {
		return
	}
	tx, ty := p.TilesX, p.TilesY
	ew, eh := w, h
	if w%tx != 0 || h%ty != 0 {
		ew, eh = w+tx-w%tx, h+ty-h%ty
	}
	tw, th := ew/tx, eh/ty
	area := tw * th
	lutScale := float32(255) / float32(area)
	clip := 0
	if p.ClipLimit > 0 {
		// A limit past the tile's area clips nothing: capped there, the conversion to
		// int stays defined for any clip_limit.
		clip = max(int(min(p.ClipLimit*float64(area)/256, float64(area)+1)), 1)
	}
	if cap(p.lut) < tx*ty*256 {
		p.lut = make([]uint8, tx*ty*256)
	}
	lut := p.lut[:tx*ty*256]
	for t := 0; t < tx*ty; t++ {
		x0, y0 := (t%tx)*tw, (t/tx)*th
		hist := &p.hist
		clear(hist[:])
		for y := y0; y < y0+th; y++ {
			row := src[borderIndex(y, h, BorderReflect101)*stride:]
			for x := x0; x < x0+tw; x++ {
				hist[row[borderIndex(x, w, BorderReflect101)*step]]++
			}
		}
		if clip > 0 {
			clipped := 0
			for i := range hist {
				if int(hist[i]) > clip {
					clipped += int(hist[i]) - clip
					hist[i] = int32(clip)
				}
			}
			batch := clipped / 256
			residual := clipped - batch*256
			for i := range hist {
				hist[i] += int32(batch)
			}
			if residual != 0 {
				rstep := max(256/residual, 1)
				for i := 0; i < 256 && residual > 0; i, residual = i+rstep, residual-1 {
					hist[i]++
				}
			}
		}
		sum := 0
		tl := lut[t*256 : t*256+256]
		for i := range hist {
			sum += int(hist[i])
			tl[i] = satU8(float32(sum) * lutScale)
		}
	}
	invTW, invTH := 1/float32(tw), 1/float32(th)
	if cap(p.xa) < w {
		p.xa, p.ind1, p.ind2 = make([]float32, w), make([]int, w), make([]int, w)
	}
	xa, ind1, ind2 := p.xa[:w], p.ind1[:w], p.ind2[:w]
	for x := 0; x < w; x++ {
		txf := float32(float32(x)*invTW) - 0.5 // conversions: no fused multiply-add
		t1 := int(math.Floor(float64(txf)))
		xa[x] = txf - float32(t1)
		ind1[x], ind2[x] = max(t1, 0)*256, min(t1+1, tx-1)*256
	}
	for y := 0; y < h; y++ {
		tyf := float32(float32(y)*invTH) - 0.5
		t1 := int(math.Floor(float64(tyf)))
		ya := tyf - float32(t1)
		ya1 := 1 - ya
		p1 := lut[max(t1, 0)*tx*256:]
		p2 := lut[min(t1+1, ty-1)*tx*256:]
		srow, drow := src[y*stride:], dst[y*stride:]
		for x := 0; x < w; x++ {
			v := int(srow[x*step])
			a := xa[x]
			a1 := 1 - a
			i1, i2 := ind1[x]+v, ind2[x]+v
			top := float32(float32(float32(p1[i1])*a1) + float32(float32(p1[i2])*a))
			bot := float32(float32(float32(p2[i1])*a1) + float32(float32(p2[i2])*a))
			res := float32(top*ya1) + float32(bot*ya)
			drow[x*step] = satU8(res)
		}
	}
}

// satU8 is OpenCV's saturate_cast<uchar>(float): round half to even, clamp to 0..255.
func satU8(v float32) uint8 {
	r := math.RoundToEven(float64(v))
	return uint8(min(max(r, 0), 255))
}
