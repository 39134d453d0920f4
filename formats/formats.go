package formats

import (
	"errors"
	"fmt"
	"io"
)

// ErrMalformed is wrapped by every error that reports bytes not following their
// format (bad magic, checksum mismatch, a length running past the end of the data).
// Reader operators map it to a data error naming the file.
var ErrMalformed = errors.New("malformed data")

// Malformedf returns an error wrapping ErrMalformed.
func Malformedf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrMalformed)
}

// ReadFull reads n bytes at off from r, whose data is size bytes long, into buf
// (grown when too small) and returns them. A range outside [0, size) is reported as
// malformed before any allocation, so n may come straight from untrusted bytes.
func ReadFull(r io.ReaderAt, size, off, n int64, buf []byte, what string) ([]byte, error) {
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, Malformedf("%s: %d bytes at offset %d run past the end of the data (%d bytes)", what, n, off, size)
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if n == 0 {
		return buf, nil
	}
	got, err := r.ReadAt(buf, off)
	if int64(got) == n {
		return buf, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("%s: read %d bytes at offset %d: %w", what, n, off, err)
}
