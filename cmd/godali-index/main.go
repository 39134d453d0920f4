// Command godali-index writes the index files godali's and DALI's readers use to
// reach records without scanning a whole file:
//
//	godali-index wds [-lower] <shard.tar> <shard.idx>   webdataset, DALI wds2idx v1.2 format
//	godali-index tfrecord [-verify] <file> <file.idx>   DALI tfrecord2idx format
//	godali-index recordio <file.rec> <file.idx>         MXNet .idx, keys 0, 1, 2, ...
//
// The index is written next to its final name and renamed into place, so a failed
// run leaves no partial index behind.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/godali/godali/formats/recordio"
	"github.com/godali/godali/formats/tar"
	"github.com/godali/godali/formats/tfrecord"
)

const usage = `usage:
  godali-index wds [-lower] <shard.tar> <shard.idx>
  godali-index tfrecord [-verify] <file> <file.idx>
  godali-index recordio <file.rec> <file.idx>
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("godali-index "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	lower := fs.Bool("lower", false, "wds: lower-case extensions (DALI's case_sensitive_extensions=False)")
	verify := fs.Bool("verify", false, "tfrecord: check every record's payload CRC")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	in, out := fs.Arg(0), fs.Arg(1)
	var write func(r io.ReaderAt, size int64, w io.Writer) error
	switch args[0] {
	case "wds":
		write = func(r io.ReaderAt, size int64, w io.Writer) error {
			s, err := tar.Samples(r, size, tar.Options{CaseInsensitive: *lower})
			if err != nil {
				return err
			}
			return tar.WriteIndex(w, s)
		}
	case "tfrecord":
		write = func(r io.ReaderAt, size int64, w io.Writer) error {
			recs, err := tfrecord.Records(r, size, *verify)
			if err != nil {
				return err
			}
			return tfrecord.WriteIndex(w, recs)
		}
	case "recordio":
		write = func(r io.ReaderAt, size int64, w io.Writer) error {
			recs, err := recordio.Records(r, size)
			if err != nil {
				return err
			}
			e := make([]recordio.IndexEntry, len(recs))
			for i, rec := range recs {
				e[i] = recordio.IndexEntry{Key: strconv.Itoa(i), Offset: rec.Offset}
			}
			return recordio.WriteIndex(w, e)
		}
	default:
		fmt.Fprintf(stderr, "godali-index: unknown format %q\n%s", args[0], usage)
		return 2
	}
	if err := index(in, out, write); err != nil {
		fmt.Fprintf(stderr, "godali-index %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func index(in, out string, write func(io.ReaderAt, int64, io.Writer) error) (err error) {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", in)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(f, st.Size(), bw); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := errors.Join(bw.Flush(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
