package source

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Local is the local filesystem. Files are opened with O_CLOEXEC and read with pread,
// so that one open file serves reads from any goroutine.
type Local struct{}

var _ Source = Local{}

// Open opens the regular file at path. The type is checked before the open, and the
// open does not block, so that a FIFO, socket or device named like an image is an error
// (ErrNotRegular, naming the kind) rather than a hang.
func (Local) Open(path string) (File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: unwrapPathError(err)}
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(st.Mode())}
	}
	// O_NONBLOCK: a file swapped for a FIFO after the Stat opens at once instead of
	// waiting for a writer; it changes nothing for regular files.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var s syscall.Stat_t
	if err := syscall.Fstat(fd, &s); err != nil {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if s.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return &localFile{fd: fd, size: s.Size, path: path}, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// notRegular is ErrNotRegular with the kind of file it is.
func notRegular(m fs.FileMode) error {
	kind := "type " + m.Type().String()
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	}
	return fmt.Errorf("%w (%s)", ErrNotRegular, kind)
}

// Stat returns the size of the regular file at path, following links.
func (Local) Stat(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, &fs.PathError{Op: "stat", Path: path, Err: ErrNotRegular}
	}
	return st.Size(), nil
}

// List returns the entries of directory dir; links to directories count as directories.
func (Local) List(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(des))
	for i, d := range des {
		isDir := d.IsDir()
		if !isDir && d.Type()&os.ModeSymlink != 0 {
			st, err := os.Stat(filepath.Join(dir, d.Name()))
			isDir = err == nil && st.IsDir()
		}
		out[i] = Entry{Name: d.Name(), Dir: isDir}
	}
	return out, nil
}

// Walk calls fn for every non-directory entry below root in lexical order, following
// links to directories as torchvision's os.walk(followlinks=True) and DALI do. A
// directory already on the path from root (a link to an ancestor) is not entered again,
// so loops end.
func (Local) Walk(root string, fn func(path string) error) error {
	return walkFollow(root, nil, fn)
}

type dirID struct{ dev, ino uint64 }

func walkFollow(dir string, ancestors []dirID, fn func(path string) error) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id := dirID{uint64(sys.Dev), uint64(sys.Ino)}
		for _, a := range ancestors {
			if a == id {
				return nil // a loop: already being listed further up
			}
		}
		ancestors = append(ancestors, id)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			// A dangling link stays a file: reading it names the error.
			st, err := os.Stat(p)
			isDir = err == nil && st.IsDir()
		}
		if !isDir {
			if err := fn(p); err != nil {
				return err
			}
			continue
		}
		if err := walkFollow(p, ancestors[:len(ancestors):len(ancestors)], fn); err != nil {
			return err
		}
	}
	return nil
}

type localFile struct {
	fd   int
	size int64
	path string
}

func (f *localFile) Size() int64 { return f.size }

func (f *localFile) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pread(f.fd, b[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f *localFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := syscall.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}
