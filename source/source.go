// Package source is where readers get their bytes: a Source lists the files of a data
// set and reads them. Local is the local filesystem; a remote store (S3, HTTP) is
// another implementation of the same interface, so that a reader works on either.
package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Source is a tree of files. Paths are the source's own (plain local paths for Local).
// Errors are *fs.PathError values naming the operation ("open", "stat", "read") and the
// path, so that errors.Is(err, fs.ErrNotExist) works as with package os. A Source is
// safe for concurrent use.
type Source interface {
	// Open opens the regular file at path for reading; anything else is refused with
	// ErrNotRegular.
	Open(path string) (File, error)
	// Stat returns the size of the regular file at path.
	Stat(path string) (size int64, err error)
	// List returns the entries of directory dir, sorted by name.
	List(dir string) ([]Entry, error)
	// Walk calls fn with the path of every file below root, in lexical order. It
	// descends into directories and links to directories (each directory once per path,
	// so link loops end), and stops at the first error, its own or fn's, which it
	// returns.
	Walk(root string, fn func(path string) error) error
}

// Entry is one entry of a directory listing.
type Entry struct {
	Name string
	Dir  bool // a directory, or a link to one
}

// File is an open file: reads at any offset, from any goroutine, of a file whose size is
// the one it had when it was opened. ReadAt follows io.ReaderAt: fewer bytes than asked
// only with an error, io.EOF at the end of the file.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// ErrNotRegular is the cause of the error for a path that is not a regular file (a
// directory, a device, a pipe).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the cause of ReadFile's error for a file larger than its limit.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the whole file at path. A file of more than max bytes (when max > 0)
// is refused with ErrTooLarge before anything is read.
func ReadFile(src Source, path string, max int64) ([]byte, error) {
	f, err := src.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := f.Size()
	if max > 0 && n > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, n, max)}
	}
	b := make([]byte, n)
	if m, err := f.ReadAt(b, 0); m < len(b) {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank after Open
		}
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}
