package recordio

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/godali/godali/formats"
)

// Magic starts every part of a RecordIO file.
const Magic uint32 = 0xced7230a

// Part continuation flags.
const (
	flagWhole = 0
	flagFirst = 1
	flagMid   = 2
	flagLast  = 3
)

// Record locates one logical record: the extent of all its parts, padding included.
type Record struct {
	Offset int64
	Size   int64
}

func pad4(n int64) int64 { return (n + 3) &^ 3 }

// Scan walks the file r of size bytes and calls fn for each logical record,
// checking the magic, the continuation flags' order and that every part fits.
func Scan(r io.ReaderAt, size int64, fn func(Record) error) error {
	var hdr [8]byte
	start, inMulti := int64(0), false
	for off := int64(0); off < size; {
		if _, err := formats.ReadFull(r, size, off, 8, hdr[:], "recordio part header"); err != nil {
			return err
		}
		cflag, n, err := parsePartHeader(hdr[:], off)
		if err != nil {
			return err
		}
		// Only the part's bytes must fit: the last padding may be missing at the end.
		if n > size-off-8 {
			return formats.Malformedf("recordio part at offset %d: %d bytes run past the end of the file (%d bytes)", off, n, size)
		}
		if err := checkFlag(cflag, inMulti, off); err != nil {
			return err
		}
		if cflag == flagWhole || cflag == flagFirst {
			start = off
		}
		inMulti = cflag == flagFirst || cflag == flagMid
		off = min(off+8+pad4(n), size)
		if !inMulti {
			if err := fn(Record{Offset: start, Size: off - start}); err != nil {
				return err
			}
		}
	}
	if inMulti {
		return formats.Malformedf("recordio: the file ends inside a multi-part record starting at offset %d", start)
	}
	return nil
}

// Records returns every logical record of the file.
func Records(r io.ReaderAt, size int64) ([]Record, error) {
	var out []Record
	err := Scan(r, size, func(rec Record) error { out = append(out, rec); return nil })
	return out, err
}

func parsePartHeader(h []byte, off int64) (cflag uint32, n int64, err error) {
	if m := binary.LittleEndian.Uint32(h); m != Magic {
		return 0, 0, formats.Malformedf("recordio part at offset %d: magic %#08x, want %#08x (not a RecordIO file, or a bad offset)", off, m, Magic)
	}
	l := binary.LittleEndian.Uint32(h[4:])
	return l >> 29, int64(l & (1<<29 - 1)), nil
}

func checkFlag(cflag uint32, inMulti bool, off int64) error {
	switch {
	case cflag > flagLast:
		return formats.Malformedf("recordio part at offset %d: continuation flag %d (want 0 to 3)", off, cflag)
	case inMulti && (cflag == flagWhole || cflag == flagFirst):
		return formats.Malformedf("recordio part at offset %d: flag %d inside a multi-part record", off, cflag)
	case !inMulti && (cflag == flagMid || cflag == flagLast):
		return formats.Malformedf("recordio part at offset %d: flag %d without a first part", off, cflag)
	}
	return nil
}

// ReadRecord reads the logical record starting at rec.Offset, whose parts must lie
// within rec.Size bytes, and returns its reassembled payload (in buf when large
// enough).
func ReadRecord(r io.ReaderAt, size int64, rec Record, buf []byte) ([]byte, error) {
	raw, err := formats.ReadFull(r, size, rec.Offset, rec.Size, nil, "recordio record")
	if err != nil {
		return nil, err
	}
	p, _, err := Decode(raw, rec.Offset, buf[:0])
	return p, err
}

// Decode reassembles the logical record at the start of b, appending its payload to
// dst; offset only names it in errors. It returns the payload and how many bytes of
// b the record took (with padding); bytes after it are left alone.
func Decode(b []byte, offset int64, dst []byte) (payload []byte, used int64, err error) {
	inMulti := false
	var off int64
	for {
		if int64(len(b))-off < 8 {
			return nil, 0, formats.Malformedf("recordio record at offset %d: ends after %d bytes, inside a part header", offset, off)
		}
		cflag, n, err := parsePartHeader(b[off:off+8], offset+off)
		if err != nil {
			return nil, 0, err
		}
		if err := checkFlag(cflag, inMulti, offset+off); err != nil {
			return nil, 0, err
		}
		if n > int64(len(b))-off-8 {
			return nil, 0, formats.Malformedf("recordio part at offset %d: %d bytes run past the record's %d bytes", offset+off, n, len(b))
		}
		if inMulti {
			dst = binary.LittleEndian.AppendUint32(dst, Magic)
		}
		dst = append(dst, b[off+8:off+8+n]...)
		off = min(off+8+pad4(n), int64(len(b)))
		inMulti = cflag == flagFirst || cflag == flagMid
		if !inMulti {
			return dst, off, nil
		}
	}
}

// HeaderSize is the size of the image-record header.
const HeaderSize = 24

// Header is mxnet.recordio.IRHeader.
type Header struct {
	Flag  uint32  // 0: Label holds the label; n > 0: n float32 labels follow
	Label float32 // the label when Flag is 0
	ID    uint64
	ID2   uint64
}

// Unpack splits a payload written by mxnet.recordio.pack into its header, its
// labels (the array when Flag > 0, else the single Label) and its data, which
// aliases payload.
func Unpack(payload []byte) (h Header, labels []float32, data []byte, err error) {
	if len(payload) < HeaderSize {
		return h, nil, nil, formats.Malformedf("recordio payload of %d bytes is shorter than the %d-byte image-record header", len(payload), HeaderSize)
	}
	h = Header{
		Flag:  binary.LittleEndian.Uint32(payload),
		Label: math.Float32frombits(binary.LittleEndian.Uint32(payload[4:])),
		ID:    binary.LittleEndian.Uint64(payload[8:]),
		ID2:   binary.LittleEndian.Uint64(payload[16:]),
	}
	rest := payload[HeaderSize:]
	if h.Flag == 0 {
		return h, []float32{h.Label}, rest, nil
	}
	if uint64(h.Flag) > uint64(len(rest))/4 {
		return h, nil, nil, formats.Malformedf("recordio image-record header: %d labels need %d bytes, the payload has %d after the header", h.Flag, 4*uint64(h.Flag), len(rest))
	}
	labels = make([]float32, h.Flag)
	for i := range labels {
		labels[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
	}
	return h, labels, rest[4*int(h.Flag):], nil
}

// IndexEntry is one line of a .idx file.
type IndexEntry struct {
	Key    string
	Offset int64
}

// WriteIndex writes entries as MXIndexedRecordIO does: "<key>\t<offset>\n".
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		if e.Key == "" || strings.ContainsAny(e.Key, " \t\n\r\v\f") {
			return fmt.Errorf("recordio index: key %q cannot be written (empty or with white space)", e.Key)
		}
		fmt.Fprintf(bw, "%s\t%d\n", e.Key, e.Offset)
	}
	return bw.Flush()
}

// ReadIndex parses a .idx file; blank lines are skipped.
func ReadIndex(r io.Reader) ([]IndexEntry, error) {
	sc := bufio.NewScanner(r)
	var out []IndexEntry
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		off, err := int64(0), error(nil)
		if len(f) == 2 {
			off, err = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) != 2 || err != nil || off < 0 {
			return nil, formats.Malformedf("recordio index line %d: %q: want \"<key>\\t<offset>\" with a non-negative offset", line, sc.Text())
		}
		out = append(out, IndexEntry{Key: f[0], Offset: off})
	}
	if err := sc.Err(); err != nil {
		return nil, formats.Malformedf("recordio index: %v", err)
	}
	return out, nil
}

// Extents turns index entries into record extents for a file of size bytes, as
// DALI's reader does: sorted by offset, each running to the next offset (or the end
// of the file). The result is in offset order, with the keys alongside.
func Extents(entries []IndexEntry, size int64) ([]Record, []string, error) {
	e := append([]IndexEntry(nil), entries...)
	sort.SliceStable(e, func(i, j int) bool { return e[i].Offset < e[j].Offset })
	recs := make([]Record, len(e))
	keys := make([]string, len(e))
	for i, x := range e {
		end := size
		if i+1 < len(e) {
			end = e[i+1].Offset
		}
		if x.Offset >= end || end > size {
			return nil, nil, formats.Malformedf("recordio index: key %q at offset %d: outside the file (%d bytes) or at the same offset as another key", x.Key, x.Offset, size)
		}
		recs[i] = Record{Offset: x.Offset, Size: end - x.Offset}
		keys[i] = x.Key
	}
	return recs, keys, nil
}
