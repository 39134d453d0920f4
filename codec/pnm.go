package codec

import (
	"fmt"
	"strconv"
)

func isPNMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// pnmHeader is a parsed binary PGM (P5) or PPM (P6) header.
type pnmHeader struct {
	w, h, channels int
	offset         int // first byte of the raster
}

// parsePNM reads "P5"/"P6", width, height and maxval, separated by whitespace and
// '#' comments, followed by exactly one whitespace byte before the raster.
func parsePNM(data []byte) (pnmHeader, error) {
	var hd pnmHeader
	if len(data) < 3 || data[0] != 'P' {
		return hd, fmt.Errorf("PNM: bad magic")
	}
	switch data[1] {
	case '5':
		hd.channels = 1
	case '6':
		hd.channels = 3
	default:
		return hd, fmt.Errorf("PNM: P%c is not supported; only binary P5 (gray) and P6 (RGB) with maxval 255", data[1])
	}
	i := 2
	var vals [3]int
	for k := range vals {
		// whitespace and comments
		for i < len(data) {
			if isPNMSpace(data[i]) {
				i++
			} else if data[i] == '#' {
				for i < len(data) && data[i] != '\n' && data[i] != '\r' {
					i++
				}
			} else {
				break
			}
		}
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == start || i-start > 9 {
			return hd, fmt.Errorf("PNM: header truncated or malformed (expected a number at byte %d)", start)
		}
		v, _ := strconv.Atoi(string(data[start:i]))
		vals[k] = v
	}
	if i >= len(data) || !isPNMSpace(data[i]) {
		return hd, fmt.Errorf("PNM: header truncated or malformed (no whitespace after maxval)")
	}
	hd.w, hd.h, hd.offset = vals[0], vals[1], i+1
	if vals[2] != 255 {
		return hd, fmt.Errorf("PNM: maxval %d is not supported; only 255", vals[2])
	}
	if hd.w <= 0 || hd.h <= 0 {
		return hd, fmt.Errorf("PNM: invalid size %dx%d", hd.w, hd.h)
	}
	return hd, nil
}

func probePNM(data []byte) (Info, error) {
	hd, err := parsePNM(data)
	if err != nil {
		return Info{}, err
	}
	info := Info{Format: FormatPNM, Width: hd.w, Height: hd.h, Components: hd.channels, ColorSpace: "RGB", Orientation: 1}
	if hd.channels == 1 {
		info.ColorSpace = "Gray"
	}
	return info, nil
}

// decodePNM emits the raster straight from data: P5 and P6 rasters already are gray and
// RGB rows.
func (d *Decoder) decodePNM(data []byte, info Info, p plan, out OutputType, dst []byte) error {
	hd, err := parsePNM(data)
	if err != nil {
		return err
	}
	if hd.w != info.Width || hd.h != info.Height {
		return fmt.Errorf("PNM: header says %dx%d but Info says %dx%d", hd.w, hd.h, info.Width, info.Height)
	}
	stride := hd.w * hd.channels
	if need := stride * hd.h; len(data)-hd.offset < need {
		return &decodeError{msg: fmt.Sprintf("PNM: raster truncated (%d of %d bytes)", len(data)-hd.offset, need), kind: ErrTruncated}
	}
	pf := pfRGB
	if hd.channels == 1 {
		pf = pfGray
	}
	return emit(data[hd.offset:], stride, pf, p, out, dst)
}
