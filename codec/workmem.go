package codec

import (
	"fmt"
	"image"
	"image/color"
)

// WorkBytesPerPixel bounds a decoder's working memory: besides its output and an RGB
// staging copy (3 bytes per pixel), the whole-image intermediate a format's decoder
// builds (Go's 16-bit NRGBA64 for a 16-bit PNG, libjpeg's coefficient buffer for a
// progressive JPEG, a TIFF's raw strips) may take at most WorkBytesPerPixel x
// Options.MaxPixels bytes, checked against the header before anything is allocated.
// 4 is what an 8-bit RGBA image at the pixel limit needs.
const WorkBytesPerPixel = 4

// maxDeflateRatio is the most zlib can expand: one 258-byte match per ~2 bits.
const maxDeflateRatio = 1032

// checkWork refuses a header whose decoder would need more working memory than the
// options allow.
func checkWork(info Info, opt Options) error {
	if opt.MaxPixels <= 0 || info.WorkBytes <= 0 {
		return nil
	}
	if limit := opt.MaxPixels * WorkBytesPerPixel; info.WorkBytes > limit {
		return &decodeError{msg: fmt.Sprintf("%s: decoding the %dx%d %s image needs %d bytes of working memory, more than %d (max_image_pixels %d x %d bytes)",
			info.Format, info.Width, info.Height, info.ColorSpace, info.WorkBytes, limit, opt.MaxPixels, WorkBytesPerPixel), kind: ErrTooManyPixels}
	}
	return nil
}

// stdWorkBytes is the size of the image Go's decoder for format f allocates for a header
// cfg: bytes per pixel of the colour model it decodes into, times the decoder's own
// copies (TIFF reads whole strips before converting them; the WebP lossless decoder
// keeps a 32-bit pixel array besides its NRGBA image).
func stdWorkBytes(f Format, cfg image.Config) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	var bpp2 int64 // bytes per pixel x 2
	switch cfg.ColorModel {
	case color.GrayModel, color.AlphaModel:
		bpp2 = 2
	case color.Gray16Model, color.Alpha16Model:
		bpp2 = 4
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel:
		bpp2 = 8
	case color.RGBA64Model, color.NRGBA64Model:
		bpp2 = 16
	case color.YCbCrModel:
		bpp2 = 6 // 4:4:4 at most
	case color.NYCbCrAModel:
		bpp2 = 8
	default: // palettes
		bpp2 = 2
	}
	work := px * bpp2 / 2
	switch {
	case f == FormatTIFF:
		work *= 2
	case f == FormatWebP && cfg.ColorModel == color.NRGBAModel:
		work *= 2
	}
	return work
}

// pngWork fills in what Go's PNG decoder needs for the IHDR in data (bytes 16..28).
func pngWork(data []byte, info *Info) error {
	if len(data) < 29 {
		return nil
	}
	depth, ct, interlace := int64(data[24]), data[25], data[28]
	var ch int64
	switch ct {
	case 0, 3:
		ch = 1
	case 2:
		ch = 3
	case 4:
		ch = 2
	case 6:
		ch = 4
	default:
		return nil // DecodeConfig has rejected it
	}
	w, h := int64(info.Width), int64(info.Height)
	bpp := int64(1) // gray <= 8 bits, palette
	switch {
	case ct == 3:
	case depth == 16 && ch == 1:
		bpp = 2
	case depth == 16:
		bpp = 8
	case ch > 1:
		bpp = 4
	}
	info.WorkBytes = w * h * bpp
	if interlace == 1 {
		info.WorkBytes *= 2 // the passes, then the image
	}
	return nil
}

// jpegMinData is the fewest bytes of entropy-coded data a Huffman-coded JPEG of blocks
// 8x8 blocks can have: a sequential scan codes each block's DC difference and then its
// AC coefficients or an end-of-block, two Huffman codes of at least one bit each; a
// progressive image's DC scans code at least one bit per block (AC scans may skip
// whole runs of blocks, so they add nothing to the bound). Arithmetic coding has no
// such floor.
func jpegMinData(progressive, arithmetic bool, blocks int64) int64 {
	switch {
	case arithmetic:
		return 0
	case progressive:
		return blocks / 8
	}
	return blocks / 4
}

// checkDataFits refuses headers that the encoded data cannot possibly fill, before
// anyone sizes an output for them: a binary PNM or uncompressed BMP raster must lie
// within the file, and a PNG's scanlines cannot be more than maxDeflateRatio times the
// file (so a 69-byte PNG declaring 12000x14000 RGBA is truncated, whatever its decoder
// would allocate first), and a Huffman-coded JPEG needs at least a bit or two per 8x8
// block (jpegMinData: a 60 KB JPEG body under a header declaring 13000x13000 ends long
// before the image, where libjpeg would fill a 500 MB output with grey). Other formats
// can encode large flat areas in a few bytes.
func checkDataFits(data []byte, info Info) error {
	w, h := int64(info.Width), int64(info.Height)
	switch info.Format {
	case FormatPNM:
		hd, err := parsePNM(data)
		if err != nil {
			return err
		}
		if need := w * h * int64(hd.channels); int64(len(data)-hd.offset) < need {
			return &decodeError{msg: fmt.Sprintf("PNM: raster truncated (%d of %d bytes)", len(data)-hd.offset, need), kind: ErrTruncated}
		}
	case FormatBMP:
		hd, err := parseBMP(data)
		if err != nil {
			return err
		}
		if hd.compression == bmpRLE8 || hd.compression == bmpRLE4 {
			return nil
		}
		stride := (w*int64(hd.bpp) + 31) / 32 * 4
		if rowBytes := (w*int64(hd.bpp) + 7) / 8; int64(len(data)-hd.offset) < (h-1)*stride+rowBytes {
			return &decodeError{msg: fmt.Sprintf("BMP: pixel data truncated (%d bytes for %d rows of %d)", len(data)-hd.offset, h, stride), kind: ErrTruncated}
		}
	case FormatJPEG:
		if info.minData > int64(len(data)) {
			return &decodeError{msg: fmt.Sprintf("JPEG: the %dx%d header needs at least %d bytes of coded data, more than the %d-byte file holds (truncated, or a corrupt size in the header)",
				w, h, info.minData, len(data)), kind: ErrTruncated}
		}
	case FormatPNG:
		if len(data) < 29 {
			return nil
		}
		depth := int64(data[24])
		ch := map[byte]int64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[data[25]]
		raw := h * (1 + (w*ch*depth+7)/8) // filtered scanlines, not interlaced (the fewer bytes)
		if raw/maxDeflateRatio > int64(len(data)) {
			return &decodeError{msg: fmt.Sprintf("PNG: the %dx%d %d-bit header needs %d bytes of image data, more than %d bytes of file can hold (truncated?)",
				w, h, depth, raw, len(data)), kind: ErrTruncated}
		}
	}
	return nil
}
