package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/godali/godali/formats"
)

// Magic starts every .npy file.
const Magic = "\x93NUMPY"

// MaxHeaderSize bounds the header dict; numpy's own reader refuses headers over
// 10000 bytes unless told otherwise.
const MaxHeaderSize = 1 << 20

// MaxDims bounds a shape's dimensions: numpy 2.x's NPY_MAXDIMS (numpy 1.x's is 32), the
// most any numpy writes. Callers apply their own, lower, limits (the engine's outputs
// have at most engine.MaxSampleNDim).
const MaxDims = 64

// DType is an element type with its byte order.
type DType struct {
	Kind      byte // 'b' bool, 'u' unsigned, 'i' signed, 'f' float
	Size      int  // bytes per element
	BigEndian bool // only meaningful when Size > 1
}

// String is the dtype as numpy writes it in 'descr'.
func (d DType) String() string {
	order := byte('<')
	if d.Size == 1 {
		order = '|'
	} else if d.BigEndian {
		order = '>'
	}
	return fmt.Sprintf("%c%c%d", order, d.Kind, d.Size)
}

// ParseDType reads a numpy descr string such as "<f4", "|u1" or ">i8".
func ParseDType(s string) (DType, error) {
	bad := fmt.Errorf("npy dtype %q is not supported (want one of b1 u1 i1 u2 i2 u4 i4 u8 i8 f2 f4 f8 with a byte order < > | =)", s)
	if len(s) < 3 {
		return DType{}, bad
	}
	var d DType
	switch s[0] {
	case '<', '|', '=':
	case '>':
		d.BigEndian = true
	default:
		return DType{}, bad
	}
	d.Kind = s[1]
	n, err := strconv.Atoi(s[2:])
	if err != nil {
		return DType{}, bad
	}
	d.Size = n
	ok := false
	switch d.Kind {
	case 'b':
		ok = n == 1
	case 'u', 'i':
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case 'f':
		ok = n == 2 || n == 4 || n == 8
	}
	if !ok {
		return DType{}, bad
	}
	if n == 1 {
		d.BigEndian = false
	}
	return d, nil
}

// Header is a parsed .npy header.
type Header struct {
	Major, Minor byte
	DType        DType
	Shape        []int64
	Fortran      bool  // data is in Fortran (column-major) order
	DataOffset   int64 // where the data starts
	DataSize     int64 // volume(Shape) * DType.Size
}

// Count is the number of elements, volume(Shape).
func (h Header) Count() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		n *= d
	}
	return n
}

// ParseHeader reads the header of the .npy file r of size bytes and checks that
// the data it announces is in the file (trailing bytes are allowed, as numpy does).
func ParseHeader(r io.ReaderAt, size int64) (Header, error) {
	var pre [12]byte
	b, err := formats.ReadFull(r, size, 0, min(12, size), pre[:], "npy preamble")
	if err != nil {
		return Header{}, err
	}
	if len(b) < 10 || string(b[:6]) != Magic {
		return Header{}, formats.Malformedf("npy: not a .npy file (no %q magic)", Magic)
	}
	h := Header{Major: b[6], Minor: b[7]}
	var n, start int64
	switch h.Major {
	case 1:
		n, start = int64(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		if len(b) < 12 {
			return Header{}, formats.Malformedf("npy: truncated preamble")
		}
		n, start = int64(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return Header{}, formats.Malformedf("npy: format version %d.%d is not supported (want 1.0, 2.0 or 3.0)", h.Major, h.Minor)
	}
	if n > MaxHeaderSize {
		return Header{}, formats.Malformedf("npy: header of %d bytes exceeds %d", n, MaxHeaderSize)
	}
	text, err := formats.ReadFull(r, size, start, n, nil, "npy header")
	if err != nil {
		return Header{}, err
	}
	if err := h.parseDict(string(text)); err != nil {
		return Header{}, formats.Malformedf("npy header %q: %v", strings.TrimSpace(string(text)), err)
	}
	h.DataOffset = start + n
	vol, over := uint64(1), false
	for _, d := range h.Shape {
		hi, lo := bits.Mul64(vol, uint64(d))
		vol, over = lo, over || hi != 0
		if d == 0 { // an empty array, however large its other extents
			vol, over = 0, false
			break
		}
	}
	hi, bytes := bits.Mul64(vol, uint64(h.DType.Size))
	if over || hi != 0 || bytes > uint64(size-h.DataOffset) {
		return Header{}, formats.Malformedf("npy: shape %v of %v needs more data than the file's %d bytes after the header", h.Shape, h.DType, size-h.DataOffset)
	}
	h.DataSize = int64(bytes)
	return h, nil
}

// parseDict reads the header's dict literal: string keys mapping to a string
// (descr), a boolean (fortran_order) and a tuple of integers (shape).
func (h *Header) parseDict(s string) error {
	p := &lexer{s: s}
	if !p.eat('{') {
		return fmt.Errorf("want a dict")
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if !p.eat(':') {
			return fmt.Errorf("want ':' after %q", key)
		}
		switch key {
		case "descr":
			v, err := p.str()
			if err != nil {
				return fmt.Errorf("descr: %v (structured dtypes are not supported)", err)
			}
			if h.DType, err = ParseDType(v); err != nil {
				return err
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				h.Fortran = true
			case p.word("False"):
				h.Fortran = false
			default:
				return fmt.Errorf("fortran_order: want True or False")
			}
		case "shape":
			if h.Shape, err = p.tuple(); err != nil {
				return fmt.Errorf("shape: %v", err)
			}
		default:
			return fmt.Errorf("unexpected key %q", key)
		}
		if seen[key] {
			return fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		if !p.eat(',') {
			if !p.eat('}') {
				return fmt.Errorf("want ',' or '}' after %q", key)
			}
			break
		}
	}
	if len(seen) != 3 {
		return fmt.Errorf("want the keys descr, fortran_order and shape")
	}
	if rest := strings.TrimSpace(p.s[p.i:]); rest != "" {
		return fmt.Errorf("trailing %q after the dict", rest)
	}
	return nil
}

type lexer struct {
	s string
	i int
}

func (p *lexer) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *lexer) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *lexer) word(w string) bool {
	p.skip()
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes (numpy's keys and descrs have none).
func (p *lexer) str() (string, error) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("want a quoted string at byte %d", p.i)
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", fmt.Errorf("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

// tuple reads "()", "(n,)" or "(n, m, ...)" of non-negative integers (Python may
// write them with an L suffix in files from Python 2).
func (p *lexer) tuple() ([]int64, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("want a tuple")
	}
	out := []int64{}
	for {
		if p.eat(')') {
			return out, nil
		}
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a non-negative integer at byte %d", p.i)
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		if len(out) == MaxDims {
			return nil, fmt.Errorf("more than %d dimensions (numpy's limit)", MaxDims)
		}
		out = append(out, v)
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, fmt.Errorf("want ',' or ')'")
			}
			if len(out) == 1 {
				return nil, fmt.Errorf("a one-element tuple needs a trailing comma")
			}
			return out, nil
		}
	}
}
