package tfrecord

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/godali/godali/formats"
)

// Overhead is the number of framing bytes around a record's payload.
const Overhead = 8 + 4 + 4

// Record locates one framed record; the fields are those of an index line.
type Record struct {
	Offset int64 // offset of the frame (its length field)
	Size   int64 // frame size: payload + Overhead
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's masked CRC-32C of b.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// Scan walks the frames of the file r of size bytes and calls fn for each. Length
// CRCs are always checked (a bad one means the framing itself is lost); payload
// CRCs are checked when verify is set, which reads every payload.
func Scan(r io.ReaderAt, size int64, verify bool, fn func(Record) error) error {
	var hdr [12]byte
	var buf []byte
	for off := int64(0); off < size; {
		if _, err := formats.ReadFull(r, size, off, 12, hdr[:], "tfrecord header"); err != nil {
			return err
		}
		n := binary.LittleEndian.Uint64(hdr[:8])
		if got, want := MaskedCRC(hdr[:8]), binary.LittleEndian.Uint32(hdr[8:]); got != want {
			return formats.Malformedf("tfrecord at offset %d: length CRC %#08x, want %#08x (not a TFRecord file, or corrupt)", off, want, got)
		}
		if rem := size - off; rem < Overhead || n > uint64(rem-Overhead) {
			return formats.Malformedf("tfrecord at offset %d: payload of %d bytes runs past the end of the file (%d bytes)", off, n, size)
		}
		rec := Record{Offset: off, Size: int64(n) + Overhead}
		if verify {
			var err error
			if buf, err = ReadPayload(r, size, rec, buf, true); err != nil {
				return err
			}
		}
		if err := fn(rec); err != nil {
			return err
		}
		off += rec.Size
	}
	return nil
}

// Records returns every frame of the file, as an index would list them.
func Records(r io.ReaderAt, size int64, verify bool) ([]Record, error) {
	var out []Record
	err := Scan(r, size, verify, func(rec Record) error { out = append(out, rec); return nil })
	return out, err
}

// ReadPayload reads the frame rec of the file r (size bytes) into buf (grown when
// too small) and returns its payload, checking both CRCs when verify is set.
func ReadPayload(r io.ReaderAt, size int64, rec Record, buf []byte, verify bool) ([]byte, error) {
	if rec.Size < Overhead {
		return nil, formats.Malformedf("tfrecord at offset %d: size %d is less than the %d framing bytes", rec.Offset, rec.Size, Overhead)
	}
	frame, err := formats.ReadFull(r, size, rec.Offset, rec.Size, buf, "tfrecord")
	if err != nil {
		return nil, err
	}
	return Payload(frame, rec.Offset, verify)
}

// Payload returns the payload of one whole frame (as located by an index); offset
// only names it in errors.
func Payload(frame []byte, offset int64, verify bool) ([]byte, error) {
	if len(frame) < Overhead {
		return nil, formats.Malformedf("tfrecord at offset %d: %d bytes cannot hold a frame", offset, len(frame))
	}
	n := binary.LittleEndian.Uint64(frame[:8])
	if n != uint64(len(frame)-Overhead) {
		return nil, formats.Malformedf("tfrecord at offset %d: payload length %d does not match the frame size %d (index out of date?)", offset, n, len(frame))
	}
	payload := frame[12 : len(frame)-4]
	if verify {
		if got, want := MaskedCRC(frame[:8]), binary.LittleEndian.Uint32(frame[8:12]); got != want {
			return nil, formats.Malformedf("tfrecord at offset %d: length CRC %#08x, want %#08x", offset, want, got)
		}
		if got, want := MaskedCRC(payload), binary.LittleEndian.Uint32(frame[len(frame)-4:]); got != want {
			return nil, formats.Malformedf("tfrecord at offset %d: payload CRC %#08x, want %#08x (corrupt record)", offset, want, got)
		}
	}
	return payload, nil
}

// WriteIndex writes records in the tfrecord2idx format: "<offset> <size>\n" each.
func WriteIndex(w io.Writer, records []Record) error {
	bw := bufio.NewWriter(w)
	for _, r := range records {
		bw.WriteString(strconv.FormatInt(r.Offset, 10))
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(r.Size, 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadIndex parses a tfrecord2idx index. Blank lines are skipped; each other line
// must hold a non-negative offset and a size of at least Overhead bytes.
func ReadIndex(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	var out []Record
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, formats.Malformedf("tfrecord index line %d: %q: want \"<offset> <size>\"", line, sc.Text())
		}
		off, err1 := strconv.ParseInt(f[0], 10, 64)
		size, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || off < 0 || size < Overhead {
			return nil, formats.Malformedf("tfrecord index line %d: %q: want a non-negative offset and a size of at least %d", line, sc.Text(), Overhead)
		}
		out = append(out, Record{Offset: off, Size: size})
	}
	if err := sc.Err(); err != nil {
		return nil, formats.Malformedf("tfrecord index: %v", err)
	}
	return out, nil
}

// CheckIndex verifies that every record lies inside a file of size bytes.
func CheckIndex(records []Record, size int64) error {
	for i, r := range records {
		if r.Offset < 0 || r.Size < Overhead || r.Offset > size || r.Size > size-r.Offset {
			return fmt.Errorf("tfrecord index entry %d: %d bytes at offset %d lie outside the file (%d bytes): %w", i, r.Size, r.Offset, size, formats.ErrMalformed)
		}
	}
	return nil
}
