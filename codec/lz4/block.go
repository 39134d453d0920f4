// Package lz4 decodes LZ4 blocks (the LZ4 block format: no frame header, no checksum),
// the compressed chunks DALI's decoders.inflate reads.
package lz4

import "errors"

// ErrCorrupt is returned for a block that does not decode: a length or match offset
// that runs past the input, or a match before the start of the output.
var ErrCorrupt = errors.New("lz4: corrupt block")

// ErrTooLong is returned for a block that inflates to more bytes than the output has.
var ErrTooLong = errors.New("lz4: the block inflates to more bytes than expected")

// DecodeBlock decompresses the LZ4 block src into dst and returns the number of bytes
// written; a block that needs more room than len(dst) is ErrTooLong (the caller knows the
// decompressed size: it bounds the work and the memory).
func DecodeBlock(dst, src []byte) (int, error) {
	s, d := 0, 0
	for s < len(src) {
		token := src[s]
		s++
		lit := int(token >> 4)
		if lit == 15 {
			var ok bool
			if lit, s, ok = extendLength(src, s, lit); !ok {
				return d, ErrCorrupt
			}
		}
		if lit > len(src)-s {
			return d, ErrCorrupt
		}
		if lit > len(dst)-d {
			return d, ErrTooLong
		}
		d += copy(dst[d:], src[s:s+lit])
		s += lit
		if s == len(src) { // the last sequence has literals only
			return d, nil
		}
		if len(src)-s < 2 {
			return d, ErrCorrupt
		}
		off := int(src[s]) | int(src[s+1])<<8
		s += 2
		if off == 0 || off > d {
			return d, ErrCorrupt
		}
		ml := int(token & 15)
		if ml == 15 {
			var ok bool
			if ml, s, ok = extendLength(src, s, ml); !ok {
				return d, ErrCorrupt
			}
		}
		ml += 4
		if ml > len(dst)-d {
			return d, ErrTooLong
		}
		// The match may overlap what it writes (off < ml repeats a pattern): byte by byte.
		from := d - off
		if off >= ml {
			d += copy(dst[d:d+ml], dst[from:from+ml])
			continue
		}
		for i := 0; i < ml; i++ {
			dst[d+i] = dst[from+i]
		}
		d += ml
	}
	return d, ErrCorrupt // an empty block, or one ending after a match
}

// extendLength adds the length bytes that follow a nibble of 15 (each 255 continues).
func extendLength(src []byte, s, n int) (int, int, bool) {
	for {
		if s >= len(src) {
			return n, s, false
		}
		b := src[s]
		s++
		n += int(b)
		if n > 1<<31 {
			return n, s, false
		}
		if b != 255 {
			return n, s, true
		}
	}
}
