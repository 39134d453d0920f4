package remote

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fileBackend reads local paths and file:// URLs, so that readers can treat every
// location alike; it makes no network requests.
type fileBackend struct{}

func localPath(url string) string {
	if p, ok := strings.CutPrefix(url, "file://"); ok {
		return p
	}
	return url
}

func (fileBackend) stat(ctx context.Context, url string) (ObjectInfo, error) {
	st, err := os.Stat(localPath(url))
	if err != nil {
		return ObjectInfo{}, fileError("open", url, err)
	}
	return ObjectInfo{URL: url, Size: st.Size()}, nil
}

func (fileBackend) get(ctx context.Context, url string, r getRequest) (*getResponse, error) {
	f, err := os.Open(localPath(url))
	if err != nil {
		return nil, fileError("get", url, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fileError("get", url, err)
	}
	size := st.Size()
	if r.Off >= size && !(r.Off == 0 && size == 0 && r.Len < 0) {
		f.Close()
		return &getResponse{Unsatisfiable: true, Total: size, Len: -1}, nil
	}
	n := size - r.Off
	if r.Len >= 0 && r.Len < n {
		n = r.Len
	}
	body := struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, r.Off, n), f}
	return &getResponse{Body: body, Off: r.Off, Len: n, Total: size, Partial: true}, nil
}

func (fileBackend) list(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	root := localPath(prefix)
	var out []ObjectInfo
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{URL: p, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fileError("list", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, nil
}

func fileError(op, url string, err error) error {
	if os.IsNotExist(err) {
		return &Error{Op: op, URL: url, Err: ErrNotFound}
	}
	return &Error{Op: op, URL: url, Err: err}
}
