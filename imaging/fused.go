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
