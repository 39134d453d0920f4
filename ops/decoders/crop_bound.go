package decoders

import (
	"github.com/godali/godali/codec"
	"github.com/godali/godali/engine"
)

// cropPixels is the most pixels the random-crop decoder's output can have for an image
// of this header (the memory plan's worst case): the largest window a draw or the
// fallback may give, decoded as Setup decodes it (only the window; scaled down in the DCT
// domain when a consumer shrinks it at least dctScaleMargin times). Every window width is
// tried with the heights where the output is largest: the tallest the draw allows, and
// the tallest (not below the shortest the draw allows) below each height at which a smaller DCT scale would do.
func (d *cpuDecoder) cropPixels(info codec.Info) int64 {
	w, h := info.Width, info.Height
	if d.orients(info) && info.Orientation >= 5 {
		w, h = h, w
	}
	consumer := d.consumer
	if consumer != nil && !fixedSize(consumer, w, h) {
		// The candidates below assume one minimum for every window: bound a consumer
		// whose size follows the window (resize_shorter) by the window decoded whole.
		consumer = nil
	}
	fb := d.crop.Fallback(w, h)
	best := windowPixels(info, consumer, fb.W, fb.H)
	cands := make([]int, 0, 10)
	for cw := 1; cw <= w; cw++ {
		top, low := d.crop.MaxHeight(cw, w, h), d.crop.MinHeight(cw, w, h)
		if top < low {
			continue
		}
		cands = append(cands[:0], top)
		if consumer != nil {
			tw, th := consumer.OutputSizeFor(cw, top)
			minH := dctScaleMargin * th
			if tw > 0 && th > 0 && cw >= dctScaleMargin*tw {
				cands = append(cands, min(top, minH-1))
				for _, n := range codec.DCTScales {
					// The tallest height whose scale-n/8 decode is below minH.
					cands = append(cands, min(top, (8*(minH-1))/n))
				}
			}
		}
		for _, ch := range cands {
			if ch >= low {
				best = max(best, windowPixels(info, consumer, cw, ch))
			}
		}
	}
	return best
}

// windowPixels bounds the output of a cw x ch window (upright coordinates), decoded as
// Setup and codec's plan decode it: the smallest DCT scale whose output, at its smallest,
// covers the consumer's minimum, and that scale's largest output.
func windowPixels(info codec.Info, consumer engine.SizeHinter, cw, ch int) int64 {
	full := int64(cw) * int64(ch)
	if consumer == nil || info.Format != codec.FormatJPEG {
		return full
	}
	tw, th := consumer.OutputSizeFor(cw, ch)
	if tw <= 0 || th <= 0 || cw < dctScaleMargin*tw || ch < dctScaleMargin*th {
		return full
	}
	minW, minH := dctScaleMargin*tw, dctScaleMargin*th
	for _, n := range codec.DCTScales {
		loW, hiW := codec.ScaledExtent(cw, n)
		loH, hiH := codec.ScaledExtent(ch, n)
		if loW >= minW && loH >= minH {
			return int64(hiW) * int64(hiH)
		}
	}
	return full
}

// fixedSize reports whether the consumer makes one size of any window of a w x h image
// (a resize to a fixed size), tried at the corners of the window sizes.
func fixedSize(c engine.SizeHinter, w, h int) bool {
	tw, th := c.OutputSizeFor(1, 1)
	for _, s := range [][2]int{{w, h}, {w, 1}, {1, h}, {(w + 1) / 2, (h + 2) / 3}} {
		if x, y := c.OutputSizeFor(s[0], s[1]); x != tw || y != th {
			return false
		}
	}
	return true
}
