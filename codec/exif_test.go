package codec

import (
	"encoding/binary"
	"testing"
)

// ifd0 builds a TIFF structure whose IFD0 holds the given 12-byte entries.
func ifd0(bigEndian bool, entries ...[]byte) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	t := []byte("II*\x00")
	if bigEndian {
		bo, t = binary.BigEndian, []byte("MM\x00*")
	}
	t = bo.AppendUint32(t, 8)
	t = bo.AppendUint16(t, uint16(len(entries)))
	for _, e := range entries {
		t = append(t, e...)
	}
	return bo.AppendUint32(t, 0)
}

// entry encodes one IFD entry; value is stored left-justified in the 4-byte field as
// the type's size dictates.
func entry(bigEndian bool, tag, typ uint16, count uint32, value uint32) []byte {
	var bo binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		bo = binary.BigEndian
	}
	e := bo.AppendUint16(nil, tag)
	e = bo.AppendUint16(e, typ)
	e = bo.AppendUint32(e, count)
	switch typ {
	case 1, 6, 7:
		e = append(e, byte(value), 0, 0, 0)
	case 3, 8:
		e = bo.AppendUint16(e, uint16(value))
		e = append(e, 0, 0)
	default:
		e = bo.AppendUint32(e, value)
	}
	return e
}

func TestTIFFOrientation(t *testing.T) {
	for _, be := range []bool{false, true} {
		other := entry(be, 0x010F, 2, 4, 0x41424300) // Make, "ABC"
		cases := []struct {
			name string
			data []byte
			want int
		}{
			{"short", ifd0(be, other, entry(be, 0x0112, 3, 1, 6)), 6},
			{"long", ifd0(be, entry(be, 0x0112, 4, 1, 8)), 8},
			{"byte", ifd0(be, entry(be, 0x0112, 1, 1, 3)), 3},
			{"exif prefix", append([]byte(exifPrefix), ifd0(be, entry(be, 0x0112, 3, 1, 5))...), 5},
			{"zero", ifd0(be, entry(be, 0x0112, 3, 1, 0)), 1},
			{"nine", ifd0(be, entry(be, 0x0112, 3, 1, 9)), 1},
			{"two values", ifd0(be, entry(be, 0x0112, 3, 2, 6)), 1},
			{"ascii", ifd0(be, entry(be, 0x0112, 2, 1, 6)), 1},
			{"missing", ifd0(be, other), 1},
			{"truncated entry", ifd0(be, other, entry(be, 0x0112, 3, 1, 6))[:8+2+12+6], 1},
			{"count beyond data", ifd0(be, other)[:10], 1},
			{"offset beyond data", append(ifd0(be, entry(be, 0x0112, 3, 1, 6))[:4], 0xFF, 0xFF, 0, 0), 1},
			{"bad magic", append([]byte("IX*\x00"), ifd0(be, entry(be, 0x0112, 3, 1, 6))[4:]...), 1},
			{"empty", nil, 1},
		}
		for _, tc := range cases {
			if got := tiffOrientation(tc.data); got != tc.want {
				t.Errorf("big endian %v, %s: %d, want %d", be, tc.name, got, tc.want)
			}
		}
	}
}

func segment(marker byte, payload []byte) []byte {
	s := []byte{0xFF, marker}
	s = binary.BigEndian.AppendUint16(s, uint16(len(payload)+2))
	return append(s, payload...)
}

func TestJPEGExif(t *testing.T) {
	exif := func(o int) []byte {
		return append([]byte(exifPrefix), ifd0(false, entry(false, 0x0112, 3, 1, uint32(o)))...)
	}
	soi := []byte{0xFF, 0xD8}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	sos := []byte{0xFF, 0xDA, 0x00, 0x02}
	cases := []struct {
		name string
		data []byte
		want int
	}{
		{"after JFIF", cat(soi, segment(0xE0, []byte("JFIF\x00\x01\x01")), segment(0xE1, exif(6)), sos), 6},
		{"first of two", cat(soi, segment(0xE1, exif(3)), segment(0xE1, exif(6)), sos), 3},
		{"broken first hides the second", cat(soi, segment(0xE1, []byte("Exif\x00X")), segment(0xE1, exif(6)), sos), 1},
		{"XMP is not EXIF", cat(soi, segment(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x/>")), segment(0xE1, exif(7)), sos), 7},
		{"junk and fill bytes", cat(soi, []byte{0x00, 0x12, 0xFF, 0xFF}, segment(0xE1, exif(5)), sos), 5},
		{"after the scan", cat(soi, sos, segment(0xE1, exif(5))), 1},
		{"truncated segment", cat(soi, segment(0xE1, exif(8)))[:20], 1},
		{"no segments", soi, 1},
	}
	for _, tc := range cases {
		if got := tiffOrientation(jpegExif(tc.data)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestContainerExif(t *testing.T) {
	tiff := ifd0(true, entry(true, 0x0112, 3, 1, 7))
	riff := func(chunks ...[]byte) []byte {
		b := []byte("RIFF\x00\x00\x00\x00WEBP")
		for _, c := range chunks {
			b = append(b, c...)
		}
		return b
	}
	chunk := func(id string, data []byte) []byte {
		c := append([]byte(id), binary.LittleEndian.AppendUint32(nil, uint32(len(data)))...)
		c = append(c, data...)
		if len(data)%2 == 1 {
			c = append(c, 0)
		}
		return c
	}
	if got := tiffOrientation(webpExif(riff(chunk("VP8X", make([]byte, 10)), chunk("ICCP", []byte{1, 2, 3}), chunk("EXIF", tiff)))); got != 7 {
		t.Errorf("WebP: %d, want 7", got)
	}
	if got := tiffOrientation(webpExif(riff(chunk("VP8X", make([]byte, 10)), chunk("EXIF", tiff)[:12]))); got != 1 {
		t.Errorf("WebP truncated chunk: %d, want 1", got)
	}
	pngChunk := func(typ string, data []byte) []byte {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(c, typ...)
		c = append(c, data...)
		return append(c, 0, 0, 0, 0) // CRC, not checked here
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", make([]byte, 13))...)
	if got := tiffOrientation(pngExif(append(append(png, pngChunk("IDAT", []byte{1})...), pngChunk("eXIf", tiff)...))); got != 7 {
		t.Errorf("PNG: %d, want 7", got)
	}
	if got := tiffOrientation(pngExif(append(append(png, pngChunk("IEND", nil)...), pngChunk("eXIf", tiff)...))); got != 1 {
		t.Errorf("PNG eXIf after IEND: %d, want 1", got)
	}
}
