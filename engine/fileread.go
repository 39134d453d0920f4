package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultMaxFileBytes is the pipeline's default max_file_bytes: no encoded image of a
// real data set comes near it, and a reader never sizes a buffer from a file's length
// beyond it.
const DefaultMaxFileBytes = 256 << 20

// openSampleFile opens a sample's file for reading it whole: a regular file (after
// symlinks) of at most maxBytes bytes (0: no limit). The type is checked before the open
// and the open does not block, so a FIFO, socket or device named like an image is an
// error rather than a hang; the size is checked before anyone allocates for it.
func openSampleFile(path string, maxBytes int64) (fd int, size int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return -1, 0, fmt.Errorf("cannot open: %w", err)
	}
	if !st.Mode().IsRegular() {
		return -1, 0, Errorf(StatusData, "not a regular file (%s)", fileKind(st.Mode()))
	}
	// O_NONBLOCK: a file swapped for a FIFO after the Stat opens at once instead of
	// waiting for a writer; it changes nothing for regular files.
	fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("cannot open: %w", err)
	}
	var s syscall.Stat_t
	if err := syscall.Fstat(fd, &s); err != nil {
		syscall.Close(fd)
		return -1, 0, fmt.Errorf("cannot stat: %w", err)
	}
	if s.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, 0, Errorf(StatusData, "not a regular file")
	}
	if maxBytes > 0 && s.Size > maxBytes {
		syscall.Close(fd)
		return -1, 0, Errorf(StatusData, "file is %d bytes, more than max_file_bytes=%d (raise the pipeline's max_file_bytes to read it)", s.Size, maxBytes)
	}
	return fd, s.Size, nil
}

// fileKind names a non-regular file type for error messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}

// walkFollow calls fn for every non-directory entry below dir in lexical order,
// following symlinks to directories as torchvision's os.walk(followlinks=True) and
// DALI do. A directory that is already on the path from dir (a symlink to an ancestor)
// is not entered again, so loops end.
func walkFollow(dir string, fn func(path string)) error {
	return walkFollowIn(dir, nil, fn)
}

type dirID struct{ dev, ino uint64 }

func walkFollowIn(dir string, ancestors []dirID, fn func(path string)) error {
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
			isDir = isDirPath(p) // a dangling link stays a file: reading it names the error
		}
		if !isDir {
			fn(p)
			continue
		}
		if err := walkFollowIn(p, ancestors[:len(ancestors):len(ancestors)], fn); err != nil {
			return err
		}
	}
	return nil
}

func isDirPath(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
