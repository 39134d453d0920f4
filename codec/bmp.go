package codec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// BMP compression methods.
const (
	bmpRGB       = 0
	bmpRLE8      = 1
	bmpRLE4      = 2
	bmpBitfields = 3
)

// bmpHeader is a parsed BMP file and DIB header.
type bmpHeader struct {
	w, h        int
	topDown     bool
	bpp         int
	compression uint32
	masks       [3]uint32 // red, green, blue for 16- and 32-bit pixels
	palette     []byte    // entries of palEntry bytes, blue first
	palEntry    int
	offset      int // first byte of the pixel data
}

// parseBMP reads the headers PIL reads: OS/2 v1 (12 bytes) and Windows v3..v5 (40, 52,
// 56, 64, 108, 124 bytes), 1/4/8-bit palettes, 16/24/32-bit pixels, RLE8, RLE4 and
// bit fields.
func parseBMP(data []byte) (bmpHeader, error) {
	var hd bmpHeader
	if len(data) < 18 {
		return hd, fmt.Errorf("BMP: header truncated")
	}
	le := binary.LittleEndian
	hd.offset = int(le.Uint32(data[10:]))
	hsize := int(le.Uint32(data[14:]))
	if 14+hsize > len(data) || hsize < 12 {
		return hd, fmt.Errorf("BMP: header truncated")
	}
	h := data[18 : 14+hsize]
	switch hsize {
	case 12:
		hd.w = int(le.Uint16(h[0:]))
		hd.h = int(le.Uint16(h[2:]))
		hd.bpp = int(le.Uint16(h[6:]))
		hd.palEntry = 3
	case 40, 52, 56, 64, 108, 124:
		hd.w = int(int32(le.Uint32(h[0:])))
		hh := int(int32(le.Uint32(h[4:])))
		if hh < 0 {
			hd.topDown, hh = true, -hh
		}
		hd.h = hh
		hd.bpp = int(le.Uint16(h[10:]))
		hd.compression = le.Uint32(h[12:])
		hd.palEntry = 4
	default:
		return hd, fmt.Errorf("BMP: unsupported header size %d", hsize)
	}
	if hd.w <= 0 || hd.h <= 0 {
		return hd, fmt.Errorf("BMP: invalid size %dx%d", hd.w, hd.h)
	}
	switch hd.bpp {
	case 1, 4, 8, 16, 24, 32:
	default:
		return hd, fmt.Errorf("BMP: unsupported pixel depth %d", hd.bpp)
	}
	next := 14 + hsize
	switch hd.compression {
	case bmpRGB:
		if hd.bpp == 16 {
			hd.masks = [3]uint32{0x7C00, 0x03E0, 0x001F}
		}
	case bmpRLE8, bmpRLE4:
		if (hd.compression == bmpRLE8 && hd.bpp != 8) || (hd.compression == bmpRLE4 && hd.bpp != 4) {
			return hd, fmt.Errorf("BMP: RLE%d with %d-bit pixels", 12-4*int(hd.compression), hd.bpp)
		}
	case bmpBitfields:
		if hd.bpp != 16 && hd.bpp != 24 && hd.bpp != 32 {
			return hd, fmt.Errorf("BMP: bit fields with %d-bit pixels", hd.bpp)
		}
		m := data[18+36:]
		if hsize == 40 { // masks follow the 40-byte header
			m = data[next:]
			next += 12
		}
		if len(m) < 12 {
			return hd, fmt.Errorf("BMP: bit field masks truncated")
		}
		for k := range hd.masks {
			hd.masks[k] = le.Uint32(m[4*k:])
		}
		if hd.masks == [3]uint32{} && hd.bpp == 32 {
			hd.compression = bmpRGB // PIL reads all-zero masks as BGRA
		}
	default:
		return hd, fmt.Errorf("BMP: unsupported compression %d", hd.compression)
	}
	if hd.bpp <= 8 {
		colors := 1 << hd.bpp
		if hsize >= 40 {
			if n := int(le.Uint32(h[28:])); n != 0 {
				colors = n
			}
		}
		if colors <= 0 || colors > 65536 {
			return hd, fmt.Errorf("BMP: unsupported palette size %d", colors)
		}
		n := colors * hd.palEntry
		if next+n > len(data) {
			return hd, &decodeError{msg: "BMP: palette truncated", kind: ErrTruncated}
		}
		hd.palette = data[next : next+n]
		// PIL's rule: an offset that points at the end of the header means the pixels
		// follow a palette of 4-byte entries.
		if hd.offset == 14+hsize {
			hd.offset += 4 * colors
		}
	}
	if hd.offset < 0 || hd.offset > len(data) {
		return hd, &decodeError{msg: "BMP: pixel data offset beyond the end of the file", kind: ErrTruncated}
	}
	return hd, nil
}

func probeBMP(data []byte) (Info, error) {
	hd, err := parseBMP(data)
	if err != nil {
		return Info{}, err
	}
	info := Info{Format: FormatBMP, Width: hd.w, Height: hd.h, Components: 3, ColorSpace: "RGB", Orientation: 1}
	if hd.bpp <= 8 {
		info.Components, info.ColorSpace = 1, "Palette"
		if bmpGreyPalette(hd) {
			info.ColorSpace = "Gray" // as OpenCV (DALI's decoder) reads it: one channel
		}
	}
	if hd.compression == bmpRLE8 || hd.compression == bmpRLE4 {
		info.WorkBytes = int64(hd.w) * int64(hd.h) // the index plane
	}
	return info, nil
}

// bmpGreyPalette reports whether every palette entry is a grey (blue = green = red), as
// OpenCV's BMP decoder tests for a grey image; a missing palette is the grey ramp.
func bmpGreyPalette(hd bmpHeader) bool {
	for i := 0; i+2 < len(hd.palette) && hd.palEntry >= 3; i += hd.palEntry {
		if e := hd.palette[i : i+3]; e[0] != e[1] || e[1] != e[2] {
			return false
		}
	}
	return true
}

// bmpRasterFits checks that an uncompressed raster lies within the file.
func bmpRasterFits(hd bmpHeader, size int) error {
	w, h := int64(hd.w), int64(hd.h)
	stride := (w*int64(hd.bpp) + 31) / 32 * 4
	if rowBytes := (w*int64(hd.bpp) + 7) / 8; int64(size-hd.offset) < (h-1)*stride+rowBytes {
		return &decodeError{msg: fmt.Sprintf("BMP: pixel data truncated (%d bytes for %d rows of %d)", size-hd.offset, h, stride), kind: ErrTruncated}
	}
	return nil
}

// decodeBMP expands the pixels into the scratch buffer as RGB rows, top row first.
func (d *Decoder) decodeBMP(data []byte, info Info, p plan, out OutputType, dst []byte) error {
	hd, err := parseBMP(data)
	if err != nil {
		return err
	}
	if hd.w != info.Width || hd.h != info.Height {
		return fmt.Errorf("BMP: header says %dx%d but Info says %dx%d", hd.w, hd.h, info.Width, info.Height)
	}
	w, h := hd.w, hd.h
	var lut [256 * 3]byte
	for i := range 256 {
		if (i+1)*hd.palEntry <= len(hd.palette) {
			e := hd.palette[i*hd.palEntry:]
			lut[3*i], lut[3*i+1], lut[3*i+2] = e[2], e[1], e[0]
		} else {
			lut[3*i], lut[3*i+1], lut[3*i+2] = byte(i), byte(i), byte(i)
		}
	}
	pix := data[hd.offset:]
	if hd.compression == bmpRLE8 || hd.compression == bmpRLE4 {
		buf := d.grow(w*h*3 + w*h)
		rgb, idx := buf[:w*h*3], buf[w*h*3:]
		bmpRLE(pix, hd.offset, hd.compression == bmpRLE4, w, h, idx)
		for r := range h {
			y := r
			if !hd.topDown {
				y = h - 1 - r
			}
			o := rgb[y*w*3:]
			for x, v := range idx[r*w : (r+1)*w] {
				copy(o[3*x:3*x+3], lut[3*int(v):3*int(v)+3])
			}
		}
		return emit(rgb, w*3, pfRGB, p, out, dst)
	}

	stride := (w*hd.bpp + 31) / 32 * 4
	if rowBytes := (w*hd.bpp + 7) / 8; len(pix) < (h-1)*stride+rowBytes {
		return &decodeError{msg: fmt.Sprintf("BMP: pixel data truncated (%d bytes for %d rows of %d)", len(pix), h, stride), kind: ErrTruncated}
	}
	rgb := d.grow(w * h * 3)
	var fields [3]bmpField
	for k, m := range hd.masks {
		fields[k] = newBMPField(m)
	}
	for r := range h {
		y := r
		if !hd.topDown {
			y = h - 1 - r
		}
		in := pix[r*stride:]
		o := rgb[y*w*3 : (y+1)*w*3]
		switch hd.bpp {
		case 1, 4, 8:
			per := 8 / hd.bpp
			mask := byte(1<<hd.bpp - 1)
			for x := range w {
				shift := uint(8 - hd.bpp*(x%per+1))
				v := int(in[x/per]>>shift&mask) * 3
				copy(o[3*x:3*x+3], lut[v:v+3])
			}
		case 24:
			for x := range w {
				o[3*x], o[3*x+1], o[3*x+2] = in[3*x+2], in[3*x+1], in[3*x]
			}
		case 16:
			for x := range w {
				v := uint32(binary.LittleEndian.Uint16(in[2*x:]))
				o[3*x], o[3*x+1], o[3*x+2] = fields[0].get(v), fields[1].get(v), fields[2].get(v)
			}
		case 32:
			if hd.compression == bmpRGB {
				for x := range w {
					o[3*x], o[3*x+1], o[3*x+2] = in[4*x+2], in[4*x+1], in[4*x]
				}
				break
			}
			for x := range w {
				v := binary.LittleEndian.Uint32(in[4*x:])
				o[3*x], o[3*x+1], o[3*x+2] = fields[0].get(v), fields[1].get(v), fields[2].get(v)
			}
		}
	}
	return emit(rgb, w*3, pfRGB, p, out, dst)
}

// bmpField extracts one colour channel described by a bit mask and scales it to 8 bits
// the way PIL's BGR;15 and BGR;16 unpackers do: value * 255 / max, truncated.
type bmpField struct {
	mask  uint32
	shift uint
	max   uint32
}

func newBMPField(mask uint32) bmpField {
	if mask == 0 {
		return bmpField{}
	}
	s := uint(bits.TrailingZeros32(mask))
	return bmpField{mask: mask, shift: s, max: mask >> s}
}

func (f bmpField) get(v uint32) byte {
	if f.max == 0 {
		return 0
	}
	return byte(uint64((v&f.mask)>>f.shift) * 255 / uint64(f.max))
}

// bmpRLE expands RLE8/RLE4 data into w*h palette indices, bottom row first, following
// PIL's decoder: indices form one stream, runs are clipped at the row end, end-of-line
// pads the row with index 0, absolute runs are word aligned in file position (base is
// the file offset of data), and missing data leaves index 0.
func bmpRLE(data []byte, base int, rle4 bool, w, h int, idx []byte) {
	clear(idx)
	n, x, i := 0, 0, 0
	total := w * h
	put := func(v byte) {
		if n < total {
			idx[n] = v
		}
		n++
	}
	for n < total && i+1 < len(data) {
		count, val := int(data[i]), data[i+1]
		i += 2
		if count > 0 { // encoded run
			count = min(count, max(0, w-x))
			for k := range count {
				if !rle4 {
					put(val)
				} else if k%2 == 0 {
					put(val >> 4)
				} else {
					put(val & 0x0F)
				}
			}
			x += count
			continue
		}
		switch val {
		case 0: // end of line
			for n%w != 0 {
				put(0)
			}
			x = 0
		case 1: // end of bitmap
			return
		case 2: // delta: right, up
			if i+1 >= len(data) {
				return
			}
			right, up := int(data[i]), int(data[i+1])
			i += 2
			n += right + up*w
			x = n % w
		default: // absolute run of val pixels
			k := int(val)
			nbytes := k
			if rle4 {
				nbytes = (k + 1) / 2
			}
			if i+nbytes > len(data) {
				return
			}
			for j := range k {
				if !rle4 {
					put(data[i+j])
				} else if j%2 == 0 {
					put(data[i+j/2] >> 4)
				} else {
					put(data[i+j/2] & 0x0F)
				}
			}
			i += nbytes
			x += k
			if (base+i)%2 != 0 {
				i++
			}
		}
	}
}
