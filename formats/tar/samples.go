package tar

import (
	"io"
	"strings"
)

// Component is one file of a webdataset sample.
type Component struct {
	Ext    string // file name after the first dot of the base name
	Offset int64  // offset of the file's data in the archive
	Size   int64  // file size in bytes
	Name   string // full path in the archive
}

// Sample is the run of consecutive files sharing a key.
type Sample struct {
	Key        string
	Components []Component
}

// Options tunes how files become samples.
type Options struct {
	// CaseInsensitive lower-cases extensions (DALI's case_sensitive_extensions=False,
	// webdataset's default). The zero value keeps them as written, DALI's default.
	CaseInsensitive bool
}

// SplitName splits a path into its webdataset key and extension: the key runs up
// to the first dot of the base name. ok is false for names that belong to no
// sample: without a dot in the base name, or whose base name starts with a dot.
func SplitName(name string) (key, ext string, ok bool) {
	base := strings.LastIndexByte(name, '/') + 1
	dot := strings.IndexByte(name[base:], '.')
	if dot <= 0 {
		return "", "", false
	}
	return name[:base+dot], name[base+dot+1:], true
}

// Samples scans the archive r of size bytes and groups its regular files into
// samples. Like webdataset and DALI, grouping is by runs: a key that reappears after
// another key starts a new sample.
func Samples(r io.ReaderAt, size int64, opt Options) ([]Sample, error) {
	var out []Sample
	err := Scan(r, size, func(e Entry) error {
		if !e.IsRegular() {
			return nil
		}
		key, ext, ok := SplitName(e.Name)
		if !ok {
			return nil
		}
		if opt.CaseInsensitive {
			ext = strings.ToLower(ext)
		}
		if len(out) == 0 || out[len(out)-1].Key != key {
			out = append(out, Sample{Key: key})
		}
		s := &out[len(out)-1]
		s.Components = append(s.Components, Component{Ext: ext, Offset: e.Offset, Size: e.Size, Name: e.Name})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
