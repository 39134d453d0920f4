package codec

import "encoding/binary"

// exifPrefix starts the payload of a JPEG APP1 Exif segment (and, by mistake of some
// writers, of WebP and PNG EXIF chunks).
const exifPrefix = "Exif\x00\x00"

// jpegExif returns the TIFF structure of the first APP1 "Exif" segment before the first
// scan, or nil. Like PIL it skips junk between markers and honours only the first Exif
// segment, even when that one is unusable.
func jpegExif(data []byte) []byte {
	i := 2 // past SOI
	for i+1 < len(data) {
		if data[i] != 0xFF {
			i++ // junk between segments
			continue
		}
		m := data[i+1]
		switch {
		case m == 0xFF: // fill byte
			i++
			continue
		case m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7):
			i += 2 // stuffed byte or a marker without a length
			continue
		case m == 0xDA || m == 0xD9: // start of scan or end of image: no more headers
			return nil
		}
		if i+4 > len(data) {
			return nil
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 {
			return nil
		}
		end := min(i+2+n, len(data))
		seg := data[i+4 : end]
		if m == 0xE1 && len(seg) >= 5 && string(seg[:5]) == exifPrefix[:5] {
			if len(seg) >= 6 && seg[5] == 0 {
				return seg[6:]
			}
			return nil
		}
		i = end
	}
	return nil
}

// ExifOrientation returns the orientation (1..8) in an EXIF payload (with or without its
// "Exif\x00\x00" prefix) or a TIFF structure; 1 when absent or malformed.
func ExifOrientation(t []byte) int { return tiffOrientation(t) }

// tiffOrientation reads tag 0x0112 (Orientation) from IFD0 of a TIFF structure (EXIF
// payload or TIFF file), either byte order. Anything malformed, missing, out of 1..8, or
// not a single value means 1, as PIL's exif_transpose then does nothing.
func tiffOrientation(t []byte) int {
	if len(t) >= len(exifPrefix) && string(t[:len(exifPrefix)]) == exifPrefix {
		t = t[len(exifPrefix):]
	}
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := uint64(bo.Uint32(t[4:]))
	if off+2 > uint64(len(t)) {
		return 1
	}
	n := int(bo.Uint16(t[off:]))
	for k := range n {
		e := int(off) + 2 + 12*k
		if e+12 > len(t) {
			return 1 // truncated directory: keep what was read, as PIL does
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		if bo.Uint32(t[e+4:]) != 1 {
			return 1
		}
		var v uint32
		switch bo.Uint16(t[e+2:]) {
		case 1, 6, 7: // BYTE, SBYTE, UNDEFINED
			v = uint32(t[e+8])
		case 3, 8: // SHORT, SSHORT
			v = uint32(bo.Uint16(t[e+8:]))
		case 4, 9: // LONG, SLONG
			v = bo.Uint32(t[e+8:])
		default:
			return 1
		}
		if v >= 1 && v <= 8 {
			return int(v)
		}
		return 1
	}
	return 1
}

// webpExif returns the payload of the EXIF chunk of a RIFF WebP file, or nil.
func webpExif(data []byte) []byte {
	if len(data) < 12 {
		return nil
	}
	i := 12
	for i+8 <= len(data) {
		size := uint64(binary.LittleEndian.Uint32(data[i+4:]))
		start := i + 8
		end := uint64(start) + size
		if end > uint64(len(data)) {
			return nil
		}
		if string(data[i:i+4]) == "EXIF" {
			return data[start:end]
		}
		i = int(end + end&1) // chunks are padded to even sizes
	}
	return nil
}

// pngExif returns the payload of the first eXIf chunk of a PNG file, or nil.
func pngExif(data []byte) []byte {
	i := 8
	for i+12 <= len(data) {
		size := uint64(binary.BigEndian.Uint32(data[i:]))
		typ := string(data[i+4 : i+8])
		start := i + 8
		end := uint64(start) + size
		if end+4 > uint64(len(data)) {
			return nil
		}
		switch typ {
		case "eXIf":
			return data[start:end]
		case "IEND":
			return nil
		}
		i = int(end + 4) // past the CRC
	}
	return nil
}
