package codec

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"strings"

	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// stdConfig reads the header of a format decoded by a Go package.
func stdConfig(f Format, data []byte) (cfg image.Config, err error) {
	defer recoverDecoder(f, &err)
	r := bytes.NewReader(data)
	switch f {
	case FormatPNG:
		cfg, err = png.DecodeConfig(r)
	case FormatGIF:
		cfg, err = gif.DecodeConfig(r)
	case FormatWebP:
		cfg, err = webp.DecodeConfig(r)
	case FormatTIFF:
		cfg, err = tiff.DecodeConfig(r)
	default:
		err = fmt.Errorf("no Go decoder for %s", f)
	}
	if err != nil {
		err = stdError(f, err)
	}
	return cfg, err
}

// stdError prefixes a Go decoder's error with the format (dropping the decoder's own
// lower-case prefix) and marks data that ends early as ErrTruncated.
func stdError(f Format, err error) error {
	msg := f.String() + ": " + strings.TrimPrefix(err.Error(), strings.ToLower(f.String())+": ")
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.HasSuffix(msg, "unexpected EOF") {
		return &decodeError{msg: msg + " (truncated?)", kind: ErrTruncated}
	}
	return errors.New(msg)
}

// recoverDecoder turns a panic inside a third-party decoder, which malformed input must
// never be able to cause but might, into an error.
func recoverDecoder(f Format, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed data (decoder panicked: %v)", f, r)
	}
}

func stdInfo(f Format, cfg image.Config) Info {
	info := Info{Format: f, Width: cfg.Width, Height: cfg.Height, Orientation: 1, WorkBytes: stdWorkBytes(f, cfg)}
	switch cfg.ColorModel {
	case color.Gray16Model, color.RGBA64Model, color.NRGBA64Model:
		info.Sixteen = true
	}
	switch cfg.ColorModel {
	case color.GrayModel, color.Gray16Model:
		info.ColorSpace, info.Components = "Gray", 1
	case color.RGBAModel, color.RGBA64Model:
		info.ColorSpace, info.Components = "RGB", 3
	case color.NRGBAModel, color.NRGBA64Model:
		info.ColorSpace, info.Components = "RGBA", 4
	case color.YCbCrModel:
		info.ColorSpace, info.Components = "YCbCr", 3
	case color.NYCbCrAModel:
		info.ColorSpace, info.Components = "YCbCrA", 4
	case color.CMYKModel:
		info.ColorSpace, info.Components = "CMYK", 4
	default:
		if _, ok := cfg.ColorModel.(color.Palette); ok {
			info.ColorSpace, info.Components = "Palette", 1
		} else {
			info.ColorSpace, info.Components = "Unknown", 0
		}
	}
	return info
}

func probePNG(data []byte) (Info, error) {
	cfg, err := stdConfig(FormatPNG, data)
	if err != nil {
		return Info{}, err
	}
	info := stdInfo(FormatPNG, cfg)
	// The colour type byte of IHDR tells RGB from RGBA and gray+alpha from RGBA, which
	// Go's colour models do not.
	if len(data) > 25 {
		switch data[25] {
		case 0:
			info.ColorSpace, info.Components = "Gray", 1
		case 2:
			info.ColorSpace, info.Components = "RGB", 3
		case 3:
			info.ColorSpace, info.Components = "Palette", 1
		case 4:
			info.ColorSpace, info.Components = "GrayA", 2
		case 6:
			info.ColorSpace, info.Components = "RGBA", 4
		}
	}
	if err := pngWork(data, &info); err != nil {
		return Info{}, err
	}
	info.Orientation = tiffOrientation(pngExif(data))
	return info, nil
}

func probeGIF(data []byte) (Info, error) {
	cfg, err := stdConfig(FormatGIF, data)
	if err != nil {
		return Info{}, err
	}
	info := stdInfo(FormatGIF, cfg)
	info.ColorSpace, info.Components = "Palette", 1
	return info, nil
}

func probeWebP(data []byte) (Info, error) {
	cfg, err := stdConfig(FormatWebP, data)
	if err != nil {
		return Info{}, err
	}
	info := stdInfo(FormatWebP, cfg)
	info.Orientation = tiffOrientation(webpExif(data))
	return info, nil
}

func probeTIFF(data []byte) (Info, error) {
	cfg, err := stdConfig(FormatTIFF, data)
	if err != nil {
		return Info{}, err
	}
	info := stdInfo(FormatTIFF, cfg)
	info.Orientation = tiffOrientation(data)
	return info, nil
}

// decodeStd decodes PNG, GIF, WebP and TIFF with Go decoders. The header is read again
// and checked against info first, so that an Info from other data cannot smuggle a huge
// image past Options.MaxPixels.
func (d *Decoder) decodeStd(data []byte, info Info, p plan, opt Options, dst []byte) (err error) {
	out := opt.Out
	cfg, err := stdConfig(info.Format, data)
	if err != nil {
		return err
	}
	if cfg.Width != info.Width || cfg.Height != info.Height {
		return fmt.Errorf("%s: header says %dx%d but Info says %dx%d", info.Format, cfg.Width, cfg.Height, info.Width, info.Height)
	}
	if err := checkWork(Info{Format: info.Format, Width: cfg.Width, Height: cfg.Height, ColorSpace: info.ColorSpace, WorkBytes: max(info.WorkBytes, stdWorkBytes(info.Format, cfg))}, opt); err != nil {
		return err
	}
	img, err := stdDecode(info.Format, data)
	if err != nil {
		return err
	}
	if info.Format == FormatGIF {
		return d.emitGIF(data, img, info, p, out, dst)
	}
	b := img.Bounds()
	if b.Dx() != info.Width || b.Dy() != info.Height {
		return fmt.Errorf("%s: decoded %dx%d pixels for a %dx%d header", info.Format, b.Dx(), b.Dy(), info.Width, info.Height)
	}
	src, stride, pf := d.pixels(img, opt.ClipGray16, false)
	if err := emit(src, stride, pf, p, out, dst); err != nil || opt.Low16 == nil || !info.Sixteen {
		return err
	}
	src, stride, pf = d.pixels(img, opt.ClipGray16, true)
	return emit(src, stride, pf, p, out, opt.Low16)
}

func stdDecode(f Format, data []byte) (img image.Image, err error) {
	defer recoverDecoder(f, &err)
	r := bytes.NewReader(data)
	switch f {
	case FormatPNG:
		img, err = png.Decode(r)
	case FormatGIF:
		img, err = gif.Decode(r)
	case FormatWebP:
		img, err = webp.Decode(r)
	case FormatTIFF:
		img, err = tiff.Decode(r)
	default:
		err = fmt.Errorf("no Go decoder for %s", f)
	}
	if err != nil {
		return nil, stdError(f, err)
	}
	return img, nil
}

// pixels exposes img as rows of a layout emit understands: the decoder's own buffer
// where its layout allows, otherwise a conversion into the Decoder's scratch buffer.
// Conversions follow PIL's convert("RGB"): alpha is dropped without compositing, 16-bit
// samples keep their high byte, premultiplied colour is divided by alpha. 16-bit grey
// keeps its high byte too, or is clipped to 255 with clip16 (PIL's mode "I" to "RGB").
// With low16, 16-bit samples give their low byte instead (Options.Low16).
func (d *Decoder) pixels(img image.Image, clip16, low16 bool) (src []byte, stride, pf int) {
	lo := 0 // the byte of a big-endian 16-bit sample kept
	if low16 {
		lo = 1
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m := img.(type) {
	case *image.Gray:
		return m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, pfGray
	case *image.NRGBA:
		return m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, pfRGBX
	case *image.CMYK:
		return m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, pfCMYK
	case *image.YCbCr:
		if m.SubsampleRatio == image.YCbCrSubsampleRatio420 && b.Min == (image.Point{}) {
			buf := d.grow(w * h * 3)
			fancyYCbCr420(m, buf)
			return buf, w * 3, pfRGB
		}
	case *image.NYCbCrA:
		if m.SubsampleRatio == image.YCbCrSubsampleRatio420 && b.Min == (image.Point{}) {
			buf := d.grow(w * h * 3)
			fancyYCbCr420(&m.YCbCr, buf)
			return buf, w * 3, pfRGB
		}
	case *image.Gray16:
		buf := d.grow(w * h)
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			if clip16 {
				for x := range w {
					buf[y*w+x] = byte(min(int(row[2*x])<<8|int(row[2*x+1]), 255))
				}
				continue
			}
			for x := range w {
				buf[y*w+x] = row[2*x+lo] // big-endian: the high byte, or the low one
			}
		}
		return buf, w, pfGray
	case *image.NRGBA64:
		buf := d.grow(w * h * 3)
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			o := buf[y*w*3:]
			for x := range w {
				o[3*x], o[3*x+1], o[3*x+2] = row[8*x+lo], row[8*x+2+lo], row[8*x+4+lo]
			}
		}
		return buf, w * 3, pfRGB
	case *image.RGBA:
		buf := d.grow(w * h * 3)
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			o := buf[y*w*3:]
			for x := range w {
				p := row[4*x : 4*x+4]
				o[3*x], o[3*x+1], o[3*x+2] = unpremultiply(p[0], p[3]), unpremultiply(p[1], p[3]), unpremultiply(p[2], p[3])
			}
		}
		return buf, w * 3, pfRGB
	case *image.Paletted:
		var lut [256 * 3]byte
		paletteLUT(&lut, m.Palette)
		buf := d.grow(w * h * 3)
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			o := buf[y*w*3:]
			for x := range w {
				i := int(row[x]) * 3
				o[3*x], o[3*x+1], o[3*x+2] = lut[i], lut[i+1], lut[i+2]
			}
		}
		return buf, w * 3, pfRGB
	}
	// Everything else (RGBA64, other subsampling ratios, exotic TIFF models) through
	// the generic colour interface.
	buf := d.grow(w * h * 3)
	for y := range h {
		o := buf[y*w*3:]
		for x := range w {
			c := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
			if low16 {
				o[3*x], o[3*x+1], o[3*x+2] = byte(c.R), byte(c.G), byte(c.B)
				continue
			}
			o[3*x], o[3*x+1], o[3*x+2] = byte(c.R>>8), byte(c.G>>8), byte(c.B>>8)
		}
	}
	return buf, w * 3, pfRGB
}

// unpremultiply recovers straight colour from premultiplied c with alpha a, as PIL's
// "RGBa" unpacker does.
func unpremultiply(c, a byte) byte {
	switch a {
	case 0:
		return 0
	case 255:
		return c
	}
	return byte(min(int(c)*255/int(a), 255))
}

// paletteLUT fills lut with the straight RGB of each palette entry. Indices beyond the
// palette get PIL's default palette entry, a gray ramp.
func paletteLUT(lut *[256 * 3]byte, p color.Palette) {
	for i := range 256 {
		if i < len(p) {
			c := color.NRGBAModel.Convert(p[i]).(color.NRGBA)
			lut[3*i], lut[3*i+1], lut[3*i+2] = c.R, c.G, c.B
		} else {
			lut[3*i], lut[3*i+1], lut[3*i+2] = byte(i), byte(i), byte(i)
		}
	}
}

// gifFrame is what PIL uses of a GIF's first frame that Go's decoder does not keep: the
// colour table as stored (Go blanks the transparent entry) and the transparent index.
type gifFrame struct {
	palette     []byte // RGB triples
	transparent int    // -1 when none
}

// parseGIFFrame walks the GIF blocks up to the first image descriptor.
func parseGIFFrame(data []byte) (gifFrame, error) {
	fr := gifFrame{transparent: -1}
	if len(data) < 13 {
		return fr, fmt.Errorf("GIF: header truncated")
	}
	var global []byte
	i := 13
	if flags := data[10]; flags&0x80 != 0 {
		n := 3 << ((flags & 7) + 1)
		if i+n > len(data) {
			return fr, fmt.Errorf("GIF: global colour table truncated")
		}
		global = data[i : i+n]
		i += n
	}
	for i < len(data) {
		switch data[i] {
		case 0x21: // extension
			if i+2 > len(data) {
				return fr, fmt.Errorf("GIF: extension truncated")
			}
			label := data[i+1]
			i += 2
			if label == 0xF9 && i+5 <= len(data) && data[i] >= 4 {
				if data[i+1]&1 != 0 {
					fr.transparent = int(data[i+4])
				}
			}
			for i < len(data) && data[i] != 0 { // sub-blocks
				i += 1 + int(data[i])
			}
			i++
		case 0x2C: // image descriptor
			if i+10 > len(data) {
				return fr, fmt.Errorf("GIF: image descriptor truncated")
			}
			fr.palette = global
			if flags := data[i+9]; flags&0x80 != 0 {
				n := 3 << ((flags & 7) + 1)
				if i+10+n > len(data) {
					return fr, fmt.Errorf("GIF: local colour table truncated")
				}
				fr.palette = data[i+10 : i+10+n]
			}
			return fr, nil
		default:
			return fr, fmt.Errorf("GIF: no image before block 0x%02x", data[i])
		}
	}
	return fr, fmt.Errorf("GIF: no image")
}

// emitGIF composes the first frame onto the logical screen the way PIL shows it: the
// area outside the frame holds the transparent index (0 when there is none), and every
// index, the transparent one included, shows its colour-table entry.
func (d *Decoder) emitGIF(data []byte, img image.Image, info Info, p plan, out OutputType, dst []byte) error {
	m, ok := img.(*image.Paletted)
	if !ok {
		return fmt.Errorf("GIF: unexpected decoded image type %T", img)
	}
	fr, err := parseGIFFrame(data)
	if err != nil {
		return err
	}
	var lut [256 * 3]byte
	for i := range 256 {
		if 3*i+2 < len(fr.palette) {
			copy(lut[3*i:], fr.palette[3*i:3*i+3])
		} else {
			lut[3*i], lut[3*i+1], lut[3*i+2] = byte(i), byte(i), byte(i)
		}
	}
	fill := 0
	if fr.transparent >= 0 {
		fill = fr.transparent
	}
	W, H := info.Width, info.Height
	buf := d.grow(W * H * 3)
	r := m.Rect.Intersect(image.Rect(0, 0, W, H))
	for y := range H {
		o := buf[y*W*3 : (y+1)*W*3]
		for x := range W {
			idx := fill
			if (image.Point{x, y}).In(r) {
				idx = int(m.Pix[m.PixOffset(x, y)])
			}
			copy(o[3*x:3*x+3], lut[3*idx:3*idx+3])
		}
	}
	return emit(buf, W*3, pfRGB, p, out, dst)
}

// fancyYCbCr420 converts 4:2:0 YCbCr to RGB the way libwebp does for PIL: chroma is
// upsampled with the 9-3-3-1 "fancy" filter and converted with libwebp's 14-bit
// fixed-point coefficients, so lossy WebP pixels match PIL's.
func fancyYCbCr420(m *image.YCbCr, dst []byte) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	yrow := func(y int) []byte { return m.Y[y*m.YStride : y*m.YStride+w] }
	crow := func(c []byte, y int) []byte { return c[y*m.CStride:] }
	orow := func(y int) []byte { return dst[y*w*3 : (y+1)*w*3] }
	u0, v0 := crow(m.Cb, 0), crow(m.Cr, 0)
	fancyPair(yrow(0), nil, u0, v0, u0, v0, orow(0), nil, w)
	for k := 1; 2*k-1 < h; k++ {
		tu, tv := crow(m.Cb, k-1), crow(m.Cr, k-1)
		if 2*k < h {
			fancyPair(yrow(2*k-1), yrow(2*k), tu, tv, crow(m.Cb, k), crow(m.Cr, k), orow(2*k-1), orow(2*k), w)
		} else {
			fancyPair(yrow(2*k-1), nil, tu, tv, tu, tv, orow(2*k-1), nil, w)
		}
	}
}

// fancyPair upsamples one row pair: top luma row ty lies between chroma rows (tu, tv)
// (nearer) and (cu, cv); bottom row by (may be nil) is nearer (cu, cv).
func fancyPair(ty, by, tu, tv, cu, cv, top, bot []byte, n int) {
	tlu, tlv := int(tu[0]), int(tv[0])
	lu, lv := int(cu[0]), int(cv[0])
	webpRGB(ty[0], (3*tlu+lu+2)>>2, (3*tlv+lv+2)>>2, top)
	if by != nil {
		webpRGB(by[0], (3*lu+tlu+2)>>2, (3*lv+tlv+2)>>2, bot)
	}
	for x := 1; x <= (n-1)>>1; x++ {
		tu1, tv1 := int(tu[x]), int(tv[x])
		u1, v1 := int(cu[x]), int(cv[x])
		avgU, avgV := tlu+tu1+lu+u1+8, tlv+tv1+lv+v1+8
		d12u, d12v := (avgU+2*(tu1+lu))>>3, (avgV+2*(tv1+lv))>>3
		d03u, d03v := (avgU+2*(tlu+u1))>>3, (avgV+2*(tlv+v1))>>3
		webpRGB(ty[2*x-1], (d12u+tlu)>>1, (d12v+tlv)>>1, top[(2*x-1)*3:])
		webpRGB(ty[2*x], (d03u+tu1)>>1, (d03v+tv1)>>1, top[2*x*3:])
		if by != nil {
			webpRGB(by[2*x-1], (d03u+lu)>>1, (d03v+lv)>>1, bot[(2*x-1)*3:])
			webpRGB(by[2*x], (d12u+u1)>>1, (d12v+v1)>>1, bot[2*x*3:])
		}
		tlu, tlv, lu, lv = tu1, tv1, u1, v1
	}
	if n&1 == 0 {
		webpRGB(ty[n-1], (3*tlu+lu+2)>>2, (3*tlv+lv+2)>>2, top[(n-1)*3:])
		if by != nil {
			webpRGB(by[n-1], (3*lu+tlu+2)>>2, (3*lv+tlv+2)>>2, bot[(n-1)*3:])
		}
	}
}

// webpRGB is libwebp's YUV -> RGB in fixed point with 6 fractional bits.
func webpRGB(y byte, u, v int, d []byte) {
	yy := (int(y) * 19077) >> 8
	d[0] = clip6(yy + (v*26149)>>8 - 14234)
	d[1] = clip6(yy - (u*6419)>>8 - (v*13320)>>8 + 8708)
	d[2] = clip6(yy + (u*33050)>>8 - 17685)
}

func clip6(v int) byte {
	if v&^(256<<6-1) == 0 {
		return byte(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}
