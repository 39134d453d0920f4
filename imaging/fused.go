package imaging

import "fmt"

// ResizeCropMirrorNormalize is resize followed by crop_mirror_normalize in one sweep:
// src (w x h x c uint8, which must match p's source size) is resampled by p, and np's
// crop window, given in the resized image's coordinates, is normalised into dst.
// Only the output columns and rows inside the window are resampled, and each
// resampled row goes from the vertical pass through the normaliser's tables while it
// is still in cache. The result is identical to Resize followed by
// CropMirrorNormalize: the resampled values are rounded to uint8 before normalisation,
// as in the unfused pipeline.
func ResizeCropMirrorNormalize(dst []byte, src []byte, w, h, c int, p *ResizePlan, np *NormalizeParams, s *Scratch) error {
	if err := p.checkSource(src, c); err != nil {
		return err
	}
	if w != p.SrcW || h != p.SrcH {
		return fmt.Errorf("resize: input is %dx%d but the plan was built for %dx%d", w, h, p.SrcW, p.SrcH)
	}
	if err := np.Check(p.DstW, p.DstH, c, len(dst)); err != nil {
		return err
	}
	if err := checkAlign(dst, np.Out); err != nil {
		return err
	}
	if s == nil {
		s = new(Scratch)
	}
	switch np.Out.Size() {
	case 4:
		resizeCMN(asElems[uint32](dst), src, c, p, np, s)
	case 2:
		resizeCMN(asElems[uint16](dst), src, c, p, np, s)
	default:
		resizeCMN(dst, src, c, p, np, s)
	}
	return nil
}

func resizeCMN[T elem](dst []T, src []byte, c int, p *ResizePlan, np *NormalizeParams, s *Scratch) {
	var nz normalizer[T]
	nz.init(dst, p.DstW, p.DstH, c, np)
	if nz.yA >= nz.yB {
		return
	}
	var r region
	r.begin(p, src, c, p.SrcW*c, nz.cxA, nz.cxB, np.CropY+nz.yA, np.CropY+nz.yB, s)
	s.row = grow(s.row, r.rowLen)
	for oy := nz.yA; oy < nz.yB; oy++ {
		r.row(np.CropY+oy, s.row, s)
		nz.writeRow(oy, s.row)
	}
}

// ResizeCropSource is the window [x0, x1) x [y0, y1) of the source that
// ResizeCropMirrorNormalize reads with this plan and crop: the filter support of the
// output pixels inside the crop. Source pixels outside it do not change the result, so
// a decoder may leave them unwritten. ok is false when the plan is invalid or the crop
// holds no resized pixel (nothing is read).
func ResizeCropSource(p *ResizePlan, np *NormalizeParams) (x0, y0, x1, y1 int, ok bool) {
	if p.err != nil {
		return 0, 0, 0, 0, false
	}
	// The output columns and rows the normaliser asks the region for (normalizer.init).
	cx0, cx1 := max(np.CropX, 0), min(np.CropX+np.CropW, p.DstW)
	cy0, cy1 := max(np.CropY, 0), min(np.CropY+np.CropH, p.DstH)
	if cx0 >= cx1 || cy0 >= cy1 {
		return 0, 0, 0, 0, false
	}
	x0, x1 = p.h.span(cx0, cx1)
	y0, y1 = p.v.span(cy0, cy1)
	return x0, y0, x1, y1, x0 < x1 && y0 < y1
}

// span is the source range [lo, hi) that outputs [a, b) of the axis read: the taps,
// zero-weight padding included, the nearest neighbours, or the same range.
func (ax *axisPlan) span(a, b int) (lo, hi int) {
	switch ax.kind {
	case axisIdentity:
		return a, b
	case axisNearest:
		lo, hi = int(ax.idx[a]), int(ax.idx[a])+1
		for _, i := range ax.idx[a:b] {
			lo, hi = min(lo, int(i)), max(hi, int(i)+1)
		}
		return lo, hi
	}
	lo, hi = int(ax.taps[a].start), int(ax.taps[a].start)
	for _, t := range ax.taps[a:b] {
		lo, hi = min(lo, int(t.start)), max(hi, int(t.start+t.n))
	}
	return lo, hi
}
