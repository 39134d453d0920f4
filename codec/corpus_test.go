package codec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCorpusSizes: every corpus file decodes to the size PIL reports (oriented), or
// fails where PIL fails; nothing panics or takes long.
func TestCorpusSizes(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, e := range readManifest(t) {
		t.Run(e.path, func(t *testing.T) {
			data := readFile(t, filepath.Join(corpusDir, e.path))
			start := time.Now()
			_, w, h, c, info, err := decodeAll(d, data, Options{Out: RGB, AdjustOrientation: true, MaxPixels: 178956970})
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("decode took %v", el)
			}
			if !e.ok {
				// PIL fails; godali may fail with a clear error or decode.
				if err == nil {
					t.Logf("PIL fails (%s); godali decodes %dx%d", e.pilErr, w, h)
				} else {
					t.Logf("PIL fails (%s); godali: %v", e.pilErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("PIL decodes this %s %dx%d; godali: %v", e.format, e.w, e.h, err)
			}
			if info.Width != e.w || info.Height != e.h {
				t.Errorf("stored size %dx%d, PIL %dx%d", info.Width, info.Height, e.w, e.h)
			}
			ww, wh := e.w, e.h
			if info.Orientation >= 5 {
				ww, wh = wh, ww
			}
			if w != ww || h != wh || c != 3 {
				t.Errorf("decoded %dx%dx%d, want %dx%dx3 (orientation %d)", w, h, c, ww, wh, info.Orientation)
			}
			if got := info.Format.String(); !strings.EqualFold(got, e.format) && !(got == "PNM" && e.format == "PPM") {
				t.Errorf("format %s, PIL %s", got, e.format)
			}
		})
	}
}

// TestCorpusKnownFailures pins the failures that must stay failures, with their text.
func TestCorpusKnownFailures(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	cases := []struct {
		path string
		want string
		is   error
	}{
		{"pillow/truncated_jpeg.jpg", "JPEG: Premature end of JPEG file (truncated?)", ErrTruncated},
		{"libjpeg-turbo/monkey12.jpg", "JPEG: Unsupported JPEG data precision 12: only 8-bit JPEGs are supported", nil},
	}
	for _, tc := range cases {
		_, _, _, _, _, err := decodeAll(d, readFile(t, filepath.Join(corpusDir, tc.path)), Options{Out: RGB, AdjustOrientation: true})
		if err == nil {
			t.Errorf("%s: decoded; want error %q", tc.path, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: error %q, want %q", tc.path, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: error %v does not match %v", tc.path, err, tc.is)
		}
	}
}

// corpusTolerance is the largest per-channel difference from PIL accepted for a file:
//   - JPEG: 1. PIL uses the same libjpeg-turbo with the same settings (ISLOW IDCT, fancy
//     upsampling), so pixels are expected to be identical; 1 leaves room for a different
//     libjpeg-turbo build (SIMD vs C colour conversion).
//   - lossy WebP: 0. Go's VP8 decoder reconstructs the same YUV planes as libwebp, and
//     the chroma upsampling and colour conversion here follow libwebp's integer steps.
//   - lossless formats: 0.
func corpusTolerance(format string) int {
	if format == "JPEG" || format == "MPO" {
		return 1
	}
	return 0
}

// TestCorpusPixelsVsPIL compares every file both decode with PIL's exif_transpose +
// convert("RGB"), and the Gray and BGR outputs with convert("L") and reversed channels.
func TestCorpusPixelsVsPIL(t *testing.T) {
	entries := readManifest(t)
	var jobs []pilJob
	for _, e := range entries {
		p := filepath.Join(corpusDir, e.path)
		jobs = append(jobs, pilJob{Path: p, Mode: "RGB", Transpose: true}, pilJob{Path: p, Mode: "L", Transpose: true})
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	for i, e := range entries {
		rgbRef, grayRef := ref[2*i], ref[2*i+1]
		if !rgbRef.OK {
			continue
		}
		t.Run(e.path, func(t *testing.T) {
			data := readFile(t, filepath.Join(corpusDir, e.path))
			tol := corpusTolerance(e.format)
			for _, out := range []OutputType{RGB, BGR, Gray} {
				pix, w, h, c, _, err := decodeAll(d, data, Options{Out: out, AdjustOrientation: true})
				if err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				want := rgbRef
				if out == Gray {
					want = grayRef
				}
				if w != want.W || h != want.H || c != want.C {
					t.Fatalf("%s: %dx%dx%d, PIL %dx%dx%d", out, w, h, c, want.W, want.H, want.C)
				}
				wantPix := want.Pix
				if out == BGR {
					wantPix = swapRB(wantPix)
				}
				s := compare(pix, wantPix)
				if s.max > tol {
					t.Errorf("%s: max diff %d at byte %d (pixel %d,%d), mean %.4f; tolerance %d",
						out, s.max, s.at, s.at/c%w, s.at/c/w, s.mean, tol)
				}
			}
		})
	}
}

func swapRB(p []byte) []byte {
	q := make([]byte, len(p))
	for i := 0; i+2 < len(p); i += 3 {
		q[i], q[i+1], q[i+2] = p[i+2], p[i+1], p[i]
	}
	return q
}

// TestCorpusOrientation: the EXIF orientation found for every file is the one PIL's
// getexif() finds (broken EXIF blocks included).
func TestCorpusOrientation(t *testing.T) {
	entries := readManifest(t)
	var jobs []pilJob
	for _, e := range entries {
		jobs = append(jobs, pilJob{Path: filepath.Join(corpusDir, e.path), Mode: "RGB"})
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	for i, e := range entries {
		if !ref[i].OK {
			continue
		}
		info, err := d.Probe(readFile(t, filepath.Join(corpusDir, e.path)))
		if err != nil {
			t.Errorf("%s: %v", e.path, err)
			continue
		}
		want := ref[i].Orientation
		if want < 1 || want > 8 {
			want = 1
		}
		if info.Orientation != want {
			t.Errorf("%s: orientation %d, PIL %d", e.path, info.Orientation, want)
		}
	}
}

// TestCorpusJPEGLumaVsPILDraft: with DALIColor, a JPEG's Gray output is libjpeg's
// grayscale output (DALI's decoders' GRAY), which is PIL's draft("L") decode, bit for
// bit (CMYK and YCCK files, converted by DALI's rules there, are tested in
// python/tests/test_dali_testfile_parity.py). It is not the default's convert("L") (at
// least one file differs), so the option matters.
func TestCorpusJPEGLumaVsPILDraft(t *testing.T) {
	var entries []manifestEntry
	var jobs []pilJob
	for _, e := range readManifest(t) {
		if (e.format == "JPEG" || e.format == "MPO") && e.mode != "CMYK" {
			entries = append(entries, e)
			jobs = append(jobs, pilJob{Path: filepath.Join(corpusDir, e.path), Mode: "Y", Transpose: true})
		}
	}
	ref := pilDecode(t, jobs)
	d := NewDecoder()
	defer d.Close()
	differs := 0
	for i, e := range entries {
		if !ref[i].OK {
			continue
		}
		data := readFile(t, filepath.Join(corpusDir, e.path))
		pix, w, h, c, _, err := decodeAll(d, data, Options{Out: Gray, AdjustOrientation: true, DALIColor: true})
		if err != nil {
			t.Errorf("%s: %v", e.path, err)
			continue
		}
		if w != ref[i].W || h != ref[i].H || c != 1 {
			t.Errorf("%s: %dx%dx%d, PIL %dx%dx1", e.path, w, h, c, ref[i].W, ref[i].H)
			continue
		}
		if s := compare(pix, ref[i].Pix); s.max != 0 {
			t.Errorf("%s: max diff %d at byte %d, mean %.4f; want identical", e.path, s.max, s.at, s.mean)
		}
		plain, _, _, _, _, err := decodeAll(d, data, Options{Out: Gray, AdjustOrientation: true})
		if err == nil && compare(plain, pix).max != 0 {
			differs++
		}
	}
	if differs == 0 {
		t.Error("DALIColor changed no file's Gray output")
	}
}
