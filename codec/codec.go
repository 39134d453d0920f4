package codec

import (
	"errors"
	"fmt"
	"strings"
)

// Format is an encoded image format, detected from content.
type Format int

// Formats godali decodes.
const (
	FormatUnknown Format = iota
	FormatJPEG
	FormatPNG
	FormatBMP
	FormatTIFF
	FormatWebP
	FormatPNM
	FormatGIF
)

func (f Format) String() string {
	switch f {
	case FormatJPEG:
		return "JPEG"
	case FormatPNG:
		return "PNG"
	case FormatBMP:
		return "BMP"
	case FormatTIFF:
		return "TIFF"
	case FormatWebP:
		return "WebP"
	case FormatPNM:
		return "PNM"
	case FormatGIF:
		return "GIF"
	}
	return "unknown"
}

// OutputType is the pixel layout Decode writes (DALI's output_type).
type OutputType int

// Output layouts: interleaved RGB, interleaved BGR, or one luma channel.
const (
	RGB OutputType = iota
	BGR
	Gray
)

func (t OutputType) String() string {
	switch t {
	case RGB:
		return "RGB"
	case BGR:
		return "BGR"
	case Gray:
		return "GRAY"
	}
	return fmt.Sprintf("OutputType(%d)", int(t))
}

// Channels is the number of bytes per pixel of t: 3 for RGB and BGR, 1 for Gray.
func (t OutputType) Channels() int {
	if t == Gray {
		return 1
	}
	return 3
}

// ParseOutputType reads DALI's output_type names (case-insensitive): RGB, BGR, GRAY.
func ParseOutputType(s string) (OutputType, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "RGB":
		return RGB, nil
	case "BGR":
		return BGR, nil
	case "GRAY", "GREY":
		return Gray, nil
	}
	return RGB, fmt.Errorf("output_type %q is not supported; valid: RGB, BGR, GRAY", s)
}

// ImageType is DALI's image type as the decoders and peek_image_shape take it: an
// output type the codec decodes to, or YCbCr (made from the RGB decode) or ANY_DATA
// (each image's own channels), in which case Out is RGB.
type ImageType struct {
	Out            OutputType
	YCbCr, AnyData bool
}

// ParseImageType reads DALI's image type names (case-insensitive): RGB, BGR, GRAY,
// YCbCr, ANY_DATA.
func ParseImageType(s string) (ImageType, error) {
	switch t := strings.ToUpper(strings.TrimSpace(s)); t {
	case "YCBCR":
		return ImageType{Out: RGB, YCbCr: true}, nil
	case "ANY_DATA":
		return ImageType{Out: RGB, AnyData: true}, nil
	}
	out, err := ParseOutputType(s)
	if err != nil {
		return ImageType{Out: RGB}, fmt.Errorf("%q is not supported; valid: RGB, BGR, GRAY, YCbCr, ANY_DATA", s)
	}
	return ImageType{Out: out}, nil
}

// Info describes an encoded image as its header declares it.
type Info struct {
	Format Format
	// Width and Height are the stored size, before EXIF orientation is applied.
	Width, Height int
	// Components is the number of channels stored in the file (JPEG components, 4 for
	// RGBA PNG, 1 for palette or gray images).
	Components int
	// Sixteen: the samples are 16-bit (PNG, TIFF); the decode gives their high bytes,
	// or their low bytes with Options.Low16.
	Sixteen bool
	// ColorSpace names the stored colour model: "YCbCr", "Gray", "RGB", "CMYK", "YCCK",
	// "RGBA", "GrayA", "Palette", "YCbCrA", or "Unknown".
	ColorSpace string
	// Orientation is the EXIF orientation, 1..8; 1 when the file has none.
	Orientation int
	// Progressive and Arithmetic describe JPEG coding.
	Progressive, Arithmetic bool
	// WorkBytes is the size of the whole-image intermediate the format's decoder builds
	// besides the output, as the header implies (0 when it decodes row by row); see
	// WorkBytesPerPixel.
	WorkBytes int64
	// minData is the fewest bytes of coded data that can hold every pixel the header
	// declares (0: no such bound is known for the format); see checkDataFits.
	minData int64
}

// OrientedSize is the size of the image as Decode returns it without a ROI or scaling:
// Width x Height, swapped for orientations 5..8 when adjust is set.
func (i Info) OrientedSize(adjust bool) (w, h int) {
	if adjust && i.Orientation >= 5 && i.Orientation <= 8 {
		return i.Height, i.Width
	}
	return i.Width, i.Height
}

// Rect is a pixel rectangle: X, Y of the top-left corner, W x H.
type Rect struct{ X, Y, W, H int }

// Empty reports whether r is the zero Rect, which means "the whole image".
func (r Rect) Empty() bool { return r == Rect{} }

// Options says what Decode produces.
type Options struct {
	// Out is the output pixel layout.
	Out OutputType
	// AdjustOrientation applies the EXIF orientation (DALI's adjust_orientation,
	// default true there).
	AdjustOrientation bool
	// ROI restricts decoding to a window of the image after orientation is applied.
	// The zero Rect is the whole image. The window's pixels are those of the full
	// decode, bit for bit (a JPEG's fancy upsampling and progressive block smoothing
	// included), and the data are read to their end as in a full decode, so that data
	// cut short or corrupt outside the window fail the same way.
	ROI Rect
	// MinWidth and MinHeight, when positive, allow JPEG DCT-domain downscaling by N/8 as
	// long as the decoded ROI stays at least MinWidth x MinHeight (after orientation).
	// Zero means no scaling. Other formats ignore them.
	MinWidth, MinHeight int
	// MaxPixels, when positive, refuses images whose header declares more pixels,
	// before anything is allocated for them.
	MaxPixels int64
	// ClipGray16 clips 16-bit grey samples (PNG, TIFF) to 255, as PIL's convert from
	// its mode "I" does (torchvision's loader), instead of keeping their high byte (a
	// scaling to 8 bits, DALI's conversion).
	ClipGray16 bool
	// Low16, when set for a 16-bit image (Info.Sixteen), receives the low byte of each
	// sample where dst receives its high byte, from the same decode, so that the caller
	// rebuilds the samples at full precision (the decoders' UINT16 and FLOAT outputs, as
	// DALI's). Exact where the output's conversion copies samples (RGB and BGR of any
	// image, Gray of a grey one); alpha is dropped and premultiplied colour divided by
	// alpha first either way. It must hold as many bytes as dst's part of the image.
	Low16 []byte
	// FastIDCT selects libjpeg's fast integer IDCT (DALI's use_fast_idct): quicker,
	// slightly less accurate. The default is the accurate one, bit-exact with PIL.
	FastIDCT bool
	// DALIColor converts colours as DALI 2.4's CPU decoders do (tests/compat/decsweep.py)
	// rather than as PIL does (the default, bit-exact with PIL's convert):
	//   - a colour JPEG's Gray is libjpeg's grayscale output, the stored luma as decoded
	//     (PIL's draft("L")), not the 601 luma of the RGB decode (convert("L")): they
	//     differ where chroma upsampling and rounding do, up to about 15 levels;
	//   - Gray of colour BMP, PNM and TIFF is OpenCV's fixed-point 601 luma (rounded,
	//     14 bits), of PNG libpng's (nvImageCodec's weights, truncated, 15 bits);
	//   - CMYK and YCCK JPEGs: RGB = C*K/255 truncated (PIL rounds), Gray the 601 luma
	//     of that, truncated.
	// Each differs from PIL's by a level here and there. libpng's gamma-aware Gray of a
	// PNG with a gAMA chunk is not reproduced.
	DALIColor bool
	// Embed, with a ROI, makes the output the whole (oriented) image with the ROI's
	// pixels decoded in place, identical to a full decode's, and the others left as dst
	// held them: a consumer that reads only the ROI gets the full decode's result for
	// less work. A JPEG decodes only the ROI (libjpeg skips the rows above it and the
	// columns beside it; the rows below are entropy-decoded only, as for any ROI);
	// other formats decode the whole image. DCT scaling (MinWidth, MinHeight) is not
	// applied.
	Embed bool
}

// Errors that callers may test for with errors.Is.
var (
	// ErrUnknownFormat: the data is not an image format this package decodes.
	ErrUnknownFormat = errors.New("not a supported image")
	// ErrTooManyPixels: the header declares more pixels than Options.MaxPixels.
	ErrTooManyPixels = errors.New("too many pixels")
	// ErrTruncated: the data ends before the image does.
	ErrTruncated = errors.New("truncated image data")
	// ErrClosed: the Decoder was used after Close.
	ErrClosed = errors.New("codec: Decoder used after Close")
)

// maxDimension bounds widths and heights so that products of them fit comfortably in
// an int on every platform Go supports.
const maxDimension = 1 << 24

// DetectFormat identifies the format from the first bytes of data.
func DetectFormat(data []byte) Format {
	switch {
	case len(data) >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF:
		return FormatJPEG
	case len(data) >= 8 && string(data[:8]) == "\x89PNG\r\n\x1a\n":
		return FormatPNG
	case len(data) >= 6 && (string(data[:6]) == "GIF87a" || string(data[:6]) == "GIF89a"):
		return FormatGIF
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return FormatWebP
	case len(data) >= 4 && (string(data[:4]) == "II*\x00" || string(data[:4]) == "MM\x00*"):
		return FormatTIFF
	case len(data) >= 2 && data[0] == 'B' && data[1] == 'M':
		return FormatBMP
	case len(data) >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '7' && isPNMSpace(data[2]):
		return FormatPNM
	}
	return FormatUnknown
}

// unknownFormatError describes data that is no image, quoting its first bytes.
func unknownFormatError(data []byte) error {
	if len(data) == 0 {
		return fmt.Errorf("%w (empty input)", ErrUnknownFormat)
	}
	n := min(len(data), 8)
	return fmt.Errorf("%w (first bytes % x)", ErrUnknownFormat, data[:n])
}

func tooManyPixels(w, h int, limit int64) error {
	return &decodeError{msg: fmt.Sprintf("image %dx%d exceeds max_image_pixels %d", w, h, limit), kind: ErrTooManyPixels}
}

// plan is the geometry of one decode, shared by OutputSize and Decode.
type plan struct {
	orient     int // EXIF orientation to apply, 1 = none
	scale      int // JPEG DCT scale numerator over 8
	sw, sh     int // stored image size at that scale
	rx, ry     int // region in the stored, scaled image
	rw, rh     int
	ow, oh, oc int // the region's size after orientation
	// The output: dw x dh x oc, with the oriented region at (dx, dy) (the region itself
	// unless Options.Embed).
	dx, dy, dw, dh int
	rule           int // how colours are converted by emit (colourRule)
}

// colourRule is how emit converts colours (gd_emit's GD_RULE_*): as PIL does, or with
// Options.DALIColor as DALI 2.4's decoders do for the format.
func colourRule(f Format, opt Options) int {
	if opt.DALIColor {
		switch f {
		case FormatBMP, FormatPNM, FormatTIFF:
			return ruleOpenCV
		case FormatPNG:
			return ruleLibPNG
		case FormatJPEG:
			return ruleDALIJPEG
		}
	}
	return rulePIL
}

// DCTScales are the DCT-domain scales n/8 (below 8/8) a decode may use: those whose
// IDCT libjpeg-turbo has in SIMD (4x4, 2x2) and 1x1 (the DC alone). Its other scaled
// IDCTs (3x3 ... 7x7, and the 6x6 ... 14x14 that replace chroma upsampling) are plain C:
// at 7/8 a window decoded that way cost more than decoding it whole (perf of the
// training pipeline on 514x472 photographs: 3% of its CPU in jpeg_idct_7x7, 14x14, 6x6,
// 12x12, 5x5, 10x10).
var DCTScales = [...]int{1, 2, 4}

// makePlan validates opt against info and computes the decode geometry. scalable says
// whether the format supports DCT scaling (JPEG): then the smallest scale n/8 of
// DCTScales whose output still covers MinWidth x MinHeight is chosen.
func makePlan(info Info, opt Options, scalable bool) (plan, error) {
	if opt.Embed && !scalable {
		opt.ROI = Rect{} // decoded whole: the ROI lies in place
	}
	full, err := planAt(info, opt, 8)
	if err != nil || !scalable || opt.Embed || (opt.MinWidth <= 0 && opt.MinHeight <= 0) {
		return full, err
	}
	for _, n := range DCTScales {
		p, err := planAt(info, opt, n)
		if err != nil {
			return p, err
		}
		if p.ow >= opt.MinWidth && p.oh >= opt.MinHeight {
			return p, nil
		}
	}
	return full, nil
}

// planAt computes the decode geometry at DCT scale n/8.
func planAt(info Info, opt Options, n int) (plan, error) {
	p := plan{rule: colourRule(info.Format, opt)}
	W, H := info.Width, info.Height
	if W <= 0 || H <= 0 || W > maxDimension || H > maxDimension {
		return p, fmt.Errorf("%s: invalid image size %dx%d", info.Format, W, H)
	}
	if opt.MaxPixels > 0 && int64(W)*int64(H) > opt.MaxPixels {
		return p, tooManyPixels(W, H, opt.MaxPixels)
	}
	if err := checkWork(info, opt); err != nil {
		return p, err
	}
	switch opt.Out {
	case RGB, BGR, Gray:
	default:
		return p, fmt.Errorf("invalid output type %d; valid: RGB, BGR, GRAY", int(opt.Out))
	}
	if opt.MinWidth < 0 || opt.MinHeight < 0 {
		return p, fmt.Errorf("negative minimum size %dx%d", opt.MinWidth, opt.MinHeight)
	}
	if n < 1 || n > 8 {
		return p, fmt.Errorf("invalid scale %d/8", n)
	}
	p.orient = 1
	if opt.AdjustOrientation && info.Orientation >= 1 && info.Orientation <= 8 {
		p.orient = info.Orientation
	}
	OW, OH := W, H
	if p.orient >= 5 {
		OW, OH = H, W
	}
	roi := opt.ROI
	if roi.Empty() {
		roi = Rect{0, 0, OW, OH}
	}
	if roi.W <= 0 || roi.H <= 0 || roi.X < 0 || roi.Y < 0 || roi.X > OW-roi.W || roi.Y > OH-roi.H {
		return p, fmt.Errorf("ROI {x:%d y:%d w:%d h:%d} is not inside the %dx%d image", roi.X, roi.Y, roi.W, roi.H, OW, OH)
	}
	p.scale = n
	p.sw, p.sh = scaledDim(W, n), scaledDim(H, n)
	p.rx, p.ry, p.rw, p.rh = scaleRect(storedRect(roi, p.orient, W, H), n)
	p.ow, p.oh = p.rw, p.rh
	if p.orient >= 5 {
		p.ow, p.oh = p.rh, p.rw
	}
	p.oc = opt.Out.Channels()
	p.dw, p.dh = p.ow, p.oh
	if opt.Embed && n == 8 {
		p.dx, p.dy, p.dw, p.dh = roi.X, roi.Y, OW, OH
	}
	return p, nil
}

// scaledDim is libjpeg's output size for a dimension scaled by n/8 (rounded up).
func scaledDim(d, n int) int { return (d*n + 7) / 8 }

// ScaledExtent bounds a region of d pixels decoded at DCT scale n/8 (1..8): at least lo
// and at most hi pixels, wherever the region lies in the image (scaleRect widens it to
// whole pixels of the scaled image).
func ScaledExtent(d, n int) (lo, hi int) {
	if n >= 8 {
		return d, d
	}
	return scaledDim(d, n), scaledDim(d, n) + 1
}

// scaleRect maps a stored-image rectangle into the image scaled by n/8, widening it to
// whole pixels so that nothing of the requested window is lost.
func scaleRect(r Rect, n int) (x, y, w, h int) {
	if n == 8 {
		return r.X, r.Y, r.W, r.H
	}
	x0, y0 := r.X*n/8, r.Y*n/8
	x1, y1 := scaledDim(r.X+r.W, n), scaledDim(r.Y+r.H, n)
	return x0, y0, x1 - x0, y1 - y0
}

// storedRect maps a rectangle of the upright image (orientation o applied) back to the
// stored image of size W x H.
func storedRect(r Rect, o, W, H int) Rect {
	switch o {
	case 2:
		return Rect{W - r.X - r.W, r.Y, r.W, r.H}
	case 3:
		return Rect{W - r.X - r.W, H - r.Y - r.H, r.W, r.H}
	case 4:
		return Rect{r.X, H - r.Y - r.H, r.W, r.H}
	case 5:
		return Rect{r.Y, r.X, r.H, r.W}
	case 6:
		return Rect{r.Y, H - r.X - r.W, r.H, r.W}
	case 7:
		return Rect{W - r.Y - r.H, H - r.X - r.W, r.H, r.W}
	case 8:
		return Rect{W - r.Y - r.H, r.X, r.H, r.W}
	}
	return r
}
