package source

import (
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

// Open opens the regular file at path.
func (Local) Open(path string) (File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
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

// Walk calls fn for every file below root (filepath.WalkDir's order and links policy).
func (Local) Walk(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		return fn(p)
	})
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
