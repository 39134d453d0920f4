package tar

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/godali/godali/formats"
)

// IndexVersion is the index format version WriteIndex writes (DALI's current one).
const IndexVersion = "v1.2"

// MaxIndexLine bounds one line of an index file.
const MaxIndexLine = 64 << 20

// WriteIndex writes samples in DALI's wds2idx v1.2 format. Names or extensions that
// the space-separated format cannot carry (empty, or containing white space) are
// refused, as are archives without samples (DALI refuses empty indices).
func WriteIndex(w io.Writer, samples []Sample) error {
	if len(samples) == 0 {
		return fmt.Errorf("webdataset index: no samples (DALI refuses an empty index)")
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s %d\n", IndexVersion, len(samples))
	for i, s := range samples {
		if len(s.Components) == 0 {
			return fmt.Errorf("webdataset index: sample %d (%q) has no components", i, s.Key)
		}
		for j, c := range s.Components {
			for _, f := range []string{c.Ext, c.Name} {
				if f == "" || strings.ContainsAny(f, " \t\n\r\v\f") {
					return fmt.Errorf("webdataset index: file %q: names and extensions with white space (or empty) cannot be written in the index format", c.Name)
				}
			}
			if j > 0 {
				bw.WriteByte(' ')
			}
			fmt.Fprintf(bw, "%s %d %d %s", c.Ext, c.Offset, c.Size, c.Name)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadIndex parses a DALI webdataset index (v1.1 or v1.2). Keys are taken from the
// component file names when present (v1.2); v1.1 indices carry none, so their
// samples' keys are empty. Sample lines past the declared count are ignored, as
// DALI does. Offsets must be block-aligned; whether they lie inside the archive is
// for CheckIndex.
func ReadIndex(r io.Reader) ([]Sample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxIndexLine)
	line := 0
	nextLine := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	head, ok := nextLine()
	if !ok {
		return nil, indexErr(0, "empty index (%v)", sc.Err())
	}
	f := strings.Fields(head)
	if len(f) < 2 {
		return nil, indexErr(0, "first line %q: want \"<version> <number of samples>\"", head)
	}
	var withNames bool
	switch f[0] {
	case "v1.2":
		withNames = true
	case "v1.1":
	default:
		return nil, indexErr(0, "unsupported index version %q (want v1.1 or v1.2)", f[0])
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n <= 0 {
		return nil, indexErr(0, "sample count %q must be a positive integer", f[1])
	}
	out := make([]Sample, 0, min(n, 1<<16))
	for i := int64(0); i < n; i++ {
		text, ok := nextLine()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, indexErr(i+1, "%v", err)
			}
			return nil, indexErr(i+1, "index ends after %d of %d samples", i, n)
		}
		f := strings.Fields(text)
		per := 3
		if withNames {
			per = 4
		}
		if len(f) == 0 {
			return nil, indexErr(i+1, "no components for the sample")
		}
		if len(f)%per != 0 {
			return nil, indexErr(i+1, "%d fields: each component needs %d (<ext> <offset> <size>%s)", len(f), per, map[bool]string{true: " <filename>"}[withNames])
		}
		var s Sample
		for k := 0; k < len(f); k += per {
			off, err1 := strconv.ParseInt(f[k+1], 10, 64)
			size, err2 := strconv.ParseInt(f[k+2], 10, 64)
			if err1 != nil || err2 != nil || off < 0 || size < 0 {
				return nil, indexErr(i+1, "offset %q and size %q must be non-negative integers", f[k+1], f[k+2])
			}
			if off%BlockSize != 0 {
				return nil, indexErr(i+1, "offset %d is not a multiple of the tar block size (%d)", off, BlockSize)
			}
			c := Component{Ext: f[k], Offset: off, Size: size}
			if withNames {
				c.Name = f[k+3]
				if s.Key == "" {
					s.Key, _, _ = SplitName(c.Name)
				}
			}
			s.Components = append(s.Components, c)
		}
		out = append(out, s)
	}
	return out, nil
}

// CheckIndex verifies that every component of samples lies inside an archive of
// size bytes, so that reading it cannot run past the end.
func CheckIndex(samples []Sample, size int64) error {
	for i, s := range samples {
		for _, c := range s.Components {
			if c.Offset < 0 || c.Size < 0 || c.Offset > size || c.Size > size-c.Offset {
				return indexErr(int64(i+1), "component %q: %d bytes at offset %d lie outside the archive (%d bytes)", c.Ext, c.Size, c.Offset, size)
			}
		}
	}
	return nil
}

func indexErr(line int64, format string, args ...any) error {
	return formats.Malformedf("webdataset index line %d: %s", line, fmt.Sprintf(format, args...))
}
