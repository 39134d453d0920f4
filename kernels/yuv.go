package kernels

// YUVMatrix holds the coefficients godali_nv12_rgb converts a Y'CbCr pixel to RGB with:
// Y' = (Y - YOff) * YScale, R = Y' + CrV*Cr, G = Y' - CgU*Cb - CgV*Cr, B = Y' + CbU*Cb
// (Cb and Cr centred on 128).
type YUVMatrix struct {
	YOff, YScale, CrV, CgU, CgV, CbU float32
}

// YUVToRGB is the matrix of a stream's colour space, numbered as FFmpeg's AVColorSpace
// (1 BT.709, 9 and 10 BT.2020, 7 SMPTE 240M, 4 FCC; BT.601 otherwise, unspecified
// included, as FFmpeg's swscale assumes), in limited (16-235/240) or full range.
func YUVToRGB(colorSpace int, fullRange bool) YUVMatrix {
	kr, kb := 0.299, 0.114 // BT.601
	switch colorSpace {
	case 1:
		kr, kb = 0.2126, 0.0722
	case 4:
		kr, kb = 0.30, 0.11
	case 7:
		kr, kb = 0.212, 0.087
	case 9, 10:
		kr, kb = 0.2627, 0.0593
	}
	kg := 1 - kr - kb
	ys, cs, yo := 1.0, 1.0, 0.0
	if !fullRange {
		ys, cs, yo = 255.0/219, 255.0/224, 16
	}
	return YUVMatrix{
		YOff: float32(yo), YScale: float32(ys),
		CrV: float32(2 * (1 - kr) * cs),
		CgU: float32(2 * kb * (1 - kb) / kg * cs),
		CgV: float32(2 * kr * (1 - kr) / kg * cs),
		CbU: float32(2 * (1 - kb) * cs),
	}
}
