package tar

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/godali/godali/formats"
)

// BlockSize is the tar block size; headers and file data start on its multiples.
const BlockSize = 512

// MaxMetaSize bounds the data of GNU long-name and pax extended-header entries,
// which Scan holds in memory; real ones are a few hundred bytes.
const MaxMetaSize = 1 << 20

// Entry types Scan reports (the header's typeflag byte).
const (
	TypeReg        = '0'
	TypeRegOld     = '\x00' // pre-POSIX regular file
	TypeContiguous = '7'    // regular file on tapes that care
	TypeDir        = '5'
)

// Entry is one member of a tar archive.
type Entry struct {
	Name         string // full path, after GNU long-name and pax path overrides
	Type         byte   // typeflag of the header
	HeaderOffset int64  // offset of the entry's (last) header block
	Offset       int64  // offset of the entry's data
	Size         int64  // data size in bytes
}

// IsRegular reports whether the entry is a regular file.
func (e Entry) IsRegular() bool {
	return e.Type == TypeReg || e.Type == TypeRegOld || e.Type == TypeContiguous
}

// Scan walks the archive r of size bytes and calls fn for every entry other than
// the long-name and extended-header meta entries, in archive order. It stops at the
// end-of-archive marker (a zero block) or at the end of the data when that falls on
// a header boundary. A non-nil error from fn stops the scan and is returned.
func Scan(r io.ReaderAt, size int64, fn func(Entry) error) error {
	var (
		hdr      [BlockSize]byte
		longName string // from a GNU 'L' entry, for the next header
		paxPath  string // from a pax 'x' entry, for the next header
		paxSize  int64  = -1
		meta     []byte
	)
	for off := int64(0); ; {
		if off == size {
			return nil // no end marker: tolerated, as GNU tar and tarfile do
		}
		if _, err := formats.ReadFull(r, size, off, BlockSize, hdr[:], "tar header"); err != nil {
			return err
		}
		if isZero(hdr[:]) {
			return nil
		}
		if !checksumOK(&hdr) {
			return formats.Malformedf("tar header at offset %d: checksum mismatch (not a tar archive, or corrupt)", off)
		}
		n, err := parseNumeric(hdr[124:136])
		if err != nil {
			return formats.Malformedf("tar header at offset %d: size field: %v", off, err)
		}
		typ := hdr[156]
		dataOff := off + BlockSize
		if typ == 'L' || typ == 'x' || typ == 'g' || typ == 'K' {
			if n > MaxMetaSize {
				return formats.Malformedf("tar header at offset %d: %q meta entry of %d bytes exceeds %d", off, typ, n, MaxMetaSize)
			}
			if meta, err = formats.ReadFull(r, size, dataOff, n, meta, "tar meta entry"); err != nil {
				return err
			}
			switch typ {
			case 'L':
				longName = cString(meta)
			case 'x':
				p, s, err := parsePax(meta)
				if err != nil {
					return formats.Malformedf("pax header at offset %d: %v", off, err)
				}
				if p != "" {
					paxPath = p
				}
				if s >= 0 {
					paxSize = s
				}
			}
			// 'K' (long link name) and 'g' (global pax) do not affect file names or sizes.
			off, err = next(dataOff, n, size, off)
			if err != nil {
				return err
			}
			continue
		}
		if paxSize >= 0 {
			n = paxSize
		}
		name := longName
		if name == "" {
			name = paxPath
		}
		if name == "" {
			name = headerName(&hdr)
		}
		e := Entry{Name: name, Type: typ, HeaderOffset: off, Offset: dataOff, Size: n}
		longName, paxPath, paxSize = "", "", -1
		// Like tarfile and GNU tar, only regular files and unknown types carry data
		// blocks; a directory's or link's size field is not followed by data.
		skip := n
		if !carriesData(typ) {
			skip = 0
			e.Size = 0
		}
		if skip > size-dataOff {
			return formats.Malformedf("tar entry %q at offset %d: %d data bytes run past the end of the archive (%d bytes)", name, off, skip, size)
		}
		if err := fn(e); err != nil {
			return err
		}
		if off, err = next(dataOff, skip, size, off); err != nil {
			return err
		}
	}
}

// Entries returns every entry Scan reports.
func Entries(r io.ReaderAt, size int64) ([]Entry, error) {
	var out []Entry
	err := Scan(r, size, func(e Entry) error { out = append(out, e); return nil })
	return out, err
}

func carriesData(typ byte) bool {
	switch typ {
	case '1', '2', '3', '4', '5', '6':
		return false
	}
	return true
}

// next returns the offset of the header after data of n bytes at dataOff.
func next(dataOff, n, size, hdrOff int64) (int64, error) {
	if n > size-dataOff {
		return 0, formats.Malformedf("tar entry at offset %d: %d data bytes run past the end of the archive (%d bytes)", hdrOff, n, size)
	}
	end := dataOff + n
	if rem := end % BlockSize; rem != 0 {
		end += BlockSize - rem
	}
	if end > size {
		// The last block's padding is missing: no further header can follow.
		return size, nil
	}
	return end, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checksumOK checks the header checksum, summing the checksum field as spaces;
// old tars summed signed bytes, so both sums are accepted.
func checksumOK(h *[BlockSize]byte) bool {
	want, err := parseNumeric(h[148:156])
	if err != nil {
		return false
	}
	var su, ss int64
	for i, c := range h {
		if i >= 148 && i < 156 {
			c = ' '
		}
		su += int64(c)
		ss += int64(int8(c))
	}
	return want == su || want == ss
}

// parseNumeric decodes a header number: octal ASCII padded with spaces or NULs,
// or GNU base-256 when the top bit of the first byte is set (positive only).
func parseNumeric(b []byte) (int64, error) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		if b[0] == 0xff {
			return 0, fmt.Errorf("negative base-256 number")
		}
		var v uint64
		for i, c := range b {
			if i == 0 {
				c &= 0x7f
			}
			if v > (1<<63-1)>>8 {
				return 0, fmt.Errorf("base-256 number overflows int64")
			}
			v = v<<8 | uint64(c)
		}
		return int64(v), nil
	}
	s := strings.Trim(cString(b), " ")
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 8, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not an octal number", s)
	}
	return v, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// headerName joins the POSIX ustar prefix and name fields. GNU headers ("ustar  \0")
// keep other fields where ustar has the prefix, so it is used only for POSIX ones.
func headerName(h *[BlockSize]byte) string {
	name := cString(h[0:100])
	if string(h[257:263]) == "ustar\x00" {
		if p := cString(h[345:500]); p != "" {
			return p + "/" + name
		}
	}
	return name
}

// parsePax reads "<len> <key>=<value>\n" records and returns the path and size
// (-1 when absent) they set.
func parsePax(b []byte) (path string, size int64, err error) {
	size = -1
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return "", -1, fmt.Errorf("record without a length")
		}
		n, err := strconv.Atoi(string(b[:sp]))
		if err != nil || n <= sp+1 || n > len(b) {
			return "", -1, fmt.Errorf("bad record length %q", b[:sp])
		}
		rec := b[sp+1 : n]
		b = b[n:]
		if len(rec) == 0 || rec[len(rec)-1] != '\n' {
			return "", -1, fmt.Errorf("record not ended by a newline")
		}
		rec = rec[:len(rec)-1]
		eq := bytes.IndexByte(rec, '=')
		if eq < 0 {
			return "", -1, fmt.Errorf("record without '='")
		}
		key, val := string(rec[:eq]), string(rec[eq+1:])
		switch key {
		case "path":
			path = val
		case "size":
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil || v < 0 {
				return "", -1, fmt.Errorf("bad size %q", val)
			}
			size = v
		}
	}
	return path, size, nil
}
